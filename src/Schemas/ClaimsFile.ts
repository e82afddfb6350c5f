/**
 * The on-disk claims file, in the Go daemon's format so a node can move between the two in either
 * direction (PER-1 — claims file format; PER-2 — timestamps at second precision):
 * `{"claims":{"<ns>/<name>":{"id":…,"token":…,"address":…,"podUID":…,"claimedAt":…,"deadline":…}}}`.
 * Writing reproduces the Go daemon's bytes exactly; reading is lenient where it is and strict where
 * leniency would lose a VM (PER-8 — loading the file). Unknown fields are kept and written back;
 * `intents` and a row's `owner` (AUTH-9 — a preserved VM is released once its owner goes) are
 * written only while they hold something.
 */
import { civilSecondsAt } from "./CivilTime.ts"
import { invalidJsonMessage } from "./Json.ts"
import { DateTime, Effect, Option, Redacted, Result, Schema } from "effect"
import type { ClaimIntent, ClaimRecord } from "./Claims.ts"
import type { ClaimId, PodKey } from "./Ids.ts"

/** The file's text is not a claims table (bad JSON, wrong shape, bad timestamp). */
export class ClaimsFileDecodeError extends Schema.TaggedError<ClaimsFileDecodeError>()("ClaimsFileDecodeError", {
  message: Schema.String
}) {}

const OptionalText = Schema.optionalKey(Schema.NullOr(Schema.String))

/** One row as found on disk (before timestamp parsing). */
export const ClaimsFileEntry = Schema.Struct({
  id: Schema.String,
  token: Schema.String,
  address: OptionalText,
  podUID: OptionalText,
  claimedAt: OptionalText,
  deadline: OptionalText,
  /** AUTH-9: the owner a preserved row waits on; this daemon's own, which the reference ignores. */
  owner: Schema.optionalKey(Schema.NullOr(Schema.Struct({
    apiVersion: Schema.String,
    kind: Schema.String,
    name: Schema.String,
    uid: Schema.String
  })))
})
export type ClaimsFileEntry = typeof ClaimsFileEntry.Type

/** One claim intent as found on disk. */
export const ClaimsFileIntent = Schema.Struct({
  podUID: OptionalText,
  sentAt: Schema.String
})

/** The whole file as found on disk (fields other than `claims` and `intents` are kept as raw text). */
export const ClaimsFileShape = Schema.Struct({
  claims: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, ClaimsFileEntry))),
  intents: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, ClaimsFileIntent)))
})
export type ClaimsFileShape = typeof ClaimsFileShape.Type

const decodeShape = Schema.decodeUnknownResult(ClaimsFileShape)

// RFC 3339 as Go's time.Parse(time.RFC3339) accepts it: optional fraction, `Z` or ±hh:mm.
const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/

/**
 * Parses an RFC 3339 timestamp (any offset, fractional seconds kept to the millisecond).
 * Go's zero time (`0001-01-01T00:00:00Z`) reads as none, like `null`.
 */
export const parseTimestamp = (text: string): Result.Result<Option.Option<DateTime.Utc>, string> => {
  const m = rfc3339.exec(text)
  if (m === null) return Result.fail(`not an RFC 3339 timestamp: ${JSON.stringify(text)}`)
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number
  ]
  const probe = new Date(0)
  probe.setUTCFullYear(year, month - 1, day)
  if (
    month < 1 || month > 12 || probe.getUTCMonth() !== month - 1 || probe.getUTCDate() !== day ||
    hour > 23 || minute > 59 || second > 59
  ) {
    return Result.fail(`timestamp out of range: ${JSON.stringify(text)}`)
  }
  let offsetMinutes = 0
  if (m[8] === undefined) {
    const oh = Number(m[10])
    const om = Number(m[11])
    if (oh > 23 || om > 59) return Result.fail(`timestamp offset out of range: ${JSON.stringify(text)}`)
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (oh * 60 + om)
  }
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, "0"))
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 onto 1900–1999.
  probe.setUTCHours(hour, minute, second, millis)
  const fixed = probe.getTime() - offsetMinutes * 60_000
  if (fixed === goZeroTimeMillis) return Result.succeed(Option.none())
  return Result.succeed(Option.some(DateTime.makeUnsafe(fixed)))
}

