/**
 * The claims file as the writer writes it, read from its text alone: the one fast reader. The full
 * decode (`Decode.ts`: a Schema walk of every row, scans for keys written twice, a timestamp
 * pattern per field) cost several times as much on a 10,000-row file at every restart. Anything
 * but the writer's own layout with nothing escaped returns undefined and takes the full decode,
 * which then gives the same rows or the error naming the problem; test/Schemas/ClaimsFile.test.ts
 * proves the two equal with fast-check on written files and on any change to them.
 */
import { DateTime, Option, Redacted } from "effect"
import type { ClaimIntent, ClaimRecord } from "../Claims.ts"
import { claimIdOfText, type PodKey, podKeyOfText } from "../Ids.ts"
import { type ClaimsDocument, printableToken } from "./Schema.ts"
import { goZeroTimeMillis, writtenTimeAt } from "./Time.ts"

// The writer's text has one layout only, so this reads it straight: the fixed punctuation and
// field names at their places, each string up to its closing quote. The text is taken only when it
// holds nothing the writer escapes (`\`, control characters, `<`, `>`, `&`, U+2028, U+2029,
// surrogates), so each string's encoding is the text between its quotes, and the text read is
// exactly the writer's output for the rows read, with the full decode's checks (keys sorted, tokens
// printable, one key per id, timestamps as written).

const QUOTE = 0x22

/**
 * What the writer escapes, anywhere in the text. The writer's own text has none of it outside its
 * strings either (compact JSON, no whitespace), so a text without any of it has only strings the
 * writer wrote as is.
 */
const escapedByTheWriter = /[\u0000-\u001f\\<>&\u2028\u2029\ud800-\udfff]/

/** The ASCII characters in `escapedByTheWriter`. */
const asciiEscapedByTheWriter = Array.from({ length: 0x20 }, (_, c) => String.fromCharCode(c)).concat(["\\", "<", ">", "&"])

/**
 * `escapedByTheWriter.test(text)`, cheaper for the usual file. The reader runs once per process,
 * before the JIT has optimized anything, and the pattern looked at each of a 10,000-row file's
 * 2.3 MB in turn (10-25 ms). A text whose UTF-8 length is its length is ASCII (any other character
 * is two or more bytes, a lone surrogate three), so it holds no U+2028, U+2029 or surrogate, and
 * the rest are 36 characters, each found or not by a native search of the text (~2 ms together).
 */
const holdsEscapedByTheWriter = (text: string): boolean => {
  if (Buffer.byteLength(text, "utf8") !== text.length) return escapedByTheWriter.test(text)
  for (const c of asciiEscapedByTheWriter) if (text.includes(c)) return true
  return false
}

/**
 * The rows and intents of `text` when it is exactly the file the writer makes of them and every
 * string in it is written as is (see above); undefined otherwise.
 */
export const readWrittenText = (text: string): ClaimsDocument | undefined => {
  let at = 0
  /** Consumes `expected` at the cursor; false when the text differs there. */
  const next = (expected: string): boolean => {
    if (!text.startsWith(expected, at)) return false
    at += expected.length
    return true
  }
  /** The string at the cursor (written as is: see `escapedByTheWriter`), the cursor moved past it. */
  const string = (): string | undefined => {
    if (text.charCodeAt(at) !== QUOTE) return undefined
    const end = text.indexOf(`"`, at + 1)
    if (end < 0) return undefined
    const value = text.slice(at + 1, end)
    at = end + 1
    return value
  }
  // Rows of one claim run share their times: each distinct text is read once.
  const times = new Map<string, Option.Some<DateTime.Utc>>()
  /** `"YYYY-MM-DDTHH:MM:SSZ"` at the cursor, the cursor moved past it; undefined when not that. */
  const time = (): Option.Some<DateTime.Utc> | undefined => {
    if (text.charCodeAt(at) !== QUOTE || text.charCodeAt(at + 21) !== QUOTE) return undefined
    const written = text.slice(at + 1, at + 21)
    let known = times.get(written)
    if (known === undefined) {
      const millis = writtenTimeAt(text, at + 1)
      // The zero time reads as none, which the writer leaves out: not as written.
      if (Number.isNaN(millis) || millis === goZeroTimeMillis) return undefined
      known = Option.some(DateTime.makeUnsafe(millis)) as Option.Some<DateTime.Utc>
      times.set(written, known)
    }
    at += 22
    return known
  }
  if (holdsEscapedByTheWriter(text) || !next(`{"claims":{`)) return undefined
  const rows = new Map<PodKey, ClaimRecord>()
  const starts: Array<number> = []
  const ends: Array<number> = []
  const ids = new Set<string>()
  let previousKey: string | undefined
  if (text.charCodeAt(at) !== 0x7d) {
    while (true) {
      const start = at
      const key = string()
      // The writer sorts the keys; a file in another order is read in full (and written sorted).
      // With no surrogate in the text, `>=` on code units is `compareKeys` (code points) >= 0.
      if (key === undefined || key === "__proto__" || (previousKey !== undefined && previousKey >= key)) {
        return undefined
      }
      previousKey = key
      if (!next(`:{"id":`)) return undefined
      const id = string()
      if (id === undefined || ids.has(id) || !next(`,"token":`)) return undefined
      ids.add(id)
      const token = string()
      if (token === undefined || !printableToken.test(token)) return undefined
      let address = ""
      if (next(`,"address":`)) {
        const written = string()
        // The writer leaves an empty address out.
        if (written === undefined || written === "") return undefined
        address = written
      }
      if (!next(`,"podUID":`)) return undefined
      const podUID = string()
      if (podUID === undefined) return undefined
      let claimedAt: Option.Option<DateTime.Utc> = Option.none()
      if (next(`,"claimedAt":`)) {
        const written = time()
        if (written === undefined) return undefined
        claimedAt = written
      }
      let deadline: Option.Option<DateTime.Utc> = Option.none()
      if (next(`,"deadline":`)) {
        const written = time()
        if (written === undefined) return undefined
        deadline = written
      }
      if (!next("}")) return undefined
      starts.push(start)
      ends.push(at)
      rows.set(podKeyOfText(key), { id: claimIdOfText(id), token: Redacted.make(token), address, podUID, claimedAt, deadline })
      if (!next(",")) break
    }
  }
  if (!next("}")) return undefined
  const intents = new Map<PodKey, ClaimIntent>()
  if (next(`,"intents":{`)) {
    // The writer leaves the member out when there is no intent.
    previousKey = undefined
    do {
      const key = string()
      if (key === undefined || key === "__proto__" || (previousKey !== undefined && previousKey >= key)) {
        return undefined
      }
      previousKey = key
      if (!next(`:{"podUID":`)) return undefined
      const podUID = string()
      if (podUID === undefined || !next(`,"sentAt":`)) return undefined
      const sentAt = time()
      if (sentAt === undefined || !next("}")) return undefined
      const intentKey = podKeyOfText(key)
      intents.set(intentKey, { key: intentKey, podUID, sentAt: sentAt.value })
    } while (next(","))
    if (!next("}")) return undefined
  }
  if (!next("}") || at !== text.length) return undefined
  return { rows, intents, unknownMembers: "", writtenMembers: { starts, ends } }
}
