import { assert, describe, it } from "@effect/vitest"
import { Leases, Nodes, Pods, Sandboxes } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"
import { updatedObject, updatePreconditions } from "../../../../testkit/Simulators/Apiserver/Update.ts"

const stored = (extra: JsonObject = {}): JsonObject => ({
  kind: "Pod",
  apiVersion: "v1",
  metadata: { name: "p", namespace: "default", uid: "u1", resourceVersion: "5", creationTimestamp: "2026-07-27T02:00:00Z", generation: 1 },
  spec: { nodeName: "n1", containers: [{ name: "c", image: "i" }] },
  status: { phase: "Running", qosClass: "BestEffort" },
  ...extra
})

describe("update", () => {
  it("preconditions: a foreign uid is 409 before the resourceVersion is looked at; a stale resourceVersion 409", () => {
    assert.strictEqual(updatePreconditions(Pods, "p", "default", { metadata: { uid: "u2", resourceVersion: "5" } }, stored(), true)?.reason, "Conflict")
    assert.match(updatePreconditions(Pods, "p", "default", { metadata: { uid: "u2" } }, stored(), true)?.message ?? "", /Precondition failed: UID in precondition: u2, UID in object meta: u1/)
    assert.match(updatePreconditions(Pods, "p", "default", { metadata: { resourceVersion: "4" } }, stored(), true)?.message ?? "", /the object has been modified/)
    assert.isUndefined(updatePreconditions(Pods, "p", "default", { metadata: { resourceVersion: "5" } }, stored(), true))
  })

  it("no resourceVersion: pods as configured, nodes yes, leases and custom resources 422 naming the resource", () => {
    assert.isUndefined(updatePreconditions(Pods, "p", "default", { metadata: {} }, stored(), true))
    assert.strictEqual(updatePreconditions(Pods, "p", "default", { metadata: {} }, stored(), false)?.code, 422)
    assert.isUndefined(updatePreconditions(Nodes, "n", "", { metadata: { resourceVersion: "0" } }, stored(), false))
    assert.strictEqual(updatePreconditions(Leases, "l", "default", { metadata: {} }, stored(), true)?.message, "leases.coordination.k8s.io \"l\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update")
    assert.strictEqual(updatePreconditions(Sandboxes, "s", "default", { metadata: {} }, stored(), true)?.code, 422)
  })

  it("main resource: the stored status is kept, system metadata comes from storage, a spec change bumps generation", () => {
    const next = updatedObject(Pods, "p", "default", {
      metadata: { name: "p", uid: "forged", creationTimestamp: "1999-01-01T00:00:00Z", generation: 9, labels: { a: "1" } },
      spec: { nodeName: "n1", containers: [{ name: "c", image: "i2" }] },
      status: { phase: "Failed" }
    }, stored(), undefined)
    assert.deepStrictEqual(next["status"], { phase: "Running", qosClass: "BestEffort" })
    assert.deepStrictEqual(next["metadata"], {
      name: "p",
      uid: "u1",
      creationTimestamp: "2026-07-27T02:00:00Z",
      generation: 2,
      labels: { a: "1" },
      namespace: "default",
      resourceVersion: "5"
    })
  })

  it("status subresource: the stored spec is kept (and, for a custom resource, everything but the status)", () => {
    const next = updatedObject(Pods, "p", "default", { kind: "Pod", apiVersion: "v1", metadata: {}, spec: { nodeName: "elsewhere" }, status: { phase: "Succeeded", podIP: "10.0.0.1" } }, stored(), "status")
    assert.deepStrictEqual(next["spec"], stored()["spec"])
    assert.deepStrictEqual(next["status"], { phase: "Succeeded", podIP: "10.0.0.1", podIPs: [{ ip: "10.0.0.1" }], qosClass: "BestEffort" })
    assert.strictEqual((next["metadata"] as JsonObject)["generation"], 1)
    const sandbox = { kind: "Sandbox", metadata: { name: "s", uid: "u", resourceVersion: "3", generation: 1 }, spec: { operatingMode: "Running", shutdownPolicy: "Retain" } }
    const cr = updatedObject(Sandboxes, "s", "default", { metadata: { labels: { dropped: "yes" } }, spec: { operatingMode: "Paused" }, status: { ready: true } }, sandbox, "status")
    assert.deepStrictEqual(cr["spec"], sandbox.spec)
    assert.deepStrictEqual(cr["status"], { ready: true })
    assert.strictEqual((cr["metadata"] as JsonObject)["labels"], undefined)
  })
})
