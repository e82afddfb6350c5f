/**
 * The live `KubeApi` layer against the real kube-apiserver, authenticated as the daemon's service
 * account and so limited to deploy/rbac/clusterrole.yaml: every method the daemon uses is called
 * here, so a verb missing from the ClusterRole fails a test. The admin only sets up
 * what the daemon may not create itself (pods, Sandboxes).
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Effect, Stream } from "effect"
import { defaultOptions, make } from "../../src/Layers/KubeApiClientNode.ts"
import { adminKubeconfig, createSandboxAs, daemonKubeconfig, kube, nodeInventoryBody, uniqueName } from "./fixture/Kube.ts"

const daemonKubeApi = Effect.gen(function*() {
  const config = yield* daemonKubeconfig
  return yield* make(config, { ...defaultOptions, qps: 100, burst: 200 })
})

/** Admin: a namespace and a pod bound to `nodeName` (the daemon may not create pods). */
const podOnNode = (nodeName: string) =>
  Effect.gen(function*() {
    const core = (yield* adminKubeconfig).makeApiClient(k8s.CoreV1Api)
    const namespace = uniqueName("kubeapi")
    yield* kube("create namespace", () => core.createNamespace({ body: { metadata: { name: namespace } } }))
    const pod = yield* kube("create pod", () =>
      core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: uniqueName("pod"), labels: { app: "agent" } },
          spec: { nodeName, containers: [{ name: "agent", image: "ghcr.io/acme/agent-runtime:1.4.2" }] }
        }
      }))
    return { namespace, pod }
  })

