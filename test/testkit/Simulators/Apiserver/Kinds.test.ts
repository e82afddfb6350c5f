import { assert, describe, it } from "@effect/vitest"
import {
  eventErrors,
  leaseErrors,
  prepareForCreate,
  terminatingNamespace,
  withoutNotReadyTaint
} from "../../../../testkit/Simulators/Apiserver/Kinds.ts"
import { CoreEvents, EventsV1, Leases, Namespaces, NodeInventories, Nodes, Sandboxes } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"

const notReady = { key: "node.kubernetes.io/not-ready", effect: "NoSchedule" }

describe("per-kind rules", () => {
  it("a new Node gets the not-ready taint only when the model plays node admission, and only once", () => {
    const plain: JsonObject = { spec: { taints: [{ key: "mine", effect: "NoSchedule" }] } }
    prepareForCreate(Nodes, plain, false)
    assert.deepStrictEqual(plain["spec"], { taints: [{ key: "mine", effect: "NoSchedule" }] })
    const admitted: JsonObject = { spec: { taints: [{ key: "mine", effect: "NoSchedule" }] } }
    prepareForCreate(Nodes, admitted, true)
    assert.deepStrictEqual(admitted["spec"], { taints: [{ key: "mine", effect: "NoSchedule" }, notReady] })
    const already: JsonObject = { spec: { taints: [notReady] } }
    prepareForCreate(Nodes, already, true)
    assert.deepStrictEqual(already["spec"], { taints: [notReady] })
  })

  it("the lifecycle controller drops the not-ready taint once Ready is True, and not before", () => {
    const node = { spec: { taints: [notReady] }, status: { conditions: [{ type: "Ready", status: "False" }] } }
    assert.isUndefined(withoutNotReadyTaint(node))
    const ready = { ...node, status: { conditions: [{ type: "Ready", status: "True" }] } }
    assert.deepStrictEqual(withoutNotReadyTaint(ready)?.["spec"], {})
    assert.isUndefined(withoutNotReadyTaint({ spec: {}, status: ready.status }))
  })

  it("namespaces: created Active with the kubernetes finalizer and name label; a DELETE makes them Terminating once", () => {
    const ns: JsonObject = { metadata: { name: "team" } }
    prepareForCreate(Namespaces, ns, false)
    assert.deepStrictEqual(ns, {
      metadata: { name: "team", labels: { "kubernetes.io/metadata.name": "team" } },
      spec: { finalizers: ["kubernetes"] },
      status: { phase: "Active" }
    })
    const ending = terminatingNamespace(ns, Date.parse("2026-07-27T02:00:00.5Z"))
    assert.strictEqual((ending?.["metadata"] as JsonObject)["deletionTimestamp"], "2026-07-27T02:00:00Z")
    assert.deepStrictEqual(ending?.["status"], { phase: "Terminating" })
    assert.isUndefined(terminatingNamespace(ending ?? {}, 0))
  })

  it("custom resources: status ignored on create when there is a status subresource; Sandbox schema defaults", () => {
    const sandbox: JsonObject = { spec: {}, status: { phase: "Forged" } }
    prepareForCreate(Sandboxes, sandbox, false)
    assert.deepStrictEqual(sandbox, { spec: { operatingMode: "Running", shutdownPolicy: "Retain" } })
    const inventory: JsonObject = { spec: {}, status: { x: 1 } }
    prepareForCreate(NodeInventories, inventory, false)
    assert.strictEqual(inventory["status"] === undefined, NodeInventories.subresources.includes("status"))
  })

  it("events: core/v1 checks involvedObject.namespace; events.k8s.io/v1 requires the reporting fields and a known type", () => {
    assert.deepStrictEqual(eventErrors(CoreEvents, { metadata: { namespace: "default" }, involvedObject: {} }), [])
    assert.deepStrictEqual(eventErrors(CoreEvents, { metadata: { namespace: "ns1" }, involvedObject: {} }).map((e) => e.field), ["involvedObject.namespace"])
    assert.deepStrictEqual(eventErrors(CoreEvents, { metadata: { namespace: "ns1" }, involvedObject: { namespace: "ns2" } }).map((e) => e.field), ["involvedObject.namespace"])
    assert.deepStrictEqual(eventErrors(EventsV1, { type: "Odd", reason: "R" }).map((e) => e.field), [
      "eventTime",
      "reportingController",
      "reportingInstance",
      "action",
      "type"
    ])
  })

  it("leases: a duration, when given, is positive", () => {
    assert.deepStrictEqual(leaseErrors(Leases, { spec: { leaseDurationSeconds: 40 } }), [])
    assert.deepStrictEqual(leaseErrors(Leases, { spec: {} }), [])
    assert.deepStrictEqual(leaseErrors(Leases, { spec: { leaseDurationSeconds: 0 } }).map((e) => e.detail), ["must be greater than 0"])
    assert.deepStrictEqual(leaseErrors(Nodes, { spec: { leaseDurationSeconds: 0 } }), [])
  })
})
