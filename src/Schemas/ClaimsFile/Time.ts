/**
 * The claims file's timestamps (PER-2 — timestamps at second precision): read as Go's
 * `time.Parse(time.RFC3339)` reads them, written as Go formats them, whole seconds in UTC.
 */
import { civilSecondsAt } from "../CivilTime.ts"
import { DateTime, Option, Result } from "effect"

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

export const goZeroTimeMillis = new Date(0).setUTCFullYear(1, 0, 1)

/**
 * The instant of the 20 characters `YYYY-MM-DDTHH:MM:SSZ` at `at` in milliseconds, as
 * `parseTimestamp` reads them; NaN when they are not a valid timestamp in that form.
 */
export const writtenTimeAt = (text: string, at: number): number =>
  text.charCodeAt(at + 19) === 0x5a ? civilSecondsAt(text, at) : NaN

/** `2026-07-27T02:15:00Z`: UTC, sub-second part cut (floored, like Go's formatting). */
export const formatTimestamp = (t: DateTime.Utc): string => {
  const seconds = Math.floor(DateTime.toEpochMillis(t) / 1000)
  const iso = new Date(seconds * 1000).toISOString()
  // toISOString gives `YYYY-MM-DDTHH:MM:SS.000Z` for years 0–9999.
  return `${iso.slice(0, 19)}Z`
}
