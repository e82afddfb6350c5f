/**
 * A list reply (`{"kind":…,"metadata":{…},"items":[…]}`) read from its bytes one item at a time:
 * each item's JSON text goes to the caller, which parses and projects it and lets it go before the
 * next one is cut out. One `JSON.parse` of the whole body instead keeps every parsed item alive
 * until the last is projected: on a restart with 10,000 Running Pods (an 18 MB body) that was
 * tens of MB of objects which every young-generation collection during the decode copied and then
 * promoted, to be marked and compacted again in the old generation.
 *
 * An item's `metadata.managedFields` is handed over as `null`, unparsed: the field managers' sets
 * (one per writer of the Pod, each naming every field it set) are most of a served Pod's metadata,
 * and the slim Pod (`Schemas/Pod.ts`) keeps nothing of them.
 *
 * Only the structure is read here: strings (with their escapes), brackets balanced outside
 * strings, and the `,` and `:` between members and items. The caller `JSON.parse`s each item's
 * text and the list's metadata, and the envelope's other members are parsed here, so everything
 * but a skipped managedFields value (whose brackets only have to balance) is checked as a
 * whole-body parse would check it. The scan works
 * on bytes: no byte of a UTF-8 multi-byte sequence is below 0x80, so none is mistaken for a quote,
 * backslash or bracket.
 */
import { Option } from "effect"

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const COMMA = 0x2c
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d

const ITEMS = Buffer.from("items")
const METADATA = Buffer.from("metadata")
const MANAGED_FIELDS = Buffer.from("managedFields")

/** What a scan found. `metadata` is the list's metadata as JSON text (undefined when absent). */
export type ListScan =
  | { readonly _tag: "Read"; readonly metadata: string | undefined; readonly items: boolean }
  /** The item callback refused an item: the scan stopped there. */
  | { readonly _tag: "Stopped" }
  /** Not a JSON object of this shape (truncated, unbalanced, a separator missing). */
  | { readonly _tag: "Malformed" }

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

const skipSpace = (b: Buffer, i: number): number => {
  let k = i
  while (k < b.length && isSpace(b[k])) k++
  return k
}

/** The index after the string opening at `i` (a quote); -1 when it never ends. */
const stringEnd = (b: Buffer, i: number): number => {
  for (let k = i + 1; k < b.length; k++) {
    const c = b[k]
    if (c === BACKSLASH) k++
    else if (c === QUOTE) return k + 1
  }
  return -1
}

/** The index after the object or array opening at `i`; -1 when its brackets never balance. */
const nestedEnd = (b: Buffer, i: number): number => {
  let depth = 0
  const length = b.length
  for (let k = i; k < length; k++) {
    const c = b[k]
    if (c === QUOTE) {
      // past the string, inline (as in `scanItem`)
      k++
      while (k < length) {
        const d = b[k]
        if (d === QUOTE) break
        if (d === BACKSLASH) k++
        k++
      }
      if (k >= length) return -1
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--
      if (depth === 0) return k + 1
    }
  }
  return -1
}

/** The index after the value starting at `i` (any JSON value); -1 when none ends there. */
const valueEnd = (b: Buffer, i: number): number => {
  const c = b[i]
  if (c === undefined) return -1
  if (c === QUOTE) return stringEnd(b, i)
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) return nestedEnd(b, i)
  // a number, true, false or null: up to the next separator (the caller's JSON.parse checks it)
  let k = i
  while (k < b.length) {
    const d = b[k]
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || isSpace(d)) break
    k++
  }
  return k === i ? -1 : k
}

/** Whether `text` is one JSON value (the envelope's small members: kind, apiVersion). */
const isJson = (text: string): boolean => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

/** Whether the bytes [start, end) are exactly `word`. */
const bytesAre = (b: Buffer, start: number, end: number, word: Buffer): boolean => {
  if (end - start !== word.length) return false
  for (let i = 0; i < word.length; i++) if (b[start + i] !== word[i]) return false
  return true
}

/** Where an item ends and the range of its metadata.managedFields value (-1 when it has none). */
interface ItemExtent {
  end: number
  cutStart: number
  cutEnd: number
}

/**
 * The object opening at `i`: its end, and where its `metadata.managedFields` value is when that
 * is an array or object. One pass over the bytes: the last string before a `:` is the key.
 */
const scanItem = (b: Buffer, i: number, out: ItemExtent): void => {
  out.end = -1
  out.cutStart = -1
  out.cutEnd = -1
  let depth = 0
  let keyStart = 0
  let keyEnd = 0
  // the member of the item being read is `metadata`, and (depth 2) its object is being read
  let metadataKey = false
  let inMetadata = false
  const length = b.length
  for (let k = i; k < length; k++) {
    const c = b[k]
    if (c === QUOTE) {
      // the string's end, inline: most of a Pod's bytes are inside strings
      keyStart = k + 1
      k++
      while (k < length) {
        const d = b[k]
        if (d === QUOTE) break
        if (d === BACKSLASH) k++
        k++
      }
      if (k >= length) return
      keyEnd = k
    } else if (c === COLON) {
      if (depth === 1) {
        metadataKey = bytesAre(b, keyStart, keyEnd, METADATA)
      } else if (depth === 2 && inMetadata && out.cutStart < 0 && bytesAre(b, keyStart, keyEnd, MANAGED_FIELDS)) {
        const start = skipSpace(b, k + 1)
        const open = b[start]
        if (open === OPEN_ARRAY || open === OPEN_OBJECT) {
          const end = nestedEnd(b, start)
          if (end < 0) return
          out.cutStart = start
          out.cutEnd = end
          k = end - 1
        }
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
        out.end = k + 1
        return
      }
    }
  }
}