const goZeroTimeMillis = new Date(0).setUTCFullYear(1, 0, 1)

const parseOptionalTimestamp = (
  key: string,
  field: string,
  value: string | null | undefined
): Result.Result<Option.Option<DateTime.Utc>, string> => {
  if (value === undefined || value === null) return Result.succeed(Option.none())
  return Result.mapError(parseTimestamp(value), (message) => `claims[${JSON.stringify(key)}].${field}: ${message}`)
}

/** Decodes a parsed JSON value into the in-memory table (rows with no `claimedAt` keep None). */
export const decodeClaimsValue = (
  value: unknown
): Result.Result<ReadonlyMap<PodKey, ClaimRecord>, ClaimsFileDecodeError> => {
  const shape = decodeShape(value)
  if (Result.isFailure(shape)) return Result.fail(new ClaimsFileDecodeError({ message: shape.failure.message }))
  const rows = new Map<PodKey, ClaimRecord>()
  const claims = shape.success.claims
  if (claims === undefined || claims === null) {
    return Result.fail(
      new ClaimsFileDecodeError({
        message: `no "claims" object (the file holds ${claims === null ? `"claims":null` : "no claims member"}); ` +
          `a claims file is {"claims":{…}}, and only a missing file starts an empty table`
      })
    )
  }
  for (const key of Object.keys(claims)) {
    const entry = claims[key]!
    const claimedAt = parseOptionalTimestamp(key, "claimedAt", entry.claimedAt)
    if (Result.isFailure(claimedAt)) return Result.fail(new ClaimsFileDecodeError({ message: claimedAt.failure }))
    const deadline = parseOptionalTimestamp(key, "deadline", entry.deadline)
    if (Result.isFailure(deadline)) return Result.fail(new ClaimsFileDecodeError({ message: deadline.failure }))
    rows.set(key as PodKey, {
      id: entry.id as ClaimId,
      token: Redacted.make(entry.token),
      address: entry.address ?? "",
      podUID: entry.podUID ?? "",
      claimedAt: claimedAt.success,
      deadline: deadline.success,
      ...(entry.owner === undefined || entry.owner === null
        ? {}
        : { owner: { apiVersion: entry.owner.apiVersion, kind: entry.owner.kind, name: entry.owner.name, uid: entry.owner.uid } })
    })
  }
  return Result.succeed(rows)
}

// ---------------------------------------------------------------------------------------------
// The file's text, member by member: where each key is (for error positions), which keys repeat
// (JSON.parse keeps the last silently), and the exact text of the fields this version does not
// know (JSON.parse would round numbers past 2^53). Runs only on text JSON.parse accepted.

