/**
 * What a list body's scan carries from one chunk to the next (any byte may end a chunk): the bytes
 * of the unfinished item or value, where it started, a backslash whose escaped byte is still to
 * come, and a nested value being skipped. The scanner (`Scanner.ts`) is built on it.
 */
import { CLOSE_ARRAY, CLOSE_OBJECT, closingQuote, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from "./Bytes.ts"

/**
 * Positions held between chunks count from the current chunk's first byte: negative ones are in
 * `carry`, the bytes of the unfinished item or value that came in earlier chunks, and are moved
 * back by a chunk's length when the next one comes.
 */
export abstract class ChunkCarry {
  /** The byte after a backslash is still to come (in a string left at a chunk's end). */
  protected escaped = false
  // a value skipped as nested brackets (an envelope member, or an item's managedFields)
  protected nestDepth = 0
  protected nestString = false
  /** Where the item or envelope value being read started (negative: in an earlier chunk). */
  protected captureStart = 0
  protected capturing = false
  /** Bytes of the unfinished item or value from earlier chunks: `carry[0, carryLength)`. */
  protected carry: Buffer = Buffer.allocUnsafe(0)
  protected carryLength = 0
  // where `captured` put the item or value just read (see there)
  protected shift = 0
  protected rangeEnd = 0

  /** Appends `b[from, to)` to the carried bytes. */
  protected keep(b: Buffer, from: number, to: number): void {
    const needed = this.carryLength + to - from
    if (this.carry.length < needed) {
      const grown = Buffer.allocUnsafe(Math.max(needed, this.carry.length * 2, 4096))
      this.carry.copy(grown, 0, 0, this.carryLength)
      this.carry = grown
    }
    b.copy(this.carry, this.carryLength, from, to)
    this.carryLength = needed
  }

  /**
   * The captured item or value, ending before `end` in `b`, as one range of one buffer: `b`
   * itself when it all came in `b`, else the carried bytes with the rest appended. Returns the
   * buffer; `shift` moves a chunk position into it, and its range ends at `rangeEnd`.
   */
  protected captured(b: Buffer, end: number): Buffer {
    this.capturing = false
    if (this.captureStart >= 0) {
      this.rangeEnd = end
      this.shift = 0
      return b
    }
    this.shift = this.carryLength
    this.keep(b, 0, end)
    this.rangeEnd = this.carryLength
    this.carryLength = 0
    return this.carry
  }

  /**
   * The object or array opening at `from` (or going on from an earlier chunk) skipped: the
   * position after its last bracket, or -1 when `b` ends first (where it is, is kept).
   */
  protected nested(b: Buffer, from: number): number {
    const length = b.length
    let depth = this.nestDepth
    let k = from
    if (this.nestString) {
      if (this.escaped) k++
      k = closingQuote(b, k)
      if (k >= length) {
        this.escaped = k > length
        return -1
      }
      this.nestString = false
      this.escaped = false
      k++
    }
    for (; k < length; k++) {
      const c = b[k]
      if (c === QUOTE) {
        // past the string
        k = closingQuote(b, k + 1)
        if (k >= length) {
          this.nestDepth = depth
          this.nestString = true
          this.escaped = k > length
          return -1
        }
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        depth++
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        depth--
        if (depth === 0) return k + 1
      }
    }
    this.nestDepth = depth
    return -1
  }
}
