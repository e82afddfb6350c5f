/**
 * The runbooks of docs/operations.md that the cluster suite can run, step by step as written
 * (real scheduler, controller-manager and eviction API; the daemon binary; the sandboxd
 * simulator): host maintenance (cordon, drain, reboot, uncordon) and rotating the sandboxd token
 * (DEP-2 — each host's own sandboxd token by default). Each test says what its steps must keep.
 * Install, upgrade and uninstall need a real kubelet: they are the real-node suite's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { uniqueName } from "../fixture/Kube.ts"
import {
  admin,
  adminGet,
  claimIdOf,
  createSandbox,
  eventually,
  getPod,
  quiet,
  rawRequest,
  runningPod,
  SandboxApiVersion,
  tempDir
} from "../scenarioHarness.ts"
import {
  claimsFileRows,
  createReadyNamespace,
  createSandboxPod,
  heldIds,
  type PodState,
  releasedIds,
  startVirtualNode,
  unschedulableReason,
  useClusterPlane,
  type VirtualNode
} from "./harness.ts"

useClusterPlane()

const sandboxOwner = (name: string, uid: string) => ({ apiVersion: SandboxApiVersion, kind: "Sandbox", name, uid })
const podState = (namespace: string, name: string) => adminGet<PodState>(`/api/v1/namespaces/${namespace}/pods/${name}`)
const unschedulable = (namespace: string, name: string) =>
  Effect.map(podState(namespace, name), (pod) =>
    pod !== undefined && (pod.spec.nodeName ?? "") === "" && unschedulableReason(pod) === "Unschedulable" ? pod : undefined)
const gone = (namespace: string, name: string) => Effect.map(getPod(namespace, name), (pod) => pod === undefined)

/** `kubectl cordon` / `uncordon`. */
const setUnschedulable = (node: string, unschedulable: boolean) =>
  Effect.gen(function*() {
    const { config } = yield* admin
    const reply = yield* rawRequest(config, "PATCH", `/api/v1/nodes/${node}`, { spec: { unschedulable } }, "application/merge-patch+json")
    assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
  })

/** What `kubectl drain` sends for each Pod: an Eviction. */
const evict = (namespace: string, name: string) =>
  Effect.gen(function*() {
    const { config } = yield* admin
    const reply = yield* rawRequest(config, "POST", `/api/v1/namespaces/${namespace}/pods/${name}/eviction`, {
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name, namespace }
    })
    assert.strictEqual(reply.status, 201, JSON.stringify(reply.body))
  })

/** The host reboots: the daemon is stopped as the kubelet stops it (SIGTERM), and every VM of sandboxd ends. */
const reboot = (node: VirtualNode) =>
  Effect.gen(function*() {
    yield* node.daemon().signal("SIGTERM")
    yield* Deferred.await(node.daemon().exited)
    for (const claim of yield* node.sandboxd.sim.claims) yield* node.sandboxd.sim.forget(claim.id).pipe(Effect.ignore)
    yield* node.restart
  })

