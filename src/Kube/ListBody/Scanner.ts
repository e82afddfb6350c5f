/**
 * A list reply's envelope read chunk by chunk: `{`, its members' names and values (the metadata
 * kept as text, any other checked and skipped), and its `items` array, each item handed to
 * `ItemScan`. Only the structure is read here; names and small members are `JSON.parse`d.
 */
import { CLOSE_ARRAY, CLOSE_OBJECT, closingQuote, COLON, COMMA, isSpace, OPEN_ARRAY, OPEN_OBJECT, parsed, QUOTE } from "./Bytes.ts"
import { ItemScan } from "./ItemScan.ts"

/** What a scan found. `metadata` is the list's metadata as JSON text (undefined when absent). */
export type ListScan =
  | { readonly _tag: "Read"; readonly metadata: string | undefined; readonly items: boolean }
  /** The item callback refused an item: the scan stopped there. */
  | { readonly _tag: "Stopped" }
  /** Not a JSON object of this shape (truncated, unbalanced, a separator missing). */
  | { readonly _tag: "Malformed" }

// Where the scan of the envelope is: what the next byte (after spaces, where they may be) must be.
const ENVELOPE_OPEN = 0 // `{`
const FIRST_KEY = 1 // `"` or `}`
const KEY = 2 // inside a member's name
const KEY_COLON = 3 // `:`
const VALUE = 4 // a member's value
const STRING_VALUE = 5 // inside a string value
const NESTED_VALUE = 6 // inside an object or array value
const SCALAR_VALUE = 7 // inside a number, true, false or null
const AFTER_VALUE = 8 // `,` or `}`
const NEXT_KEY = 9 // `"`
const FIRST_ITEM = 10 // `{` or `]`
const ITEM = 11 // inside an item
const AFTER_ITEM = 12 // `,` or `]`
const NEXT_ITEM = 13 // `{`
const ENVELOPE_END = 14 // nothing but spaces
const DONE = 15 // stopped or malformed: nothing more is read

/** The scan, fed one chunk at a time (what it carries between chunks: `ChunkCarry.ts`). */
export class Scanner extends ItemScan {
  private state = ENVELOPE_OPEN
  private result: ListScan | undefined = undefined
  private metadata: string | undefined = undefined
  private items = false
  // the member name being read: its length, and whether it can still be `items` / `metadata`
  private keyItems = false
  private keyMetadata = false

  /** Reads `b`; false once the scan is over (stopped or malformed), when the rest need not come. */
  push(b: Buffer): boolean {
    if (this.state === DONE) return false
    const length = b.length
    let k = 0
    while (k < length) {
      switch (this.state) {
        case VALUE:
        case STRING_VALUE:
        case NESTED_VALUE:
        case SCALAR_VALUE:
          k = this.value(b, k)
          break
        case FIRST_ITEM:
        case NEXT_ITEM:
        case ITEM:
        case AFTER_ITEM:
          k = this.inItems(b, k)
          break
        default:
          k = this.member(b, k)
      }
      if (k < 0) return false
    }
    if (this.capturing) {
      // the unfinished item or value goes on in the next chunk: its bytes so far are kept
      this.keep(b, Math.max(this.captureStart, 0), length)
      this.captureStart = -this.carryLength
      this.keyStart -= length
      this.keyEnd -= length
      this.cutStart -= length
      this.cutEnd -= length
    }
    return true
  }

  /**
   * Reads from `k` in a state of the envelope's own punctuation and names: the position reached,
   * or -1 once the scan is over (the states of a value and of the items have their own readers).
   */
  private member(b: Buffer, k: number): number {
    const length = b.length
    switch (this.state) {
      case ENVELOPE_OPEN: {
        while (k < length && isSpace(b[k])) k++
        if (k === length) break
        if (b[k] !== OPEN_OBJECT) return this.broken()
        k++
        this.state = FIRST_KEY
        break
      }
      case FIRST_KEY:
      case NEXT_KEY: {
        while (k < length && isSpace(b[k])) k++
        if (k === length) break
        const c = b[k]
        if (c === CLOSE_OBJECT && this.state === FIRST_KEY) {
          k++
          this.state = ENVELOPE_END
        } else if (c === QUOTE) {
          this.capturing = true
          this.captureStart = k
          k++
          this.escaped = false
          this.state = KEY
        } else {
          return this.broken()
        }
        break
      }
      case KEY: {
        if (this.escaped) {
          this.escaped = false
          k++
        }
        k = closingQuote(b, k)
        if (k >= length) {
          this.escaped = k > length
          k = length
          break
        }
        k++
        if (!this.keyRead(b, k)) return -1
        break
      }
      case KEY_COLON: {
        while (k < length && isSpace(b[k])) k++
        if (k === length) break
        if (b[k] !== COLON) return this.broken()
        k++
        this.state = VALUE
        break
      }
      case AFTER_VALUE: {
        while (k < length && isSpace(b[k])) k++
        if (k === length) break
        const c = b[k]
        if (c === CLOSE_OBJECT) this.state = ENVELOPE_END
        else if (c === COMMA) this.state = NEXT_KEY
        else return this.broken()
        k++
        break
      }
      case ENVELOPE_END: {
        while (k < length && isSpace(b[k])) k++
        if (k < length) return this.broken()
        break
      }
      default:
        return -1
    }
    return k
  }

