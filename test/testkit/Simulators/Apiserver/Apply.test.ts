import { assert, describe, it } from "@effect/vitest"
import { applyRequest, firstApplied, mergeApply } from "../../../../testkit/Simulators/Apiserver/Apply.ts"
import { pathKey } from "../../../../testkit/Simulators/Apiserver/Fields.ts"
import { managedEntry } from "../../../../testkit/Simulators/Apiserver/ManagedFields.ts"
import { NodeInventories, Pods } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"
import { ok, refused } from "./fixtures.ts"

const now = () => Date.parse("2026-07-27T02:00:00Z")
const inventory = (spec: JsonObject): JsonObject => ({ apiVersion: "sandbox.cocoonstack.io/v1alpha1", kind: "NodeInventory", metadata: { name: "n" }, spec })
const owned = (manager: string, operation: string, paths: ReadonlyArray<ReadonlyArray<string>>) =>
  managedEntry(manager, operation, "sandbox.cocoonstack.io/v1alpha1", new Set(paths.map(pathKey)), undefined, now, "2026-07-27T01:00:00Z")

describe("server-side apply", () => {
  it("the request: a field manager (422), an object (400), apiVersion and kind (400), the URL's name (400)", () => {
    const good = { apiVersion: NodeInventories.group + "/" + NodeInventories.version, kind: NodeInventories.kind, metadata: { name: "n" } }
    assert.strictEqual(refused(applyRequest(NodeInventories, "n", undefined, good)).code, 422)
    assert.strictEqual(refused(applyRequest(NodeInventories, "n", "", good)).code, 422)
    assert.strictEqual(refused(applyRequest(NodeInventories, "n", "m", [])).code, 400)
    assert.strictEqual(refused(applyRequest(NodeInventories, "n", "m", { kind: "NodeInventory" })).message, "invalid object type: /, Kind=NodeInventory")
    assert.strictEqual(refused(applyRequest(NodeInventories, "other", "m", good)).message, "the name of the object (n) does not match the name on the URL (other)")
    assert.deepStrictEqual(ok(applyRequest(NodeInventories, "n", "m", good)), good)
  })

  it("a first apply creates the object under the URL's name and namespace, without the applier's server fields", () => {
    const created = firstApplied(Pods, { metadata: { name: "p", creationTimestamp: null, managedFields: [] } }, "p", "default")
    assert.deepStrictEqual(created, { metadata: { name: "p", namespace: "default" } })
  })

  it("a field another manager owns with another value is a conflict (409), listed per manager; force takes it over", () => {
    const stored = inventory({ a: 1, b: 1 })
    ;(stored["metadata"] as JsonObject)["managedFields"] = [owned("other", "Update", [["spec", "a"], ["spec", "b"]])]
    const one = refused(mergeApply(NodeInventories, stored, inventory({ a: 2 }), "me", {}))
    assert.strictEqual(one.code, 409)
    assert.strictEqual(one.message, "Apply failed with 1 conflict: conflict with \"other\": .spec.a")
    assert.strictEqual(refused(mergeApply(NodeInventories, stored, inventory({ a: 2, b: 2 }), "me", {})).message, "Apply failed with 2 conflicts: conflicts with \"other\":\n- .spec.a\n- .spec.b")
    const forced = ok(mergeApply(NodeInventories, stored, inventory({ a: 2 }), "me", { force: true }))
    assert.deepStrictEqual(forced.next["spec"], { a: 2, b: 1 })
    assert.deepStrictEqual(forced.entries.map((e) => [e.manager, [...e.fields]]), [["other", [pathKey(["spec", "b"])]], ["me", [pathKey(["spec", "a"])]]])
    // the same value is no conflict: both own it
    assert.deepStrictEqual(ok(mergeApply(NodeInventories, stored, inventory({ a: 1 }), "me", {})).entries.map((e) => e.manager), ["other", "me"])
  })

  it("a field the applier owned and no longer sends is removed, unless another manager owns it", () => {
    const stored = inventory({ a: 1, b: 1, c: 1 })
    ;(stored["metadata"] as JsonObject)["managedFields"] = [
      owned("me", "Apply", [["spec", "a"], ["spec", "b"], ["spec", "c"]]),
      owned("other", "Update", [["spec", "c"]])
    ]
    const merged = ok(mergeApply(NodeInventories, stored, inventory({ a: 1 }), "me", {}))
    assert.deepStrictEqual(merged.next["spec"], { a: 1, c: 1 })
    // changed something: the applier's time is left to the writer
    assert.strictEqual(merged.entries.find((e) => e.manager === "me")?.time, undefined)
    const unchanged = ok(mergeApply(NodeInventories, stored, inventory({ a: 1, b: 1, c: 1 }), "me", {}))
    assert.strictEqual(unchanged.entries.find((e) => e.manager === "me")?.time, "2026-07-27T01:00:00Z")
  })
})
