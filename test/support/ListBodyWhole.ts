/**
 * The list scan as it was before it read chunks (`src/Kube/ListBody.ts` then read one buffer
 * holding the whole body), kept unchanged as an independent second reading: the chunked scan must
 * give exactly what this one gives for any body, malformed ones included, however it is cut.
 */
import type { ListScan } from "../../src/Kube/ListBody.ts"

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
export const wholeScan = (body: Buffer, item: (text: string) => boolean): ListScan => {
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