describe("runbooks in a real cluster", () => {
  // Cordon the virtual node (new sandbox Pods wait, Running ones stay); drain it with evictions (a
  // bare Pod's VM released, a Sandbox-owned one's kept for its replacement); the reboot ends the
  // VMs (the kept row is dropped once sandboxd confirms its VM gone); uncordon (the waiting Pod
  // runs, the replacement gets a new VM). A reboot without the drain ends the node's Pods
  // Failed/SandboxLost.
  it.live("host maintenance: cordon, drain, reboot, uncordon; and a reboot without the drain", () =>
    Effect.scoped(Effect.gen(function*() {
      const node = yield* startVirtualNode()
      const namespace = yield* createReadyNamespace("maintenance")
      const keeperUid = yield* createSandbox(namespace, "keeper")
      const strayUid = yield* createSandbox(namespace, "stray")
      yield* createSandboxPod(namespace, "bare", { pool: node.pool })
      yield* createSandboxPod(namespace, "owned", { pool: node.pool }, sandboxOwner("keeper", keeperUid))
      const bare = claimIdOf(yield* eventually("bare Running", runningPod(namespace, "bare"), 30_000))
      const owned = claimIdOf(yield* eventually("owned Running", runningPod(namespace, "owned"), 30_000))

      // ---- 1. cordon: new sandbox Pods wait; the Running ones are not touched
      yield* setUnschedulable(node.nodeName, true)
      yield* createSandboxPod(namespace, "waiting", { pool: node.pool })
      yield* eventually("waiting Unschedulable", unschedulable(namespace, "waiting"), 30_000)
      assert.strictEqual(claimIdOf((yield* runningPod(namespace, "owned"))!), owned)

      // ---- 2. drain: each Pod evicted; the bare Pod's VM released, the owned Pod's kept for its owner
      yield* evict(namespace, "bare")
      yield* evict(namespace, "owned")
      yield* eventually("bare gone", gone(namespace, "bare"), 30_000)
      yield* eventually("owned gone", gone(namespace, "owned"), 30_000)
      yield* eventually("bare's VM released", Effect.map(releasedIds(node), (ids) => ids.includes(bare)), 30_000)
      assert.notInclude(yield* releasedIds(node), owned, "the owner is alive: its VM is preserved")
      assert.isTrue((yield* heldIds(node)).has(owned))
      assert.strictEqual((yield* claimsFileRows(node.statePath)).get(`${namespace}/owned`), owned, "its row kept")

      // ---- 3. reboot: the VMs end with the host; the kept row goes once sandboxd confirms its VM gone
      yield* reboot(node)
      yield* eventually(
        "the lost VM's row dropped",
        Effect.map(claimsFileRows(node.statePath), (rows) => !rows.has(`${namespace}/owned`)),
        30_000
      )

      // ---- 4. uncordon: the waiting Pod runs; the owner's replacement gets a new VM
      yield* setUnschedulable(node.nodeName, false)
      yield* eventually("waiting Running", runningPod(namespace, "waiting"), 60_000)
      yield* createSandboxPod(namespace, "owned", { pool: node.pool }, sandboxOwner("keeper", keeperUid))
      const replacement = claimIdOf(yield* eventually("owned's replacement Running", runningPod(namespace, "owned"), 60_000))
      assert.notStrictEqual(replacement, owned, "a new VM: the old one ended with the host")

      // ---- a reboot without the drain: the node's Pods end Failed/SandboxLost, for their owners to replace
      yield* createSandboxPod(namespace, "undrained", { pool: node.pool }, sandboxOwner("stray", strayUid))
      yield* eventually("undrained Running", runningPod(namespace, "undrained"), 30_000)
      yield* reboot(node)
      const lost = yield* eventually(
        "undrained Failed/SandboxLost",
        Effect.map(podState(namespace, "undrained"), (pod) => pod?.status?.phase === "Failed" ? pod : undefined),
        60_000
      )
      assert.strictEqual(lost.status?.reason, "SandboxLost")
    }).pipe(quiet)), { timeout: 240_000 })

  // The host file first, then sandboxd, then the daemon's Pod replaced (its init copies the new
  // token): a Pod bound in the 401 window waits and is claimed once; nothing Running is touched,
  // nothing released. A token file the daemon follows (a Secret) needs no restart.
  it.live("rotating the sandboxd token: host file, sandboxd, then the daemon's Pod; a Pod of the 401 window waits and is claimed once", () =>
    Effect.scoped(Effect.gen(function*() {
      const node = yield* startVirtualNode()
      const namespace = yield* createReadyNamespace("rotation")
      // The host's file (root-owned on a host) and the daemon's copy (node.tokenFile), as prepare-state makes it.
      const hostFile = NodePath.join(yield* tempDir("vk-rotation-host-"), "sandboxd-token")
      NodeFs.copyFileSync(node.tokenFile, hostFile)
      yield* createSandboxPod(namespace, "before", { pool: node.pool })
      const before = claimIdOf(yield* eventually("before Running", runningPod(namespace, "before"), 30_000))

      // 1. the new token into the host file: the daemon keeps using its copy, sandboxd the old token
      const second = `root-${uniqueName("t")}`
      NodeFs.writeFileSync(hostFile, `${second}\n`)
      // 2. sandboxd takes it: the 401 window opens
      yield* node.sandboxd.sim.setRootToken(second)
      yield* createSandboxPod(namespace, "during", { pool: node.pool })
      yield* eventually(
        "during bound and refused by sandboxd",
        Effect.map(node.sandboxd.sim.audit, (entries) => entries.some((e) => e.route === "claim" && e.auth === "unknown")),
        30_000
      )
      assert.strictEqual((yield* podState(namespace, "during"))?.status?.phase, "Pending", "waits: no VM without the token")
      // 3. the daemon's Pod replaced: its init copies the host file again; the window closes
      yield* node.daemon().signal("SIGTERM")
      yield* Deferred.await(node.daemon().exited)
      NodeFs.copyFileSync(hostFile, node.tokenFile)
      yield* node.restart
      yield* eventually("during Running", runningPod(namespace, "during"), 60_000)
      assert.strictEqual(claimIdOf((yield* runningPod(namespace, "before"))!), before, "the Running Pod kept its VM")
      assert.strictEqual((yield* node.sandboxd.sim.claims).length, 2, "one VM each: the refused claim made none")
      assert.deepStrictEqual(yield* releasedIds(node), [], "nothing released")

      // ---- a token file the daemon follows (a Secret's volume): sandboxd first, then the file; no restart
      const third = `root-${uniqueName("t")}`
      yield* node.sandboxd.sim.setRootToken(third)
      NodeFs.writeFileSync(node.tokenFile, `${third}\n`)
      yield* createSandboxPod(namespace, "after", { pool: node.pool })
      yield* eventually("after Running", runningPod(namespace, "after"), 60_000)
      assert.strictEqual((yield* node.sandboxd.sim.claims).length, 3)
    }).pipe(quiet)), { timeout: 240_000 })
})