const NULL = Buffer.from("null")

/**
 * The item [start, end) as text, its managedFields value (if found) as `null`. The bytes around
 * the cut are put together in `scratch` first (grown as needed, returned for the next item), so
 * the text is one string: three decoded pieces joined would be a rope that `JSON.parse` copies
 * flat again, four strings per Pod where one does.
 */
const itemText = (b: Buffer, start: number, extent: ItemExtent, scratch: { bytes: Buffer }): string => {
  if (extent.cutStart < 0) return b.toString("utf8", start, extent.end)
  const head = extent.cutStart - start
  const length = head + NULL.length + extent.end - extent.cutEnd
  if (scratch.bytes.length < length) scratch.bytes = Buffer.allocUnsafe(Math.max(length, scratch.bytes.length * 2))
  const bytes = scratch.bytes
  b.copy(bytes, 0, start, extent.cutStart)
  NULL.copy(bytes, head)
  b.copy(bytes, head + NULL.length, extent.cutEnd, extent.end)
  return bytes.toString("utf8", 0, length)
}

/**
 * Reads the list in `body`, handing each element of its `items` array (an object) to `item` as
 * JSON text, in order; `item` returns false to stop the scan. The `metadata` member comes back as
 * text; any other member is skipped.
 */
export const scan = (body: Buffer, item: (text: string) => boolean): ListScan => {
  const malformed: ListScan = { _tag: "Malformed" }
  const extent: ItemExtent = { end: -1, cutStart: -1, cutEnd: -1 }
  const scratch = { bytes: Buffer.allocUnsafe(4096) }
  let metadata: string | undefined
  let items = false
  let k = skipSpace(body, 0)
  if (body[k] !== OPEN_OBJECT) return malformed
  k = skipSpace(body, k + 1)
  if (body[k] !== CLOSE_OBJECT) {
    while (true) {
      if (body[k] !== QUOTE) return malformed
      const keyEnd = stringEnd(body, k)
      if (keyEnd < 0) return malformed
      const colon = skipSpace(body, keyEnd)
      if (body[colon] !== COLON) return malformed
      const value = skipSpace(body, colon + 1)
      let end: number
      if (bytesAre(body, k + 1, keyEnd - 1, ITEMS) && body[value] === OPEN_ARRAY) {
        // a second `items` member is not something the apiserver sends; JSON.parse would keep the last
        if (items) return malformed
        items = true
        let at = skipSpace(body, value + 1)
        if (body[at] !== CLOSE_ARRAY) {
          while (true) {
            if (body[at] !== OPEN_OBJECT) return malformed
            scanItem(body, at, extent)
            if (extent.end < 0) return malformed
            if (!item(itemText(body, at, extent, scratch))) return { _tag: "Stopped" }
            at = skipSpace(body, extent.end)
            if (body[at] === CLOSE_ARRAY) break
            if (body[at] !== COMMA) return malformed
            at = skipSpace(body, at + 1)
          }
        }
        end = at + 1
      } else {
        end = valueEnd(body, value)
        if (end < 0) return malformed
        const text = body.toString("utf8", value, end)
        if (bytesAre(body, k + 1, keyEnd - 1, METADATA)) metadata = text
        else if (!isJson(text)) return malformed
      }
      k = skipSpace(body, end)
      if (body[k] === CLOSE_OBJECT) break
      if (body[k] !== COMMA) return malformed
      k = skipSpace(body, k + 1)
    }
  }
  return skipSpace(body, k + 1) === body.length ? { _tag: "Read", metadata, items } : malformed
}

/** What `readList` found: the decoded items and the list's metadata (JSON text), or why it stopped. */
export type ListRead<A> =
  | { readonly _tag: "Read"; readonly items: Array<A>; readonly metadata: string | undefined; readonly hasItems: boolean }
  /** `decode` refused an item: the list is not one of these. */
  | { readonly _tag: "Undecodable" }
  /** Not a JSON object of this shape, or an item that is not JSON. */
  | { readonly _tag: "Malformed" }

/**
 * A list body → its items, each parsed and decoded by `decode` and let go before the next one is
 * cut out (`scan`), so only what `decode` keeps outlives the loop. The daemon's Pod list read, in
 * one place for the client and for the bench that times it (`bench/podList.ts`).
 */
export const readList = <A>(body: Buffer, decode: (json: unknown) => Option.Option<A>): ListRead<A> => {
  const items: Array<A> = []
  let unparsable = false
  const read = scan(body, (text) => {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      unparsable = true
      return false
    }
    const item = decode(json)
    if (Option.isNone(item)) return false
    items.push(item.value)
    return true
  })
  if (read._tag === "Malformed" || unparsable) return { _tag: "Malformed" }
  if (read._tag === "Stopped") return { _tag: "Undecodable" }
  return { _tag: "Read", items, metadata: read.metadata, hasItems: read.items }
}
