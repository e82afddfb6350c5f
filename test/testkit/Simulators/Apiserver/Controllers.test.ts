import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { collectGarbage, finalizeNamespace, nodeLifecycle } from "../../../../testkit/Simulators/Apiserver/Controllers.ts"
import { AllResources, Leases, Namespaces, Nodes, Pods } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"
import { ObjectStore } from "../../../../testkit/Simulators/Apiserver/Store.ts"

const put = (store: ObjectStore, r: typeof Pods, ns: string, name: string, extra: JsonObject = {}) =>
  store.commit(r, ns, name, "ADDED", { ...extra, metadata: { name, ...(ns === "" ? {} : { namespace: ns }), uid: `uid-${name}`, ...(extra["metadata"] as object | undefined) } }, undefined)

const ownedBy = (kind: string, name: string, apiVersion = "v1") => ({ metadata: { ownerReferences: [{ apiVersion, kind, name, uid: `uid-${name}` }] } })

describe("controllers the model plays", () => {
  it("garbage collection deletes what has all its owners gone, skips unknown owner kinds and objects being deleted", () => {
    const store = new ObjectStore(100, () => undefined)
    put(store, Nodes, "", "alive")
    put(store, Pods, "default", "orphan", ownedBy("Node", "gone"))
    put(store, Pods, "default", "kept", ownedBy("Node", "alive"))
    put(store, Pods, "default", "foreign", ownedBy("ReplicaSet", "rs", "apps/v1"))
    put(store, Pods, "default", "leaving", { metadata: { ...ownedBy("Node", "gone").metadata, deletionTimestamp: "2026-07-27T02:00:00Z" } })
    put(store, Leases, "default", "free")
    const asked: Array<string> = []
    const deleted = collectGarbage(AllResources, store, (r, ns, name) => {
      asked.push(`${r.plural}/${ns}/${name}`)
      return name === "orphan" ? Result.succeed(undefined) : Result.fail(undefined as never)
    })
    assert.deepStrictEqual(asked, ["pods/default/orphan"])
    assert.deepStrictEqual(deleted, ["pods/default/orphan"])
  })

  it("the namespace sweep removes every object in the namespace, then the namespace, each with a DELETED write", () => {
    const types: Array<string> = []
    const store = new ObjectStore(100, (entry) => types.push(`${entry.type} ${entry.resource.plural}`))
    put(store, Namespaces, "", "team")
    put(store, Pods, "team", "a")
    put(store, Leases, "team", "l")
    put(store, Pods, "other", "b")
    types.length = 0
    finalizeNamespace(AllResources, store, "team")
    assert.deepStrictEqual(types, ["DELETED pods", "DELETED leases", "DELETED namespaces"])
    assert.isDefined(store.lookup(Pods, "other", "b"))
  })

  it("the node lifecycle removes the not-ready taint as kube-controller-manager once Ready is True", () => {
    const store = new ObjectStore(100, () => undefined)
    const now = () => Date.parse("2026-07-27T02:00:00Z")
    put(store, Nodes, "", "n", { spec: { taints: [{ key: "node.kubernetes.io/not-ready", effect: "NoSchedule" }] } })
    nodeLifecycle(store, "n", now)
    assert.strictEqual(store.rv, 1)
    store.commit(Nodes, "", "n", "MODIFIED", { ...store.lookup(Nodes, "", "n"), status: { conditions: [{ type: "Ready", status: "True" }] } }, store.lookup(Nodes, "", "n"))
    nodeLifecycle(store, "n", now)
    assert.strictEqual(store.rv, 3)
    const node = store.lookup(Nodes, "", "n") ?? {}
    assert.deepStrictEqual(node["spec"], {})
    const managers = ((node["metadata"] as JsonObject)["managedFields"] as Array<JsonObject>).map((e) => e["manager"])
    assert.deepStrictEqual(managers, ["kube-controller-manager"])
    nodeLifecycle(store, "missing", now)
    assert.strictEqual(store.rv, 3)
  })
})
