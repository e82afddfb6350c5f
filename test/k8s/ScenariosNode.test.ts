/**
 * The virtual node on the real kube-apiserver: the NodeController writes as the
 * daemon's RBAC identity (nodes get/create/patch, nodes/status patch, leases get/create/update, events
 * create/patch), probing the sandboxd simulator over HTTP. Short intervals, real time.
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Context, Duration, Effect, Exit, Layer, Scope } from "effect"
import * as EventRecorderKube from "../../src/Layers/EventRecorderKube.ts"
import * as SandboxdClientHttp from "../../src/Layers/SandboxdClientHttp.ts"
import { KnownSecrets } from "../../src/Services/KnownSecrets.ts"
import * as NodeControllerLive from "../../src/Programs/Node/NodeController.ts"
import { NodeController } from "../../src/Services/NodeController.ts"
import { type AppConfigShape } from "../../src/Schemas/Config.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import { KubeApi } from "../../src/Services/KubeApi.ts"
import { SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { conditionSummary, healthyConditions, testNodeInfo } from "../support/NodeStatus.ts"
import { kube } from "./fixture/Kube.ts"
import {
  admin,
  adminGet,
  claimIdOf,
  createNamespace,
  createPod,
  daemonGround,
  eventually,
  getPod,
  kubeApiOf,
  quiet,
  rawRequest,
  runningPod,
  sandboxdHolds,
  startPodHalf
} from "./scenarioHarness.ts"

interface Condition {
  readonly type: string
  readonly status: string
  readonly reason?: string
  readonly lastHeartbeatTime?: string
  readonly lastTransitionTime?: string
}

interface NodeView {
  readonly metadata: { readonly uid: string; readonly resourceVersion: string; readonly labels: Record<string, string> }
  readonly spec: { readonly taints?: ReadonlyArray<Record<string, string>> }
  readonly status: {
    readonly conditions: ReadonlyArray<Condition>
    readonly addresses: ReadonlyArray<{ readonly type: string; readonly address: string }>
    readonly capacity: Record<string, string>
    readonly allocatable: Record<string, string>
    readonly daemonEndpoints: { readonly kubeletEndpoint: Record<string, number> }
    readonly nodeInfo: Record<string, string>
  }
}

interface LeaseView {
  readonly metadata: { readonly resourceVersion: string; readonly ownerReferences?: ReadonlyArray<Record<string, unknown>> }
  readonly spec: { readonly holderIdentity?: string; readonly leaseDurationSeconds?: number; readonly renewTime?: string }
}

const fastNode: Partial<NodeControllerLive.NodeControllerOptions> = {
  statusInterval: Duration.seconds(1),
  leaseRenewInterval: Duration.millis(500),
  probeInterval: Duration.millis(200),
  probeTimeout: Duration.seconds(1),
  version: "0.1.0",
  arch: "arm64"
}

const condition = (node: NodeView | undefined, type: string) => node?.status.conditions.find((c) => c.type === type)
const sixDigits = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/

/** The node controller as the daemon identity, in a scope of its own. */
const startNode = (config: AppConfigShape) =>
  Effect.gen(function*() {
    const api = yield* kubeApiOf(config)
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      NodeControllerLive.layer(fastNode).pipe(
        Layer.provideMerge(EventRecorderKube.layer()),
        Layer.provide(SandboxdClientHttp.layer.pipe(Layer.provide(KnownSecrets.none))),
        Layer.provide(Layer.mergeAll(AppConfig.layer(config), Layer.succeed(KubeApi, api)))
      ),
      scope
    )
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    return Context.get(context, NodeController)
  })

