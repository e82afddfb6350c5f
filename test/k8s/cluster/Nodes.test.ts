/**
 * Several virtual nodes in one cluster, and the node lifecycle controller. A daemon killed with
 * SIGKILL: its node goes NotReady and gets the `NoExecute` unreachable taint, the taint eviction
 * controller deletes its Pods once their default toleration runs out, and they stay Terminating
 * (nobody finalizes them) until the daemon returns; their owners are alive, so the VMs are kept,
 * and same-name replacements adopt them. Three daemons share a Deployment's Pods, each claiming
 * only its own; a ReplicaSet's scale-down preserves the VMs (its owner query is refused under the
 * shipped RBAC) and its replacements, with new names, never adopt.
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Effect } from "effect"
import { kube } from "../fixture/Kube.ts"
import {
  admin,
  adminGet,
  claimIdOf,
  createSandbox,
  eventually,
  getPod,
  quiet,
  runningPod,
  SandboxApiVersion
} from "../scenarioHarness.ts"
import {
  claimRequests,
  claimsFileRows,
  createReadyNamespace,
  createSandboxPod,
  heldIds,
  listPods,
  type PodState,
  releasedIds,
  sandboxPodSet,
  startVirtualNode,
  useClusterPlane,
  type VirtualNode
} from "./harness.ts"

useClusterPlane()

interface NodeState {
  readonly spec: { readonly taints?: ReadonlyArray<{ readonly key: string; readonly effect: string }> }
  readonly status: { readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string }> }
}

const nodeState = (name: string) => adminGet<NodeState>(`/api/v1/nodes/${name}`)
const readyStatus = (node: NodeState | undefined) => node?.status.conditions?.find((c) => c.type === "Ready")?.status
const hasTaint = (node: NodeState | undefined, key: string, effect: string) =>
  node?.spec.taints?.some((t) => t.key === key && t.effect === effect) === true
const Unreachable = "node.kubernetes.io/unreachable"

const sandboxOwner = (name: string, uid: string) => ({ apiVersion: SandboxApiVersion, kind: "Sandbox", name, uid })

describe("nodes in a real cluster", () => {
  it.live("a killed daemon's node goes NotReady, its Pods are evicted and wait; back, it preserves the VMs and same-name replacements adopt them", () =>
    Effect.scoped(Effect.gen(function*() {
      // Two healthy nodes beside the one that dies: with every node of the zone NotReady the
      // lifecycle controller assumes its own connectivity is at fault and evicts nothing.
      const node = yield* startVirtualNode()
      yield* startVirtualNode()
      yield* startVirtualNode()
      const namespace = yield* createReadyNamespace("lifecycle")
      const names = ["alpha", "beta"]
      const owners = new Map<string, string>()
      const claims = new Map<string, string>()
      for (const name of names) {
        const uid = yield* createSandbox(namespace, name)
        owners.set(name, uid)
        yield* createSandboxPod(namespace, name, { pool: node.pool }, sandboxOwner(name, uid))
      }
      for (const name of names) {
        claims.set(name, claimIdOf(yield* eventually(`${name} Running`, runningPod(namespace, name), 30_000)))
      }
      const claimsBefore = yield* claimRequests(node)

      // ---- the daemon dies: NotReady, NoExecute, evictions
      yield* node.kill
      const down = yield* eventually(
        "the node NotReady with the unreachable NoExecute taint",
        Effect.map(nodeState(node.nodeName), (n) => readyStatus(n) !== "True" && hasTaint(n, Unreachable, "NoExecute") ? n : undefined),
        60_000
      )
      assert.notStrictEqual(readyStatus(down), "True")
      for (const name of names) {
        yield* eventually(
          `${name} evicted (deletionTimestamp set)`,
          Effect.map(getPod(namespace, name), (pod) => pod?.metadata.deletionTimestamp !== undefined),
          60_000
        )
      }
      // Nobody finalizes them while the daemon is away.
      for (const name of names) assert.isDefined(yield* getPod(namespace, name), `${name} stays Terminating`)
      assert.deepStrictEqual(yield* releasedIds(node), [], "nothing released while the daemon is down")

      // ---- the daemon returns: Ready again, the evicted Pods' owners are alive → VMs preserved
      yield* node.restart
      yield* eventually(
        "the node Ready again without the unreachable taint",
        Effect.map(nodeState(node.nodeName), (n) => readyStatus(n) === "True" && !hasTaint(n, Unreachable, "NoExecute")),
        60_000
      )
      for (const name of names) {
        yield* eventually(`${name} finalized`, Effect.map(getPod(namespace, name), (pod) => pod === undefined), 30_000)
      }
      assert.deepStrictEqual(yield* releasedIds(node), [], "preserved: no release")
      const held = yield* heldIds(node)
      for (const name of names) assert.isTrue(held.has(claims.get(name)!), `${name}'s VM is kept`)

      // ---- the Sandbox controller's same-name replacements adopt the preserved VMs
      for (const name of names) {
        yield* createSandboxPod(namespace, name, { pool: node.pool }, sandboxOwner(name, owners.get(name)!))
      }
      for (const name of names) {
        const replacement = yield* eventually(`${name} replacement Running`, runningPod(namespace, name), 60_000)
        assert.strictEqual(claimIdOf(replacement), claims.get(name), `${name} adopted its VM`)
      }
      assert.strictEqual(yield* claimRequests(node), claimsBefore, "no second claim")
    }).pipe(quiet)), { timeout: 240_000 })

  it.live("three daemons share a Deployment's Pods, each claims only its own; a scale-down preserves, new replicas never adopt", () =>
    Effect.scoped(Effect.gen(function*() {
      const first = yield* startVirtualNode()
      const others = [yield* startVirtualNode({ pool: first.pool }), yield* startVirtualNode({ pool: first.pool })]
      const nodes: ReadonlyArray<VirtualNode> = [first, ...others]
      const namespace = yield* createReadyNamespace("fleet")
      const { config } = yield* admin
      const apps = config.makeApiClient(k8s.AppsV1Api)
      const scale = (replicas: number) =>
        kube(`scale to ${replicas}`, () =>
          apps.patchNamespacedDeploymentScale(
            { name: "agents", namespace, body: { spec: { replicas } } },
            k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch)
          ))
      yield* kube("create deployment", () =>
        apps.createNamespacedDeployment({
          namespace,
          body: sandboxPodSet("agents", namespace, 30, first.pool)
        }))
      const runningAll = (n: number) =>
        Effect.map(listPods(namespace), (pods) => {
          const live = pods.filter((p) => p.metadata.deletionTimestamp === undefined)
          return live.length === n && live.every((p) => p.status?.phase === "Running") ? live : undefined
        })
      const pods = yield* eventually("30 replicas Running", runningAll(30), 120_000)

      // ---- spread over the three nodes; each daemon claimed exactly its own Pods
      const onNode = (list: ReadonlyArray<PodState>, node: VirtualNode) => list.filter((p) => p.spec.nodeName === node.nodeName)
      for (const node of nodes) {
        const mine = onNode(pods, node)
        assert.isAbove(mine.length, 0, `${node.nodeName} got Pods`)
        const held = (yield* node.sandboxd.sim.claims).map((c) => `${c.claimRef}=${c.id}`).sort()
        const expected = mine.map((p) => `${namespace}/${p.metadata.name}=${p.metadata.annotations?.["sandbox.cocoonstack.io/claim-id"]}`)
          .sort()
        assert.deepStrictEqual(held, expected, `${node.nodeName} holds exactly its own Pods' VMs`)
      }
      const claimedBefore = (yield* Effect.forEach(nodes, claimRequests)).reduce((a, b) => a + b, 0)
      assert.strictEqual(claimedBefore, 30)

      // ---- scale down: the ReplicaSet deletes 15 Pods; its owner query is refused → preserved
      yield* scale(15)
      const remaining = yield* eventually(
        "15 Pods left, the others finalized",
        Effect.map(listPods(namespace), (list) => (list.length === 15 ? list : undefined)),
        90_000
      )
      for (const node of nodes) {
        assert.deepStrictEqual(yield* releasedIds(node), [], `${node.nodeName} released nothing`)
        const held = yield* heldIds(node)
        const rows = yield* claimsFileRows(node.statePath)
        assert.strictEqual(rows.size, held.size, `${node.nodeName}: a row for every VM it holds`)
        assert.strictEqual(held.size, onNode(pods, node).length, `${node.nodeName} keeps every VM it claimed`)
      }

      // ---- scale up again: new names, new claims, no adoption of the preserved VMs
      yield* scale(20)
      const grown = yield* eventually("20 replicas Running", runningAll(20), 90_000)
      const newcomers = grown.filter((p) => !remaining.some((r) => r.metadata.uid === p.metadata.uid))
      assert.strictEqual(newcomers.length, 5)
      const oldClaims = new Set(pods.map((p) => p.metadata.annotations?.["sandbox.cocoonstack.io/claim-id"]))
      for (const pod of newcomers) {
        assert.isFalse(oldClaims.has(pod.metadata.annotations?.["sandbox.cocoonstack.io/claim-id"]), `${pod.metadata.name} got a new VM`)
      }
      const claimedAfter = (yield* Effect.forEach(nodes, claimRequests)).reduce((a, b) => a + b, 0)
      assert.strictEqual(claimedAfter, 35, "five new claims, one per new replica")
    }).pipe(quiet)), { timeout: 300_000 })
})
