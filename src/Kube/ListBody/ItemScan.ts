/**
 * One item of a list's `items` array read across chunks: where it ends (one pass over its bytes,
 * the last string before a `:` taken as the key), and its metadata.managedFields object or array
 * cut out and handed over as `null`, unparsed, with the item's text.
 */
import { CLOSE_ARRAY, CLOSE_OBJECT, closingQuote, COLON, isSpace, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from "./Bytes.ts"
import { ChunkCarry } from "./ChunkCarry.ts"

const METADATA = Buffer.from("metadata")
const MANAGED_FIELDS = Buffer.from("managedFields")
const NULL = Buffer.from("null")

// Where the scan of an item is, between two chunks.
const IN_ITEM = 0
const IN_ITEM_STRING = 1
/** After `"managedFields":` of the item's metadata, before its value. */
const BEFORE_MANAGED = 2
/** Inside that value (an object or array), which is skipped. */
const IN_MANAGED = 3

/** The item part of the scan (`Scanner.ts` reads the envelope around the items). */
export abstract class ItemScan extends ChunkCarry {
  // the item being read
  protected itemState = IN_ITEM
  protected depth = 0
  protected keyStart = 0
  protected keyEnd = 0
  protected metadataKey = false
  protected inMetadata = false
  protected hasCut = false
  protected cutStart = 0
  protected cutEnd = 0
  /** An item's text with its managedFields cut is put together here (grown as needed). */
  protected scratch: Buffer = Buffer.allocUnsafe(4096)
  protected readonly onItem: (text: string) => boolean

  constructor(onItem: (text: string) => boolean) {
    super()
    this.onItem = onItem
  }

  /**
   * The item ended before `end`: its text, its managedFields value (if found) as `null`, goes to
   * the caller. The bytes around the cut are put together in `scratch` first, so the text is one
   * string: three decoded pieces joined would be a rope that `JSON.parse` copies flat again, four
   * strings per Pod where one does.
   */
  protected itemRead(b: Buffer, end: number): boolean {
    const bytes = this.captured(b, end)
    const start = this.captureStart + this.shift
    const stop = this.rangeEnd
    if (!this.hasCut) return this.onItem(bytes.toString("utf8", start, stop))
    const cutStart = this.cutStart + this.shift
    const cutEnd = this.cutEnd + this.shift
    const head = cutStart - start
    const length = head + NULL.length + stop - cutEnd
    if (this.scratch.length < length) this.scratch = Buffer.allocUnsafe(Math.max(length, this.scratch.length * 2))
    const scratch = this.scratch
    bytes.copy(scratch, 0, start, cutStart)
    NULL.copy(scratch, head)
    bytes.copy(scratch, head + NULL.length, cutEnd, stop)
    return this.onItem(scratch.toString("utf8", 0, length))
  }

  protected startItem(k: number): void {
    this.capturing = true
    this.captureStart = k
    this.itemState = IN_ITEM
    this.depth = 0
    this.keyStart = k
    this.keyEnd = k
    this.metadataKey = false
    this.inMetadata = false
    this.hasCut = false
    this.escaped = false
  }

  /** Whether the bytes at chunk positions [start, end) are exactly `word` (negative ones carried). */
  protected keyIs(b: Buffer, start: number, end: number, word: Buffer): boolean {
    if (end - start !== word.length) return false
    if (start >= 0) {
      for (let i = 0; i < word.length; i++) if (b[start + i] !== word[i]) return false
      return true
    }
    for (let i = 0; i < word.length; i++) {
      const at = start + i
      if ((at >= 0 ? b[at] : this.carry[at - this.captureStart]) !== word[i]) return false
    }
    return true
  }

  /**
   * After `"managedFields":` in the item's metadata: the value, when it is an object or array, is
   * skipped and marked to be cut. The position to go on scanning the item from, or -1 when `b`
   * ends first.
   */
  protected managed(b: Buffer, from: number): number {
    let k = from
    if (this.itemState === BEFORE_MANAGED) {
      while (k < b.length && isSpace(b[k])) k++
      if (k === b.length) return -1
      const open = b[k]
      if (open !== OPEN_ARRAY && open !== OPEN_OBJECT) {
        this.itemState = IN_ITEM
        return k
      }
      this.cutStart = k
      this.nestDepth = 0
      this.nestString = false
      this.escaped = false
      this.itemState = IN_MANAGED
    }
    const end = this.nested(b, k)
    if (end < 0) return -1
    this.cutEnd = end
    this.hasCut = true
    this.itemState = IN_ITEM
    return end
  }

  /**
   * The item being read, from `from` in `b`: the position after its closing brace, or -1 when
   * `b` ends first. One pass over the bytes: the last string before a `:` is the key.
   */
  protected scanItem(b: Buffer, from: number): number {
    const length = b.length
    let k = from
    if (this.itemState === IN_ITEM_STRING) {
      if (this.escaped) k++
      k = closingQuote(b, k)
      if (k >= length) {
        this.escaped = k > length
        return -1
      }
      this.escaped = false
      this.keyEnd = k
      this.itemState = IN_ITEM
      k++
    } else if (this.itemState !== IN_ITEM) {
      k = this.managed(b, k)
      if (k < 0) return -1
    }
    let depth = this.depth
    let keyStart = this.keyStart
    let keyEnd = this.keyEnd
    // the member of the item being read is `metadata`, and (depth 2) its object is being read
    let metadataKey = this.metadataKey
    let inMetadata = this.inMetadata
    for (; k < length; k++) {
      const c = b[k]
      if (c === QUOTE) {
        // past the string (its end may be a key's)
        keyStart = k + 1
        k = closingQuote(b, k + 1)
        if (k >= length) {
          this.itemState = IN_ITEM_STRING
          this.escaped = k > length
          break
        }
        keyEnd = k
      } else if (c === COLON) {
        if (depth === 1) {
          metadataKey = this.keyIs(b, keyStart, keyEnd, METADATA)
        } else if (depth === 2 && inMetadata && !this.hasCut && this.keyIs(b, keyStart, keyEnd, MANAGED_FIELDS)) {
          this.itemState = BEFORE_MANAGED
          const next = this.managed(b, k + 1)
          if (next < 0) break
          k = next - 1
        }
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        depth++
        if (depth === 2 && metadataKey && c === OPEN_OBJECT) inMetadata = true
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        depth--
        if (depth === 1) {
          inMetadata = false
          metadataKey = false
        } else if (depth === 0) {
          return k + 1
        }
      }
    }
    this.depth = depth
    this.keyStart = keyStart
    this.keyEnd = keyEnd
    this.metadataKey = metadataKey
    this.inMetadata = inMetadata
    return -1
  }
}
