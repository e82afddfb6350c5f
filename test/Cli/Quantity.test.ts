import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { parseCapacityQuantity, parseQuantity } from "../../src/Cli/Quantity.ts"

const value = (text: string): number => {
  const result = parseQuantity(text)
  if (Result.isFailure(result)) return assert.fail(`"${text}" rejected: ${result.failure}`)
  assert.strictEqual(result.success.text, text)
  return result.success.value
}

describe("parseQuantity", () => {
  it("accepts Kubernetes quantities", () => {
    const cases: ReadonlyArray<[string, number]> = [
      ["4000", 4000],
      ["2000", 2000],
      ["0", 0],
      ["8Ti", 8 * 2 ** 40],
      ["1Ki", 1024],
      ["1.5Gi", 1.5 * 2 ** 30],
      ["1Ei", 2 ** 60],
      ["500m", 0.5],
      ["1k", 1000],
      ["1M", 1e6],
      ["1G", 1e9],
      ["1T", 1e12],
      ["1P", 1e15],
      ["1E", 1e18],
      ["1n", 1e-9],
      ["1u", 1e-6],
      ["2e3", 2000],
      ["2E3", 2000],
      ["2e+3", 2000],
      ["25e-1", 2.5],
      ["1.", 1],
      [".5", 0.5],
      ["1.G", 1e9],
      ["+4", 4],
      ["-4", -4],
      ["007", 7]
    ]
    for (const [text, expected] of cases) assert.closeTo(value(text), expected, Math.abs(expected) * 1e-12, text)
  })

  it("rejects anything else", () => {
    for (const text of ["", "abc", "8TB", "8ti", "8KI", "1Kb", "1 Gi", " 1", "1 ", "Gi", ".", "-", "1e", "1e+", "1e1.5", "1.5.5", "0x10", "1,000", "1i", "1Gii", "e3"]) {
      assert.isTrue(Result.isFailure(parseQuantity(text)), `"${text}" should be rejected`)
    }
  })

  it("rejects negative capacities", () => {
    const result = parseCapacityQuantity("-1")
    assert.isTrue(Result.isFailure(result) && result.failure.includes("negative"))
    assert.isTrue(Result.isSuccess(parseCapacityQuantity("0")))
  })
})
