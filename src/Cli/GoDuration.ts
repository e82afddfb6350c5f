/**
 * Go's `time.ParseDuration` syntax (CFG-4 — Go flag syntax), so flag values written for the Go
 * daemon keep working: an optional sign, then one or more `<decimal><unit>` terms (`1h30m`, `1.5s`,
 * `500ms`), or a bare `0`. Units: ns, us (also µs/μs), ms, s, m, h. A number without a unit (`5`)
 * is rejected, like Go. Arithmetic is exact (BigInt nanoseconds); the range is Go's int64
 * nanoseconds.
 */
import { Duration, Result } from "effect"

const nanosPerUnit: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  "\u00b5s": 1_000n, // micro sign
  "\u03bcs": 1_000n, // Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n
}

const maxInt64 = (1n << 63n) - 1n
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9"

/** The signed length in nanoseconds, or the reason the text is not a Go duration. */
export const parseGoDurationNanos = (text: string): Result.Result<bigint, string> => {
  const invalid = Result.fail(`not a Go duration (want e.g. 60s, 1m30s, 500ms, 0)`)
  let rest = text
  let negative = false
  if (rest.startsWith("-") || rest.startsWith("+")) {
    negative = rest.startsWith("-")
    rest = rest.slice(1)
  }
  if (rest === "0") return Result.succeed(0n)
  if (rest === "") return invalid
  let total = 0n
  let i = 0
  while (i < rest.length) {
    const intStart = i
    while (isDigit(rest[i])) i++
    const intDigits = rest.slice(intStart, i)
    let fracDigits = ""
    if (rest[i] === ".") {
      i++
      const fracStart = i
      while (isDigit(rest[i])) i++
      fracDigits = rest.slice(fracStart, i)
    }
    if (intDigits === "" && fracDigits === "") return invalid
    const unitStart = i
    while (i < rest.length && rest[i] !== "." && !isDigit(rest[i])) i++
    const unitText = rest.slice(unitStart, i)
    if (unitText === "") return Result.fail(`missing unit in duration (want e.g. 60s, 1m30s, 500ms, 0)`)
    const unit = nanosPerUnit[unitText]
    if (unit === undefined) return Result.fail(`unknown unit ${JSON.stringify(unitText)} in duration (use ns, us, ms, s, m or h)`)
    // Fractions are truncated to whole nanoseconds, as Go does.
    const whole = BigInt(intDigits === "" ? "0" : intDigits) * unit
    const fraction = fracDigits === "" ? 0n : (BigInt(fracDigits) * unit) / 10n ** BigInt(fracDigits.length)
    total += whole + fraction
    if (total > maxInt64 + 1n) return Result.fail("duration out of range")
  }
  if (!negative && total > maxInt64) return Result.fail("duration out of range")
  return Result.succeed(negative ? -total : total)
}

/** Nanoseconds as a Duration; whole milliseconds are kept in the millisecond form. */
export const durationFromNanos = (nanos: bigint): Duration.Duration =>
  nanos % 1_000_000n === 0n && nanos / 1_000_000n <= BigInt(Number.MAX_SAFE_INTEGER) &&
    nanos / 1_000_000n >= BigInt(Number.MIN_SAFE_INTEGER)
    ? Duration.millis(Number(nanos / 1_000_000n))
    : Duration.nanos(nanos)

export const parseGoDuration = (text: string): Result.Result<Duration.Duration, string> =>
  Result.map(parseGoDurationNanos(text), durationFromNanos)
