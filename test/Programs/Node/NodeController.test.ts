/**
 * The node controller against the in-memory API server over HTTP (through the live KubeApi layer)
 * and the sandboxd simulator over HTTP (through the live client), on TestClock. Real I/O does not
 * follow TestClock, so after moving time the tests wait for the simulator to show the write.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Duration, Effect, Exit, Fiber, Layer, Metric, Option, Redacted, Ref, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import * as SandboxdClientHttp from "../../../src/Layers/SandboxdClientHttp.ts"
import * as SandboxdTokenFile from "../../../src/Layers/SandboxdTokenFile.ts"
import { KnownSecrets } from "../../../src/Services/KnownSecrets.ts"
import { SandboxdToken } from "../../../src/Services/SandboxdToken.ts"
import * as NodeControllerLive from "../../../src/Programs/Node/NodeController.ts"
import { NodeController, NodeHealth } from "../../../src/Services/NodeController.ts"
import { apiserverRequests, nodeTainted, sandboxdUp } from "../../../src/Services/Metrics.ts"
import { instrumentKube } from "../../../src/Programs/Observability/Instrument.ts"
import { decodePod } from "../../../src/Schemas/Pod/Decode.ts"
import { testConfig } from "../../../testkit/Config.ts"
import { AppConfig } from "../../../src/Services/Config.ts"
import { EventRecorder, type EventType } from "../../../src/Services/EventRecorder.ts"
import { KubeApi, KubeForbidden, KubeUnavailable } from "../../../src/Services/KubeApi.ts"
import { SandboxdClient } from "../../../src/Services/SandboxdClient.ts"
import { ClusterModel } from "../../../testkit/Simulators/Apiserver/Model.ts"
import { Leases, Nodes, Pods } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../testkit/Simulators/Apiserver/Status.ts"
import { make as makeSandboxdSim, SimFault } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { serve as serveSandboxd } from "../../../testkit/Simulators/Sandboxd/Server.ts"
import { makeFlight, recording } from "../../support/Receipts.ts"
import { eventually, quiet } from "../../support/Wait.ts"
import { conditionSummary, healthyConditions, testNodeInfo } from "../../support/NodeStatus.ts"
import { kubeApiFromFile } from "../../support/Kube.ts"
import * as FaultProxy from "../../support/FaultProxy.ts"
import * as KubeApiClientNode from "../../../src/Layers/KubeApiClientNode.ts"
import { kubeconfigYaml } from "../../../testkit/Simulators/Apiserver/Server.ts"
import { serveModel } from "../../support/Apiserver.ts"
import { tempDir } from "../../support/TempDir.ts"

const NODE = "vk-sandboxd"
const START = Date.parse("2026-11-29T10:00:00.250Z")

// ---- fixtures ---------------------------------------------------------------------------------

interface NodeView {
  metadata: { uid: string; labels: Record<string, string> }
  spec: { taints?: Array<Record<string, string>> }
  status: {
    conditions: Array<{ type: string; status: string; reason?: string; lastHeartbeatTime?: string; lastTransitionTime?: string }>
    addresses: Array<{ type: string; address: string }>
    capacity: Record<string, string>
    allocatable: Record<string, string>
    daemonEndpoints: { kubeletEndpoint: Record<string, number> }
    nodeInfo: Record<string, string>
  }
}

interface LeaseView {
  metadata: { resourceVersion: string; labels?: Record<string, string>; ownerReferences?: Array<Record<string, unknown>> }
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string }
}

const nodeOf = (model: ClusterModel) => model.peek(Nodes, "", NODE) as unknown as NodeView | undefined
const leaseOf = (model: ClusterModel) => model.peek(Leases, "kube-node-lease", NODE) as unknown as LeaseView | undefined
const condition = (node: NodeView | undefined, type: string) => node?.status.conditions.find((c) => c.type === type)


const microTime = (millis: number) => new Date(millis).toISOString().replace(/Z$/, "000Z")

interface Recorded {
  readonly type: EventType
  readonly reason: string
  readonly uid: string
}

const testOptions: Partial<NodeControllerLive.NodeControllerOptions> = {
  // Long timeouts: a request in flight while TestClock jumps must not time out.
  probeTimeout: Duration.hours(1),
  version: "0.1.0",
  arch: "arm64"
}

interface SetupOptions {
  /** sandboxd's root token ("" = an open node). */
  readonly rootToken?: string
  /** The token the daemon sends. */
  readonly token?: string
  /** The token file the daemon follows (the token is then read from it). */
  readonly tokenFile?: string
  /** Wraps the KubeApi the controller uses (to add a concurrent writer, say). */
  readonly wrapKube?: (kube: KubeApi["Service"], model: ClusterModel) => KubeApi["Service"]
  /** The live client's options (limits and timeouts that never slow a test by default). */
  readonly client?: Partial<KubeApiClientNode.ClientOptions>
  /** A fault proxy between the client and the apiserver (`proxy` of the setup). */
  readonly proxied?: boolean
}

