/**
 * A list reply read from its bytes chunk by chunk, one item at a time: each item's JSON text goes
 * to the caller as soon as its last byte is in, so the body is never held whole and only the
 * unfinished item is carried to the next chunk (any byte may end a chunk). An item's
 * metadata.managedFields array or object is handed over as `null`, unparsed. Only the structure
 * is read here; items, envelope names and values are `JSON.parse`d (the names: a few per list).
 * Proven to read what the list's Schema reads (`Kube/PodList.ts`, test/Kube/PodListSchema.test.ts).
 * INF-1 — a Pod the daemon cannot decode is left out: an item `decode` refuses goes to `undecodable`.
 */
import { Option } from "effect"

// Bytes, not text: no byte of a multi-byte UTF-8 sequence is below 0x80, so none is taken for a
// quote, backslash or bracket, and text is decoded only once an item's last byte is in.
const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const COMMA = 0x2c
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d

const METADATA = Buffer.from("metadata")
const MANAGED_FIELDS = Buffer.from("managedFields")
const NULL = Buffer.from("null")

/** What a scan found. `metadata` is the list's metadata as JSON text (undefined when absent). */
export type ListScan =
  | { readonly _tag: "Read"; readonly metadata: string | undefined; readonly items: boolean }
  /** The item callback refused an item: the scan stopped there. */
  | { readonly _tag: "Stopped" }
  /** Not a JSON object of this shape (truncated, unbalanced, a separator missing). */
  | { readonly _tag: "Malformed" }

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/**
 * Where the quote closing a string is, scanning from `from` (past its opening quote and any bytes
 * already read); `b.length` or more when `b` ends first, one more when it ends right after a
 * backslash, whose escaped byte is still to come. Most of a Pod's bytes are inside strings.
 */
const closingQuote = (b: Buffer, from: number): number => {
  const length = b.length
  let k = from
  while (k < length) {
    const d = b[k]
    if (d === QUOTE) break
    if (d === BACKSLASH) k++
    k++
  }
  return k
}

/** `text` parsed, or undefined when it is not one JSON value (the envelope's names and small members). */
const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

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

// Where the scan of an item is, between two chunks.
const IN_ITEM = 0
const IN_ITEM_STRING = 1
/** After `"managedFields":` of the item's metadata, before its value. */
const BEFORE_MANAGED = 2
/** Inside that value (an object or array), which is skipped. */
const IN_MANAGED = 3


/**
 * The scan, fed one chunk at a time. Positions held between chunks (a key's start and end, the
 * managedFields cut, where the item or value being read starts) count from the current chunk's
 * first byte: negative ones are in `carry`, the bytes of the unfinished item or value that came
 * in earlier chunks, and are moved back by a chunk's length when the next one comes.
 */
class Scanner {
  private state = ENVELOPE_OPEN
  private result: ListScan | undefined = undefined
  private metadata: string | undefined = undefined
  private items = false
  // the member name being read: its length, and whether it can still be `items` / `metadata`
  private keyItems = false
  private keyMetadata = false
  /** The byte after a backslash is still to come (in a string left at a chunk's end). */
  private escaped = false
  // a value skipped as nested brackets (an envelope member, or an item's managedFields)
  private nestDepth = 0
  private nestString = false
  // the item being read
  private itemState = IN_ITEM
  private depth = 0
  private keyStart = 0
  private keyEnd = 0
  private metadataKey = false
  private inMetadata = false
  private hasCut = false
  private cutStart = 0
  private cutEnd = 0
  /** Where the item or envelope value being read started (negative: in an earlier chunk). */
  private captureStart = 0
  private capturing = false
  /** Bytes of the unfinished item or value from earlier chunks: `carry[0, carryLength)`. */
  private carry: Buffer = Buffer.allocUnsafe(0)
  private carryLength = 0
  // where `captured` put the item or value just read (see there)
  private shift = 0
  private rangeEnd = 0
  /** An item's text with its managedFields cut is put together here (grown as needed). */
  private scratch: Buffer = Buffer.allocUnsafe(4096)
  private readonly onItem: (text: string) => boolean

  constructor(onItem: (text: string) => boolean) {
    this.onItem = onItem
  }

