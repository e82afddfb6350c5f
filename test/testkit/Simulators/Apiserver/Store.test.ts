import { assert, describe, it } from "@effect/vitest"
import { Nodes, Pods, Sandboxes } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import { type HistoryEntry, ObjectStore } from "../../../../testkit/Simulators/Apiserver/Store.ts"

const podObject = (name: string) => ({ metadata: { name, namespace: "default" }, spec: {}, kind: "Pod", apiVersion: "v1" })

describe("ObjectStore", () => {
  it("hands out one resourceVersion per write, shared by all resources, and stores it in the object", () => {
    const store = new ObjectStore(10, () => undefined)
    const a = store.commit(Pods, "default", "a", "ADDED", podObject("a"), undefined)
    const n = store.commit(Nodes, "", "n", "ADDED", { metadata: { name: "n" } }, undefined)
    assert.strictEqual(store.rv, 2)
    assert.strictEqual((a["metadata"] as Record<string, unknown>)["resourceVersion"], "1")
    assert.strictEqual((n["metadata"] as Record<string, unknown>)["resourceVersion"], "2")
    assert.strictEqual(store.lookup(Pods, "default", "a")?.["kind"], "Pod")
    assert.strictEqual(store.lookup(Pods, "other", "a"), undefined)
  })

  it("stores typed objects in the server's key order and custom resources with sorted keys; returns a copy", () => {
    const store = new ObjectStore(10, () => undefined)
    const returned = store.commit(Pods, "default", "a", "ADDED", podObject("a"), undefined)
    assert.deepStrictEqual(Object.keys(store.lookup(Pods, "default", "a") ?? {}), ["kind", "apiVersion", "metadata", "spec"])
    assert.deepStrictEqual(Object.keys(store.lookup(Pods, "default", "a")?.["metadata"] as object), ["name", "namespace", "resourceVersion"])
    ;(returned["metadata"] as Record<string, unknown>)["name"] = "changed"
    assert.strictEqual((store.lookup(Pods, "default", "a")?.["metadata"] as Record<string, unknown>)["name"], "a")
    store.commit(Sandboxes, "default", "s", "ADDED", { spec: { b: 1, a: 2 }, metadata: { name: "s" }, kind: "Sandbox" }, undefined)
    assert.deepStrictEqual(Object.keys(store.lookup(Sandboxes, "default", "s") ?? {}), ["kind", "metadata", "spec"])
    assert.deepStrictEqual(Object.keys(store.lookup(Sandboxes, "default", "s")?.["spec"] as object), ["a", "b"])
  })

  it("a DELETED write removes the object and still takes a resourceVersion", () => {
    const store = new ObjectStore(10, () => undefined)
    store.commit(Pods, "default", "a", "ADDED", podObject("a"), undefined)
    const before = store.lookup(Pods, "default", "a")
    store.commit(Pods, "default", "a", "DELETED", podObject("a"), before)
    assert.strictEqual(store.lookup(Pods, "default", "a"), undefined)
    assert.strictEqual(store.rv, 2)
    assert.deepStrictEqual(store.history.map((h) => h.type), ["ADDED", "DELETED"])
    assert.strictEqual(store.history[1].prev, before)
  })

  it("tells the listener about each write after storing it, before commit returns", () => {
    const seen: Array<string> = []
    const store: ObjectStore = new ObjectStore(10, (entry: HistoryEntry) => {
      seen.push(`${entry.type} ${entry.rv} stored=${store.lookup(Pods, "default", "a") !== undefined}`)
    })
    store.commit(Pods, "default", "a", "ADDED", podObject("a"), undefined)
    assert.deepStrictEqual(seen, ["ADDED 1 stored=true"])
  })

  it("keeps historySize writes; the oldest dropped one sets compactedRv", () => {
    const store = new ObjectStore(2, () => undefined)
    for (const name of ["a", "b", "c", "d"]) store.commit(Pods, "default", name, "ADDED", podObject(name), undefined)
    assert.deepStrictEqual(store.history.map((h) => h.rv), [3, 4])
    assert.strictEqual(store.compactedRv, 2)
    store.compact()
    assert.deepStrictEqual(store.history, [])
    assert.strictEqual(store.compactedRv, 4)
  })

  it("restore puts back the objects and the counter of a snapshot, with no history, independent of later writes", () => {
    const store = new ObjectStore(10, () => undefined)
    store.commit(Pods, "default", "a", "ADDED", podObject("a"), undefined)
    const snapshot = store.snapshot()
    store.commit(Pods, "default", "b", "ADDED", podObject("b"), undefined)
    ;(store.lookup(Pods, "default", "a")?.["metadata"] as Record<string, unknown>)["name"] = "mutated"
    store.restore(snapshot)
    assert.strictEqual(store.rv, 1)
    assert.strictEqual(store.compactedRv, 1)
    assert.deepStrictEqual(store.history, [])
    assert.strictEqual(store.lookup(Pods, "default", "b"), undefined)
    assert.strictEqual((store.lookup(Pods, "default", "a")?.["metadata"] as Record<string, unknown>)["name"], "a")
  })
})