/** Servers, clients and a running controller in its own scope (closed to simulate shutdown). */
const setupWith = (options: SetupOptions) => Effect.gen(function*() {
  yield* TestClock.setTime(START)
  const model = new ClusterModel()
  const served = yield* serveModel(model)
  const proxy = options.proxied === true ? yield* FaultProxy.make(served.apiserver.url) : undefined
  const kubeconfigPath = proxy === undefined ? served.kubeconfigPath : path.join(served.dir, "kubeconfig-proxied")
  if (proxy !== undefined) yield* Effect.promise(() => fs.writeFile(kubeconfigPath, kubeconfigYaml(proxy.url, "sim-token"), { mode: 0o600 }))
  const sim = yield* makeSandboxdSim({ rootToken: options.rootToken ?? "" })
  const sandboxdAddress = yield* serveSandboxd(sim, { host: "127.0.0.1", port: 0 })

  const config = testConfig({
    nodeIp: "10.0.0.9",
    listenAddr: { host: "", port: 10260 },
    sandboxdUrl: sandboxdAddress.url,
    sandboxdTimeout: Duration.hours(1),
    sandboxdToken: Redacted.make(options.token ?? ""),
    sandboxdTokenFile: options.tokenFile ?? ""
  })
  const kube = yield* kubeApiFromFile(kubeconfigPath, options.client)
  const tokens = yield* SandboxdTokenFile.make.pipe(Effect.provideService(AppConfig, config))
  const sandboxd = yield* SandboxdClientHttp.make.pipe(
    Effect.provideService(AppConfig, config),
    Effect.provideService(SandboxdToken, tokens),
    Effect.provide(KnownSecrets.none)
  )

  const events = yield* Ref.make<ReadonlyArray<Recorded>>([])
  const recorder = EventRecorder.of({
    record: (involved, type, reason) => Ref.update(events, (all) => [...all, { type, reason, uid: involved.uid }]),
    forget: () => Effect.void
  })
  const healthy = yield* Ref.make(true)
  // The clients as the controller sees them: each call noted with its TestClock time, and `idle`
  // once every call begun has ended (the loops then wait on the clock again).
  const flight = makeFlight()
  const kubeCalls = recording(options.wrapKube === undefined ? kube : options.wrapKube(kube, model), flight)
  const sandboxdCalls = recording(sandboxd, flight)
  const idle = flight.idle
  /** The TestClock times of the lease renewals sent. */
  const renewedAt = () => kubeCalls.named("replaceLease").map((call) => call.at)

  const start = Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      NodeControllerLive.layer(testOptions).pipe(
        Layer.provide(Layer.mergeAll(
          AppConfig.layer(config),
          Layer.succeed(KubeApi, kubeCalls.service),
          Layer.succeed(SandboxdClient, sandboxdCalls.service),
          Layer.succeed(EventRecorder, recorder),
          Layer.succeed(NodeHealth, { healthy: Ref.get(healthy) })
        ))
      ),
      scope
    )
    return { controller: Context.get(context, NodeController), stop: Scope.close(scope, Exit.void) }
  })
  return { model, sim, kube, proxy, events, healthy, start, idle, renewedAt }
})

const setup = setupWith({})

// ---- tests ------------------------------------------------------------------------------------

