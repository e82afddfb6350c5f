/**
 * Differential scenarios: the same scenarios, through the same live `KubeApi` layer
 * and the same client-node admin calls, against the real kube-apiserver of the global setup and
 * against the in-memory apiserver (testkit/Simulators/Apiserver) served over HTTP. Each asserts exact
 * outcomes, so a behaviour the two servers do not share fails on one of them.
 * On the real server the daemon side runs as the daemon's RBAC identity; the in-memory server has
 * one token and no RBAC, so identity-dependent outcomes are asserted with the admin there and here.
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Effect, Fiber, Schema, type Scope, Stream } from "effect"
import { join } from "node:path"
import { errorFromResponse } from "../../src/Kube/Status.ts"
import { defaultOptions, make } from "../../src/Layers/KubeApiClientNode.ts"
import type { Event } from "../../src/Schemas/Event.ts"
import type { KubeApi } from "../../src/Services/KubeApi.ts"
import { resourceVersionOlder } from "../../src/Programs/PodController/Informer.ts"
import { ClusterModel } from "../../testkit/Simulators/Apiserver/Model.ts"
import { serve } from "../../testkit/Simulators/Apiserver/Server.ts"
import { responseHeaders } from "../support/Receipts.ts"
import { tempDir } from "../support/TempDir.ts"
import { rawRequest, type RawReply } from "./scenarioHarness.ts"
import { adminKubeconfig, compactEtcd, createSandboxAs, daemonKubeconfig, kube, nodeInventoryBody, uniqueName } from "./fixture/Kube.ts"

class BackendUnavailable extends Schema.TaggedError<BackendUnavailable>()("BackendUnavailable", {
  message: Schema.String
}) {}

interface Backend {
  readonly adminConfig: k8s.KubeConfig
  readonly daemonConfig: k8s.KubeConfig
  /** The daemon's client: on the real server limited by deploy/rbac/clusterrole.yaml. */
  readonly daemon: KubeApi["Service"]
  readonly admin: KubeApi["Service"]
  /** The daemon's client asking the server to end each watch after 2 s. */
  readonly shortWatch: KubeApi["Service"]
  /** Expire every resourceVersion handed out so far (the store's history compaction). */
  readonly compact: Effect.Effect<void, unknown>
}

const clientOptions = { ...defaultOptions, qps: 100, burst: 200 }

const clients = (adminConfig: k8s.KubeConfig, daemonConfig: k8s.KubeConfig, compact: Effect.Effect<void, unknown>) =>
  Effect.gen(function*() {
    return {
      compact,
      adminConfig,
      daemonConfig,
      daemon: yield* make(daemonConfig, clientOptions),
      admin: yield* make(adminConfig, clientOptions),
      shortWatch: yield* make(daemonConfig, { ...clientOptions, watchTimeoutSeconds: 2 })
    }
  })

const realServer: Effect.Effect<Backend, unknown, Scope.Scope> = Effect.gen(function*() {
  return yield* clients(yield* adminKubeconfig, yield* daemonKubeconfig, compactEtcd)
})

const inMemoryServer: Effect.Effect<Backend, unknown, Scope.Scope> = Effect.gen(function*() {
  const dir = yield* tempDir("vk-diff-")
  const kubeconfigPath = join(dir, "kubeconfig")
  const model = new ClusterModel()
  yield* serve(model, { token: "diff-token", kubeconfigPath })
  const config = yield* Effect.try({
    try: () => {
      const loaded = new k8s.KubeConfig()
      loaded.loadFromFile(kubeconfigPath)
      return loaded
    },
    catch: (cause) => new BackendUnavailable({ message: String(cause) })
  })
  return yield* clients(config, config, Effect.sync(() => model.compact()))
})

/** One request with the kubeconfig's credentials, for bodies client-node would rewrite; the reply's text as written. */
const raw = (config: k8s.KubeConfig, method: string, path: string, body?: object) => rawRequest(config, method, path, body)

const newNamespace = (backend: Backend) =>
  Effect.gen(function*() {
    const name = uniqueName("diff")
    yield* kube("create namespace", () =>
      backend.adminConfig.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name } } }))
    return name
  })

const createPod = (backend: Backend, namespace: string, nodeName: string, extra: Partial<k8s.V1ObjectMeta> = {}) =>
  kube("create pod", () =>
    backend.adminConfig.makeApiClient(k8s.CoreV1Api).createNamespacedPod({
      namespace,
      body: {
        metadata: { name: uniqueName("pod"), ...extra },
        spec: { nodeName, containers: [{ name: "agent", image: "ghcr.io/acme/agent-runtime:1.4.2" }] }
      }
    }))

/** A bound Pod in a namespace of its own: its name and its path. */
const podInNewNamespace = (backend: Backend, extra: Partial<k8s.V1ObjectMeta> = {}) =>
  Effect.gen(function*() {
    const namespace = yield* newNamespace(backend)
    const name = (yield* createPod(backend, namespace, uniqueName("vk-node"), extra)).metadata?.name ?? ""
    return { name, path: `/api/v1/namespaces/${namespace}/pods/${name}` }
  })

/** The daemon's first "Claimed" Event about `pod` (count 1, whole seconds, as the recorder writes it). */
const claimedEvent = (namespace: string, pod: k8s.V1Pod) => {
  const eventName = `${pod.metadata?.name}.${Date.now().toString(16)}`
  const now = new Date(Math.floor(Date.now() / 1000) * 1000)
  const event: Event = {
    metadata: { name: eventName, namespace },
    involvedObject: { kind: "Pod", namespace, name: pod.metadata?.name ?? "", uid: pod.metadata?.uid ?? "", apiVersion: "v1" },
    reason: "Claimed",
    message: "claimed",
    type: "Normal",
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    source: { component: "vk-sandbox", host: "vk-node" }
  }
  return { eventName, event }
}

const createSandbox = (backend: Backend, namespace: string, finalizers: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const name = uniqueName("sandbox")
    return { name, uid: yield* createSandboxAs(backend.adminConfig, namespace, name, finalizers) }
  })

/** Lets an object held by a finalizer go (a merge patch that clears the list). */
const releaseFinalizers = (backend: Backend, path: string) =>
  Effect.map(
    rawRequest(backend.adminConfig, "PATCH", path, { metadata: { finalizers: null } }, "application/merge-patch+json"),
    (released) => assert.strictEqual(released.status, 200, released.text)
  )

const sandboxRef = (namespace: string, name: string) =>
  ({ group: "agents.x-k8s.io", version: "v1beta1", plural: "sandboxes", namespace, name }) as const

const secondsAgo = (seconds: number) => new Date(Date.now() - seconds * 1000).toISOString().replace(/\.\d+Z$/, "Z")