interface RawMember {
  readonly key: string
  /** Where the member's key starts. */
  readonly at: number
  /** The key as written, quotes and escapes included. */
  readonly keyText: string
  readonly valueStart: number
  readonly valueEnd: number
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
const skipSpace = (text: string, i: number): number => {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++
  return i
}
/** `text[i]` is the opening quote; returns the index after the closing one. */
const endOfString = (text: string, i: number): number => {
  for (i++; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x5c) i++
    else if (c === 0x22) return i + 1
  }
  return i
}
const endOfValue = (text: string, i: number): number => {
  const first = text.charCodeAt(i)
  if (first === 0x22) return endOfString(text, i)
  if (first === 0x7b || first === 0x5b) {
    let depth = 0
    while (i < text.length) {
      const c = text.charCodeAt(i)
      if (c === 0x22) {
        i = endOfString(text, i)
        continue
      }
      if (c === 0x7b || c === 0x5b) depth++
      else if ((c === 0x7d || c === 0x5d) && --depth === 0) return i + 1
      i++
    }
    return i
  }
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (isSpace(c) || c === 0x2c || c === 0x7d || c === 0x5d) return i
    i++
  }
  return i
}
/** The members of the object whose `{` is at `open`. */
const membersOf = (text: string, open: number): ReadonlyArray<RawMember> => {
  const members: Array<RawMember> = []
  let i = skipSpace(text, open + 1)
  if (text.charCodeAt(i) === 0x7d) return members
  while (i < text.length) {
    const keyEnd = endOfString(text, i)
    const keyText = text.slice(i, keyEnd)
    const valueStart = skipSpace(text, skipSpace(text, keyEnd) + 1)
    const valueEnd = endOfValue(text, valueStart)
    members.push({ key: JSON.parse(keyText) as string, at: i, keyText, valueStart, valueEnd })
    i = skipSpace(text, valueEnd)
    if (text.charCodeAt(i) !== 0x2c) break
    i = skipSpace(text, i + 1)
  }
  return members
}
/** The value's text without the whitespace outside its strings. */
const compact = (text: string): string => {
  let out = ""
  let from = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      i = endOfString(text, i) - 1
    } else if (isSpace(c)) {
      out += text.slice(from, i)
      from = i + 1
    }
  }
  return out + text.slice(from)
}
const memberText = (text: string, m: RawMember): string => `${m.keyText}:${compact(text.slice(m.valueStart, m.valueEnd))}`

/** `line L column C` (1-based) of offset `at`. */
export const positionOf = (text: string, at: number): string => {
  let line = 1
  let lineStart = 0
  for (let i = 0; i < at; i++) {
    if (text.charCodeAt(i) === 0x0a) {
      line++
      lineStart = i + 1
    }
  }
  return `line ${line} column ${at - lineStart + 1}`
}

const knownRowFields: ReadonlySet<string> = new Set(["id", "token", "address", "podUID", "claimedAt", "deadline", "owner"])
/** What a token may hold: visible ASCII, as an HTTP header can carry it. */
const printableToken = /^[\x21-\x7e]+$/

/** The first key that repeats among `members`, with where it repeats. */
const repeated = (members: ReadonlyArray<RawMember>): RawMember | undefined => {
  const seen = new Set<string>()
  for (const m of members) {
    if (seen.has(m.key)) return m
    seen.add(m.key)
  }
  return undefined
}

/** The decoded file: its rows, its claim intents, and its other top-level members as raw text. */
export interface ClaimsDocument {
  readonly rows: ReadonlyMap<PodKey, ClaimRecord>
  readonly intents: ReadonlyMap<PodKey, ClaimIntent>
  /** `"name":value,…` (compact), or "" when the file has no other member. */
  readonly unknownMembers: string
  /**
   * Present when the text is byte for byte what the writer makes of these rows and intents
   * (`encodeClaimsFile(rows, membersAfterClaims(intents, ""))`) and `readWrittenText` read it: where each row's member
   * (`"key":{…}`, exactly `encodeClaimMember(key, record)`) starts and ends in the text, in the
   * rows' order (sorted by key). The store's encoder starts from these bytes instead of encoding
   * every row again for the startup write.
   */
  readonly writtenMembers?: WrittenMembers
}

/** Text offsets of each row's member, one entry per row in the rows' order; `[starts[i], ends[i])`. */
export interface WrittenMembers {
  readonly starts: ReadonlyArray<number>
  readonly ends: ReadonlyArray<number>
}

