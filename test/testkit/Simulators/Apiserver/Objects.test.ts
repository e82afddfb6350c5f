import { assert, describe, it } from "@effect/vitest"
import {
  bookmarkObject,
  finalizersOf,
  inWireOrder,
  labelsOf,
  listItem,
  metaOf,
  rfc3339,
  withoutResourceVersion
} from "../../../../testkit/Simulators/Apiserver/Objects.ts"
import { Pods, Sandboxes } from "../../../../testkit/Simulators/Apiserver/Resources.ts"

describe("object helpers", () => {
  it("metaOf creates the metadata map it is asked for; labels and finalizers keep only strings", () => {
    const o: Record<string, unknown> = {}
    metaOf(o)["name"] = "a"
    assert.deepStrictEqual(o, { metadata: { name: "a" } })
    const odd = { metadata: { labels: { a: "1", b: 2 }, finalizers: ["x", 3] } }
    assert.deepStrictEqual(labelsOf(odd), { a: "1" })
    assert.deepStrictEqual(finalizersOf(odd), ["x"])
  })

  it("rfc3339 drops the fraction (metav1.Time is whole seconds)", () => {
    assert.strictEqual(rfc3339(Date.parse("2026-07-27T02:00:00.987Z")), "2026-07-27T02:00:00Z")
  })

  it("wire order: typed objects in Go struct order (metadata too), custom resources sorted, undefined dropped", () => {
    const typed = inWireOrder({ spec: {}, metadata: { labels: {}, uid: "u", name: "a", extra: undefined }, apiVersion: "v1", kind: "Pod" }, Pods)
    assert.deepStrictEqual(Object.keys(typed), ["kind", "apiVersion", "metadata", "spec"])
    assert.deepStrictEqual(Object.keys(typed["metadata"] as object), ["name", "uid", "labels"])
    const custom = inWireOrder({ spec: { z: 1, a: { y: 1, b: 2 } }, kind: "Sandbox" }, Sandboxes)
    assert.deepStrictEqual(JSON.stringify(custom), JSON.stringify({ kind: "Sandbox", spec: { a: { b: 2, y: 1 }, z: 1 } }))
  })

  it("typed list items carry no kind or apiVersion; custom resources keep theirs; the stored object is untouched", () => {
    const stored = { kind: "Pod", apiVersion: "v1", metadata: { name: "a" } }
    assert.deepStrictEqual(listItem(Pods, stored), { metadata: { name: "a" } })
    assert.strictEqual(stored.kind, "Pod")
    assert.deepStrictEqual(listItem(Sandboxes, { kind: "Sandbox", metadata: {} }), { kind: "Sandbox", metadata: {} })
  })

  it("a bookmark carries only kind, apiVersion and the resourceVersion (typed: creationTimestamp null)", () => {
    assert.deepStrictEqual(bookmarkObject(Pods, 7), { kind: "Pod", apiVersion: "v1", metadata: { resourceVersion: "7", creationTimestamp: null } })
    assert.deepStrictEqual(bookmarkObject(Sandboxes, 7)["metadata"], { resourceVersion: "7" })
  })

  it("withoutResourceVersion is a copy without it", () => {
    const o = { metadata: { name: "a", resourceVersion: "3" } }
    assert.deepStrictEqual(withoutResourceVersion(o), { metadata: { name: "a" } })
    assert.strictEqual(o.metadata.resourceVersion, "3")
  })
})