/** Running, as the daemon writes it: ready conditions, one running container, whole-second times. */
const runningStatus = (started: Date) => ({
  phase: "Running",
  hostIP: "10.0.0.5",
  podIP: "10.0.0.5",
  startTime: started,
  conditions: [{ type: "Initialized", status: "True" }, { type: "Ready", status: "True" }, { type: "PodScheduled", status: "True" }],
  containerStatuses: [{
    name: "agent",
    ready: true,
    state: { running: { startedAt: started } },
    image: "ghcr.io/acme/agent-runtime:1.4.2",
    imageID: "sandboxd://sb_1a2b3c4d5e6f7081",
    restartCount: 0
  }]
})

const watchOrder = "list, then watch from the list's resourceVersion: ADDED, MODIFIED, a grace-0 delete as MODIFIED then DELETED"

const backends: ReadonlyArray<{
  readonly name: string
  readonly backend: Effect.Effect<Backend, unknown, Scope.Scope>
  /**
   * Scenarios where this server is known to differ from the real one, run as expected failures
   * until the server is fixed (a fixed one then fails here, and comes off this list).
   */
  readonly knownDifferences: ReadonlySet<string>
}> = [
  { name: "real kube-apiserver", backend: realServer, knownDifferences: new Set() },
  { name: "in-memory apiserver", backend: inMemoryServer, knownDifferences: new Set() }
]