const decodeIntents = (value: unknown): Result.Result<ReadonlyMap<PodKey, ClaimIntent>, ClaimsFileDecodeError> => {
  const out = new Map<PodKey, ClaimIntent>()
  const shape = decodeShape(value)
  if (Result.isFailure(shape)) return Result.fail(new ClaimsFileDecodeError({ message: shape.failure.message }))
  const intents = shape.success.intents
  if (intents === undefined || intents === null) return Result.succeed(out)
  for (const key of Object.keys(intents)) {
    const sentAt = parseTimestamp(intents[key]!.sentAt)
    // An intent without a time could not tell its claim's sandboxes from older ones: refused.
    if (Result.isFailure(sentAt) || Option.isNone(sentAt.success)) {
      const why = Result.isFailure(sentAt) ? sentAt.failure : "the zero time"
      return Result.fail(new ClaimsFileDecodeError({ message: `intents[${JSON.stringify(key)}].sentAt: ${why}` }))
    }
    out.set(key as PodKey, { key: key as PodKey, podUID: intents[key]!.podUID ?? "", sentAt: sentAt.success.value })
  }
  return Result.succeed(out)
}

// ---------------------------------------------------------------------------------------------
// The file as the writer writes it, read from its text alone: the one fast reader. The full decode
// above (a Schema walk of every row, scans of the text for keys written twice, a timestamp pattern
// per field) cost several times as much on a 10,000-row file at every restart. The writer's text
// has one layout only, so this reads it straight: the fixed punctuation and field names at their
// places, each string up to its closing quote. The text is taken only when it holds nothing the
// writer escapes (`\`, control characters, `<`, `>`, `&`, U+2028, U+2029, surrogates), so each
// string's encoding is the text between its quotes, and the text read is exactly the writer's
// output for the rows read, with the full decode's checks (keys sorted, tokens printable, one key
// per id, timestamps as written). Anything else (an escape, a space, an unknown field, a
// `__proto__` key) returns undefined and the file takes the full decode, which then gives the same
// rows or the error naming the problem; test/Schemas/ClaimsFile.test.ts proves the two equal with
// fast-check on written files and on any change to them.

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
 * The instant of the 20 characters `YYYY-MM-DDTHH:MM:SSZ` at `at` in milliseconds, as
 * `parseTimestamp` reads them; NaN when they are not a valid timestamp in that form.
 */
export const writtenTimeAt = (text: string, at: number): number =>
  text.charCodeAt(at + 19) === 0x5a ? civilSecondsAt(text, at) : NaN

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
      rows.set(key as PodKey, { id: id as ClaimId, token: Redacted.make(token), address, podUID, claimedAt, deadline })
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
      intents.set(key as PodKey, { key: key as PodKey, podUID, sentAt: sentAt.value })
    } while (next(","))
    if (!next("}")) return undefined
  }
  if (!next("}") || at !== text.length) return undefined
  return { rows, intents, unknownMembers: "", writtenMembers: { starts, ends } }
}

const parseClaimsText = (text: string): Result.Result<unknown, ClaimsFileDecodeError> => {
  try {
    return Result.succeed(JSON.parse(text))
  } catch (cause) {
    return Result.fail(new ClaimsFileDecodeError({ message: invalidJsonMessage(cause) }))
  }
}

/**
 * Decodes the file's text. Empty text, truncated JSON and a top-level array are errors. The
 * writer's own text is read as text (`readWrittenText`), any other by the full decode.
 */
export const decodeClaimsDocument = (text: string): Result.Result<ClaimsDocument, ClaimsFileDecodeError> => {
  const read = readWrittenText(text)
  return read !== undefined ? Result.succeed(read) : decodeClaimsDocumentInFull(text)
}

/** `decodeClaimsDocument` without the fast reader: the definition the tests hold it to. */
export const decodeClaimsDocumentInFull = (text: string): Result.Result<ClaimsDocument, ClaimsFileDecodeError> =>
  Result.flatMap(parseClaimsText(text), (value) => decodeInFull(text, value))

