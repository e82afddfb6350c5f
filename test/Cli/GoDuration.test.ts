import { assert, describe, it } from "@effect/vitest"
import { Duration, Result } from "effect"
import { parseGoDuration, parseGoDurationNanos } from "../../src/Cli/GoDuration.ts"

const nanos = (text: string): bigint => {
  const result = parseGoDurationNanos(text)
  if (Result.isFailure(result)) return assert.fail(`"${text}" rejected: ${result.failure}`)
  return result.success
}

const rejects = (text: string): string => {
  const result = parseGoDurationNanos(text)
  if (Result.isSuccess(result)) return assert.fail(`"${text}" accepted as ${result.success}ns`)
  return result.failure
}

describe("parseGoDuration", () => {
  it("accepts Go's syntax", () => {
    const cases: ReadonlyArray<[string, bigint]> = [
      ["0", 0n],
      ["+0", 0n],
      ["-0", 0n],
      ["60s", 60_000_000_000n],
      ["1m30s", 90_000_000_000n],
      ["500ms", 500_000_000n],
      ["1h", 3_600_000_000_000n],
      ["1.5s", 1_500_000_000n],
      [".5s", 500_000_000n],
      ["5.s", 5_000_000_000n],
      ["0s", 0n],
      ["0.000000001s", 1n],
      ["1.0000000019s", 1_000_000_001n], // truncated, as Go
      ["1ns", 1n],
      ["2us", 2_000n],
      ["2\u00b5s", 2_000n],
      ["2\u03bcs", 2_000n],
      ["1h2m3s4ms5us6ns", 3_723_004_005_006n],
      ["-1m", -60_000_000_000n],
      ["+1m", 60_000_000_000n],
      ["1s1s", 2_000_000_000n],
      ["2562047h47m16.854775807s", (1n << 63n) - 1n],
      ["-2562047h47m16.854775808s", -(1n << 63n)]
    ]
    for (const [text, expected] of cases) assert.strictEqual(nanos(text), expected, text)
  })

  it("rejects what Go rejects", () => {
    for (const text of ["", "5", "-", "+", "abc", ".", ".s", "s", "1", "1.5", "5 s", " 5s", "5s ", "1sm", "1d", "1S", "--1s", "1e3s", "0x10s"]) {
      rejects(text)
    }
    assert.include(rejects("5"), "missing unit")
    assert.include(rejects("1d"), `unknown unit "d"`)
  })

  it("rejects values beyond Go's int64 nanoseconds", () => {
    assert.include(rejects("2562047h47m16.854775808s"), "out of range")
    assert.include(rejects("9999999999999999999h"), "out of range")
    assert.include(rejects("-2562047h47m16.854775809s"), "out of range")
  })

  it("yields an Effect Duration equal to the same length", () => {
    const parsed = parseGoDuration("1m30s")
    assert.isTrue(Result.isSuccess(parsed) && Duration.equals(parsed.success, Duration.seconds(90)))
    const fine = parseGoDuration("1500ns")
    assert.isTrue(Result.isSuccess(fine) && Duration.toNanosUnsafe(fine.success) === 1500n)
    const negative = parseGoDuration("-5s")
    assert.isTrue(Result.isSuccess(negative) && Duration.isNegative(negative.success))
  })
})
