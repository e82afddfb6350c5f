/**
 * The on-disk claims file (reference-behaviour.md PER-1, PER-2, PER-8; ARCHITECTURE.md §6.12):
 * `{"claims":{"<ns>/<name>":{"id":…,"token":…,"address":…,"podUID":…,"claimedAt":…,"deadline":…}}}`.
 *
 * Writing reproduces the reference's bytes exactly: compact, keys sorted, field order fixed,
 * `address` omitted when "", `podUID` always, timestamps omitted when none and written as
 * second-precision UTC (`2026-07-27T02:15:00Z`), strings escaped the way Go's encoding/json
 * escapes them (`<`, `>`, `&`, U+2028, U+2029 as `\uXXXX`), so a node can move between the two
 * daemons in either direction. Reading is lenient where the reference is: indentation, fractional
 * seconds, any UTC offset, `null` timestamps, a missing or `null` `claims`, unknown keys.
 */
import { invalidJsonMessage } from "./Json.ts"
import { DateTime, Effect, Option, Redacted, Result, Schema } from "effect"
import type { ClaimRecord } from "./Claims.ts"
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
  deadline: OptionalText
})
export type ClaimsFileEntry = typeof ClaimsFileEntry.Type

/** The whole file as found on disk. Unknown keys are ignored (Schema's default). */
export const ClaimsFileShape = Schema.Struct({
  claims: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, ClaimsFileEntry)))
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
  if (claims === undefined || claims === null) return Result.succeed(rows)
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
      deadline: deadline.success
    })
  }
  return Result.succeed(rows)
}


/** Decodes the file's text. Empty text, truncated JSON and a top-level array are errors. */
export const decodeClaimsFile = (
  text: string
): Effect.Effect<ReadonlyMap<PodKey, ClaimRecord>, ClaimsFileDecodeError> =>
  Effect.suspend(() => {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (cause) {
      return Effect.fail(new ClaimsFileDecodeError({ message: invalidJsonMessage(cause) }))
    }
    return Effect.fromResult(decodeClaimsValue(value))
  })

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

/** Assembles the file from `claims` members that are already encoded and sorted by key. */
export const assembleClaimsFile = (sortedMembers: ReadonlyArray<string>): string =>
  `{"claims":{${sortedMembers.join(",")}}}`

/** The whole file, the reference's exact bytes. A fresh table is `{"claims":{}}`. */
export const encodeClaimsFile = (rows: ReadonlyMap<PodKey, ClaimRecord>): string => {
  const keys = Array.from(rows.keys()).sort(compareKeys)
  return assembleClaimsFile(keys.map((key) => encodeClaimMember(key, rows.get(key)!)))
}