const decodeInFull = (text: string, value: unknown): Result.Result<ClaimsDocument, ClaimsFileDecodeError> => {
  const fail = (message: string) => Result.fail(new ClaimsFileDecodeError({ message }))
  const decoded = decodeClaimsValue(value)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  // The shape is an object whose `claims` is an object of objects, so the scan below meets only those.
  const top = membersOf(text, skipSpace(text, 0))
  const topTwice = repeated(top)
  if (topTwice !== undefined) return fail(`member ${topTwice.keyText} written twice (${positionOf(text, topTwice.at)})`)
  const claimsMember = top.find((m) => m.key === "claims")!
  const unknownMembers = top.filter((m) => m.key !== "claims" && m.key !== "intents").map((m) => memberText(text, m)).join(",")
  const intents = decodeIntents(value)
  if (Result.isFailure(intents)) return Result.fail(intents.failure)
  const keys = membersOf(text, claimsMember.valueStart)
  const rows = new Map<PodKey, ClaimRecord>()
  const keyOfId = new Map<string, string>()
  const seenKeys = new Set<string>()
  for (const member of keys) {
    // Only for a message: where a row sits takes a scan from the file's start, and one per row
    // made a 10,000-row file cost 10,000 scans of the whole file.
    const row = () => `row ${member.keyText} (${positionOf(text, member.at)})`
    if (seenKeys.has(member.key)) return fail(`${row()}: the key is written twice`)
    seenKeys.add(member.key)
    const fields = membersOf(text, member.valueStart)
    const fieldTwice = repeated(fields)
    if (fieldTwice !== undefined) {
      return fail(`${row()}: field ${fieldTwice.keyText} written twice (${positionOf(text, fieldTwice.at)})`)
    }
    const record = decoded.success.get(member.key as PodKey)!
    const token = Redacted.value(record.token)
    if (token === "") return fail(`${row()}: empty token`)
    if (!printableToken.test(token)) return fail(`${row()}: the token holds characters other than visible ASCII`)
    const other = keyOfId.get(record.id)
    if (other !== undefined) {
      return fail(`${row()}: claim id ${JSON.stringify(record.id)} is already the claim of row ${JSON.stringify(other)}`)
    }
    keyOfId.set(record.id, member.key)
    const unknown = fields.filter((f) => !knownRowFields.has(f.key))
    rows.set(
      member.key as PodKey,
      unknown.length === 0 ? record : { ...record, unknownFields: unknown.map((f) => memberText(text, f)).join(",") }
    )
  }
  return Result.succeed({ rows, intents: intents.success, unknownMembers })
}

/** Decodes the file's text into its rows (see `decodeClaimsDocument`). */
export const decodeClaimsFile = (
  text: string
): Effect.Effect<ReadonlyMap<PodKey, ClaimRecord>, ClaimsFileDecodeError> =>
  Effect.suspend(() => Effect.fromResult(Result.map(decodeClaimsDocument(text), (document) => document.rows)))

// ---------------------------------------------------------------------------------------------
// Encoding

const goEscapes = /[<>&\u2028\u2029]/g
const goEscapeOne = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

/** A JSON string literal escaped as Go's encoding/json escapes it. */
export const goJsonString = (s: string): string => {
  const json = JSON.stringify(s)
  goEscapes.lastIndex = 0
  return goEscapes.test(json) ? json.replace(goEscapes, goEscapeOne) : json
}

/** `2026-07-27T02:15:00Z`: UTC, sub-second part cut (floored, like Go's formatting). */
export const formatTimestamp = (t: DateTime.Utc): string => {
  const seconds = Math.floor(DateTime.toEpochMillis(t) / 1000)
  const iso = new Date(seconds * 1000).toISOString()
  // toISOString gives `YYYY-MM-DDTHH:MM:SS.000Z` for years 0–9999.
  return `${iso.slice(0, 19)}Z`
}