for (const { name, backend: acquire, knownDifferences } of backends) {
  const scenario = (title: string, body: () => Effect.Effect<void, unknown, Scope.Scope>) =>
    knownDifferences.has(title)
      ? it.live.fails(`${title} [known difference, to fix in this server]`, body)
      : it.live(title, body)

  describe(`differential: ${name}`, () => {
    scenario("namespaces: the system namespaces exist, a new one is Active", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const core = backend.adminConfig.makeApiClient(k8s.CoreV1Api)
        const namespace = yield* newNamespace(backend)
        const list = yield* kube("list namespaces", () => core.listNamespace())
        const names = list.items.map((ns) => ns.metadata?.name)
        for (const system of ["default", "kube-system", "kube-public", "kube-node-lease", namespace]) {
          assert.include(names, system)
        }
        const created = yield* kube("read namespace", () => core.readNamespace({ name: namespace }))
        assert.strictEqual(created.status?.phase, "Active")
        const missing = yield* createPod(backend, uniqueName("absent"), "n").pipe(Effect.flip)
        assert.strictEqual(missing.status, 404)
      }))

    scenario("a stale resourceVersion is a 409 Conflict (pods/status, leases)", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const pod = yield* createPod(backend, namespace, uniqueName("vk-node"))
        const fresh = yield* backend.daemon.getPod(namespace, pod.metadata?.name ?? "")
        yield* backend.daemon.replacePodStatus({ ...fresh, status: { ...fresh.status, phase: "Running" } })
        const stale = yield* backend.daemon.replacePodStatus({ ...fresh, status: { ...fresh.status, phase: "Failed" } }).pipe(Effect.flip)
        assert.strictEqual(stale._tag, "KubeConflict")
        assert.strictEqual(stale._tag === "KubeConflict" ? stale.reason : "", "Conflict")

        const leaseName = uniqueName("vk-node")
        const lease = yield* backend.daemon.createLease({
          metadata: { name: leaseName, namespace: "kube-node-lease" },
          spec: { holderIdentity: leaseName, leaseDurationSeconds: 40, renewTime: new Date().toISOString() }
        })
        yield* backend.daemon.replaceLease({ ...lease, spec: { ...lease.spec, renewTime: new Date().toISOString() } })
        const staleLease = yield* backend.daemon.replaceLease({ ...lease, spec: { ...lease.spec, renewTime: new Date().toISOString() } }).pipe(Effect.flip)
        assert.strictEqual(staleLease._tag, "KubeConflict")
      }))

    scenario("patchPodStatus: a strategic merge patch of pods/status with the uid as precondition (INF-1)", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const pod = yield* createPod(backend, namespace, uniqueName("vk-node"), { labels: { team: "a" } })
        const podName = pod.metadata?.name ?? ""
        const uid = pod.metadata?.uid ?? ""
        const fresh = yield* backend.daemon.getPod(namespace, podName)
        const started = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000)
        // Running with IPs and Ready, and a condition of another writer's.
        const running = runningStatus(started)
        yield* backend.daemon.replacePodStatus({
          ...fresh,
          status: { ...fresh.status, ...running, conditions: [...running.conditions, { type: "example.com/Gate", status: "True" }] }
        })
        const qosClass = (yield* backend.daemon.getPod(namespace, podName)).status?.qosClass
        assert.strictEqual(qosClass, "BestEffort")

        // another uid: refused, nothing written. Not the 409 of a PUT's uid precondition: a patch
        // has none, and the uid it would change is immutable (422).
        const before = yield* backend.daemon.getPod(namespace, podName)
        const otherUid = "0b9f8f1e-0000-4000-8000-000000000000"
        const refused = yield* backend.daemon.patchPodStatus(namespace, podName, otherUid, { phase: "Failed" }, []).pipe(Effect.flip)
        assert.strictEqual(refused._tag, "KubeInvalid")
        assert.include(refused.message, `metadata.uid: Invalid value: "${otherUid}": field is immutable`)
        // the field the writer reads to tell a replaced Pod from a status the server refuses
        assert.deepStrictEqual(refused._tag === "KubeInvalid" ? refused.fields : undefined, ["metadata.uid"])
        const unchanged = yield* backend.daemon.getPod(namespace, podName)
        assert.strictEqual(unchanged.metadata?.resourceVersion, before.metadata?.resourceVersion)

        // the IP lists (merged by ip by the server) are replaced whole: the old address goes
        yield* backend.daemon.patchPodStatus(namespace, podName, uid, {
          ...running,
          hostIP: "10.0.0.6",
          podIP: "10.0.0.6",
          podIPs: [{ ip: "10.0.0.6" }],
          hostIPs: [{ ip: "10.0.0.6" }]
        }, [])
        const moved = (yield* raw(backend.adminConfig, "GET", `/api/v1/namespaces/${namespace}/pods/${podName}`)).body as {
          status: { podIPs?: unknown; hostIPs?: unknown; conditions?: ReadonlyArray<{ type: string; status: string }> }
        }
        assert.deepStrictEqual([moved.status.podIPs, moved.status.hostIPs], [[{ ip: "10.0.0.6" }], [{ ip: "10.0.0.6" }]])
        assert.deepStrictEqual(
          (moved.status.conditions ?? []).map((c) => [c.type, c.status]),
          [["Initialized", "True"], ["Ready", "True"], ["PodScheduled", "True"], ["example.com/Gate", "True"]],
          "conditions merged by type: another writer's, not in the patch, stays"
        )

        // its own uid: the slim status's fields end as given (IPs, startTime and the node agent's
        // conditions removed; another writer's condition, not sent, kept), the QoS class kept,
        // metadata untouched
        const finished = new Date(started.getTime() + 30_000)
        const agentTypes = ["PodScheduled", "Initialized", "ContainersReady", "Ready", "PodReadyToStartContainers"]
        const ending = {
          phase: "Failed",
          reason: "SandboxLost",
          message: "sandbox sb_1a2b3c4d5e6f7081 is gone",
          containerStatuses: [{
            name: "agent",
            ready: false,
            restartCount: 0,
            image: "ghcr.io/acme/agent-runtime:1.4.2",
            imageID: "sandboxd://sb_1a2b3c4d5e6f7081",
            state: { terminated: { exitCode: 137, reason: "SandboxLost", startedAt: started, finishedAt: finished } }
          }]
        }
        yield* backend.daemon.patchPodStatus(namespace, podName, uid, ending, agentTypes)
        const after = yield* raw(backend.adminConfig, "GET", `/api/v1/namespaces/${namespace}/pods/${podName}`)
        const stored = after.body as { metadata: { labels?: object; uid: string }; status: Record<string, unknown> }
        assert.strictEqual(stored.metadata.uid, uid)
        assert.deepStrictEqual(stored.metadata.labels, { team: "a" })
        const { conditions, containerStatuses, ...rest } = stored.status
        assert.deepStrictEqual(rest, {
          phase: "Failed",
          reason: "SandboxLost",
          message: "sandbox sb_1a2b3c4d5e6f7081 is gone",
          qosClass: "BestEffort"
        })
        assert.deepStrictEqual(
          (conditions as ReadonlyArray<{ type: string; status: string }>).map((c) => [c.type, c.status]),
          [["example.com/Gate", "True"]]
        )
        assert.deepStrictEqual(
          (containerStatuses as ReadonlyArray<{ state: object }>).map((c) => c.state),
          [{ terminated: { exitCode: 137, reason: "SandboxLost", startedAt: started.toISOString().replace(/\.\d+Z$/, "Z"), finishedAt: finished.toISOString().replace(/\.\d+Z$/, "Z") } }]
        )

        // the same patch again: accepted, and nothing changes (no new resourceVersion)
        const version = (yield* backend.daemon.getPod(namespace, podName)).metadata?.resourceVersion
        yield* backend.daemon.patchPodStatus(namespace, podName, uid, ending, agentTypes)
        assert.strictEqual((yield* backend.daemon.getPod(namespace, podName)).metadata?.resourceVersion, version)

        // a Pod that is gone: 404
        yield* backend.daemon.deletePod(namespace, podName, uid)
        const gone = yield* backend.daemon.patchPodStatus(namespace, podName, uid, { phase: "Failed" }, []).pipe(Effect.flip)
        assert.strictEqual(gone._tag, "KubeNotFound")
      }))

    scenario(watchOrder, () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const nodeName = uniqueName("vk-node")
        const list = yield* backend.daemon.listPods(nodeName)
        assert.deepStrictEqual(list.items, [])
        const pod = yield* createPod(backend, namespace, nodeName)
        const podName = pod.metadata?.name ?? ""
        const current = yield* backend.daemon.getPod(namespace, podName)
        yield* backend.daemon.replacePodStatus({ ...current, status: { ...current.status, phase: "Running" } })
        yield* backend.daemon.deletePod(namespace, podName, current.metadata?.uid ?? "")
        const events = yield* backend.daemon.watchPods(nodeName, list.resourceVersion).pipe(
          Stream.filter((event) => event.type !== "BOOKMARK" && event.type !== "UNDECODABLE"),
          Stream.takeUntil((event) => event.type === "DELETED"),
          Stream.runCollect,
          Effect.timeout("20 seconds")
        )
        // A grace-0 delete of a bound pod is two writes on the real server: the deletion
        // timestamp (grace 0) lands first, as a MODIFIED event, then the object goes.
        assert.deepStrictEqual(
          events.map((event) => [
            event.type,
            event.object.metadata?.name,
            event.object.status?.phase,
            event.object.metadata?.deletionTimestamp !== undefined && event.object.metadata?.deletionTimestamp !== null,
            event.object.metadata?.deletionGracePeriodSeconds ?? null
          ]),
          [
            ["ADDED", podName, "Pending", false, null],
            ["MODIFIED", podName, "Running", false, null],
            ["MODIFIED", podName, "Running", true, 0],
            ["DELETED", podName, "Running", true, 0]
          ]
        )
      }))

    scenario("a watch from a compacted resourceVersion fails with KubeGone", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const nodeName = uniqueName("vk-node")
        const list = yield* backend.daemon.listPods(nodeName)
        // Two writes after the list: its resourceVersion is then strictly older than the
        // compaction point (a watch starts just after the revision it is given).
        yield* createPod(backend, namespace, nodeName)
        yield* createPod(backend, namespace, "elsewhere")
        yield* backend.compact
        const failure = yield* backend.daemon.watchPods(nodeName, list.resourceVersion).pipe(
          Stream.runCollect,
          Effect.timeout("20 seconds"),
          Effect.flip
        )
        assert.strictEqual(failure._tag, "KubeGone")
        // A relist gives a resourceVersion to watch from again.
        const relist = yield* backend.daemon.listPods(nodeName)
        assert.strictEqual(relist.items.length, 1)
      }))

    scenario("a resourceVersion the server does not have yet: a watch stays silent to its timeout, a list is 504 Too large (KubeGone)", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const nodeName = uniqueName("vk-node")
        const list = yield* backend.shortWatch.listPods(nodeName)
        const future = String(Number(list.resourceVersion) + 100_000)
        // what a server restored from a backup sees from a daemon that watched it before
        const events = yield* backend.shortWatch.watchPods(nodeName, future).pipe(Stream.runCollect, Effect.timeout("20 seconds"))
        assert.deepStrictEqual(events, [])
        // the daemon's sign of it: the server's current resourceVersion (a list of at most one Pod)
        // is older than the one it holds, and not older than the list it gave before
        const server = yield* backend.shortWatch.podsResourceVersion(nodeName)
        assert.isTrue(resourceVersionOlder(server, future), `${server} older than ${future}`)
        assert.isFalse(resourceVersionOlder(server, list.resourceVersion), `${server} not older than ${list.resourceVersion}`)
        const listed = yield* raw(backend.daemonConfig, "GET", `/api/v1/pods?fieldSelector=spec.nodeName%3D${nodeName}&resourceVersion=${future}`)
        assert.strictEqual(listed.status, 504, listed.text)
        assert.strictEqual(errorFromResponse("listPods", listed.status, listed.text)._tag, "KubeGone")
      }))

    scenario("the server ends a quiet watch at its timeoutSeconds: the stream ends cleanly, with no event", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const nodeName = uniqueName("vk-node")
        const otherNode = uniqueName("vk-node")
        const list = yield* backend.shortWatch.listPods(nodeName)
        const otherList = yield* backend.daemon.listPods(otherNode)
        const open = yield* responseHeaders("the quiet watch answered", (path) => path.includes(nodeName) && path.includes("watch=true"))
        // 20 s: only a guard against a watch the server never ends
        const quietWatch = yield* backend.shortWatch.watchPods(nodeName, list.resourceVersion).pipe(
          Stream.runCollect,
          Effect.timeout("20 seconds"),
          Effect.forkChild
        )
        yield* open
        // The receipt that the quiet watch did not end at once: once it is open at the server, a
        // write to a Pod on another node (which its field selector leaves out), delivered by a
        // watch of its own while the quiet watch is still open.
        const other = yield* createPod(backend, namespace, otherNode)
        const delivered = yield* backend.daemon.watchPods(otherNode, otherList.resourceVersion).pipe(
          Stream.filter((event) => event.type === "ADDED"),
          Stream.take(1),
          Stream.runCollect
        )
        assert.deepStrictEqual(delivered.map((event) => event.type === "ADDED" ? event.object.metadata?.uid : ""), [other.metadata?.uid])
        assert.isUndefined(quietWatch.pollUnsafe(), "the quiet watch is still open once the other Pod is delivered")
        // Then the server's timeout ends it cleanly, with nothing on its node: the real server sends
        // no event at all (no bookmark either, its bookmarks come about once a minute).
        assert.deepStrictEqual(yield* Fiber.join(quietWatch), [])
      }))

    scenario("graceful deletion marks a bound pod terminating; grace-0 delete: wrong UID 409, right UID removes it", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const pod = yield* createPod(backend, namespace, uniqueName("vk-node"))
        const podName = pod.metadata?.name ?? ""
        yield* kube("graceful delete", () =>
          backend.adminConfig.makeApiClient(k8s.CoreV1Api).deleteNamespacedPod({ name: podName, namespace }))
        const terminating = yield* backend.daemon.getPod(namespace, podName)
        assert.isDefined(terminating.metadata?.deletionTimestamp)
        assert.strictEqual(terminating.metadata?.deletionGracePeriodSeconds, 30)

        const wrongUid = yield* backend.daemon.deletePod(namespace, podName, "00000000-0000-0000-0000-000000000000").pipe(Effect.flip)
        assert.strictEqual(wrongUid._tag, "KubeConflict")
        yield* backend.daemon.deletePod(namespace, podName, pod.metadata?.uid ?? "")
        const gone = yield* backend.daemon.getPod(namespace, podName).pipe(Effect.flip)
        assert.strictEqual(gone._tag, "KubeNotFound")
        const again = yield* backend.daemon.deletePod(namespace, podName, pod.metadata?.uid ?? "").pipe(Effect.flip)
        assert.strictEqual(again._tag, "KubeNotFound")
      }))

    scenario("pods/status: annotations land, ownerReferences and spec do not change, an invalid podIP is 422", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const owner = yield* createSandbox(backend, namespace)
        const ownerReference = { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", name: owner.name, uid: owner.uid, controller: true }
        const pod = yield* createPod(backend, namespace, uniqueName("vk-node"), { ownerReferences: [ownerReference] })
        const current = yield* backend.daemon.getPod(namespace, pod.metadata?.name ?? "")
        const written = yield* backend.daemon.replacePodStatus({
          ...current,
          metadata: {
            ...current.metadata,
            annotations: { "sandbox.cocoonstack.io/claim-id": "sb_1a2b3c4d5e6f7081" },
            ownerReferences: []
          },
          spec: { ...current.spec, containers: [{ name: "agent", image: "changed:1" }] },
          status: { ...current.status, phase: "Running", podIP: "10.0.0.5", podIPs: [{ ip: "10.0.0.5" }] }
        })
        assert.deepStrictEqual(written.metadata?.annotations, { "sandbox.cocoonstack.io/claim-id": "sb_1a2b3c4d5e6f7081" })
        assert.deepStrictEqual(written.metadata?.ownerReferences?.map((ref) => ref.uid), [owner.uid])
        assert.strictEqual(written.spec?.containers[0]?.image, "ghcr.io/acme/agent-runtime:1.4.2")
        assert.strictEqual(written.status?.podIP, "10.0.0.5")

        const invalid = yield* backend.daemon.replacePodStatus({
          ...written,
          status: { ...written.status, podIP: "not-an-ip", podIPs: [{ ip: "not-an-ip" }] }
        }).pipe(Effect.flip)
        assert.strictEqual(invalid._tag, "KubeInvalid")
      }))

    // The deletion fields of an update: kube-apiserver keeps a stored deletionTimestamp whatever the
    // body says and keeps the stored grace when the body leaves it out, but holds both immutable
    // otherwise. Found with the daemon's status PUT of a Pod whose grace, past 2^53, it read as
    // another number (ST-06 — status write shape); these are the same rules at ordinary values.
    scenario("pods being deleted, PUT of the object and of /status: a deletionGracePeriodSeconds left out, null or equal keeps the stored one, a different one is 422 immutable; any deletionTimestamp keeps the stored one", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const { name, path } = yield* podInNewNamespace(backend, { finalizers: ["example.com/keep"] })
        const deleted = yield* raw(backend.adminConfig, "DELETE", path)
        assert.strictEqual(deleted.status, 200, deleted.text)
        type Meta = Record<string, unknown>
        const read = Effect.map(raw(backend.adminConfig, "GET", path), (reply) => JSON.parse(reply.text) as { metadata: Meta })
        const stored = (yield* read).metadata
        assert.strictEqual(stored["deletionGracePeriodSeconds"], 30)
        const put = (sub: string, change: (meta: Meta) => void) =>
          Effect.gen(function*() {
            const current = yield* read
            change(current.metadata)
            return yield* raw(backend.adminConfig, "PUT", `${path}${sub}`, { ...current, status: { phase: "Running" } })
          })
        const deletion = (meta: Meta) => [meta["deletionTimestamp"], meta["deletionGracePeriodSeconds"]]
        for (const sub of ["", "/status"]) {
          for (
            const change of [
              (meta: Meta) => delete meta["deletionGracePeriodSeconds"],
              (meta: Meta) => void (meta["deletionGracePeriodSeconds"] = null),
              (_: Meta) => undefined,
              (meta: Meta) => delete meta["deletionTimestamp"],
              (meta: Meta) => void (meta["deletionTimestamp"] = "2020-01-01T00:00:00Z")
            ]
          ) {
            const accepted = yield* put(sub, change)
            assert.strictEqual(accepted.status, 200, `${sub} ${change.toString()}: ${accepted.text}`)
            assert.deepStrictEqual(deletion((JSON.parse(accepted.text) as { metadata: Meta }).metadata), deletion(stored))
          }
          for (const grace of [29, 0]) {
            const refused = yield* put(sub, (meta) => void (meta["deletionGracePeriodSeconds"] = grace))
            assert.strictEqual(refused.status, 422)
            const error = `Invalid value: ${grace}: field is immutable`
            assert.deepStrictEqual(JSON.parse(refused.text), {
              kind: "Status",
              apiVersion: "v1",
              metadata: {},
              status: "Failure",
              message: `Pod "${name}" is invalid: metadata.deletionGracePeriodSeconds: ${error}`,
              reason: "Invalid",
              details: { name, kind: "Pod", causes: [{ reason: "FieldValueInvalid", message: error, field: "metadata.deletionGracePeriodSeconds" }] },
              code: 422
            })
          }
        }
        assert.deepStrictEqual(deletion((yield* read).metadata), deletion(stored))
        yield* releaseFinalizers(backend, path)
      }))

    scenario("pods not being deleted: a deletionGracePeriodSeconds is 422 on the object and on /status; a deletionTimestamp is 422 on the object (in whole seconds, UTC) and dropped by /status", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const { name, path } = yield* podInNewNamespace(backend)
        type Meta = Record<string, unknown>
        const put = (sub: string, extra: Meta) =>
          Effect.gen(function*() {
            const current = JSON.parse((yield* raw(backend.adminConfig, "GET", path)).text) as { metadata: Meta }
            return yield* raw(backend.adminConfig, "PUT", `${path}${sub}`, { ...current, metadata: { ...current.metadata, ...extra } })
          })
        const refusal = (reply: RawReply) => {
          const body = JSON.parse(reply.text) as { message?: string; reason?: string; details?: { causes?: Array<{ field?: string; message?: string }> } }
          return [reply.status, body.reason, body.message, (body.details?.causes ?? []).map((cause) => `${cause.field}: ${cause.message}`)]
        }
        const grace = "metadata.deletionGracePeriodSeconds: Invalid value: 5: field is immutable"
        const timestamp = "metadata.deletionTimestamp: Invalid value: \"2020-01-01T00:00:00Z\": field is immutable"
        const at = "2020-01-01T01:00:00.5+01:00"
        for (const sub of ["", "/status"]) {
          assert.deepStrictEqual(refusal(yield* put(sub, { deletionGracePeriodSeconds: 5 })), [422, "Invalid", `Pod "${name}" is invalid: ${grace}`, [grace]])
        }
        assert.deepStrictEqual(refusal(yield* put("", { deletionTimestamp: at })), [422, "Invalid", `Pod "${name}" is invalid: ${timestamp}`, [timestamp]])
        assert.deepStrictEqual(
          refusal(yield* put("", { deletionTimestamp: at, deletionGracePeriodSeconds: 5 })),
          [422, "Invalid", `Pod "${name}" is invalid: [${timestamp}, ${grace}]`, [timestamp, grace]]
        )
        assert.deepStrictEqual(
          refusal(yield* put("/status", { deletionTimestamp: at, deletionGracePeriodSeconds: 5 })),
          [422, "Invalid", `Pod "${name}" is invalid: ${grace}`, [grace]]
        )
        const dropped = yield* put("/status", { deletionTimestamp: at })
        assert.strictEqual(dropped.status, 200, dropped.text)
        assert.notInclude(dropped.text, "deletionTimestamp")
        assert.notInclude((yield* raw(backend.adminConfig, "GET", path)).text, "deletionTimestamp")
      }))

    scenario("a Sandbox being deleted: a PUT with another deletionGracePeriodSeconds is 422, the cause listed twice, the message once", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const { name } = yield* createSandbox(backend, namespace, ["example.com/keep"])
        const path = `/apis/agents.x-k8s.io/v1beta1/namespaces/${namespace}/sandboxes/${name}`
        assert.strictEqual((yield* raw(backend.adminConfig, "DELETE", path)).status, 200)
        const current = JSON.parse((yield* raw(backend.adminConfig, "GET", path)).text) as { metadata: Record<string, unknown> }
        const reply = yield* raw(backend.adminConfig, "PUT", path, { ...current, metadata: { ...current.metadata, deletionGracePeriodSeconds: 5 } })
        const error = "Invalid value: 5: field is immutable"
        const cause = { reason: "FieldValueInvalid", message: error, field: "metadata.deletionGracePeriodSeconds" }
        assert.deepStrictEqual(JSON.parse(reply.text), {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message: `Sandbox.agents.x-k8s.io "${name}" is invalid: metadata.deletionGracePeriodSeconds: ${error}`,
          reason: "Invalid",
          details: { name, group: "agents.x-k8s.io", kind: "Sandbox", causes: [cause, cause] },
          code: 422
        })
        yield* releaseFinalizers(backend, path)
      }))

    scenario("a Pod with two controller ownerReferences is 422 Invalid on create and on update", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const first = yield* createSandbox(backend, namespace)
        const second = yield* createSandbox(backend, namespace)
        const ref = (owner: { name: string; uid: string }, controller: boolean) =>
          ({ apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", name: owner.name, uid: owner.uid, controller })
        const body = (name: string, refs: ReadonlyArray<object>) => ({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, ownerReferences: refs },
          spec: { nodeName: "n", containers: [{ name: "agent", image: "x" }] }
        })
        const refusal = (reply: RawReply) => {
          const status = JSON.parse(reply.text) as { reason?: string; message?: string; details?: { causes?: Array<{ field?: string }> } }
          return {
            code: reply.status,
            reason: status.reason,
            fields: (status.details?.causes ?? []).map((cause) => cause.field),
            says: (status.message ?? "").includes(
              `Only one reference can have Controller set to true. Found "true" in references for Sandbox/${first.name} and Sandbox/${second.name}`
            )
          }
        }
        const expected = { code: 422, reason: "Invalid", fields: ["metadata.ownerReferences"], says: true }
        const created = yield* raw(backend.adminConfig, "POST", `/api/v1/namespaces/${namespace}/pods`, body("two", [ref(first, true), ref(second, true)]))
        assert.deepStrictEqual(refusal(created), expected)
        const missing = yield* raw(backend.adminConfig, "GET", `/api/v1/namespaces/${namespace}/pods/two`)
        assert.strictEqual(missing.status, 404, "nothing stored")

        const ok = yield* raw(backend.adminConfig, "POST", `/api/v1/namespaces/${namespace}/pods`, body("one", [ref(first, true), ref(second, false)]))
        assert.strictEqual(ok.status, 201)
        const stored = JSON.parse(ok.text) as { metadata: Record<string, unknown> }
        const updated = yield* raw(backend.adminConfig, "PUT", `/api/v1/namespaces/${namespace}/pods/one`, {
          ...stored,
          metadata: { ...stored.metadata, ownerReferences: [ref(first, true), ref(second, true)] }
        })
        assert.deepStrictEqual(refusal(updated), expected)
      }))

    scenario("pods/status: an identical PUT keeps the resourceVersion; times are stored at whole seconds", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const pod = yield* createPod(backend, namespace, uniqueName("vk-node"))
        const current = yield* backend.daemon.getPod(namespace, pod.metadata?.name ?? "")
        const started = new Date(Math.floor(Date.now() / 1000) * 1000 - 5000)
        const status = runningStatus(started)
        const first = yield* backend.daemon.replacePodStatus({ ...current, status })
        // the server fills in the QoS class it fixed at creation; the write left it out
        assert.strictEqual(first.status?.qosClass, "BestEffort")
        const again = yield* backend.daemon.replacePodStatus({ ...current, metadata: { ...current.metadata, ...first.metadata }, status })
        assert.strictEqual(again.metadata?.resourceVersion, first.metadata?.resourceVersion)
        const stored = yield* raw(backend.daemonConfig, "GET", `/api/v1/namespaces/${namespace}/pods/${pod.metadata?.name}`)
        assert.include(stored.text, `"startTime":"${started.toISOString().replace(".000Z", "Z")}"`)
      }))

    scenario("pods/status: a status with hostIP \"\" is stored without hostIP (omitempty strings written empty are served absent); the same PUT again keeps the resourceVersion", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const pod = yield* createPod(backend, namespace, uniqueName("vk-node"))
        const path = `/api/v1/namespaces/${namespace}/pods/${pod.metadata?.name ?? ""}`
        const read = yield* raw(backend.daemonConfig, "GET", path)
        const object = JSON.parse(read.text) as { metadata: { resourceVersion: string }; status: Record<string, unknown> }
        const started = new Date(Math.floor(Date.now() / 1000) * 1000 - 5000)
        // Running with no address (the daemon once sent hostIP "" for it), and empty texts: the
        // daemon's no-op comparison counts on the server serving these as absent (ST-13 — an
        // unchanged status is not written)
        const { hostIP: _hostIP, podIP: _podIP, ...noAddress } = runningStatus(started)
        object.status = { ...JSON.parse(JSON.stringify(noAddress)), hostIP: "", podIP: "", message: "", reason: "" }
        const put = yield* raw(backend.daemonConfig, "PUT", `${path}/status`, object)
        assert.strictEqual(put.status, 200, put.text)
        const written = JSON.parse(put.text) as { metadata: { resourceVersion: string }; status: Record<string, unknown> }
        assert.strictEqual(written.status["phase"], "Running")
        for (const field of ["hostIP", "podIP", "message", "reason"]) assert.isFalse(field in written.status, `${field} in the reply`)
        const stored = yield* raw(backend.daemonConfig, "GET", path)
        assert.notInclude(stored.text, `"hostIP"`)
        assert.notInclude(stored.text, `"podIP"`)
        // the same body again changes nothing the server stores
        const again = yield* raw(backend.daemonConfig, "PUT", `${path}/status`, {
          ...object,
          metadata: { ...object.metadata, resourceVersion: written.metadata.resourceVersion }
        })
        assert.strictEqual(again.status, 200, again.text)
        assert.strictEqual((JSON.parse(again.text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion, written.metadata.resourceVersion)
      }))

    scenario("pods/status: the same status with sub-second times is a write (new resourceVersion), stored at whole seconds", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const pod = yield* createPod(backend, namespace, uniqueName("vk-node"))
        const name = pod.metadata?.name ?? ""
        const current = yield* backend.daemon.getPod(namespace, name)
        const started = new Date(Math.floor(Date.now() / 1000) * 1000 - 5000)
        const first = yield* backend.daemon.replacePodStatus({ ...current, status: runningStatus(started) })
        // the writer's managedFields time has whole seconds: the next second makes it differ
        yield* Effect.sleep("1100 millis")
        const path = `/api/v1/namespaces/${namespace}/pods/${name}`
        const read = yield* raw(backend.daemonConfig, "GET", path)
        const object = JSON.parse(read.text) as { status: { startTime: string; containerStatuses: Array<{ state: { running: { startedAt: string } } }> } }
        const fraction = started.toISOString().replace(".000Z", ".734Z")
        object.status.startTime = fraction
        object.status.containerStatuses[0]!.state.running.startedAt = fraction
        const put = yield* raw(backend.daemonConfig, "PUT", `${path}/status`, object)
        assert.strictEqual(put.status, 200, put.text)
        const written = JSON.parse(put.text) as { metadata: { resourceVersion: string }; status: { startTime: string } }
        assert.notStrictEqual(written.metadata.resourceVersion, first.metadata?.resourceVersion)
        assert.strictEqual(written.status.startTime, started.toISOString().replace(".000Z", "Z"))
      }))

    // ST-12 — other writers' Pod conditions survive status writes: the daemon keeps another
    // writer's condition whole itself; this is what the servers do with a write that does not
    // (kube-apiserver copies the field back by type; the simulator agrees)
    scenario("pods/status: a write that leaves out a condition's observedGeneration keeps the stored one of its type; none where the stored had none", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const pod = yield* createPod(backend, namespace, uniqueName("vk-node"))
        const path = `/api/v1/namespaces/${namespace}/pods/${pod.metadata?.name ?? ""}`
        // another controller's conditions, with the field, and one of the node agent's without it
        const patched = yield* rawRequest(backend.adminConfig, "PATCH", `${path}/status`, {
          status: {
            conditions: [
              { type: "example.com/x", status: "False", observedGeneration: 1 },
              { type: "example.com/y", status: "False", observedGeneration: 1 },
              { type: "Ready", status: "True" }
            ]
          }
        }, "application/strategic-merge-patch+json")
        assert.strictEqual(patched.status, 200, patched.text)
        // a writer that does not know the field: x unchanged, y changed, Ready unchanged, all without it
        const read = yield* raw(backend.adminConfig, "GET", path)
        const object = JSON.parse(read.text) as { status: { conditions: Array<Record<string, unknown>> } }
        object.status.conditions = object.status.conditions.map(({ observedGeneration: _, ...condition }) =>
          condition["type"] === "example.com/y" ? { ...condition, status: "True" } : condition
        )
        const put = yield* raw(backend.adminConfig, "PUT", `${path}/status`, object)
        assert.strictEqual(put.status, 200, put.text)
        const written = JSON.parse(put.text) as { status: { conditions: Array<{ type: string; status: string; observedGeneration?: number }> } }
        assert.deepStrictEqual(
          written.status.conditions.map((c) => [c.type, c.status, c.observedGeneration ?? "none"]).sort(),
          [["Ready", "True", "none"], ["example.com/x", "False", 1], ["example.com/y", "True", 1]]
        )
      }))

    scenario("nodes: create, AlreadyExists, a status patch keeps a condition another client wrote", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const name = uniqueName("vk-node")
        yield* backend.daemon.createNode({ metadata: { name, labels: { type: "virtual-kubelet" } } })
        const duplicate = yield* backend.daemon.createNode({ metadata: { name } }).pipe(Effect.flip)
        assert.strictEqual(duplicate._tag === "KubeConflict" ? duplicate.reason : duplicate._tag, "AlreadyExists")
        const time = secondsAgo(1)
        yield* kube("other writer", () =>
          backend.adminConfig.makeApiClient(k8s.CoreV1Api).patchNodeStatus(
            { name, body: { status: { conditions: [{ type: "NetworkUnavailable", status: "False", reason: "RouteCreated", message: "", lastHeartbeatTime: time, lastTransitionTime: time }] } } },
            k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch)
          ))
        yield* backend.daemon.patchNodeStatus(name, {
          status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "", lastHeartbeatTime: time, lastTransitionTime: time }] }
        })
        const node = yield* backend.daemon.getNode(name)
        assert.deepStrictEqual(
          (node.status?.conditions ?? []).map((condition) => [condition.type, condition.status]).sort(),
          [["NetworkUnavailable", "False"], ["Ready", "True"]]
        )
      }))

    scenario("leases: six-digit renewTime accepted and kept; a three-digit one refused", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const name = uniqueName("vk-node")
        const lease = yield* backend.daemon.createLease({
          metadata: { name, namespace: "kube-node-lease" },
          spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: "2026-11-29T09:00:00.123Z" }
        })
        const got = yield* raw(backend.daemonConfig, "GET", `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`)
        assert.strictEqual(got.status, 200)
        assert.include(got.text, "\"renewTime\":\"2026-11-29T09:00:00.123000Z\"")
        assert.isDefined(lease.metadata?.resourceVersion)

        const threeDigits = yield* raw(backend.daemonConfig, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name: uniqueName("vk-node") },
          spec: { holderIdentity: "x", leaseDurationSeconds: 40, renewTime: "2026-11-29T09:00:00.123Z" }
        })
        assert.strictEqual(threeDigits.status, 400, threeDigits.text)
      }))

    scenario("events: create, then a repeat as a merge patch", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const { eventName, event } = claimedEvent(namespace, yield* createPod(backend, namespace, uniqueName("vk-node")))
        const created = yield* backend.daemon.createEvent(event)
        assert.strictEqual(created.count, 1)
        const patched = yield* backend.daemon.patchEvent(namespace, eventName, { count: 2, message: "claimed again", lastTimestamp: secondsAgo(0) })
        assert.deepStrictEqual([patched.count, patched.message, patched.reason], [2, "claimed again", "Claimed"])
        const other = yield* backend.daemon.createEvent({ ...created, metadata: { name: eventName, namespace } }).pipe(Effect.flip)
        assert.strictEqual(other._tag === "KubeConflict" ? other.reason : other._tag, "AlreadyExists")
      }))

    scenario("owner GET: present, deleting (finalizer), missing (details.name), unknown resource and group (no name)", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const present = yield* createSandbox(backend, namespace)
        const found = yield* backend.daemon.getOwner(sandboxRef(namespace, present.name))
        assert.deepStrictEqual([found.uid, found.deletionTimestamp], [present.uid, undefined])

        const held = yield* createSandbox(backend, namespace, ["test.vk-sandbox.io/hold"])
        yield* kube("delete held sandbox", () =>
          backend.adminConfig.makeApiClient(k8s.CustomObjectsApi).deleteNamespacedCustomObject({
            ...sandboxRef(namespace, held.name)
          }))
        const deleting = yield* backend.daemon.getOwner(sandboxRef(namespace, held.name))
        assert.strictEqual(deleting.uid, held.uid)
        assert.isDefined(deleting.deletionTimestamp)

        const missing = yield* backend.daemon.getOwner(sandboxRef(namespace, "gone-bot")).pipe(Effect.flip)
        assert.deepStrictEqual(missing._tag === "KubeNotFound" ? missing.details : missing._tag, {
          name: "gone-bot",
          group: "agents.x-k8s.io",
          kind: "sandboxes"
        })

        const unknownResource = yield* backend.admin.getOwner({ ...sandboxRef(namespace, "x"), plural: "widgets" }).pipe(Effect.flip)
        assert.strictEqual(unknownResource._tag, "KubeNotFound")
        assert.isUndefined(unknownResource._tag === "KubeNotFound" ? unknownResource.details?.name : "")
        const unknownGroup = yield* backend.admin.getOwner({ ...sandboxRef(namespace, "x"), group: "nope.example.com" }).pipe(Effect.flip)
        assert.strictEqual(unknownGroup._tag, "KubeNotFound")
        assert.isUndefined(unknownGroup._tag === "KubeNotFound" ? unknownGroup.details?.name : "")
      }))

    scenario("status writes: another uid is 409, a lease PUT without resourceVersion 422, $patch: delete drops a node condition", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const pod = yield* createPod(backend, namespace, uniqueName("vk-node"))
        const current = yield* backend.daemon.getPod(namespace, pod.metadata?.name ?? "")
        const otherUid = yield* backend.daemon.replacePodStatus({
          ...current,
          metadata: { ...current.metadata, uid: "00000000-0000-0000-0000-000000000000" },
          status: { ...current.status, phase: "Running" }
        }).pipe(Effect.flip)
        assert.strictEqual(otherUid._tag === "KubeConflict" ? otherUid.reason : otherUid._tag, "Conflict")

        const leaseName = uniqueName("vk-node")
        const lease = yield* backend.daemon.createLease({
          metadata: { name: leaseName, namespace: "kube-node-lease" },
          spec: { holderIdentity: leaseName, leaseDurationSeconds: 40, renewTime: new Date().toISOString() }
        })
        const { resourceVersion: _held, ...unversioned } = lease.metadata ?? {}
        const noVersion = yield* backend.daemon.replaceLease({ ...lease, metadata: unversioned }).pipe(Effect.flip)
        assert.strictEqual(noVersion._tag, "KubeInvalid")

        const name = uniqueName("vk-node")
        yield* backend.daemon.createNode({ metadata: { name } })
        const time = secondsAgo(1)
        const condition = (type: string) => ({ type, status: "False", reason: "Probe", message: "", lastHeartbeatTime: time, lastTransitionTime: time })
        yield* backend.daemon.patchNodeStatus(name, { status: { conditions: [condition("Ready"), condition("MemoryPressure")] } })
        yield* backend.daemon.patchNodeStatus(name, { status: { conditions: [{ type: "MemoryPressure", $patch: "delete" }] } })
        const node = yield* backend.daemon.getNode(name)
        assert.deepStrictEqual((node.status?.conditions ?? []).map((c) => c.type), ["Ready"])

        const missingPod = yield* backend.daemon.getOwner({ group: "", version: "v1", plural: "pods", namespace, name: "gone-pod" }).pipe(Effect.flip)
        assert.deepStrictEqual(missingPod._tag === "KubeNotFound" ? missingPod.details : missingPod._tag, { name: "gone-pod", kind: "pods" })
      }))

    scenario("a terminating namespace: creates are 403, status writes and event patches still land", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const core = backend.adminConfig.makeApiClient(k8s.CoreV1Api)
        const pod = yield* createPod(backend, namespace, uniqueName("vk-node"))
        const { eventName, event } = claimedEvent(namespace, pod)
        yield* backend.daemon.createEvent(event)
        // no namespace controller runs beside either server: the namespace stays Terminating
        yield* kube("delete namespace", () => core.deleteNamespace({ name: namespace }))
        const terminating = yield* kube("read namespace", () => core.readNamespace({ name: namespace }))
        assert.strictEqual(terminating.status?.phase, "Terminating")

        const refused = yield* backend.daemon.createEvent({ ...event, metadata: { name: `${eventName}-2`, namespace } }).pipe(Effect.flip)
        assert.strictEqual(refused._tag, "KubeForbidden")
        assert.include(refused.message, "because it is being terminated")
        const patched = yield* backend.daemon.patchEvent(namespace, eventName, { count: 2 })
        assert.strictEqual(patched.count, 2)
        const current = yield* backend.daemon.getPod(namespace, pod.metadata?.name ?? "")
        const written = yield* backend.daemon.replacePodStatus({ ...current, status: { ...current.status, phase: "Running" } })
        assert.strictEqual(written.status?.phase, "Running")
      }))

    scenario("nodes: a create carries its status (capacity, conditions, addresses, daemon endpoint)", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const name = uniqueName("vk-node")
        const time = secondsAgo(1)
        const created = yield* backend.daemon.createNode({
          metadata: { name, labels: { type: "virtual-kubelet" } },
          spec: { taints: [{ key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" }] },
          status: {
            capacity: { cpu: "16", memory: "64Gi", pods: "110" },
            allocatable: { cpu: "16", memory: "64Gi", pods: "110" },
            conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "ready", lastHeartbeatTime: new Date(time), lastTransitionTime: new Date(time) }],
            addresses: [{ type: "InternalIP", address: "10.0.0.5" }, { type: "Hostname", address: name }],
            daemonEndpoints: { kubeletEndpoint: { Port: 10250 } }
          }
        })
        const node = yield* backend.daemon.getNode(name)
        for (const got of [created, node]) {
          assert.deepStrictEqual(got.status?.capacity, { cpu: "16", memory: "64Gi", pods: "110" })
          assert.deepStrictEqual((got.status?.conditions ?? []).map((c) => [c.type, c.status, c.reason]), [["Ready", "True", "KubeletReady"]])
          assert.deepStrictEqual((got.status?.addresses ?? []).map((a) => [a.type, a.address]), [["InternalIP", "10.0.0.5"], ["Hostname", name]])
          assert.strictEqual(got.status?.daemonEndpoints?.kubeletEndpoint?.Port, 10250)
          // the real server's admission adds node.kubernetes.io/not-ready as well (off by default in memory)
          assert.include((got.spec?.taints ?? []).map((t) => t.key), "virtual-kubelet.io/provider")
        }
      }))

    scenario("a missing object's 404 carries the server's details (node get and status patch, lease, pod, event patch)", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const detailsOf = (error: { readonly _tag: string }) => ("details" in error ? error.details : error._tag)
        const node = uniqueName("vk-node")
        assert.deepStrictEqual(detailsOf(yield* backend.daemon.getNode(node).pipe(Effect.flip)), { name: node, kind: "nodes" })
        assert.deepStrictEqual(
          detailsOf(yield* backend.daemon.patchNodeStatus(node, { status: { conditions: [] } }).pipe(Effect.flip)),
          { name: node, kind: "nodes" }
        )
        assert.deepStrictEqual(detailsOf(yield* backend.daemon.getLease(node).pipe(Effect.flip)), {
          name: node,
          group: "coordination.k8s.io",
          kind: "leases"
        })
        assert.deepStrictEqual(detailsOf(yield* backend.daemon.getPod(namespace, "gone-pod").pipe(Effect.flip)), { name: "gone-pod", kind: "pods" })
        assert.deepStrictEqual(
          detailsOf(yield* backend.daemon.patchEvent(namespace, "gone-event", { count: 2 }).pipe(Effect.flip)),
          { name: "gone-event", kind: "events" }
        )
      }))

    scenario("framing: a body of at most 2048 bytes has a Content-Length; a longer one, a list or one object, is chunked without one", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const namespace = yield* newNamespace(backend)
        const podsPath = `/api/v1/namespaces/${namespace}/pods`
        const lengthOnly = (reply: RawReply) => {
          assert.strictEqual(reply.status, 200)
          assert.strictEqual(reply.headers["content-length"], String(Buffer.byteLength(reply.text)))
          assert.isUndefined(reply.headers["transfer-encoding"])
        }
        const chunked = (reply: RawReply) => {
          assert.strictEqual(reply.status, 200)
          assert.isAbove(Buffer.byteLength(reply.text), 2048)
          assert.strictEqual(reply.headers["transfer-encoding"], "chunked")
          assert.isUndefined(reply.headers["content-length"])
        }
        lengthOnly(yield* raw(backend.adminConfig, "GET", podsPath))
        lengthOnly(yield* raw(backend.adminConfig, "GET", `/api/v1/namespaces/${namespace}`))
        const big = yield* createPod(backend, namespace, uniqueName("vk-node"), { annotations: { note: "x".repeat(3000) } })
        chunked(yield* raw(backend.adminConfig, "GET", `${podsPath}/${big.metadata?.name}`))
        chunked(yield* raw(backend.adminConfig, "GET", podsPath))
        const selected = yield* raw(backend.adminConfig, "GET", `/api/v1/pods?fieldSelector=metadata.namespace%3D${namespace}`)
        chunked(selected)
        assert.deepStrictEqual((selected.body as { items: Array<unknown> }).items.length, 1)
      }))

    scenario("NodeInventory server-side apply: create, replace, omitted list items removed", () =>
      Effect.gen(function*() {
        const backend = yield* acquire
        const node = uniqueName("node1-sandboxd")
        const body = (entries: ReadonlyArray<object>, pools?: ReadonlyArray<object>) => nodeInventoryBody(node, entries, pools)
        const entry = (name: string, id: string, phase: string) => ({ name, id, phase, claimRef: name })
        const first = (yield* backend.daemon.applyNodeInventory(body(
          [entry("sb_c0ffee0012345678", "sb_c0ffee0012345678", "Running"), entry("team-a/notebook-x9", "sb_4f9a0c2e7b1d3a65", "Hibernated")],
          [{ template: "base:24.04", net: "none", size: "small", warm: 4, target: 4 }]
        ))) as { metadata: { generation?: number; managedFields?: Array<{ manager?: string; operation?: string }> }; entries?: Array<unknown>; pools?: Array<unknown> }
        assert.deepStrictEqual([first.entries?.length, first.pools?.length, first.metadata.generation], [2, 1, 1])
        assert.deepStrictEqual(first.metadata.managedFields?.map((field) => [field.manager, field.operation]), [["vk-sandbox", "Apply"]])

        const second = (yield* backend.daemon.applyNodeInventory(body([entry("team-a/notebook-x9", "sb_4f9a0c2e7b1d3a65", "Running")]))) as {
          metadata: { generation?: number }
          entries?: Array<unknown>
          pools?: Array<unknown>
          node?: string
        }
        assert.deepStrictEqual(second.entries, [entry("team-a/notebook-x9", "sb_4f9a0c2e7b1d3a65", "Running")])
        assert.isUndefined(second.pools)
        assert.deepStrictEqual([second.node, second.metadata.generation], [node, 2])

        const same = (yield* backend.daemon.applyNodeInventory(body([entry("team-a/notebook-x9", "sb_4f9a0c2e7b1d3a65", "Running")]))) as {
          metadata: { generation?: number }
        }
        assert.strictEqual(same.metadata.generation, 2)
      }))
  })
}
