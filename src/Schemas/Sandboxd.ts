/**
 * sandboxd wire shapes and deadline handling.
 *
 * Decoding is deliberately lenient where Go's encoding/json is (unknown keys ignored, `null`
 * for a scalar means "absent") and strict where our contract demands it: a list body without a
 * `sandboxes` array is a decode failure, never an empty listing (VER-4 — failed listing vs empty
 * listing).
 */
import { DateTime, Option, Schema } from "effect"
import { civilSecondsAt, daysInMonth, digitsAt } from "./CivilTime.ts"
import { ClaimId } from "./Ids.ts"

// ---- shared pieces -----------------------------------------------------------------------------

/** A string field Go would leave empty when absent or `null`. */
const OptionalText = Schema.optionalKey(Schema.NullOr(Schema.String))
const OptionalFlag = Schema.optionalKey(Schema.NullOr(Schema.Boolean))
const OptionalCount = Schema.optionalKey(Schema.NullOr(Schema.Int))

export const PoolKeyWire = Schema.Struct({
  template: OptionalText,
  net: OptionalText,
  size: OptionalText
})
export type PoolKeyWire = typeof PoolKeyWire.Type

/** `{"error":"…"}`, the body of every sandboxd error reply. */
export const ErrorBodyWire = Schema.Struct({ error: Schema.String })
export type ErrorBodyWire = typeof ErrorBodyWire.Type

// ---- POST /v1/claim ----------------------------------------------------------------------------

/** The claim request as sent: every optional field is omitted when empty or zero. */
export const ClaimRequestWire = Schema.Struct({
  template: Schema.String,
  net: Schema.optionalKey(Schema.String),
  size: Schema.optionalKey(Schema.String),
  ttl_seconds: Schema.optionalKey(Schema.Int),
  claim_ref: Schema.optionalKey(Schema.String),
  no_redirect: Schema.optionalKey(Schema.Boolean)
})
export type ClaimRequestWire = typeof ClaimRequestWire.Type

export interface ClaimRequestFields {
  readonly template: string
  readonly net: string
  readonly size: string
  readonly ttlSeconds: number
  readonly claimRef: string
}

/** Builds the wire body, omitting `net`/`size`/`claim_ref` when "" and `ttl_seconds` when 0. */
export const claimRequestBody = (spec: ClaimRequestFields): ClaimRequestWire => ({
  template: spec.template,
  ...(spec.net === "" ? {} : { net: spec.net }),
  ...(spec.size === "" ? {} : { size: spec.size }),
  ...(spec.ttlSeconds === 0 ? {} : { ttl_seconds: spec.ttlSeconds }),
  ...(spec.claimRef === "" ? {} : { claim_ref: spec.claimRef })
})

/**
 * A 200 claim reply: either a success (`id` non-empty) or a redirect. Both share one shape on the
 * wire; a body whose `id` is empty or absent (`{}`, a redirect) hands over no sandbox.
 */
export const ClaimResponseWire = Schema.Struct({
  id: OptionalText,
  token: OptionalText,
  deadline: OptionalText,
  owner_addr: OptionalText,
  redirect: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String))),
  require_promoted: OptionalFlag
})
export type ClaimResponseWire = typeof ClaimResponseWire.Type

// ---- GET /v1/sandboxes -------------------------------------------------------------------------

export const ListedSandboxWire = Schema.Struct({
  id: ClaimId.check(Schema.isNonEmpty()),
  key: Schema.optionalKey(Schema.NullOr(PoolKeyWire)),
  deadline: OptionalText,
  hibernated: OptionalFlag,
  archived: OptionalFlag,
  claim_ref: OptionalText,
  failed: OptionalText,
  claimed_at: OptionalText
})
export type ListedSandboxWire = typeof ListedSandboxWire.Type

/** The root by-id read `GET /v1/sandboxes/{id}`: a listing row plus, in newer revisions, `token`. */
export const SandboxDetailWire = Schema.Struct({
  ...ListedSandboxWire.fields,
  token: OptionalText
})
export type SandboxDetailWire = typeof SandboxDetailWire.Type

/** `sandboxes` is required and must be an array: `{}` and `null` are decode failures. */
export const ListResponseWire = Schema.Struct({
  sandboxes: Schema.Array(ListedSandboxWire)
})
export type ListResponseWire = typeof ListResponseWire.Type

// ---- GET /v1/info ------------------------------------------------------------------------------

export const PoolInfoWire = Schema.Struct({
  key: PoolKeyWire,
  warm: OptionalCount,
  refilling: OptionalCount,
  target: OptionalCount,
  golden: OptionalFlag
})
export type PoolInfoWire = typeof PoolInfoWire.Type

/** `pools` is required (the server always writes an array) so a `{}` is never "no capacity". */
export const InfoResponseWire = Schema.Struct({
  pools: Schema.Array(PoolInfoWire),
  claimed: OptionalCount,
  hibernated: OptionalCount,
  archived: OptionalCount,
  failed: OptionalCount,
  draining: OptionalFlag,
  peers: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String)))
})
export type InfoResponseWire = typeof InfoResponseWire.Type

// ---- deadlines ---------------------------------------------------------------------------------

/** Go's zero `time.Time` as encoding/json writes it: sandboxd's "keep forever". */
export const ZERO_TIME = "0001-01-01T00:00:00Z"

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/

