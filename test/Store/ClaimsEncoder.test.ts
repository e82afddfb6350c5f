import { assert, describe, it } from "@effect/vitest"
import { DateTime, Option, Redacted } from "effect"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import { encodeClaimsFile } from "../../src/Schemas/ClaimsFile.ts"
import { type ClaimId, type PodKey, podKeyOf } from "../../src/Schemas/Ids.ts"
import { makeClaimsEncoder } from "../../src/Store/ClaimsEncoder.ts"

const record = (n: number): ClaimRecord => ({
  id: `sb_${n.toString(16).padStart(16, "0")}` as ClaimId,
  token: Redacted.make(`tok-${n}`),
  address: "10.0.0.1:7777",
  podUID: `uid-${n}`,
  claimedAt: Option.some(DateTime.makeUnsafe(Date.UTC(2026, 6, 27, 2, 15, n % 60))),
  deadline: Option.none()
})
const key = (n: number): PodKey => podKeyOf("ns", `pod-${n}`)
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")

describe("ClaimsEncoder", () => {
  it("a fresh table is {\"claims\":{}}, and so is a table emptied after rows", () => {
    const encode = makeClaimsEncoder()
    assert.strictEqual(text(encode(new Map())), `{"claims":{}}`)
    assert.strictEqual(text(encode(new Map([[key(1), record(1)]]))), encodeClaimsFile(new Map([[key(1), record(1)]])))
    assert.strictEqual(text(encode(new Map())), `{"claims":{}}`)
  })

  it("rows come out sorted by key whatever order the map iterates in", () => {
    const encode = makeClaimsEncoder()
    const rows = new Map<PodKey, ClaimRecord>([[key(9), record(9)], [key(1), record(1)], [key(5), record(5)]])
    const out = JSON.parse(text(encode(rows))) as { claims: Record<string, unknown> }
    assert.deepStrictEqual(Object.keys(out.claims), [key(1), key(5), key(9)])
  })

  it("the top-level members after claims follow the claims object, and can change between calls", () => {
    const encode = makeClaimsEncoder()
    const rows = new Map([[key(1), record(1)], [key(2), record(2)]])
    for (const other of ["", `"intents":{}`, `"intents":{"ns/x":{"uid":"u"}},"format":2`, ""]) {
      assert.strictEqual(text(encode(rows, other)), encodeClaimsFile(rows, other), other)
    }
    assert.isTrue(text(encode(rows, `"format":2`)).endsWith(`}},"format":2}`))
  })

  it("a row's unknown fields are written after its known ones", () => {
    const encode = makeClaimsEncoder()
    const rows = new Map([[key(1), { ...record(1), unknownFields: `"n":1` }]])
    assert.include(text(encode(rows)), `"claimedAt":"2026-07-27T02:15:01Z","n":1}`)
  })

  it("a new record object under an unchanged key is re-encoded, never served from the cache", () => {
    const encode = makeClaimsEncoder()
    encode(new Map([[key(1), record(1)], [key(2), record(2)]]))
    const next = new Map([[key(1), record(1)], [key(2), { ...record(2), address: "10.9.9.9:1" }]])
    assert.strictEqual(text(encode(next)), encodeClaimsFile(next))
  })

  it("the cached encoder always equals a fresh encoding: exactly the rows given (random churn)", () => {
    const encode = makeClaimsEncoder()
    const rows = new Map<PodKey, ClaimRecord>()
    let seed = 7
    const rand = (m: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % m
    }
    for (let round = 0; round < 300; round++) {
      const ops = 1 + rand(round % 10 === 0 ? 60 : 3)
      for (let i = 0; i < ops; i++) {
        const k = key(rand(80))
        if (rand(3) === 0) rows.delete(k)
        else rows.set(k, record(rand(1000)))
      }
      const view = new Map([...rows].filter(() => rand(10) !== 0)) // some rows excluded from this write
      assert.strictEqual(Buffer.from(encode(view)).toString("utf8"), encodeClaimsFile(view))
      if (round % 7 === 0) assert.strictEqual(Buffer.from(encode(view)).toString("utf8"), encodeClaimsFile(view), "unchanged")
    }
  })

})