  /** Reads from `k` in a state of an envelope member's value: the position reached, or -1 once the scan is over. */
  private value(b: Buffer, k: number): number {
    const length = b.length
    switch (this.state) {
      case VALUE: {
        while (k < length && isSpace(b[k])) k++
        if (k === length) break
        const c = b[k]
        if (this.keyItems && c === OPEN_ARRAY) {
          // a second `items` member is not something the apiserver sends; JSON.parse would keep the last
          if (this.items) return this.broken()
          this.items = true
          k++
          this.state = FIRST_ITEM
          break
        }
        if (c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY) return this.broken()
        this.capturing = true
        this.captureStart = k
        if (c === QUOTE) {
          k++
          this.escaped = false
          this.state = STRING_VALUE
        } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
          this.nestDepth = 0
          this.nestString = false
          this.escaped = false
          this.state = NESTED_VALUE
        } else {
          this.state = SCALAR_VALUE
        }
        break
      }
      case STRING_VALUE: {
        if (this.escaped) {
          this.escaped = false
          k++
        }
        k = closingQuote(b, k)
        if (k >= length) {
          this.escaped = k > length
          k = length
          break
        }
        k++
        if (!this.valueRead(b, k)) return -1
        break
      }
      case NESTED_VALUE: {
        const end = this.nested(b, k)
        if (end < 0) {
          k = length
          break
        }
        k = end
        if (!this.valueRead(b, k)) return -1
        break
      }
      case SCALAR_VALUE: {
        // up to the next separator (the check that it is one value is `valueRead`'s)
        while (k < length) {
          const d = b[k]
          if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || isSpace(d)) break
          k++
        }
        if (k === length) break
        if (!this.valueRead(b, k)) return -1
        break
      }
      default:
        return -1
    }
    return k
  }

  /** Reads from `k` in a state of the `items` array: the position reached, or -1 once the scan is over. */
  private inItems(b: Buffer, k: number): number {
    const length = b.length
    switch (this.state) {
      case FIRST_ITEM:
      case NEXT_ITEM: {
        while (k < length && isSpace(b[k])) k++
        if (k === length) break
        const c = b[k]
        if (c === CLOSE_ARRAY && this.state === FIRST_ITEM) {
          k++
          this.state = AFTER_VALUE
        } else if (c === OPEN_OBJECT) {
          this.startItem(k)
          this.state = ITEM
        } else {
          return this.broken()
        }
        break
      }
      case ITEM: {
        const end = this.scanItem(b, k)
        if (end < 0) {
          k = length
          break
        }
        k = end
        if (!this.itemRead(b, end)) {
          this.done({ _tag: "Stopped" })
          return -1
        }
        this.state = AFTER_ITEM
        break
      }
      case AFTER_ITEM: {
        while (k < length && isSpace(b[k])) k++
        if (k === length) break
        const c = b[k]
        if (c === CLOSE_ARRAY) this.state = AFTER_VALUE
        else if (c === COMMA) this.state = NEXT_ITEM
        else return this.broken()
        k++
        break
      }
      default:
        return -1
    }
    return k
  }

  /** The body ended: what it held. */
  end(): ListScan {
    if (this.result === undefined) {
      this.done(
        this.state === ENVELOPE_END
          ? { _tag: "Read", metadata: this.metadata, items: this.items }
          : { _tag: "Malformed" }
      )
    }
    return this.result!
  }

  private done(result: ListScan): void {
    this.result = result
    this.state = DONE
    this.carry = Buffer.allocUnsafe(0)
    this.carryLength = 0
    this.capturing = false
  }

  private malformed(): false {
    this.done({ _tag: "Malformed" })
    return false
  }

  private broken(): -1 {
    this.malformed()
    return -1
  }

  /** An envelope member's name ended before `end`: parsed as JSON.parse would (escapes and all). */
  private keyRead(b: Buffer, end: number): boolean {
    const bytes = this.captured(b, end)
    const name = parsed(bytes.toString("utf8", this.captureStart + this.shift, this.rangeEnd))
    if (name === undefined) return this.malformed()
    this.keyItems = name === "items"
    this.keyMetadata = name === "metadata"
    this.state = KEY_COLON
    return true
  }

  /** An envelope member's value ended before `end`: the metadata is kept, any other one checked. */
  private valueRead(b: Buffer, end: number): boolean {
    const bytes = this.captured(b, end)
    const text = bytes.toString("utf8", this.captureStart + this.shift, this.rangeEnd)
    if (this.keyMetadata) this.metadata = text
    else if (parsed(text) === undefined) return this.malformed()
    this.state = AFTER_VALUE
    return true
  }
}
