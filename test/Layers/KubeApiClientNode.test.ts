/**
 * The live KubeApi layer (built from AppConfig with the kubeconfig the simulator writes) against
 * the in-memory API server over HTTP: every method, and each error shape the daemon relies on.
 * The same scenarios run against the memory layer on the same model, so the two stay alike.
 */
import { assert, describe, it } from "@effect/vitest"
import type { V1Pod } from "@kubernetes/client-node"
import { Clock, Effect, Fiber, Layer, Option, Ref, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"
import * as KubeApiMemory from "../../testkit/Layers/KubeApiMemory.ts"
import type { AppConfigShape } from "../../src/Schemas/Config.ts"
import { testConfig } from "../../testkit/Config.ts"
import type { Lease } from "../../src/Schemas/Lease.ts"
import { decodePod } from "../../src/Schemas/Pod/Decode.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import { KubeApi, type PodWatchEvent } from "../../src/Services/KubeApi.ts"
import { ClusterModel, type ModelOptions } from "../../testkit/Simulators/Apiserver/Model.ts"
import { CoreEvents, Leases, NodeInventories, Nodes, Pods, Sandboxes } from "../../testkit/Simulators/Apiserver/Resources.ts"
import { sleepReceipts } from "../support/Receipts.ts"
import { eventually } from "../support/Wait.ts"
import { serveModel } from "../support/Apiserver.ts"

const nodeName = "vk-sandboxd"

/** A fresh model served on loopback, and the live layer built from its kubeconfig file (with the given limits). */
const liveCluster = (modelOptions: ModelOptions = {}, limits: Partial<Pick<AppConfigShape, "kubeApiQps" | "kubeApiBurst">> = {}) =>
  Effect.gen(function*() {
    const model = new ClusterModel(modelOptions)
    const { kubeconfigPath } = yield* serveModel(model, { token: "sim-token" })
    const kube = yield* Effect.gen(function*() {
      return yield* KubeApi
    }).pipe(
      Effect.provide(
        KubeApiClientNode.layer.pipe(Layer.provide(AppConfig.layer(testConfig({ kubeconfig: kubeconfigPath, nodeName, ...limits }))))
      )
    )
    return { model, kube }
  })

/** A fresh model, and the memory layer on it. */
const memoryCluster = (modelOptions: ModelOptions = {}) =>
  Effect.gen(function*() {
    const model = new ClusterModel(modelOptions)
    const kube = yield* Effect.gen(function*() {
      return yield* KubeApi
    }).pipe(Effect.provide(KubeApiMemory.layer(model)))
    return { model, kube }
  })

const backends = [
  { name: "live layer over HTTP", cluster: liveCluster },
  { name: "memory layer", cluster: memoryCluster }
] as const

const podBody = (name: string, node: string | undefined, namespace = "default") => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace },
  spec: { ...(node === undefined ? {} : { nodeName: node }), containers: [{ name: "agent", image: "ghcr.io/acme/agent:1" }] }
})

const addPod = (model: ClusterModel, name: string, node: string | undefined, namespace = "default") =>
  model.put(Pods, podBody(name, node, namespace))