/** `{"id":…,…}` for one record, the reference's field order and omissions. */
export const encodeClaimRecord = (record: ClaimRecord): string => {
  let out = `{"id":${goJsonString(record.id)},"token":${goJsonString(Redacted.value(record.token))}`
  if (record.address !== "") out += `,"address":${goJsonString(record.address)}`
  out += `,"podUID":${goJsonString(record.podUID)}`
  if (Option.isSome(record.claimedAt)) out += `,"claimedAt":"${formatTimestamp(record.claimedAt.value)}"`
  if (Option.isSome(record.deadline)) out += `,"deadline":"${formatTimestamp(record.deadline.value)}"`
  const owner = record.owner
  if (owner !== undefined) {
    out += `,"owner":{"apiVersion":${goJsonString(owner.apiVersion)},"kind":${goJsonString(owner.kind)},` +
      `"name":${goJsonString(owner.name)},"uid":${goJsonString(owner.uid)}}`
  }
  if (record.unknownFields !== undefined && record.unknownFields !== "") out += `,${record.unknownFields}`
  return `${out}}`
}

/** `"ns/name":{…}`: one member of the `claims` object. */
export const encodeClaimMember = (key: PodKey, record: ClaimRecord): string =>
  `${goJsonString(key)}:${encodeClaimRecord(record)}`

/**
 * Go sorts map keys by their UTF-8 bytes, i.e. by code point. JavaScript's `<` compares UTF-16
 * code units, which differs only between surrogates and U+E000–U+FFFF; remap those.
 */
export const compareKeys = (a: string, b: string): number => {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) {
      const rx = x >= 0xd800 ? (x >= 0xe000 ? x - 0x800 : x + 0x2000) : x
      const ry = y >= 0xd800 ? (y >= 0xe000 ? y - 0x800 : y + 0x2000) : y
      return rx - ry
    }
  }
  return a.length - b.length
}

/**
 * What follows the `claims` object: `,` and the other top-level members, or nothing. `members`
 * is `"name":value,…` (see `ClaimsDocument.unknownMembers`).
 */
export const trailerOf = (members: string): string => (members === "" ? "" : `,${members}`)

/** Assembles the file from `claims` members that are already encoded and sorted by key. */
export const assembleClaimsFile = (sortedMembers: ReadonlyArray<string>, otherMembers = ""): string =>
  `{"claims":{${sortedMembers.join(",")}}${trailerOf(otherMembers)}}`

/**
 * The whole file, the reference's exact bytes when there are no unknown fields. A fresh table is
 * `{"claims":{}}`. `otherMembers`: the top-level members after `claims` (`"name":value,…`).
 */
export const encodeClaimsFile = (rows: ReadonlyMap<PodKey, ClaimRecord>, otherMembers = ""): string => {
  const keys = Array.from(rows.keys()).sort(compareKeys)
  return assembleClaimsFile(keys.map((key) => encodeClaimMember(key, rows.get(key)!)), otherMembers)
}

/**
 * `"intents":{…}` for the intents, sorted by key; "" when there are none (the file then has no
 * `intents` member, as the reference writes it).
 */
export const encodeIntentsMember = (intents: ReadonlyMap<PodKey, ClaimIntent>): string => {
  if (intents.size === 0) return ""
  const keys = Array.from(intents.keys()).sort(compareKeys)
  const members = keys.map((key) => {
    const intent = intents.get(key)!
    return `${goJsonString(key)}:{"podUID":${goJsonString(intent.podUID)},"sentAt":"${formatTimestamp(intent.sentAt)}"}`
  })
  return `"intents":{${members.join(",")}}`
}

/** The top-level members after `claims`: the intents first, then the members this version does not know. */
export const membersAfterClaims = (intents: ReadonlyMap<PodKey, ClaimIntent>, unknownMembers: string): string => {
  const ours = encodeIntentsMember(intents)
  return ours === "" ? unknownMembers : unknownMembers === "" ? ours : `${ours},${unknownMembers}`
}
