import { assert, describe, it } from "@effect/vitest"
import { DateTime, Option, Redacted } from "effect"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import { type ClaimId, type PodKey, podKeyOf } from "../../src/Schemas/Ids.ts"
import { RowsView } from "../../src/Store/RowsView.ts"

const record = (n: number): ClaimRecord => ({
  id: `sb_${n}` as ClaimId,
  token: Redacted.make(`tok-${n}`),
  address: "",
  podUID: `uid-${n}`,
  claimedAt: Option.some(DateTime.makeUnsafe(1_780_000_000_000)),
  deadline: Option.none()
})
const key = (n: number): PodKey => podKeyOf("ns", `pod-${n}`)

interface Row {
  readonly record: ClaimRecord
  readonly hidden: boolean
}

const base = new Map<PodKey, Row>([
  [key(1), { record: record(1), hidden: false }],
  [key(2), { record: record(2), hidden: true }],
  [key(3), { record: record(3), hidden: false }]
])
const view = () => new RowsView<Row>(base, (_, row) => !row.hidden, (row) => row.record)

describe("RowsView", () => {
  it("shows exactly the included rows, projected, through every read", () => {
    const v = view()
    assert.strictEqual(v.size, 2)
    assert.strictEqual(v.get(key(1))?.id, "sb_1")
    assert.isUndefined(v.get(key(2)), "an excluded row is not there")
    assert.isFalse(v.has(key(2)))
    assert.isFalse(v.has(key(9)))
    const seen: Array<string> = []
    v.forEach((r, k) => seen.push(`${k}=${r.id}`))
    assert.deepStrictEqual(seen, [`${key(1)}=sb_1`, `${key(3)}=sb_3`])
    assert.deepStrictEqual([...v.keys()], [key(1), key(3)])
    assert.deepStrictEqual([...v.values()].map((r) => r.id), ["sb_1", "sb_3"])
    assert.deepStrictEqual([...v].map(([k]) => k), [key(1), key(3)])
    assert.deepStrictEqual(new Map(v.entries()).get(key(3))?.id, "sb_3")
  })

  it("the include rule can look at the key", () => {
    const v = new RowsView<Row>(base, (k) => k !== key(1), (row) => row.record)
    assert.deepStrictEqual([...v.keys()], [key(2), key(3)])
  })
})