const nodeBody = {
  apiVersion: "v1",
  kind: "Node",
  metadata: { name: nodeName, labels: { "type": "virtual-kubelet" } },
  spec: { taints: [{ key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" }] },
  status: {
    conditions: [
      { type: "Ready", status: "True", reason: "KubeletReady", message: "Kubelet is ready" },
      { type: "MemoryPressure", status: "False", reason: "KubeletHasSufficientMemory" }
    ],
    addresses: [{ type: "InternalIP", address: "10.0.0.5" }],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    capacity: { pods: "2000", cpu: "4000", memory: "8Ti" }
  }
}

const tagOf = <E extends { readonly _tag: string }>(e: E) => e._tag

/** Lets the server and client sockets make progress. */

const waitFor = (condition: () => boolean) => eventually("the condition", condition)

for (const { cluster, name } of backends) describe(`KubeApi against the in-memory apiserver: ${name}`, () => {
  it.effect("listPods returns this node's pods in every namespace and the list resourceVersion", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      addPod(model, "a", nodeName)
      addPod(model, "b", nodeName, "kube-system")
      addPod(model, "c", "elsewhere")
      addPod(model, "d", undefined)
      const list = yield* kube.listPods(nodeName)
      assert.deepStrictEqual(list.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).sort(), [
        "default/a",
        "kube-system/b"
      ])
      assert.strictEqual(list.resourceVersion, model.resourceVersion)
    }))

  it.effect("getPod, and a 404 carrying the server's details", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      addPod(model, "a", nodeName)
      const pod = yield* kube.getPod("default", "a")
      assert.strictEqual(pod.spec?.nodeName, nodeName)
      const missing = yield* Effect.flip(kube.getPod("default", "zz"))
      assert.strictEqual(missing._tag, "KubeNotFound")
      assert.deepStrictEqual(missing._tag === "KubeNotFound" ? missing.details : undefined, { name: "zz", kind: "pods" })
    }))

  it.effect("replacePodStatus writes status; a stale resourceVersion is 409, a bad podIP 422", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      addPod(model, "a", nodeName)
      const pod = yield* kube.getPod("default", "a")
      const running: V1Pod = {
        ...pod,
        metadata: { ...pod.metadata, annotations: { "sandbox.cocoonstack.io/claim-id": "sb_1" } },
        status: { phase: "Running", podIP: "10.0.0.7", podIPs: [{ ip: "10.0.0.7" }] }
      }
      const written = yield* kube.replacePodStatus(running)
      assert.strictEqual(written.status?.phase, "Running")
      assert.strictEqual(written.metadata?.annotations?.["sandbox.cocoonstack.io/claim-id"], "sb_1")
      assert.notStrictEqual(written.metadata?.resourceVersion, pod.metadata?.resourceVersion)
      assert.strictEqual((model.peek(Pods, "default", "a")?.["status"] as { podIP: string }).podIP, "10.0.0.7")

      const stale = yield* Effect.flip(kube.replacePodStatus({ ...running, status: { phase: "Failed" } }))
      assert.strictEqual(stale._tag, "KubeConflict")
      assert.strictEqual(stale._tag === "KubeConflict" ? stale.reason : "", "Conflict")

      // podIPs as well: the real server derives podIPs from a lone podIP before validating; the simulator
      // validates podIPs only
      const badIp = yield* Effect.flip(
        kube.replacePodStatus({
          ...written,
          status: { phase: "Running", podIP: "sandboxd:7777", podIPs: [{ ip: "sandboxd:7777" }] }
        })
      )
      assert.strictEqual(badIp._tag, "KubeInvalid")
    }))

  it.effect("deletePod: a wrong UID is 409, the right one removes the pod at once, a second delete is 404", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      addPod(model, "a", nodeName)
      const uid = String((model.peek(Pods, "default", "a")?.["metadata"] as { uid: string }).uid)
      const wrong = yield* Effect.flip(kube.deletePod("default", "a", "not-the-uid"))
      assert.strictEqual(wrong._tag, "KubeConflict")
      assert.isDefined(model.peek(Pods, "default", "a"), "a failed precondition deletes nothing")
      yield* kube.deletePod("default", "a", uid)
      assert.isUndefined(model.peek(Pods, "default", "a"), "grace 0: gone, no deletionTimestamp wait")
      const again = yield* Effect.flip(kube.deletePod("default", "a", uid))
      assert.strictEqual(again._tag, "KubeNotFound")
    }))

  it.effect("nodes: get 404, create, create again 409 AlreadyExists, strategic-merge status patch keeps other conditions", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      const absent = yield* Effect.flip(kube.getNode(nodeName))
      assert.strictEqual(absent._tag, "KubeNotFound")
      const created = yield* kube.createNode(nodeBody)
      assert.strictEqual(created.metadata?.name, nodeName)
      const twice = yield* Effect.flip(kube.createNode(nodeBody))
      assert.strictEqual(twice._tag, "KubeConflict")
      assert.strictEqual(twice._tag === "KubeConflict" ? twice.reason : "", "AlreadyExists")

      // a JSON merge patch would replace the whole list; a strategic merge keys conditions by type
      const patched = yield* kube.patchNodeStatus(nodeName, {
        status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "again" }] }
      })
      assert.deepStrictEqual(patched.status?.conditions?.map((c) => `${c.type}=${c.message ?? ""}`), [
        "Ready=again",
        "MemoryPressure="
      ])
      const got = yield* kube.getNode(nodeName)
      assert.strictEqual(got.status?.conditions?.length, 2)
      assert.isDefined(model.peek(Nodes, "", nodeName))
    }))

  it.effect("leases: 404, create and replace with six-digit times (the server refuses others), stale replace 409", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      const absent = yield* Effect.flip(kube.getLease(nodeName))
      assert.strictEqual(absent._tag, "KubeNotFound")
      const lease: Lease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: nodeName, namespace: "kube-node-lease" },
        spec: { holderIdentity: nodeName, leaseDurationSeconds: 40, renewTime: "2026-11-29T09:00:00.250Z" }
      }
      const created = yield* kube.createLease(lease)
      const stored = () => (model.peek(Leases, "kube-node-lease", nodeName)?.["spec"] as { renewTime: string }).renewTime
      assert.strictEqual(stored(), "2026-11-29T09:00:00.250000Z")

      const renewed = yield* kube.replaceLease({ ...created, spec: { ...created.spec, renewTime: "2026-11-29T09:00:10.5Z" } })
      assert.strictEqual(stored(), "2026-11-29T09:00:10.500000Z")
      assert.strictEqual(renewed.spec?.renewTime, "2026-11-29T09:00:10.500000Z")

      const stale = yield* Effect.flip(kube.replaceLease({ ...created, spec: { ...created.spec, renewTime: new Date().toISOString() } }))
      assert.strictEqual(stale._tag, "KubeConflict")

      const read = yield* kube.getLease(nodeName)
      assert.strictEqual(read.metadata?.resourceVersion, renewed.metadata?.resourceVersion)
      yield* kube.replaceLease(read) // what was read goes back unchanged, microseconds included
      assert.strictEqual(stored(), "2026-11-29T09:00:10.500000Z")
    }))

  it.effect("events: create in the object's namespace, then a repeat as a patch", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      const created = yield* kube.createEvent({
        metadata: { name: "a.1", namespace: "default" },
        involvedObject: { apiVersion: "v1", kind: "Pod", name: "a", namespace: "default" },
        reason: "Claimed",
        message: "claimed sb_1",
        type: "Normal",
        count: 1,
        firstTimestamp: new Date("2026-11-29T09:00:00Z"),
        lastTimestamp: new Date("2026-11-29T09:00:00Z"),
        source: { component: "vk-sandbox", host: nodeName }
      })
      assert.strictEqual(created.reason, "Claimed")
      const patched = yield* kube.patchEvent("default", "a.1", { count: 2, lastTimestamp: "2026-11-29T09:01:00Z" })
      assert.strictEqual(patched.count, 2)
      assert.strictEqual((model.peek(CoreEvents, "default", "a.1") as { count: number }).count, 2)
    }))

  it.effect("getOwner: found, terminating, object 404 with details.name, endpoint 404 without, plain-text 404 without", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      model.put(Sandboxes, {
        apiVersion: "agents.x-k8s.io/v1beta1",
        kind: "Sandbox",
        metadata: { name: "sb", namespace: "default" },
        spec: {}
      })
      const sandboxRef = { group: "agents.x-k8s.io", version: "v1beta1", plural: "sandboxes", namespace: "default" }
      const found = yield* kube.getOwner({ ...sandboxRef, name: "sb" })
      assert.strictEqual(found.uid, (model.peek(Sandboxes, "default", "sb")?.["metadata"] as { uid: string }).uid)
      assert.isUndefined(found.deletionTimestamp)
      assert.strictEqual((found.raw as { kind: string }).kind, "Sandbox")

      const rs = model.put(Pods, { ...podBody("owner-pod", undefined), metadata: { name: "owner-pod", namespace: "default", deletionTimestamp: "2026-11-29T09:00:00Z" } })
      const terminating = yield* kube.getOwner({ group: "", version: "v1", plural: "pods", namespace: "default", name: "owner-pod" })
      assert.strictEqual(terminating.deletionTimestamp, "2026-11-29T09:00:00Z")
      assert.strictEqual(terminating.uid, (rs["metadata"] as { uid: string }).uid)

      const gone = yield* Effect.flip(kube.getOwner({ ...sandboxRef, name: "gone" }))
      assert.strictEqual(gone._tag, "KubeNotFound")
      assert.deepStrictEqual(gone._tag === "KubeNotFound" ? gone.details : undefined, {
        name: "gone",
        group: "agents.x-k8s.io",
        kind: "sandboxes"
      })

      // a served group/version without that resource: the server's generic Status 404, no details
      const noResource = yield* Effect.flip(kube.getOwner({ ...sandboxRef, plural: "sandboxclaims", name: "gone" }))
      assert.strictEqual(noResource._tag, "KubeNotFound")
      assert.isFalse("details" in noResource)

      // an unknown group: the mux's plain-text 404
      const noGroup = yield* Effect.flip(kube.getOwner({ ...sandboxRef, group: "nope.example.com", name: "gone" }))
      assert.strictEqual(noGroup._tag, "KubeNotFound")
      assert.isFalse("details" in noGroup)
    }))

  it.effect("applyNodeInventory: server-side apply creates, then updates, owned by vk-sandbox", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      const inventory = (count: number) => ({
        apiVersion: "extensions.agents.x-k8s.io/v1beta1",
        kind: "NodeInventory",
        metadata: { name: nodeName },
        spec: { nodeName, sandboxCount: count }
      })
      yield* kube.applyNodeInventory(inventory(1))
      const applied = yield* kube.applyNodeInventory(inventory(2))
      assert.strictEqual((applied as { spec: { sandboxCount: number } }).spec.sandboxCount, 2)
      const stored = model.peek(NodeInventories, "", nodeName) as {
        spec: { sandboxCount: number }
        metadata: { managedFields?: ReadonlyArray<{ manager: string; operation: string }> }
      }
      assert.strictEqual(stored.spec.sandboxCount, 2)
      assert.isTrue(stored.metadata.managedFields?.some((f) => f.manager === "vk-sandbox" && f.operation === "Apply"))
    }))

  it.effect("a denied verb is KubeForbidden", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      addPod(model, "a", nodeName)
      model.deny({ verb: "delete", resource: "pods" })
      model.deny({ verb: "update", resource: "pods/status" })
      model.deny({ verb: "list", resource: "pods" })
      const uid = String((model.peek(Pods, "default", "a")?.["metadata"] as { uid: string }).uid)
      assert.strictEqual(tagOf(yield* Effect.flip(kube.deletePod("default", "a", uid))), "KubeForbidden")
      const pod = yield* kube.getPod("default", "a")
      assert.strictEqual(tagOf(yield* Effect.flip(kube.replacePodStatus({ ...pod, status: { phase: "Running" } }))), "KubeForbidden")
      assert.strictEqual(tagOf(yield* Effect.flip(kube.listPods(nodeName))), "KubeForbidden")
    }))

  it.effect("watchPods delivers ADDED, MODIFIED, DELETED and BOOKMARK, and ends on a clean server close", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      const list = yield* kube.listPods(nodeName)
      addPod(model, "a", nodeName)
      addPod(model, "other", "elsewhere")
      const a = model.peek(Pods, "default", "a")!
      model.put(Pods, { ...a, metadata: { ...(a["metadata"] as object), labels: { x: "1" } } })
      const events: Array<PodWatchEvent> = []
      const fiber = yield* Effect.forkChild(
        Stream.runForEach(kube.watchPods(nodeName, list.resourceVersion), (event) => Effect.sync(() => events.push(event)))
      )
      yield* waitFor(() => model.openWatches() === 1)
      const uid = String((a["metadata"] as { uid: string }).uid)
      yield* kube.deletePod("default", "a", uid)
      // Each server-side step once the watch has delivered the one before (the receipt): the events
      // read are those of each step, in order.
      yield* eventually("the delete's two events read by the watch", () => events.length >= 4)
      model.bookmark()
      yield* eventually("the bookmark read by the watch", () => events.length >= 5)
      model.dropWatches()
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(
        events.map((e) => (e.type === "BOOKMARK" ? "BOOKMARK" : e.type === "UNDECODABLE" ? `UNDECODABLE ${e.pod.name}` : `${e.type} ${e.object.metadata?.name}`)),
        // a grace-0 delete of a bound pod is two writes on the real server: deletionTimestamp, then removal
        ["ADDED a", "MODIFIED a", "MODIFIED a", "DELETED a", "BOOKMARK"]
      )
      const modified = events[1]!
      assert.strictEqual(modified.type === "MODIFIED" ? modified.object.metadata?.labels?.["x"] : undefined, "1")
      const terminating = events[2]!
      assert.isDefined(terminating.type === "MODIFIED" ? terminating.object.metadata?.deletionTimestamp : undefined)
      const bookmark = events[4]!
      assert.strictEqual(bookmark.type === "BOOKMARK" ? bookmark.resourceVersion : "", model.resourceVersion)
    }))

  const compactedWatchStarts: ReadonlyArray<readonly [string, ModelOptions]> = [
    ["ERROR event, as the watch cache does", {}],
    ["HTTP 410 at start", { expiredWatchStart: "status" }]
  ]
  for (const [how, options] of compactedWatchStarts) {
    it.effect(`watchPods from a compacted resourceVersion fails with KubeGone (${how})`, () =>
      Effect.gen(function*() {
        const { kube, model } = yield* cluster(options)
        addPod(model, "a", nodeName)
        const old = model.resourceVersion
        addPod(model, "b", nodeName)
        model.compact()
        const error = yield* Effect.flip(Stream.runCollect(kube.watchPods(nodeName, old)))
        assert.strictEqual(error._tag, "KubeGone")
      }))
  }

  it.effect("watchPods fails with KubeGone when the server expires it mid-watch", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      const list = yield* kube.listPods(nodeName)
      const received: Array<string> = []
      const fiber = yield* Effect.forkChild(
        kube.watchPods(nodeName, list.resourceVersion).pipe(
          Stream.runForEach((e) => Effect.sync(() => received.push(e.type))),
          Effect.flip
        )
      )
      yield* waitFor(() => model.openWatches() === 1)
      addPod(model, "a", nodeName)
      yield* waitFor(() => received.length === 1)
      model.expireWatches()
      const error = yield* Fiber.join(fiber)
      assert.strictEqual(error._tag, "KubeGone")
      assert.deepStrictEqual(received, ["ADDED"])
    }))

  it.effect("a consumer that stops closes the watch on the server", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* cluster()
      addPod(model, "a", nodeName)
      addPod(model, "b", nodeName)
      const first = yield* kube.watchPods(nodeName, "1").pipe(Stream.take(1), Stream.runCollect)
      assert.strictEqual(first.length, 1)
      yield* waitFor(() => model.openWatches() === 0)
    }))
})