  /** Reads `b`; false once the scan is over (stopped or malformed), when the rest need not come. */
  push(b: Buffer): boolean {
    if (this.state === DONE) return false
    const length = b.length
    let k = 0
    while (k < length) {
      switch (this.state) {
        case ENVELOPE_OPEN: {
          while (k < length && isSpace(b[k])) k++
          if (k === length) break
          if (b[k] !== OPEN_OBJECT) return this.malformed()
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
            return this.malformed()
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
          if (!this.keyRead(b, k)) return false
          break
        }
        case KEY_COLON: {
          while (k < length && isSpace(b[k])) k++
          if (k === length) break
          if (b[k] !== COLON) return this.malformed()
          k++
          this.state = VALUE
          break
        }
        case VALUE: {
          while (k < length && isSpace(b[k])) k++
          if (k === length) break
          const c = b[k]
          if (this.keyItems && c === OPEN_ARRAY) {
            // a second `items` member is not something the apiserver sends; JSON.parse would keep the last
            if (this.items) return this.malformed()
            this.items = true
            k++
            this.state = FIRST_ITEM
            break
          }
          if (c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY) return this.malformed()
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
          if (!this.valueRead(b, k)) return false
          break
        }
        case NESTED_VALUE: {
          const end = this.nested(b, k)
          if (end < 0) {
            k = length
            break
          }
          k = end
          if (!this.valueRead(b, k)) return false
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
          if (!this.valueRead(b, k)) return false
          break
        }
        case AFTER_VALUE: {
          while (k < length && isSpace(b[k])) k++
          if (k === length) break
          const c = b[k]
          if (c === CLOSE_OBJECT) this.state = ENVELOPE_END
          else if (c === COMMA) this.state = NEXT_KEY
          else return this.malformed()
          k++
          break
        }
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
            return this.malformed()
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
            return false
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
          else return this.malformed()
          k++
          break
        }
        case ENVELOPE_END: {
          while (k < length && isSpace(b[k])) k++
          if (k < length) return this.malformed()
          break
        }
        default:
          return false
      }
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

  /** Appends `b[from, to)` to the carried bytes. */
  private keep(b: Buffer, from: number, to: number): void {
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
  private captured(b: Buffer, end: number): Buffer {
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

  /**
   * The item ended before `end`: its text, its managedFields value (if found) as `null`, goes to
   * the caller. The bytes around the cut are put together in `scratch` first, so the text is one
   * string: three decoded pieces joined would be a rope that `JSON.parse` copies flat again, four
   * strings per Pod where one does.
   */
  private itemRead(b: Buffer, end: number): boolean {
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

  private startItem(k: number): void {
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
  private keyIs(b: Buffer, start: number, end: number, word: Buffer): boolean {
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
   * The object or array opening at `from` (or going on from an earlier chunk) skipped: the
   * position after its last bracket, or -1 when `b` ends first (where it is, is kept).
   */
  private nested(b: Buffer, from: number): number {
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

  /**
   * After `"managedFields":` in the item's metadata: the value, when it is an object or array, is
   * skipped and marked to be cut. The position to go on scanning the item from, or -1 when `b`
   * ends first.
   */
  private managed(b: Buffer, from: number): number {
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
  private scanItem(b: Buffer, from: number): number {
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

/** Reads a list body chunk by chunk: `push` each chunk as it comes, then `end`. */
export interface ListReader<A> {
  /** Reads the next chunk; false once the outcome is known (stopped or malformed): read no more. */
  readonly push: (chunk: Buffer) => boolean
  /** The body ended (or no more of it is read): the outcome. */
  readonly end: () => A
}

/**
 * Reads a list, handing each element of its `items` array (an object) to `item` as JSON text, in
 * order, as soon as its last byte has been pushed; `item` returns false to stop the scan. The
 * `metadata` member comes back as text; any other member is skipped.
 */
export const scanner = (item: (text: string) => boolean): ListReader<ListScan> => {
  const scan = new Scanner(item)
  return { push: (chunk) => scan.push(chunk), end: () => scan.end() }
}

/** `scanner` on a whole body. */
export const scan = (body: Buffer, item: (text: string) => boolean): ListScan => {
  const scan = new Scanner(item)
  scan.push(body)
  return scan.end()
}

/**
 * What `readList` found: the decoded items, what `undecodable` made of each item `decode` refused,
 * and the list's metadata (JSON text); or why it stopped.
 */
export type ListRead<A, B> =
  | {
    readonly _tag: "Read"
    readonly items: Array<A>
    readonly undecodable: Array<B>
    readonly metadata: string | undefined
    readonly hasItems: boolean
  }
  /** Not a JSON object of this shape, or an item that is not JSON. */
  | { readonly _tag: "Malformed" }

/**
 * A list body, pushed chunk by chunk → its items, each parsed and decoded by `decode` as soon as
 * it has come and let go before the next one is cut out, so only what `decode` keeps outlives the
 * read. The daemon's Pod list read, in one place for the client and for the bench that times it
 * (`bench/podList.ts`).
 *
 * An item `decode` refuses does not end the read (INF-1 — a Pod the daemon cannot decode is left
 * out): `undecodable` is given its parsed JSON (for what can still be read of it) and the list goes
 * on.
 */
export const listReader = <A, B>(
  decode: (json: unknown) => Option.Option<A>,
  undecodable: (json: unknown) => B
): ListReader<ListRead<A, B>> => {
  const items: Array<A> = []
  const refused: Array<B> = []
  let unparsable = false
  const scan = new Scanner((text) => {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      unparsable = true
      return false
    }
    const item = decode(json)
    if (Option.isNone(item)) refused.push(undecodable(json))
    else items.push(item.value)
    return true
  })
  return {
    push: (chunk) => scan.push(chunk),
    end: () => {
      const read = scan.end()
      if (read._tag !== "Read" || unparsable) return { _tag: "Malformed" }
      return { _tag: "Read", items, undecodable: refused, metadata: read.metadata, hasItems: read.items }
    }
  }
}

/** `listReader` on a whole body. */
export const readList = <A, B>(
  body: Buffer,
  decode: (json: unknown) => Option.Option<A>,
  undecodable: (json: unknown) => B
): ListRead<A, B> => {
  const reader = listReader(decode, undecodable)
  reader.push(body)
  return reader.end()
}
