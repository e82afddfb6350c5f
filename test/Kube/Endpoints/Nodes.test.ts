/**
 * The Node and Lease endpoints on the wire: strategic-merge patches, MicroTimes with six
 * fractional digits, a Lease PUT that carries back what it read, the taint patch's resourceVersion.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { Lease } from "../../../src/Schemas/Lease.ts"
import { encodeTaints } from "../../../src/Schemas/Node.ts"
import { json, setup } from "../../support/KubeRecorder.ts"

const sixDigits = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

describe("Kube Node and Lease endpoints on the wire", () => {
  it.effect("patchNodeStatus sends a strategic merge patch", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { apiVersion: "v1", kind: "Node", metadata: { name: "vk" } }))
      const patch = { status: { conditions: [{ type: "Ready", status: "True" }] } }
      yield* kube.patchNodeStatus("vk", patch)
      const sent = rec.requests[0]!
      assert.strictEqual(sent.method, "PATCH")
      assert.strictEqual(sent.url.pathname, "/api/v1/nodes/vk/status")
      assert.strictEqual(sent.headers["content-type"], "application/strategic-merge-patch+json")
      assert.deepStrictEqual(JSON.parse(sent.body), patch)
      assert.strictEqual(sent.headers["authorization"], "Bearer recorder-token")
    }))

  it.effect("leases go out with six fractional digits, whatever RFC 3339 text the caller holds", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler((request) =>
        request.method === "GET"
          ? json(200, {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name: "vk", namespace: "kube-node-lease", resourceVersion: "7" },
            spec: { holderIdentity: "vk", renewTime: "2026-11-29T09:00:00.123456Z", acquireTime: null }
          })
          : { status: request.method === "POST" ? 201 : 200, body: request.body }
      )
      const lease: Lease = {
        metadata: { name: "vk", namespace: "kube-node-lease", resourceVersion: "7" },
        spec: {
          holderIdentity: "vk",
          leaseDurationSeconds: 40,
          acquireTime: "2026-11-29T09:00:00.5Z",
          renewTime: new Date("2026-11-29T09:00:01.25Z").toISOString()
        }
      }
      const created = yield* kube.createLease(lease)
      yield* kube.replaceLease({ ...lease, spec: { ...lease.spec, renewTime: "2026-11-29T09:00:02Z" } })
      const post = JSON.parse(rec.requests[0]!.body)
      const put = JSON.parse(rec.requests[1]!.body)
      assert.strictEqual(rec.requests[0]!.url.pathname, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
      assert.strictEqual(rec.requests[0]!.headers["content-type"], "application/json")
      assert.deepStrictEqual([post.apiVersion, post.kind], ["coordination.k8s.io/v1", "Lease"])
      assert.strictEqual(rec.requests[1]!.method, "PUT")
      assert.strictEqual(rec.requests[1]!.url.pathname, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vk")
      assert.strictEqual(post.spec.renewTime, "2026-11-29T09:00:01.250000Z")
      assert.strictEqual(post.spec.acquireTime, "2026-11-29T09:00:00.500000Z")
      assert.strictEqual(put.spec.renewTime, "2026-11-29T09:00:02.000000Z")
      assert.strictEqual(put.metadata.resourceVersion, "7")
      assert.match(put.spec.acquireTime, sixDigits)
      // what comes back is in the six-digit form too
      assert.strictEqual(created.spec?.renewTime, "2026-11-29T09:00:01.250000Z")

      // a lease read from the server keeps its microseconds when written back; a null is no field
      const read = yield* kube.getLease("vk")
      assert.strictEqual(read.spec?.renewTime, "2026-11-29T09:00:00.123456Z")
      assert.isFalse(read.spec !== undefined && "acquireTime" in read.spec)
      yield* kube.replaceLease(read)
      assert.strictEqual(JSON.parse(rec.requests[3]!.body).spec.renewTime, "2026-11-29T09:00:00.123456Z")
    }))

  it.effect("a lease PUT carries back every spec field and the metadata a PUT would clear", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const stored = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          name: "vk",
          namespace: "kube-node-lease",
          uid: "u-1",
          resourceVersion: "9",
          labels: { team: "a" },
          annotations: { note: "kept" },
          finalizers: ["example.com/hold"],
          ownerReferences: [{ apiVersion: "v1", kind: "Node", name: "vk", uid: "n-1" }],
          managedFields: [{ manager: "someone" }]
        },
        spec: {
          holderIdentity: "vk",
          leaseDurationSeconds: 40,
          acquireTime: "2026-11-29T09:00:00.000001Z",
          renewTime: "2026-11-29T09:00:05.000000Z",
          leaseTransitions: 3,
          strategy: "OldestEmulationVersion",
          preferredHolder: "other"
        }
      }
      rec.setHandler((request) => (request.method === "GET" ? json(200, stored) : { status: 200, body: request.body }))
      yield* kube.replaceLease(yield* kube.getLease("vk"))
      const { managedFields: _server, ...metadata } = stored.metadata
      assert.deepStrictEqual(JSON.parse(rec.requests[1]!.body), { ...stored, metadata })
    }))

  it.effect("node create and taint patch: the taint patch is strategic merge with the resourceVersion, and timeAdded survives", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const served = {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: "vk", uid: "n-1", resourceVersion: "12", creationTimestamp: "2026-11-29T08:00:00Z" },
        spec: {
          taints: [
            { key: "node.kubernetes.io/unreachable", effect: "NoExecute", timeAdded: "2026-11-29T09:00:00Z" },
            { key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" }
          ],
          podCIDR: "10.0.0.0/24"
        },
        status: { conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-11-29T08:00:00Z", lastHeartbeatTime: null }] }
      }
      rec.setHandler((request) => (request.method === "POST" ? { status: 201, body: request.body } : json(200, served)))
      const created = yield* kube.createNode({ metadata: { name: "vk" }, spec: { taints: [] } })
      assert.deepStrictEqual(created.metadata, { name: "vk" })
      assert.deepStrictEqual(JSON.parse(rec.requests[0]!.body), { apiVersion: "v1", kind: "Node", metadata: { name: "vk" }, spec: { taints: [] } })
      const node = yield* kube.getNode("vk")
      assert.deepStrictEqual(node.spec?.taints?.[0]?.timeAdded, new Date("2026-11-29T09:00:00Z"))
      assert.deepStrictEqual(node.status?.conditions?.[0]?.lastTransitionTime, new Date("2026-11-29T08:00:00Z"))
      assert.isFalse(node.spec !== undefined && "podCIDR" in node.spec)
      const taints = encodeTaints(node.spec?.taints ?? [])
      yield* kube.patchNode("vk", { metadata: { resourceVersion: node.metadata?.resourceVersion }, spec: { taints: Option.getOrThrow(taints) } })
      const sent = rec.requests[2]!
      assert.strictEqual(sent.method, "PATCH")
      assert.strictEqual(sent.url.pathname, "/api/v1/nodes/vk")
      assert.strictEqual(sent.headers["content-type"], "application/strategic-merge-patch+json")
      assert.deepStrictEqual(JSON.parse(sent.body), { metadata: { resourceVersion: "12" }, spec: { taints: served.spec.taints } })
    }))
})