describe("the virtual node on the real kube-apiserver, as the daemon", () => {
  it.live("registers every field, keeps another writer's condition, renews its lease, reports sandboxd down", () =>
    Effect.scoped(Effect.gen(function*() {
      const { sandboxd, config } = yield* daemonGround("vk-k8s-node-", {}, {
        nodeIp: "10.0.0.9",
        listenAddr: { host: "", port: 10260 }
      })
      const nodeName = config.nodeName
      const nodePath = `/api/v1/nodes/${nodeName}`
      const leasePath = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeName}`
      yield* startNode(config)

      // ---- every field, as stored by the real server
      const node = yield* eventually("the node", adminGet<NodeView>(nodePath))
      assert.deepStrictEqual(node.metadata.labels, {
        "type": "virtual-kubelet",
        "kubernetes.io/role": "agent",
        "kubernetes.io/hostname": nodeName,
        "sandbox.cocoonstack.io/runtime": "sandboxd"
      })
      // The real server's TaintNodesByCondition admission adds node.kubernetes.io/not-ready at
      // create (the node lifecycle controller, absent here, lifts it once Ready=True is seen).
      assert.deepStrictEqual(node.spec.taints, [
        { key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" },
        { key: "node.kubernetes.io/not-ready", effect: "NoSchedule" }
      ])
      assert.deepStrictEqual(node.status.addresses, [
        { type: "InternalIP", address: "10.0.0.9" },
        { type: "Hostname", address: nodeName }
      ])
      assert.deepStrictEqual(node.status.capacity, { cpu: "4k", memory: "8Ti", pods: "2k" })
      assert.deepStrictEqual(node.status.allocatable, node.status.capacity)
      assert.deepStrictEqual(node.status.daemonEndpoints.kubeletEndpoint, { Port: 10260 })
      assert.deepInclude(node.status.nodeInfo, testNodeInfo)
      assert.deepStrictEqual(conditionSummary(node.status.conditions), healthyConditions)

      // ---- the lease: owner reference to the Node, six-digit renewTime, renewed
      const lease = yield* eventually("the lease", adminGet<LeaseView>(leasePath))
      assert.strictEqual(lease.spec.holderIdentity, nodeName)
      assert.strictEqual(lease.spec.leaseDurationSeconds, 40)
      assert.match(lease.spec.renewTime ?? "", sixDigits)
      assert.deepStrictEqual(lease.metadata.ownerReferences, [{ apiVersion: "v1", kind: "Node", name: nodeName, uid: node.metadata.uid }])
      const renewed = yield* eventually(
        "a lease renewal",
        Effect.map(adminGet<LeaseView>(leasePath), (l) => l !== undefined && l.spec.renewTime !== lease.spec.renewTime ? l : undefined),
        5_000
      )
      assert.match(renewed.spec.renewTime ?? "", sixDigits)
      assert.isAbove(Date.parse(renewed.spec.renewTime ?? ""), Date.parse(lease.spec.renewTime ?? ""))

      // ---- a condition written by another client survives the daemon's next status patch
      const { core } = yield* admin
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z")
      yield* kube("admin patches nodes/status", () =>
        core.patchNodeStatus(
          {
            name: nodeName,
            body: {
              status: {
                conditions: [{ type: "KernelDeadlock", status: "False", reason: "KernelHasNoDeadlock", message: "", lastHeartbeatTime: now, lastTransitionTime: now }]
              }
            }
          },
          k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch)
        ))
      const patchedByAdmin = yield* eventually("the admin's condition", adminGet<NodeView>(nodePath))
      const afterDaemon = yield* eventually(
        "the daemon's next status patch",
        Effect.map(adminGet<NodeView>(nodePath), (n) =>
          n !== undefined && condition(n, "Ready")?.lastHeartbeatTime !== condition(patchedByAdmin, "Ready")?.lastHeartbeatTime ? n : undefined),
        5_000
      )
      assert.strictEqual(condition(afterDaemon, "KernelDeadlock")?.status, "False")
      assert.strictEqual(condition(afterDaemon, "Ready")?.status, "True")

      // ---- the Registered event, written as the daemon in "default"
      const events = yield* eventually(
        "the Registered event",
        Effect.map(
          adminGet<{ items: ReadonlyArray<{ reason?: string; involvedObject?: { uid?: string } }> }>(
            `/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D${nodeName}`
          ),
          (list) => (list?.items ?? []).some((e) => e.reason === "Registered") ? list : undefined
        ),
        5_000
      )
      assert.strictEqual(events.items.find((e) => e.reason === "Registered")?.involvedObject?.uid, node.metadata.uid)

      // ---- sandboxd down: SandboxdReachable=False, Ready stays True; and back
      yield* sandboxd.sim.injectFault("info", SimFault.status(503, "restarting"))
      const down = yield* eventually(
        "SandboxdReachable=False",
        Effect.map(adminGet<NodeView>(nodePath), (n) => condition(n, "SandboxdReachable")?.status === "False" ? n : undefined),
        5_000
      )
      assert.strictEqual(condition(down, "Ready")?.status, "True")
      assert.strictEqual(condition(down, "Ready")?.reason, "KubeletReady")
      yield* sandboxd.sim.clearFaults
      const up = yield* eventually(
        "SandboxdReachable=True",
        Effect.map(adminGet<NodeView>(nodePath), (n) => condition(n, "SandboxdReachable")?.status === "True" ? n : undefined),
        5_000
      )
      assert.strictEqual(condition(up, "Ready")?.status, "True")

      // ---- node and lease deleted (no garbage collector runs here): both come back, the lease
      // pointing at the new Node
      const { config: adminConfig } = yield* admin
      assert.strictEqual((yield* rawRequest(adminConfig, "DELETE", nodePath)).status, 200)
      assert.strictEqual((yield* rawRequest(adminConfig, "DELETE", leasePath)).status, 200)
      const newLease = yield* eventually(
        "the re-created lease",
        Effect.map(adminGet<LeaseView>(leasePath), (l) => (l?.metadata.ownerReferences?.length ?? 0) > 0 ? l : undefined),
        5_000
      )
      const newNode = yield* eventually("the re-created node", adminGet<NodeView>(nodePath))
      assert.notStrictEqual(newNode.metadata.uid, node.metadata.uid)
      assert.deepStrictEqual(newLease.metadata.ownerReferences?.map((o) => o["uid"]), [newNode.metadata.uid])
    }).pipe(quiet)), { timeout: 40_000 })

  it.live("sandboxd cannot serve: the NoSchedule taint goes on after the grace and off at the first success; other taints and Running Pods untouched", () =>
    Effect.scoped(Effect.gen(function*() {
      const { sandboxd, config } = yield* daemonGround("vk-k8s-taint-", {}, {
        nodeIp: "10.0.0.9",
        sandboxdProbeGrace: 3
      })
      const nodeName = config.nodeName
      const nodePath = `/api/v1/nodes/${nodeName}`
      const taintKey = "sandbox.cocoonstack.io/sandboxd-unavailable"
      const ours = (n: NodeView | undefined) => n?.spec.taints?.find((t) => t["key"] === taintKey)
      yield* startNode(config)
      yield* startPodHalf(config)

      // A Pod claimed and Running on the node, and a taint of someone else's.
      const namespace = yield* createNamespace("taint")
      const uid = yield* createPod(namespace, "sb-running", nodeName)
      const running = yield* eventually("the Running pod", runningPod(namespace, "sb-running"))
      const { core } = yield* admin
      const before = yield* eventually("the node", adminGet<NodeView>(nodePath))
      yield* kube("admin adds a taint", () =>
        core.patchNode(
          {
            name: nodeName,
            body: { spec: { taints: [...(before.spec.taints ?? []), { key: "example.com/maintenance", value: "planned", effect: "NoSchedule" }] } }
          },
          k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch)
        ))
      const othersBefore = (yield* eventually("the admin's taint", Effect.map(adminGet<NodeView>(nodePath), (n) =>
        n?.spec.taints?.some((t) => t["key"] === "example.com/maintenance") ? n : undefined))).spec.taints

      // sandboxd refuses: after the grace (3 probes of 200 ms) the taint is on, with the reason.
      yield* sandboxd.sim.injectFault("info", SimFault.status(503, "restarting"))
      const tainted = yield* eventually("the sandboxd taint", Effect.map(adminGet<NodeView>(nodePath), (n) => ours(n) !== undefined ? n : undefined), 10_000)
      assert.deepStrictEqual(ours(tainted), { key: taintKey, value: "Failing", effect: "NoSchedule" })
      assert.deepStrictEqual(tainted.spec.taints?.filter((t) => t["key"] !== taintKey), othersBefore)
      assert.strictEqual(condition(tainted, "Ready")?.status, "True")
      assert.strictEqual(condition(tainted, "SandboxdReachable")?.reason, "Failing")
      assert.isUndefined(tainted.spec.taints?.find((t) => t["effect"] === "NoExecute"))

      // The Running Pod is untouched: same UID, still Running, no deletion, its VM still held.
      const stillRunning = yield* getPod(namespace, "sb-running")
      assert.strictEqual(stillRunning?.metadata.uid, uid)
      assert.strictEqual(stillRunning?.status?.phase, "Running")
      assert.isUndefined(stillRunning?.metadata.deletionTimestamp)
      assert.strictEqual(claimIdOf(stillRunning!), claimIdOf(running))
      assert.isTrue(yield* sandboxdHolds(sandboxd, claimIdOf(running)))

      // sandboxd answers again: the first success removes only our taint.
      yield* sandboxd.sim.clearFaults
      const untainted = yield* eventually("the taint removed", Effect.map(adminGet<NodeView>(nodePath), (n) => n !== undefined && ours(n) === undefined ? n : undefined), 10_000)
      assert.deepStrictEqual(untainted.spec.taints, othersBefore)
      const after = yield* getPod(namespace, "sb-running")
      assert.strictEqual(after?.metadata.uid, uid)
      assert.strictEqual(after?.status?.phase, "Running")
      assert.isUndefined(after?.metadata.deletionTimestamp)
    }).pipe(quiet)), { timeout: 60_000 })
})