describe("NodeController", () => {
  it.effect("registers a new node with every field and creates its lease with the owner reference", () =>
    Effect.gen(function*() {
      const { model, events, start } = yield* setup
      const { controller } = yield* start
      const node = nodeOf(model)
      assert.isDefined(node)
      const { metadata, spec, status } = node!
      assert.deepStrictEqual(metadata.labels, {
        "type": "virtual-kubelet",
        "kubernetes.io/role": "agent",
        "kubernetes.io/hostname": NODE,
        "sandbox.cocoonstack.io/runtime": "sandboxd"
      })
      assert.deepStrictEqual(spec.taints, [{ key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" }])
      assert.deepStrictEqual(status.addresses, [
        { type: "InternalIP", address: "10.0.0.9" },
        { type: "Hostname", address: NODE }
      ])
      assert.deepStrictEqual(status.capacity, { cpu: "4000", memory: "8Ti", pods: "2000" })
      assert.deepStrictEqual(status.allocatable, { cpu: "4000", memory: "8Ti", pods: "2000" })
      assert.deepStrictEqual(status.daemonEndpoints.kubeletEndpoint, { Port: 10260 })
      assert.deepInclude(status.nodeInfo, testNodeInfo)
      assert.deepStrictEqual(conditionSummary(status.conditions), healthyConditions)
      assert.strictEqual(condition(node, "Ready")?.lastHeartbeatTime, "2026-11-29T10:00:00Z")

      const lease = yield* eventually("the lease", () => leaseOf(model))
      assert.strictEqual(lease.spec.holderIdentity, NODE)
      assert.strictEqual(lease.spec.leaseDurationSeconds, 40)
      assert.strictEqual(lease.spec.renewTime, microTime(START))
      assert.deepStrictEqual(lease.metadata.ownerReferences, [
        { apiVersion: "v1", kind: "Node", name: NODE, uid: metadata.uid }
      ])
      assert.deepStrictEqual(Option.map(yield* controller.node, (n) => n.uid), Option.some(metadata.uid))
      assert.deepStrictEqual((yield* Ref.get(events)).map((e) => `${e.type} ${e.reason} ${e.uid}`), [
        `Normal Registered ${metadata.uid}`
      ])
    }))

  it.effect("CHK-08: an apiserver unavailable for minutes at start is waited for on the backoff, then the node registers", () =>
    Effect.gen(function*() {
      const down = yield* Ref.make(true)
      const attempts = yield* Ref.make(0)
      const { model, start, idle } = yield* setupWith({
        wrapKube: (kube) => ({
          ...kube,
          getNode: (name) =>
            Ref.updateAndGet(attempts, (n) => n + 1).pipe(
              Effect.andThen(Ref.get(down)),
              Effect.flatMap((isDown) =>
                isDown
                  ? Effect.fail(new KubeUnavailable({ operation: "get node", status: 503, message: "restarting" }))
                  : kube.getNode(name)
              )
            )
        })
      })
      const starting = yield* Effect.forkChild(quiet(start))
      // Five minutes of a 503: the old limit (5 attempts in ~6 s) is long past, and it still waits.
      for (let i = 0; i < 300; i++) {
        yield* TestClock.adjust(Duration.seconds(1))
        yield* idle
      }
      const tried = yield* Ref.get(attempts)
      assert.isAbove(tried, 8, `attempts while down: ${tried}`)
      // 1 s doubling to 30 s, ±20 % (Q-07 — one jittered retry schedule): about a dozen attempts in
      // five minutes, not one per second.
      assert.isBelow(tried, 30, `attempts while down: ${tried}`)
      assert.isUndefined(starting.pollUnsafe(), "the start gave up while the apiserver was down")
      assert.isUndefined(nodeOf(model))

      yield* Ref.set(down, false)
      yield* TestClock.adjust(Duration.seconds(40))
      const { controller } = yield* Fiber.join(starting)
      assert.isDefined(nodeOf(model))
      assert.isTrue(Option.isSome(yield* controller.node))
    }))

  it.effect("CHK-08: a refused registration (403) stops the start at once, without retrying", () =>
    Effect.gen(function*() {
      const attempts = yield* Ref.make(0)
      const { start } = yield* setupWith({
        wrapKube: (kube) => ({
          ...kube,
          getNode: () =>
            Ref.update(attempts, (n) => n + 1).pipe(
              Effect.andThen(Effect.fail(new KubeForbidden({ operation: "get node", message: "nodes is forbidden" })))
            )
        })
      })
      const exit = yield* Effect.exit(quiet(start))
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(yield* Ref.get(attempts), 1)
    }))

  it.effect("renews the lease every 10 s with a six-digit renewTime", () =>
    Effect.gen(function*() {
      const { model, start, renewedAt } = yield* setup
      yield* start
      yield* eventually("the lease", () => leaseOf(model))
      yield* TestClock.adjust("9 seconds")
      for (const seconds of [10, 20, 30]) {
        yield* TestClock.adjust(seconds === 10 ? "1 second" : "10 seconds")
        const expected = microTime(START + seconds * 1000)
        const renewed = yield* eventually(`the renewal at ${seconds} s`, () => {
          const lease = leaseOf(model)
          return lease?.spec.renewTime === expected ? lease : undefined
        })
        assert.match(renewed.spec.renewTime!, /^2026-11-29T10:00:\d\d\.250000Z$/)
      }
      assert.deepStrictEqual(renewedAt(), [10, 20, 30].map((s) => START + s * 1000), "every 10 s, none sooner")
    }))

  it.effect("NODE-5: behind a queue of Pod writes at a low QPS the lease is still renewed every 10 s and the status patched on time", () =>
    Effect.gen(function*() {
      // An operator's --kube-api-qps 5 (burst 10), and 300 Pod status writes queued at once: the
      // Pod work's limiter serves the last of them 58 s on. Each heartbeat is counted as before.
      const { kube, model, start, idle } = yield* setupWith({ client: { qps: 5, burst: 10 }, wrapKube: instrumentKube })
      const leasePuts = Metric.value(Metric.withAttributes(apiserverRequests, { verb: "PUT", resource: "leases", code: "200" }))
      const statusPatches = Metric.value(Metric.withAttributes(apiserverRequests, { verb: "PATCH", resource: "nodes/status", code: "200" }))
      yield* start
      yield* eventually("the lease", () => leaseOf(model))
      const putsBefore = (yield* leasePuts).count
      const patchesBefore = (yield* statusPatches).count

      const pods = Array.from({ length: 300 }, (_, i) => {
        const stored = model.put(Pods, {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: `p${i}`, namespace: "default" },
          spec: { nodeName: NODE, containers: [{ name: "agent", image: "ghcr.io/acme/agent:1" }] }
        })
        return Option.getOrThrow(decodePod(stored))
      })
      const written = yield* Ref.make(0)
      // The TestClock time each write ended at: the clock moves only once the writes due are done.
      const writtenAt: Array<number> = []
      for (const pod of pods) {
        yield* Effect.forkChild(
          kube.replacePodStatus({ ...pod, status: { phase: "Running" } }).pipe(
            Effect.andThen(Clock.currentTimeMillis),
            Effect.flatMap((at) => Ref.update(written, (n) => n + 1).pipe(Effect.andThen(Effect.sync(() => writtenAt.push(at)))))
          )
        )
      }
      yield* TestClock.adjust("0 millis")

      for (const seconds of [10, 20, 30, 40, 50, 60]) {
        yield* TestClock.adjust("10 seconds")
        const expected = microTime(START + seconds * 1000)
        // Real I/O only: the renewal must not wait for TestClock to move on (the Lease lasts 40 s).
        yield* eventually(`the renewal at ${seconds} s`, () => leaseOf(model)?.spec.renewTime === expected, 5_000)
        // Pod work keeps its own pace: the burst at once, then 5 a second, none of it taken by the heartbeats.
        const due = Math.min(300, 10 + 5 * seconds)
        yield* eventually(`${due} Pod writes at ${seconds} s`, () => Ref.get(written).pipe(Effect.map((n) => n >= due)), 5_000)
      }
      for (const seconds of [10, 20, 30, 40, 50, 60]) {
        const done = writtenAt.filter((at) => at <= START + seconds * 1000).length
        assert.strictEqual(done, Math.min(300, 10 + 5 * seconds), `Pod writes done at ${seconds} s`)
      }
      yield* eventually("the status heartbeat at 60 s", () =>
        condition(nodeOf(model), "Ready")?.lastHeartbeatTime === "2026-11-29T10:01:00Z", 5_000)
      yield* idle // the client counts a request once its reply is read
      assert.strictEqual((yield* leasePuts).count - putsBefore, 6)
      assert.strictEqual((yield* statusPatches).count - patchesBefore, 1)
    }))

  it.effect("NODE-6: a renewal left unanswered is given up after 10 s, and the next goes out 10 s later, inside the Lease's 40 s", () =>
    Effect.gen(function*() {
      const { model, proxy, start, renewedAt } = yield* setupWith({
        proxied: true,
        client: { livenessCallTimeout: KubeApiClientNode.defaultOptions.livenessCallTimeout }
      })
      yield* start
      const first = yield* eventually("the lease", () => leaseOf(model))
      // The renewal due at 10 s meets a dead connection: read, never answered.
      const isRenewal = (request: FaultProxy.ProxiedRequest) => request.method === "PUT" && request.url.includes("/leases/")
      proxy!.setRule((request) =>
        isRenewal(request) && proxy!.seen.filter(isRenewal).length === 1 ? { _tag: "Hang" } : FaultProxy.Pass
      )
      yield* TestClock.adjust("10 seconds")
      yield* eventually("the renewal at 10 s sent", () => proxy!.seen.some(isRenewal))
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(leaseOf(model)?.spec.renewTime, first.spec.renewTime, "the hung renewal wrote nothing")
      // Given up at 20 s; the next renewal at 30 s (with the 30 s call timeout: given up at 40 s, the next at 50 s).
      yield* TestClock.adjust("10 seconds")
      yield* eventually("the renewal at 30 s", () => leaseOf(model)?.spec.renewTime === microTime(START + 30_000), 5_000)
      assert.deepStrictEqual(renewedAt(), [10, 30].map((s) => START + s * 1000), "nothing sent between the two")
    }))

  it.effect("keeps conditions and addresses written by others through the next status patch", () =>
    Effect.gen(function*() {
      const { model, start, idle } = yield* setup
      yield* start
      const patched = model.patch(Nodes, "", NODE, "strategic", {
        status: {
          conditions: [{ type: "KernelDeadlock", status: "False", reason: "KernelHasNoDeadlock" }],
          addresses: [{ type: "ExternalIP", address: "203.0.113.7" }]
        }
      }, { subresource: "status" })
      assert.isTrue(patched._tag === "Success")
      for (let i = 0; i < 6; i++) {
        yield* TestClock.adjust("10 seconds")
        yield* idle
      }
      const node = yield* eventually("the 60 s status patch", () => {
        const n = nodeOf(model)
        return condition(n, "Ready")?.lastHeartbeatTime === "2026-11-29T10:01:00Z" ? n : undefined
      })
      assert.strictEqual(condition(node, "KernelDeadlock")?.status, "False")
      assert.deepStrictEqual(node.status.addresses.map((a) => a.type).sort(), ["ExternalIP", "Hostname", "InternalIP"])
      // Unchanged statuses keep their transition time.
      assert.strictEqual(condition(node, "Ready")?.lastTransitionTime, "2026-11-29T10:00:00Z")
    }))

  it.effect("sandboxd down: SandboxdReachable=False at once while Ready stays True, and back", () =>
    Effect.gen(function*() {
      const { model, sim, events, start } = yield* setup
      yield* start
      yield* sim.injectFault("info", SimFault.status(503, "restarting"))
      yield* TestClock.adjust("10 seconds")
      const down = yield* eventually("SandboxdReachable=False", () => {
        const n = nodeOf(model)
        return condition(n, "SandboxdReachable")?.status === "False" ? n : undefined
      })
      assert.strictEqual(condition(down, "Ready")?.status, "True")
      assert.strictEqual(condition(down, "SandboxdReachable")?.lastTransitionTime, "2026-11-29T10:00:10Z")

      yield* sim.clearFaults
      yield* TestClock.adjust("10 seconds")
      const up = yield* eventually("SandboxdReachable=True", () => {
        const n = nodeOf(model)
        return condition(n, "SandboxdReachable")?.status === "True" ? n : undefined
      })
      assert.strictEqual(condition(up, "Ready")?.status, "True")
      assert.deepStrictEqual((yield* Ref.get(events)).map((e) => `${e.type} ${e.reason}`), [
        "Normal Registered",
        "Warning SandboxdFailing",
        "Normal SandboxdReachable"
      ])
    }))

  it.effect("starts with sandboxd down: the node is registered with SandboxdReachable=False", () =>
    Effect.gen(function*() {
      const { model, sim, start } = yield* setup
      yield* sim.injectFault("info", SimFault.drop)
      yield* start
      const node = nodeOf(model)
      assert.strictEqual(condition(node, "SandboxdReachable")?.status, "False")
      assert.strictEqual(condition(node, "SandboxdReachable")?.reason, "Unreachable")
      assert.strictEqual(condition(node, "Ready")?.status, "True")
    }))

  it.effect("re-creates a deleted node and lease, with a fresh owner reference", () =>
    Effect.gen(function*() {
      const { model, events, start } = yield* setup
      yield* start
      const oldUid = nodeOf(model)!.metadata.uid
      yield* eventually("the lease", () => leaseOf(model))
      // What garbage collection does in a cluster: the lease goes with its owner.
      assert.isTrue(model.delete(Nodes, "", NODE)._tag === "Success")
      assert.isTrue(model.delete(Leases, "kube-node-lease", NODE)._tag === "Success")
      yield* TestClock.adjust("10 seconds")
      const lease = yield* eventually("the new lease", () => leaseOf(model))
      const node = nodeOf(model)
      assert.isDefined(node)
      assert.notStrictEqual(node!.metadata.uid, oldUid)
      assert.deepStrictEqual(node!.spec.taints?.map((t) => t["key"]), ["virtual-kubelet.io/provider"])
      assert.deepStrictEqual(lease.metadata.ownerReferences?.map((o) => o["uid"]), [node!.metadata.uid])
      assert.deepStrictEqual((yield* Ref.get(events)).map((e) => e.reason), ["Registered", "Registered"])
    }))

  it.effect("re-creates a deleted node at the next status patch and repoints the surviving lease", () =>
    Effect.gen(function*() {
      const { model, start, idle } = yield* setup
      yield* start
      const oldUid = nodeOf(model)!.metadata.uid
      yield* eventually("the lease", () => leaseOf(model))
      assert.isTrue(model.delete(Nodes, "", NODE)._tag === "Success")
      for (let i = 0; i < 6; i++) {
        yield* TestClock.adjust("10 seconds")
        yield* idle
      }
      const node = yield* eventually("the re-created node", () => nodeOf(model))
      assert.notStrictEqual(node.metadata.uid, oldUid)
      yield* TestClock.adjust("10 seconds")
      yield* eventually("the lease owned by the new node", () =>
        leaseOf(model)?.metadata.ownerReferences?.[0]?.["uid"] === node.metadata.uid ? true : undefined)
    }))

  it.effect("a 409 on the lease is re-read and retried", () =>
    Effect.gen(function*() {
      const { model, start } = yield* setup
      yield* start
      const lease = yield* eventually("the lease", () => leaseOf(model))
      // Another writer changes the lease: our cached resourceVersion is now stale.
      const updated = model.update(Leases, "kube-node-lease", NODE, {
        ...(lease as unknown as JsonObject),
        metadata: { ...lease.metadata, labels: { touched: "yes" } }
      })
      assert.isTrue(updated._tag === "Success")
      yield* TestClock.adjust("10 seconds")
      const renewed = yield* eventually("the renewal after a conflict", () => {
        const l = leaseOf(model)
        return l?.spec.renewTime === microTime(START + 10_000) ? l : undefined
      })
      assert.deepStrictEqual(renewed.metadata.labels, { touched: "yes" })

      // And an injected 409 on the PUT itself.
      model.faults.failures.push({ method: "PUT", path: `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`, code: 409, times: 1 })
      yield* TestClock.adjust("10 seconds")
      yield* eventually("the renewal after an injected conflict", () =>
        leaseOf(model)?.spec.renewTime === microTime(START + 20_000) ? true : undefined)
      assert.strictEqual(model.faults.failures[0]?.times, 0)
    }))

  it.effect("an unhealthy daemon stops renewing and patching; healthy again resumes", () =>
    Effect.gen(function*() {
      const { model, healthy, start, idle, renewedAt } = yield* setup
      yield* start
      const first = yield* eventually("the lease", () => leaseOf(model))
      yield* Ref.set(healthy, false)
      for (let i = 0; i < 6; i++) {
        yield* TestClock.adjust("10 seconds")
        yield* idle
      }
      assert.strictEqual(leaseOf(model)?.spec.renewTime, first.spec.renewTime)
      assert.strictEqual(condition(nodeOf(model), "Ready")?.lastHeartbeatTime, "2026-11-29T10:00:00Z")
      yield* Ref.set(healthy, true)
      yield* TestClock.adjust("10 seconds")
      yield* eventually("renewal once healthy", () =>
        leaseOf(model)?.spec.renewTime === microTime(START + 70_000) ? true : undefined)
      assert.deepStrictEqual(renewedAt(), [START + 70_000], "no renewal while unhealthy")
    }))

  it.effect("restarting against an existing node patches it and keeps others' conditions; shutdown leaves both", () =>
    Effect.gen(function*() {
      const { model, start } = yield* setup
      const first = yield* start
      const uid = nodeOf(model)!.metadata.uid
      yield* eventually("the lease", () => leaseOf(model))
      yield* first.stop
      assert.isDefined(nodeOf(model))
      assert.isDefined(leaseOf(model))

      model.patch(Nodes, "", NODE, "strategic", {
        status: { conditions: [{ type: "KernelDeadlock", status: "False", reason: "KernelHasNoDeadlock" }] }
      }, { subresource: "status" })
      yield* TestClock.adjust("30 seconds")
      yield* start
      const node = nodeOf(model)!
      assert.strictEqual(node.metadata.uid, uid)
      assert.strictEqual(condition(node, "KernelDeadlock")?.status, "False")
      assert.strictEqual(condition(node, "Ready")?.lastHeartbeatTime, "2026-11-29T10:00:30Z")
      assert.strictEqual(condition(node, "Ready")?.lastTransitionTime, "2026-11-29T10:00:00Z")
      yield* eventually("the renewed lease", () =>
        leaseOf(model)?.spec.renewTime === microTime(START + 30_000) ? true : undefined)
    }))
})

// ---- the sandboxd-unavailable taint --------------------------------------------------------------

const TAINT = "sandbox.cocoonstack.io/sandboxd-unavailable"
const foreignTaint = { key: "example.com/maintenance", value: "planned", effect: "NoSchedule" }

const taintsOf = (model: ClusterModel) => nodeOf(model)?.spec.taints ?? []
const ourTaint = (model: ClusterModel) => taintsOf(model).find((t) => t["key"] === TAINT)

/** One probe period: move the clock, wait until sandboxd saw the probe and the controller's calls have ended. */
const probe = (sim: { readonly stats: Effect.Effect<{ readonly requests: number }> }, idle: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const before = (yield* sim.stats).requests
    yield* TestClock.adjust("10 seconds")
    let seen = before
    yield* eventually("the probe", () => {
      Effect.runSync(Effect.map(sim.stats, (s) => { seen = s.requests }))
      return seen > before ? true : undefined
    })
    yield* idle
  })

const addForeignTaint = (model: ClusterModel) => {
  const result = model.patch(Nodes, "", NODE, "strategic", {
    spec: { taints: [...taintsOf(model), foreignTaint] }
  })
  assert.isTrue(result._tag === "Success")
}

const gauge = (metric: typeof nodeTainted) => Effect.map(Metric.value(metric), (state) => state.value)

describe("NodeController: the sandboxd-unavailable taint", () => {
  it.effect("grace: tainted only after 3 failed probes in a row; the first success removes it; other taints stay", () =>
    Effect.gen(function*() {
      const { model, sim, events, start, idle } = yield* setup
      const { controller } = yield* start
      addForeignTaint(model)
      assert.strictEqual(yield* gauge(sandboxdUp), 1)

      // Two failures, then a success: a blip, no taint.
      yield* sim.injectFault("info", SimFault.status(503, "restarting"), { times: 2 })
      yield* probe(sim, idle)
      yield* eventually("SandboxdReachable=False/Failing", () =>
        condition(nodeOf(model), "SandboxdReachable")?.reason === "Failing" ? true : undefined)
      yield* probe(sim, idle)
      yield* probe(sim, idle)
      assert.isUndefined(ourTaint(model))

      // Three in a row: tainted NoSchedule with the reason; the node stays Ready.
      yield* sim.injectFault("info", SimFault.status(500, "broken"))
      yield* probe(sim, idle)
      yield* probe(sim, idle)
      assert.isUndefined(ourTaint(model))
      assert.strictEqual(yield* gauge(sandboxdUp), 0)
      yield* probe(sim, idle)
      const tainted = yield* eventually("the taint", () => ourTaint(model))
      assert.deepStrictEqual(tainted, { key: TAINT, value: "Failing", effect: "NoSchedule" })
      assert.deepStrictEqual(taintsOf(model).map((t) => t["key"]), ["virtual-kubelet.io/provider", foreignTaint.key, TAINT])
      assert.strictEqual(condition(nodeOf(model), "Ready")?.status, "True")
      assert.strictEqual(yield* controller.tainted, "Failing")
      assert.strictEqual(yield* gauge(nodeTainted), 1)

      // The first success removes it at once, and only it.
      yield* sim.clearFaults
      yield* probe(sim, idle)
      yield* eventually("the taint removed", () => (ourTaint(model) === undefined ? true : undefined))
      assert.deepStrictEqual(taintsOf(model), [
        { key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" },
        foreignTaint
      ])
      assert.strictEqual(yield* gauge(nodeTainted), 0)
      assert.strictEqual(yield* gauge(sandboxdUp), 1)
      assert.deepStrictEqual((yield* Ref.get(events)).map((e) => `${e.type} ${e.reason}`), [
        "Normal Registered",
        "Warning SandboxdFailing",
        "Normal SandboxdReachable",
        "Warning SandboxdFailing",
        "Warning SandboxdTainted",
        "Normal SandboxdReachable",
        "Normal SandboxdTaintRemoved"
      ])
    }))

  it.effect("unreachable: the taint says Unreachable", () =>
    Effect.gen(function*() {
      const { model, sim, start, idle } = yield* setup
      yield* start
      yield* sim.injectFault("info", SimFault.drop)
      for (let i = 0; i < 3; i++) yield* probe(sim, idle)
      const tainted = yield* eventually("the taint", () => ourTaint(model))
      assert.strictEqual(tainted["value"], "Unreachable")
      assert.strictEqual(condition(nodeOf(model), "SandboxdReachable")?.reason, "Unreachable")
    }))

  it.effect("a refused node token (401): the taint and the condition say Unauthorized", () =>
    Effect.gen(function*() {
      const { model, sim, start, idle } = yield* setupWith({ rootToken: "right-token", token: "wrong-token" })
      const { controller } = yield* start
      assert.strictEqual(condition(nodeOf(model), "SandboxdReachable")?.reason, "Unauthorized")
      assert.isFalse(yield* controller.sandboxdAnswered)
      yield* probe(sim, idle)
      yield* probe(sim, idle)
      const tainted = yield* eventually("the taint", () => ourTaint(model))
      assert.strictEqual(tainted["value"], "Unauthorized")
    }))

  it.effect("token swap: a refused token taints the node Unauthorized; replacing the token file lifts it at the next probe", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("node-token-")
      // A Secret volume: token → ..data/token, ..data → the current version.
      yield* Effect.promise(async () => {
        await fs.mkdir(path.join(dir, "..v1"))
        await fs.writeFile(path.join(dir, "..v1", "token"), "old-token\n")
        await fs.symlink("..v1", path.join(dir, "..data"))
        await fs.symlink(path.join("..data", "token"), path.join(dir, "token"))
      })
      const { model, sim, events, start, idle } = yield* setupWith({
        rootToken: "new-token",
        token: "old-token",
        tokenFile: path.join(dir, "token")
      })
      const { controller } = yield* start
      assert.strictEqual(condition(nodeOf(model), "SandboxdReachable")?.reason, "Unauthorized")
      yield* probe(sim, idle)
      yield* probe(sim, idle)
      assert.strictEqual((yield* eventually("the taint", () => ourTaint(model)))["value"], "Unauthorized")

      yield* Effect.promise(async () => {
        await fs.mkdir(path.join(dir, "..v2"))
        await fs.writeFile(path.join(dir, "..v2", "token"), "new-token\n")
        await fs.symlink("..v2", path.join(dir, "..data_tmp"))
        await fs.rename(path.join(dir, "..data_tmp"), path.join(dir, "..data"))
      })
      yield* probe(sim, idle)
      yield* eventually("the taint removed", () => (ourTaint(model) === undefined ? true : undefined))
      yield* eventually("SandboxdReachable=True", () =>
        condition(nodeOf(model), "SandboxdReachable")?.status === "True" ? true : undefined)
      assert.isTrue(yield* controller.sandboxdAnswered)
      assert.deepStrictEqual((yield* Ref.get(events)).map((e) => e.reason), [
        "Registered",
        "SandboxdUnauthorized",
        "SandboxdTainted",
        "SandboxdReachable",
        "SandboxdTaintRemoved"
      ])
    }))

  it.effect("draining: /v1/info's drain flag taints the node with Draining; a drain still counts as an answer", () =>
    Effect.gen(function*() {
      const { model, sim, start, idle } = yield* setup
      const { controller } = yield* start
      yield* sim.setDraining(true)
      for (let i = 0; i < 3; i++) yield* probe(sim, idle)
      const tainted = yield* eventually("the taint", () => ourTaint(model))
      assert.strictEqual(tainted["value"], "Draining")
      assert.isTrue(yield* controller.sandboxdAnswered)
      yield* sim.setDraining(false)
      yield* probe(sim, idle)
      yield* eventually("the taint removed", () => (ourTaint(model) === undefined ? true : undefined))
    }))

  it.effect("a concurrent Node write between read and patch is a 409: re-read, and the other writer's taint is kept", () =>
    Effect.gen(function*() {
      let raced = false
      const { model, sim, start, idle } = yield* setupWith({
        wrapKube: (kube, model) => ({
          ...kube,
          patchNode: (name, patch) =>
            Effect.suspend(() => {
              if (!raced) {
                raced = true
                addForeignTaint(model)
              }
              return kube.patchNode(name, patch)
            })
        })
      })
      yield* start
      yield* sim.injectFault("info", SimFault.drop)
      for (let i = 0; i < 3; i++) yield* probe(sim, idle)
      yield* eventually("the taint", () => ourTaint(model))
      assert.isTrue(raced)
      assert.deepStrictEqual(taintsOf(model).map((t) => t["key"]), ["virtual-kubelet.io/provider", foreignTaint.key, TAINT])
    }))

  it.effect("restart: a leftover taint is removed when sandboxd answers, kept when it still cannot serve", () =>
    Effect.gen(function*() {
      const { model, sim, start, idle } = yield* setup
      const first = yield* start
      yield* sim.injectFault("info", SimFault.drop)
      for (let i = 0; i < 3; i++) yield* probe(sim, idle)
      yield* eventually("the taint", () => ourTaint(model))
      yield* first.stop

      // Still down at the restart: the taint stays from the first probe on.
      const second = yield* start
      assert.strictEqual(ourTaint(model)?.["value"], "Unreachable")
      assert.strictEqual(yield* second.controller.tainted, "Unreachable")
      yield* second.stop

      // Back: the restart removes it before anything else happens.
      yield* sim.clearFaults
      yield* start
      assert.isUndefined(ourTaint(model))
    }))
})