describe("KubeApi (live layer) as the daemon", () => {
  it.live("creates and gets its node; a status patch keeps another writer's condition", () =>
    Effect.gen(function*() {
      const api = yield* daemonKubeApi
      const name = uniqueName("vk-node")
      yield* api.createNode({ metadata: { name, labels: { type: "virtual-kubelet" } } })
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z")
      yield* api.patchNodeStatus(name, {
        status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "", lastHeartbeatTime: now, lastTransitionTime: now }] }
      })
      yield* api.patchNodeStatus(name, {
        status: { conditions: [{ type: "NetworkUnavailable", status: "False", reason: "Other", message: "", lastHeartbeatTime: now, lastTransitionTime: now }] }
      })
      const node = yield* api.getNode(name)
      const types = (node.status?.conditions ?? []).map((condition) => condition.type).sort()
      assert.deepStrictEqual(types, ["NetworkUnavailable", "Ready"])
      const duplicate = yield* api.createNode({ metadata: { name } }).pipe(Effect.flip)
      assert.strictEqual(duplicate._tag, "KubeConflict")
    }))

  it.live("creates, gets and replaces its lease with a six-digit renewTime", () =>
    Effect.gen(function*() {
      const api = yield* daemonKubeApi
      const name = uniqueName("vk-node")
      const created = yield* api.createLease({
        metadata: { name, namespace: "kube-node-lease" },
        spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: new Date().toISOString() }
      })
      const got = yield* api.getLease(name)
      assert.strictEqual(got.metadata?.resourceVersion, created.metadata?.resourceVersion)
      const replaced = yield* api.replaceLease({ ...got, spec: { ...got.spec, renewTime: new Date().toISOString() } })
      assert.notStrictEqual(replaced.metadata?.resourceVersion, got.metadata?.resourceVersion)
      const stale = yield* api.replaceLease({ ...got, spec: { ...got.spec, renewTime: new Date().toISOString() } }).pipe(Effect.flip)
      assert.strictEqual(stale._tag, "KubeConflict")
    }))

  it.live("creates an event and patches its repeat", () =>
    Effect.gen(function*() {
      const api = yield* daemonKubeApi
      const { namespace, pod } = yield* podOnNode(uniqueName("vk-node"))
      const name = `${pod.metadata?.name}.${Date.now().toString(16)}`
      const now = new Date()
      const event = yield* api.createEvent({
        metadata: { name, namespace },
        involvedObject: { kind: "Pod", namespace, name: pod.metadata?.name ?? "", uid: pod.metadata?.uid ?? "", apiVersion: "v1" },
        reason: "Claimed",
        message: "claimed sb_1",
        type: "Normal",
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: "vk-sandbox" }
      })
      assert.strictEqual(event.metadata?.name, name)
      const repeated = yield* api.patchEvent(namespace, name, { count: 2, lastTimestamp: new Date().toISOString(), message: "claimed sb_1 again" })
      assert.strictEqual(repeated.count, 2)
      assert.strictEqual(repeated.message, "claimed sb_1 again")
    }))

  it.live("lists and gets its pods, replaces pods/status, deletes with UID preconditions", () =>
    Effect.gen(function*() {
      const api = yield* daemonKubeApi
      const nodeName = uniqueName("vk-node")
      const { namespace, pod } = yield* podOnNode(nodeName)
      const podName = pod.metadata?.name ?? ""
      const list = yield* api.listPods(nodeName)
      assert.deepStrictEqual(list.items.map((item) => item.metadata?.name), [podName])
      assert.isNotEmpty(list.resourceVersion)

      const current = yield* api.getPod(namespace, podName)
      const updated = yield* api.replacePodStatus({
        ...current,
        status: { ...current.status, phase: "Running", podIP: "10.0.0.5", podIPs: [{ ip: "10.0.0.5" }] }
      })
      assert.strictEqual(updated.status?.phase, "Running")
      assert.strictEqual(updated.status?.podIP, "10.0.0.5")

      const wrongUid = yield* api.deletePod(namespace, podName, "00000000-0000-0000-0000-000000000000").pipe(Effect.flip)
      assert.strictEqual(wrongUid._tag, "KubeConflict")
      yield* api.deletePod(namespace, podName, current.metadata?.uid ?? "")
      const gone = yield* api.getPod(namespace, podName).pipe(Effect.flip)
      assert.strictEqual(gone._tag, "KubeNotFound")
    }))

  it.live("lists a node's pods from a reply of ~300 KB (a size the apiserver compresses when asked to), every Pod read", () =>
    Effect.gen(function*() {
      const api = yield* daemonKubeApi
      const core = (yield* adminKubeconfig).makeApiClient(k8s.CoreV1Api)
      const nodeName = uniqueName("vk-node")
      const namespace = uniqueName("kubeapi")
      yield* kube("create namespace", () => core.createNamespace({ body: { metadata: { name: namespace } } }))
      // 60 Pods of ~5 KB: a list well over the size above which the apiserver compresses a reply
      const names = Array.from({ length: 60 }, (_, i) => `pod-${String(i).padStart(2, "0")}`)
      yield* Effect.forEach(names, (name) =>
        kube("create pod", () =>
          core.createNamespacedPod({
            namespace,
            body: {
              metadata: { name, annotations: { "example.com/note": `${name} é 雪 \\ " `.repeat(250) } },
              spec: { nodeName, containers: [{ name: "agent", image: "ghcr.io/acme/agent-runtime:1.4.2" }] }
            }
          })), { concurrency: 10 })
      const list = yield* api.listPods(nodeName)
      assert.deepStrictEqual(list.items.map((item) => item.metadata?.name).sort(), names)
      assert.strictEqual(list.items[7]?.metadata?.annotations?.["example.com/note"], `pod-07 é 雪 \\ " `.repeat(250))
      assert.isNotEmpty(list.resourceVersion)
    }))

  it.live("watches its pods from a list's resourceVersion", () =>
    Effect.gen(function*() {
      const api = yield* daemonKubeApi
      const nodeName = uniqueName("vk-node")
      const list = yield* api.listPods(nodeName)
      const { pod } = yield* podOnNode(nodeName)
      const events = yield* api.watchPods(nodeName, list.resourceVersion).pipe(
        Stream.filter((event) => event.type !== "BOOKMARK" && event.type !== "UNDECODABLE"),
        Stream.take(1),
        Stream.runCollect,
        Effect.timeout("20 seconds")
      )
      const first = events[0]
      assert.strictEqual(first?.type, "ADDED")
      assert.strictEqual(first?.object.metadata?.uid, pod.metadata?.uid)
    }))

  it.live("gets a Sandbox owner; a missing one is a NotFound naming it; an unknown resource is 403, or 404 without a name", () =>
    Effect.gen(function*() {
      const api = yield* daemonKubeApi
      const admin = yield* adminKubeconfig
      const namespace = uniqueName("owners")
      const name = uniqueName("review-bot")
      yield* kube("create namespace", () =>
        admin.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } }))
      const createdUid = yield* createSandboxAs(admin, namespace, name)
      const ref = { group: "agents.x-k8s.io", version: "v1beta1", plural: "sandboxes", namespace, name }
      const owner = yield* api.getOwner(ref)
      assert.strictEqual(owner.uid, createdUid)
      assert.isUndefined(owner.deletionTimestamp)

      const missing = yield* api.getOwner({ ...ref, name: "gone-bot" }).pipe(Effect.flip)
      assert.strictEqual(missing._tag, "KubeNotFound")
      assert.strictEqual(missing._tag === "KubeNotFound" ? missing.details?.name : undefined, "gone-bot")

      // RBAC is decided before routing: for the daemon an unknown resource is a 403, never the
      // endpoint-level 404 (both leave the claim preserved).
      const forbidden = yield* api.getOwner({ ...ref, plural: "widgets" }).pipe(Effect.flip)
      assert.strictEqual(forbidden._tag, "KubeForbidden")
      // An identity allowed everything sees the endpoint-level 404: a NotFound without details.name.
      const adminApi = yield* make(admin, { ...defaultOptions, qps: 100, burst: 200 })
      const unknown = yield* adminApi.getOwner({ ...ref, plural: "widgets" }).pipe(Effect.flip)
      assert.strictEqual(unknown._tag, "KubeNotFound")
      assert.isUndefined(unknown._tag === "KubeNotFound" ? unknown.details?.name : "not a NotFound")
    }))

  it.live("server-side applies the NodeInventory: create, replace, omitted items removed", () =>
    Effect.gen(function*() {
      const api = yield* daemonKubeApi
      const node = uniqueName("node1-sandboxd")
      const body = (entries: ReadonlyArray<object>, pools: ReadonlyArray<object> | undefined) => nodeInventoryBody(node, entries, pools)
      const first = (yield* api.applyNodeInventory(body(
        [{ name: "sb_c0ffee0012345678", id: "sb_c0ffee0012345678", phase: "Running", claimRef: "sb_c0ffee0012345678" },
          { name: "team-a/notebook-x9", id: "sb_4f9a0c2e7b1d3a65", phase: "Hibernated", claimRef: "team-a/notebook-x9" }],
        [{ template: "base:24.04", net: "none", size: "small", warm: 4, target: 4 }]
      ))) as { entries?: Array<unknown>; pools?: Array<unknown> }
      assert.strictEqual(first.entries?.length, 2)
      assert.strictEqual(first.pools?.length, 1)
      const second = (yield* api.applyNodeInventory(body(
        [{ name: "team-a/notebook-x9", id: "sb_4f9a0c2e7b1d3a65", phase: "Running", claimRef: "team-a/notebook-x9" }],
        undefined
      ))) as { entries?: Array<{ name?: string; phase?: string }>; pools?: Array<unknown> }
      assert.deepStrictEqual(second.entries?.map((entry) => [entry.name, entry.phase]), [["team-a/notebook-x9", "Running"]])
      assert.isUndefined(second.pools)
    }))
})
