import { assert, describe, it } from "@effect/vitest"
import { parseNodeLabels } from "../../src/Cli/NodeLabels.ts"

describe("parseNodeLabels (CFG-7)", () => {
  it("splits on commas and at the first '='", () => {
    assert.deepStrictEqual(parseNodeLabels("a=b,c=d=e"), { a: "b", c: "d=e" })
    assert.deepStrictEqual(
      parseNodeLabels("sandbox.cocoonstack.io/runtime=sandboxd"),
      { "sandbox.cocoonstack.io/runtime": "sandboxd" }
    )
  })

  it("trims items but not around the '='", () => {
    assert.deepStrictEqual(parseNodeLabels("  a=b , c=d\t"), { a: "b", c: "d" })
    assert.deepStrictEqual(parseNodeLabels("a = b"), { "a ": " b" })
  })

  it("keeps empty values, drops items without '=' or with an empty key", () => {
    assert.deepStrictEqual(parseNodeLabels("k=,nokey,=v,,x=y"), { k: "", x: "y" })
  })

  it("lets later duplicates win", () => {
    assert.deepStrictEqual(parseNodeLabels("a=1,b=2,a=3"), { a: "3", b: "2" })
  })

  it("yields no labels for an empty string", () => {
    assert.deepStrictEqual(parseNodeLabels(""), {})
    assert.deepStrictEqual(parseNodeLabels(" , ,"), {})
  })

  it("keeps odd keys as ordinary properties", () => {
    const labels = parseNodeLabels("__proto__=x")
    assert.strictEqual(Object.getOwnPropertyDescriptor(labels, "__proto__")?.value, "x")
  })
})