describe("NODE-5: the node's liveness calls do not wait in the limiter of the Pod work", () => {
  it.effect("behind 100 queued Pod writes at qps 5, burst 10: every Node and Lease call goes out at once; Pod work keeps its pace", () =>
    Effect.gen(function*() {
      const { kube, model } = yield* liveCluster({}, { kubeApiQps: 5, kubeApiBurst: 10 })
      const pods = Array.from({ length: 100 }, (_, i) => Option.getOrThrow(decodePod(addPod(model, `p${i}`, nodeName))))
      const written = yield* Ref.make(0)
      const writeStatus = (pod: (typeof pods)[number]) =>
        kube.replacePodStatus({ ...pod, status: { phase: "Running" } }).pipe(Effect.andThen(Ref.update(written, (n) => n + 1)))
      for (const pod of pods) yield* Effect.forkChild(writeStatus(pod))
      yield* TestClock.adjust("0 millis")
      const writes = (n: number) => eventually(`${n} Pod writes`, Ref.get(written).pipe(Effect.map((done) => done === n)))
      yield* writes(10)

      // TestClock stands still: a call that took a token now would wait 18.2 s, (100 + 1 - 10) / 5.
      const lease: Lease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: nodeName, namespace: "kube-node-lease" },
        spec: { holderIdentity: nodeName, leaseDurationSeconds: 40, renewTime: "2026-11-29T09:00:00.250Z" }
      }
      const liveness = Effect.gen(function*() {
        assert.strictEqual((yield* Effect.flip(kube.getNode(nodeName)))._tag, "KubeNotFound")
        yield* kube.createNode(nodeBody)
        yield* kube.patchNodeStatus(nodeName, { status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady" }] } })
        const read = yield* kube.getNode(nodeName)
        yield* kube.patchNode(nodeName, { metadata: { resourceVersion: read.metadata?.resourceVersion }, spec: { taints: [] } })
        assert.strictEqual((yield* Effect.flip(kube.getLease(nodeName)))._tag, "KubeNotFound")
        const created = yield* kube.createLease(lease)
        yield* kube.replaceLease({ ...created, spec: { ...created.spec, renewTime: "2026-11-29T09:00:10.250Z" } })
        return "done"
      })
      const calls = yield* Effect.forkChild(liveness)
      yield* eventually("the Node and Lease calls, TestClock standing still", () => calls.pollUnsafe() !== undefined)
      assert.strictEqual(yield* Fiber.join(calls), "done")
      assert.strictEqual((model.peek(Leases, "kube-node-lease", nodeName)?.["spec"] as { renewTime: string }).renewTime, "2026-11-29T09:00:10.250000Z")

      // The Pod work's limiter is as it was: a Pod write queued now is the 101st, served at 18.2 s.
      // Its Clock notes each sleep it begins: asleep for 18.2 s in the limiter is the receipt of its
      // turn; were it not held, it would be answered.
      const sleeps = yield* sleepReceipts
      const last = yield* Effect.forkChild(kube.getPod("default", "p0").pipe(Effect.provideService(Clock.Clock, sleeps.clock)))
      yield* eventually(
        "the 101st Pod call held until 18.2 s, or answered",
        () => sleeps.sleeps("18200 millis") === 1 || last.pollUnsafe() !== undefined
      )
      yield* TestClock.adjust("18100 millis")
      yield* writes(100)
      assert.isUndefined(last.pollUnsafe(), "the 101st Pod call went before its turn")
      yield* TestClock.adjust("100 millis")
      yield* waitFor(() => last.pollUnsafe() !== undefined)
    }))
})
