import { assert, describe, it } from "@effect/vitest"
import { pathKey } from "../../../../testkit/Simulators/Apiserver/Fields.ts"
import { managedEntries, managedEntry, recordManager, setManagedFields } from "../../../../testkit/Simulators/Apiserver/ManagedFields.ts"
import type { JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"

const clock = (start: number) => {
  let t = start
  let reads = 0
  return { now: () => (reads++, t), advance: (ms: number) => void (t += ms), reads: () => reads }
}
const owners = (o: JsonObject) =>
  managedEntries(o).map((e) => `${e.manager}/${e.operation}${e.subresource === undefined ? "" : `/${e.subresource}`}: ${[...e.fields].sort().join(" ")} @${e.time}`)

describe("managedFields", () => {
  it("an entry as the server writes it: FieldsV1, the subresource only when there is one; the clock read only when no time is given", () => {
    const c = clock(Date.parse("2026-07-27T02:00:00Z"))
    const entry = managedEntry("m", "Update", "v1", new Set([pathKey(["spec", "a"])]), undefined, c.now)
    assert.deepStrictEqual(entry, { manager: "m", operation: "Update", apiVersion: "v1", time: "2026-07-27T02:00:00Z", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:a": {} } } })
    assert.strictEqual(managedEntry("m", "Apply", "v1", new Set(), "status", c.now, "then")["subresource"], "status")
    assert.strictEqual(c.reads(), 1)
    const o: JsonObject = { metadata: { managedFields: [entry] } }
    setManagedFields(o, [])
    assert.deepStrictEqual(o, { metadata: {} })
  })

  it("an update: the writer owns what it changed, others lose changed or removed fields, a manager with none is dropped", () => {
    const c = clock(Date.parse("2026-07-27T02:00:00Z"))
    const first: JsonObject = { apiVersion: "v1", metadata: { labels: { x: "1" } }, spec: { a: 1, b: 1 } }
    recordManager(first, undefined, "one", "Update", undefined, c.now)
    assert.deepStrictEqual(owners(first), ["one/Update: [\"metadata\",\"labels\",\"x\"] [\"spec\",\"a\"] [\"spec\",\"b\"] @2026-07-27T02:00:00Z"])
    c.advance(60_000)
    // "two" changes spec.a and removes spec.b: "one" keeps only the label
    const second: JsonObject = { apiVersion: "v1", metadata: { labels: { x: "1" }, managedFields: (first["metadata"] as JsonObject)["managedFields"] }, spec: { a: 2 } }
    recordManager(second, first, "two", "Update", "status", c.now)
    assert.deepStrictEqual(owners(second), [
      "one/Update: [\"metadata\",\"labels\",\"x\"] @2026-07-27T02:00:00Z",
      "two/Update/status: [\"spec\",\"a\"] @2026-07-27T02:01:00Z"
    ])
    // the label removed: "one" owns nothing and is dropped
    const third: JsonObject = { apiVersion: "v1", metadata: { managedFields: (second["metadata"] as JsonObject)["managedFields"] }, spec: { a: 2 } }
    recordManager(third, second, "two", "Update", "status", c.now)
    assert.deepStrictEqual(owners(third), ["two/Update/status: [\"spec\",\"a\"] @2026-07-27T02:01:00Z"])
  })

  it("a write that changes nothing keeps the writer's time; no manager given is \"unknown\"", () => {
    const c = clock(Date.parse("2026-07-27T02:00:00Z"))
    const a: JsonObject = { metadata: {}, spec: { a: 1 } }
    recordManager(a, undefined, undefined, "Update", undefined, c.now)
    c.advance(60_000)
    const b: JsonObject = { metadata: { managedFields: (a["metadata"] as JsonObject)["managedFields"] }, spec: { a: 1 } }
    recordManager(b, a, undefined, "Update", undefined, c.now)
    assert.deepStrictEqual(owners(b), ["unknown/Update: [\"spec\",\"a\"] @2026-07-27T02:00:00Z"])
  })
})