/**
 * Parses an RFC 3339 instant with any offset and up to 9 fractional digits (truncated to the
 * millisecond). `None` for absent, empty, unparsable, or Go's zero time: "no known expiry".
 */
export const parseDeadline = (text: string | null | undefined): Option.Option<DateTime.Utc> => {
  if (text === null || text === undefined || text === "") return Option.none()
  const epochMillis = deadlineMillisByPosition(text) ?? deadlineMillisByPattern(text)
  if (epochMillis === undefined || epochMillis === ZERO_TIME_EPOCH_MILLIS) return Option.none()
  return Option.some(DateTime.makeUnsafe(epochMillis))
}

/**
 * The usual shape, as Go writes it (`2026-07-27T02:15:00.123456789Z`, `…+02:00`), read by
 * position: a listing of 10,000 sandboxes has 20,000 of these at a restart. Undefined for
 * anything else, which the pattern below then reads (or refuses); the two are held to the same
 * result in test/Schemas/Sandboxd.test.ts.
 */
const deadlineMillisByPosition = (text: string): number | undefined => {
  const n = text.length
  const whole = n < 20 ? NaN : civilSecondsAt(text, 0)
  if (Number.isNaN(whole)) return undefined
  let i = 19
  let millis = 0
  if (text.charCodeAt(i) === 0x2e) {
    const from = ++i
    for (; i < n && i < from + 10; i++) {
      const d = text.charCodeAt(i) - 0x30
      if (!(d >= 0 && d <= 9)) break
      if (i < from + 3) millis = millis * 10 + d
    }
    const digits = i - from
    if (digits === 0 || digits > 9) return undefined
    for (let k = digits; k < 3; k++) millis *= 10
  }
  const zone = text.charCodeAt(i)
  let offsetMinutes = 0
  if (zone === 0x5a) {
    if (i + 1 !== n) return undefined
  } else if ((zone === 0x2b || zone === 0x2d) && i + 6 === n && text.charCodeAt(i + 3) === 0x3a) {
    const offsetHours = digitsAt(text, i + 1, 2)
    const minutes = digitsAt(text, i + 4, 2)
    if (offsetHours < 0 || offsetHours > 23 || minutes < 0 || minutes > 59) return undefined
    offsetMinutes = (zone === 0x2d ? -1 : 1) * (offsetHours * 60 + minutes)
  } else {
    return undefined
  }
  return whole + millis - offsetMinutes * 60_000
}

/** The definition: every shape RFC 3339 allows here, by pattern. Undefined when unparsable. */
export const deadlineMillisByPattern = (text: string): number | undefined => {
  const m = RFC3339.exec(text)
  if (m === null) return undefined
  const year = Number(m[1])
  const month = Number(m[2])
  const day = Number(m[3])
  const hour = Number(m[4])
  const minute = Number(m[5])
  const second = Number(m[6])
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined
  if (hour > 23 || minute > 59 || second > 59) return undefined
  const offsetHours = m[10] === undefined ? 0 : Number(m[10])
  const offsetMinutes = m[11] === undefined ? 0 : Number(m[11])
  if (offsetHours > 23 || offsetMinutes > 59) return undefined
  const millis = m[7] === undefined ? 0 : Number(m[7].padEnd(9, "0").slice(0, 3))
  // Date.UTC maps years 0–99 onto the 1900s; setUTCFullYear keeps the real year.
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, millis))
  date.setUTCFullYear(year)
  const sign = m[9] === "-" ? -1 : 1
  return date.getTime() - sign * (offsetHours * 60 + offsetMinutes) * 60_000
}

const ZERO_TIME_EPOCH_MILLIS = (() => {
  const date = new Date(Date.UTC(2000, 0, 1, 0, 0, 0, 0))
  date.setUTCFullYear(1)
  return date.getTime()
})()

const pad = (n: number, width: number): string => String(n).padStart(width, "0")

/**
 * Formats an instant the way Go's encoding/json writes a `time.Time` in a local zone: RFC 3339
 * with up to 9 fractional digits (trailing zeros trimmed) and the zone's offset (`Z` for UTC).
 * Used by the simulator so the client meets offsets and nanoseconds, as from a real daemon.
 */
export const formatDeadline = (epochNanos: bigint, offsetMinutes: number): string => {
  // Floor division: BigInt division truncates toward zero, which would give an instant before
  // 1970 a negative sub-millisecond part.
  const subMilliNanos = Number(((epochNanos % 1_000_000n) + 1_000_000n) % 1_000_000n)
  const epochMillis = Number((epochNanos - BigInt(subMilliNanos)) / 1_000_000n)
  const local = new Date(epochMillis + offsetMinutes * 60_000)
  const fractionNanos = local.getUTCMilliseconds() * 1_000_000 + subMilliNanos
  const fraction = fractionNanos === 0 ? "" : `.${pad(fractionNanos, 9).replace(/0+$/, "")}`
  const zone = offsetMinutes === 0
    ? "Z"
    : `${offsetMinutes < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offsetMinutes) / 60), 2)}:${
      pad(Math.abs(offsetMinutes) % 60, 2)
    }`
  return `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1, 2)}-${pad(local.getUTCDate(), 2)}T${
    pad(local.getUTCHours(), 2)
  }:${pad(local.getUTCMinutes(), 2)}:${pad(local.getUTCSeconds(), 2)}${fraction}${zone}`
}
