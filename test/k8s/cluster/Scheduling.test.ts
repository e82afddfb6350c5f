/**
 * The real kube-scheduler places sandbox Pods on the virtual node: by its toleration and the
 * routing-label node selector, within the node's `pods` capacity (`--node-pods`), and never while
 * the node carries the sandboxd-unavailable taint.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { adminGet, claimIdOf, eventually, getPod, quiet, runningPod } from "../scenarioHarness.ts"
import {
  claimRequests,
  createReadyNamespace,
  createSandboxPod,
  type PodState,
  startVirtualNode,
  unschedulableReason,
  useClusterPlane
} from "./harness.ts"

useClusterPlane()

const podState = (namespace: string, name: string) => adminGet<PodState>(`/api/v1/namespaces/${namespace}/pods/${name}`)

/** The Pod once the scheduler has said it fits nowhere. */
const unschedulable = (namespace: string, name: string) =>
  Effect.map(podState(namespace, name), (pod) =>
    pod !== undefined && (pod.spec.nodeName ?? "") === "" && unschedulableReason(pod) === "Unschedulable" ? pod : undefined)

describe("the real scheduler and the virtual node", () => {
  it.live("a tolerating Pod is bound and goes Running; one without the toleration never lands there; --node-pods caps the node", () =>
    Effect.scoped(Effect.gen(function*() {
      const node = yield* startVirtualNode({ extraArgs: ["--node-pods", "5"] })
      const namespace = yield* createReadyNamespace("sched")

      // ---- the scheduler binds a tolerating Pod (no nodeName given) and the daemon runs it
      yield* createSandboxPod(namespace, "agent-0", { pool: node.pool })
      const first = yield* eventually("agent-0 Running", runningPod(namespace, "agent-0"), 30_000)
      assert.strictEqual((yield* podState(namespace, "agent-0"))?.spec.nodeName, node.nodeName)
      assert.notStrictEqual(claimIdOf(first), "")

      // ---- without the toleration: the node's NoSchedule taint keeps it off
      yield* createSandboxPod(namespace, "intruder", { pool: node.pool, withoutToleration: true })
      yield* eventually("intruder Unschedulable", unschedulable(namespace, "intruder"), 30_000)

      // ---- capacity 5: four more fit, the sixth stays Pending Unschedulable
      for (const i of [1, 2, 3, 4]) yield* createSandboxPod(namespace, `agent-${i}`, { pool: node.pool })
      for (const i of [1, 2, 3, 4]) yield* eventually(`agent-${i} Running`, runningPod(namespace, `agent-${i}`), 30_000)
      yield* createSandboxPod(namespace, "agent-5", { pool: node.pool })
      const sixth = yield* eventually("agent-5 Unschedulable", unschedulable(namespace, "agent-5"), 30_000)
      assert.strictEqual(sixth.status?.phase, "Pending")
      assert.strictEqual(yield* claimRequests(node), 5, "one claim per bound Pod, none for the unscheduled ones")
      const intruder = yield* podState(namespace, "intruder")
      assert.strictEqual(intruder?.spec.nodeName ?? "", "", "still unbound")
    }).pipe(quiet)), { timeout: 150_000 })

  it.live("while sandboxd cannot serve, the taint keeps new Pods Pending and leaves Running ones alone", () =>
    Effect.scoped(Effect.gen(function*() {
      const node = yield* startVirtualNode({ extraArgs: ["--sandboxd-probe-grace", "2"] })
      const namespace = yield* createReadyNamespace("taint")
      yield* createSandboxPod(namespace, "running", { pool: node.pool })
      const running = yield* eventually("running Running", runningPod(namespace, "running"), 30_000)
      const claimsBefore = yield* claimRequests(node)

      // ---- sandboxd's probe route fails: after the grace the node is tainted
      yield* node.sandboxd.sim.injectFault("info", { _tag: "Reply", status: 500, body: "{\"error\":\"boom\"}" })
      const taintKey = "sandbox.cocoonstack.io/sandboxd-unavailable"
      yield* eventually(
        "the sandboxd-unavailable taint",
        Effect.map(
          adminGet<{ spec: { taints?: ReadonlyArray<{ key: string; effect: string }> } }>(`/api/v1/nodes/${node.nodeName}`),
          (n) => n?.spec.taints?.some((t) => t.key === taintKey && t.effect === "NoSchedule") === true
        ),
        30_000
      )
      yield* createSandboxPod(namespace, "newcomer", { pool: node.pool })
      yield* eventually("newcomer Unschedulable", unschedulable(namespace, "newcomer"), 30_000)
      const still = yield* getPod(namespace, "running")
      assert.strictEqual(still?.status?.phase, "Running")
      assert.strictEqual(claimIdOf(still!), claimIdOf(running), "the Running Pod keeps its VM")
      assert.isUndefined(still?.metadata.deletionTimestamp)

      // ---- sandboxd serves again: the taint goes, the waiting Pod is bound and runs
      yield* node.sandboxd.sim.clearFaults
      yield* eventually("newcomer Running", runningPod(namespace, "newcomer"), 60_000)
      assert.strictEqual(yield* claimRequests(node), claimsBefore + 1)
      const released = (yield* node.sandboxd.sim.audit).filter((e) => e.route === "release")
      assert.deepStrictEqual(released, [], "nothing released while the taint was on")
    }).pipe(quiet)), { timeout: 150_000 })
})
