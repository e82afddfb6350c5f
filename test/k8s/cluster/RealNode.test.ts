/**
 * The chart on a real node: `helm install` onto a real kubelet, then Pods, `helm upgrade`, faults
 * through the kubelet and `helm uninstall`, in that order on one world (./node/World.ts), each
 * step following docs/operations.md's runbook. What each must keep: no VM lost, released or
 * claimed twice, and the claims file the same table. A scenario that needs the installed chart
 * goes between "upgrade" and "uninstall".
 */
import { assert, layer } from "@effect/vitest"
import { rmSync, statSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Effect } from "effect"
import {
  admin,
  adminGet,
  claimIdOf,
  createSandbox,
  getPod,
  quiet,
  rawRequest,
  runningPod,
  SandboxApiVersion,
  ScenarioFailed
} from "../scenarioHarness.ts"
import { claimsOf, daemonTokenOf, memoryOfDaemon, processSecurity, readyzBody } from "./node/Checks.ts"
import { run } from "./node/Commands.ts"
import { nodeReady } from "./node/RealNode.ts"
import { loopbackOnly } from "./node/Sockets.ts"
import {
  daemonContainer,
  type DaemonPod,
  HostNode,
  Namespace,
  OptInLabel,
  podReady,
  Release,
  VirtualNode,
  waitFor,
  World,
  worldLayer
} from "./node/World.ts"
import { createReadyNamespace, createSandboxPod, useClusterPlane } from "./harness.ts"

useClusterPlane()

const figures: Record<string, number | string> = {}
/** Set once the install scenario passed: the later ones need the installed chart, and fail at once without it. */
let installed = false
const requireInstalled = Effect.suspend(() =>
  installed ? Effect.void : Effect.fail(new ScenarioFailed({ message: "the install scenario did not pass; nothing to run on" }))
)
/** The world, once the chart is installed. */
const installedWorld = Effect.andThen(requireInstalled, World.use(Effect.succeed))
/** The sandbox Pods of the "work" scenario: namespace/name → claim id. */
const sandboxPods = new Map<string, string>()
let workNamespace = ""

/** Every earlier Pod still Running on its first claim, sandboxd still holding each, none released. */
const nothingLost = Effect.gen(function*() {
  const world = yield* World
  const claims = yield* claimsOf(world)
  for (const [key, claimId] of sandboxPods) {
    const [namespace = "", name = ""] = key.split("/")
    const pod = yield* getPod(namespace, name)
    assert.strictEqual(pod?.status?.phase, "Running", `${key} is still Running`)
    assert.strictEqual(claimIdOf(pod ?? { metadata: { uid: "" } }), claimId, `${key} keeps its claim`)
    assert.isTrue(claims.held.has(claimId), `sandboxd still holds ${key}'s VM`)
  }
  assert.deepStrictEqual(claims.released, [], "no VM released")
  assert.strictEqual(claims.claimRequests, sandboxPods.size, "one claim per Pod, none claimed twice")
  return claims
})

/** The node's processes' sockets now: every peer in 127.0.0.0/8, and there are peers to see. */
const onlyLoopbackPeers = Effect.gen(function*() {
  const world = yield* World
  const pod = yield* onlyDaemonPod
  const found = loopbackOnly({
    daemon: yield* world.daemonPid(pod),
    kubelet: world.node.kubelet.current().pid,
    containerd: world.node.containerd.process.pid
  })
  assert.deepStrictEqual(found.outside, [], "peers outside 127.0.0.0/8")
  // The check saw real connections: the daemon's and the kubelet's to the apiserver at least.
  assert.isTrue((found.peers["daemon"] ?? 0) > 0 && (found.peers["kubelet"] ?? 0) > 0, JSON.stringify(found.peers))
})

const onlyDaemonPod = Effect.gen(function*() {
  const world = yield* World
  const pods = yield* world.daemonPods
  assert.strictEqual(pods.length, 1, "one daemon Pod on the host node")
  return pods[0] as DaemonPod
})

layer(worldLayer, { excludeTestServices: true, timeout: "6 minutes" })("the chart on a real kubelet", (it) => {
  it.effect("install: the kubelet runs prepare-state and the daemon as the chart says; its virtual node turns Ready", () =>
    quiet(Effect.gen(function*() {
      const world = yield* World
      // The install runbook (docs/operations.md, "Install") step by step, with this suite's release,
      // namespace and host paths. Its last check, `helm test`, is left out: the test Pod is no
      // host-network Pod and reaches each daemon at its host IP, and this node has no Pod network
      // and no address.
      const apiToken = join(world.node.dir, "api-token")
      writeFileSync(apiToken, world.rootToken, { mode: 0o600 })
      yield* run("provisioning the token's directory", "install", ["-d", "-m", "0700", "-o", "root", "-g", "root", dirname(world.tokenFile)])
      yield* run("provisioning the token", "install", ["-m", "0600", "-o", "root", "-g", "root", apiToken, world.tokenFile])
      yield* world.tools.kubectl("create namespace", ["create", "namespace", Namespace])
      yield* world.tools.kubectl("label namespace", ["label", "namespace", Namespace, "pod-security.kubernetes.io/enforce=privileged"])
      const started = Date.now()
      yield* world.chart("install", "install", world.values)
      // The operator's opt-in, as the chart's values.yaml and the runbook say.
      yield* world.tools.kubectl("labelling the host node", ["label", "node", HostNode, `${OptInLabel}=true`])
      yield* waitFor(`the virtual node ${VirtualNode} Ready`, nodeReady(VirtualNode), 180_000)
      figures["helm install → virtual node Ready (ms)"] = Date.now() - started
      const pod = yield* waitFor("the daemon Pod Ready", world.readyDaemonPod, 120_000)
      figures["helm install → daemon Pod Ready (ms)"] = Date.now() - started
      // The rollout completes once the Pod has been ready for minReadySeconds.
      yield* world.tools.kubectl("rollout status", ["-n", Namespace, "rollout", "status", `ds/${DaemonSetName}`, "--timeout=180s"])
      yield* waitFor(
        "its NodeInventory published",
        Effect.map(adminGet<object>(`/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories/${VirtualNode}`), (found) => found !== undefined),
        60_000
      )

      // The init container ran to completion and handed the state directory to the daemon's user.
      const init = pod.status?.initContainerStatuses?.find((c) => c.name === "prepare-state")
      assert.strictEqual(init?.state?.terminated?.exitCode, 0, "prepare-state exited 0")
      const stateDir = statSync(join(world.statePath, ".."))
      assert.deepStrictEqual([stateDir.uid, stateDir.gid], [65532, 65532], "the state directory belongs to the daemon's user")
      // The daemon's process as the kernel sees it: the chart's security context, applied by the kubelet.
      const security = processSecurity(yield* world.daemonPid(pod))
      assert.deepStrictEqual(security, { uid: "65532", gid: "65532", effectiveCaps: "0000000000000000", noNewPrivs: "1", rootReadOnly: true })
      installed = true
    })), 360_000)

  it.effect("install: the Pod's own bound token passes the policy for its host's node and is refused on another host's", () =>
    Effect.gen(function*() {
      const world = yield* installedWorld
      const pod = yield* onlyDaemonPod
      const token = yield* daemonTokenOf(world, pod)
      const { core } = yield* admin
      // Another host's virtual node, its Lease and a Pod bound to it: made by the admin.
      const other = `vk-host-b${VirtualNode.slice(HostNode.length)}`
      yield* Effect.tryPromise(() => core.createNode({ body: { metadata: { name: other } } }))
      yield* Effect.addFinalizer(() => Effect.tryPromise(() => core.deleteNode({ name: other })).pipe(Effect.ignore))
      const namespace = yield* createReadyNamespace("realnode-other")
      yield* Effect.tryPromise(() =>
        core.createNamespacedPod({
          namespace,
          body: { metadata: { name: "bound-elsewhere" }, spec: { nodeName: other, containers: [{ name: "main", image: "python:3.12" }] } }
        })
      )
      const as = (method: string, path: string, body?: object, contentType?: string) =>
        rawRequest(token.config, method, `${path}${path.includes("?") ? "&" : "?"}dryRun=All`, body, contentType)
      const patch = "application/merge-patch+json"
      const own = yield* as("PATCH", `/api/v1/nodes/${VirtualNode}/status`, { status: {} }, patch)
      assert.strictEqual(own.status, 200, `its own node's status: ${own.text.slice(0, 300)}`)
      const ownLease = yield* adminGet<object>(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${VirtualNode}`)
      const leaseWrite = yield* as("PUT", `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${VirtualNode}`, ownLease)
      assert.strictEqual(leaseWrite.status, 200, `its own Lease: ${leaseWrite.text.slice(0, 300)}`)

      const refused = [
        yield* as("PATCH", `/api/v1/nodes/${other}/status`, { status: {} }, patch),
        yield* as("POST", `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases`, {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name: other, namespace: "kube-node-lease" },
          spec: { holderIdentity: other }
        }),
        yield* as("PATCH", `/api/v1/namespaces/${namespace}/pods/bound-elsewhere/status`, { status: {} }, patch),
        yield* as("DELETE", `/api/v1/namespaces/${namespace}/pods/bound-elsewhere`)
      ]
      for (const reply of refused) {
        assert.strictEqual(reply.status, 403, reply.text.slice(0, 300))
        assert.include(reply.text, "vk-sandbox node restriction")
      }
    }))

  it.effect("loopback only: the daemon's, the kubelet's and containerd's sockets have no peer outside 127.0.0.0/8", () =>
    Effect.andThen(requireInstalled, onlyLoopbackPeers))

  it.effect("work: Sandbox-owned and bare Pods, scheduled by the real scheduler, go Running with a VM each", () =>
    quiet(Effect.gen(function*() {
      const world = yield* installedWorld
      const namespace = yield* createReadyNamespace("realnode-work")
      workNamespace = namespace
      const sandbox = yield* createSandbox(namespace, "owner")
      const owner = { apiVersion: SandboxApiVersion, kind: "Sandbox", name: "owner", uid: sandbox }
      yield* createSandboxPod(namespace, "owned", { pool: world.pool }, owner)
      yield* createSandboxPod(namespace, "bare", { pool: world.pool })
      for (const name of ["owned", "bare"]) {
        const pod = yield* waitFor(`${name} Running`, runningPod(namespace, name), 60_000)
        const bound = yield* adminGet<{ spec: { nodeName?: string } }>(`/api/v1/namespaces/${namespace}/pods/${name}`)
        assert.strictEqual(bound?.spec.nodeName, VirtualNode, "the scheduler bound it to the virtual node")
        sandboxPods.set(`${namespace}/${name}`, claimIdOf(pod))
      }
      assert.strictEqual(new Set(sandboxPods.values()).size, 2, "two VMs")
      const claims = yield* nothingLost
      assert.strictEqual(claims.file?.size, 2, "the claims file holds both")
    })), 180_000)

  it.effect("upgrade: a changed value rolls the daemon Pod; no VM claimed again or released, the claims file the same table", () =>
    quiet(Effect.gen(function*() {
      const world = yield* installedWorld
      const before = yield* onlyDaemonPod
      const tableBefore = (yield* claimsOf(world)).file
      const started = Date.now()
      yield* world.chart("upgrade", "upgrade", { ...world.values, logging: { level: "debug" } })
      const after = yield* waitFor(
        "the new daemon Pod Ready",
        Effect.map(world.readyDaemonPod, (pod) => (pod !== undefined && pod.metadata.uid !== before.metadata.uid ? pod : undefined)),
        180_000
      )
      figures["helm upgrade → new daemon Pod Ready (ms)"] = Date.now() - started
      yield* world.tools.kubectl("rollout status", ["-n", Namespace, "rollout", "status", `ds/${DaemonSetName}`, "--timeout=180s"])
      assert.notStrictEqual(after.metadata.uid, before.metadata.uid)
      const claims = yield* nothingLost
      assert.deepStrictEqual(claims.file, tableBefore, "the claims file is the same table")

      // /readyz gates the rollout: with sandboxd refusing, the next Pod runs but is not Ready and
      // the DaemonSet counts none available; once sandboxd answers, it is.
      yield* world.sandboxd.sim.injectFault("*", { _tag: "Reply", status: 503, body: "{\"error\":\"maintenance\"}" })
      yield* world.chart("upgrade", "gated", { ...world.values, logging: { level: "info" } })
      const waiting = yield* waitFor(
        "the next daemon Pod running, its /readyz refusing",
        Effect.gen(function*() {
          const pods = yield* world.daemonPods
          const pod = pods.find((p) => p.metadata.uid !== after.metadata.uid && daemonContainer(p)?.state?.running !== undefined)
          if (pod === undefined) return undefined
          const body = yield* readyzBody(world.metricsPort)
          return body !== undefined && body.status === 503 && body.text.includes("sandboxd has not answered yet") ? pod : undefined
        }),
        180_000
      )
      assert.isFalse(podReady(yield* getDaemonPod(waiting.metadata.name)), "not Ready while /readyz refuses")
      // The controller's count may trail the Pods it just replaced; it must reach none ready.
      yield* waitFor(
        "the DaemonSet counting no Ready Pod",
        Effect.map(
          adminGet<{ status: { numberReady?: number } }>(`/apis/apps/v1/namespaces/${Namespace}/daemonsets/${DaemonSetName}`),
          (ds) => (ds?.status.numberReady ?? 0) === 0
        ),
        30_000
      )
      assert.isFalse(podReady(yield* getDaemonPod(waiting.metadata.name)), "still not Ready while /readyz refuses")
      yield* world.sandboxd.sim.clearFaults
      yield* waitFor("the gated Pod Ready once sandboxd answers", Effect.map(world.readyDaemonPod, (pod) => pod?.metadata.uid === waiting.metadata.uid), 120_000)
      yield* nothingLost
    })), 480_000)

  it.effect("faults: the daemon's container killed, the kubelet restarted, the host cordoned and drained; no VM lost, none claimed twice", () =>
    quiet(Effect.gen(function*() {
      const world = yield* installedWorld
      // The container, killed: the kubelet starts it again in the same Pod.
      const pod = yield* onlyDaemonPod
      const restarts = daemonContainer(pod)?.restartCount ?? 0
      const containerId = (daemonContainer(pod)?.containerID ?? "").replace(/^containerd:\/\//, "")
      yield* world.node.containerd.ctr("killing the daemon's container", ["tasks", "kill", "--signal", "SIGKILL", containerId])
      // A Pod arriving while the daemon is down or starting again is claimed once.
      yield* createSandboxPod(workNamespace, "while-down", { pool: world.pool })
      yield* waitFor(
        "the daemon's container restarted and Ready",
        Effect.map(world.readyDaemonPod, (p) => p?.metadata.uid === pod.metadata.uid && (daemonContainer(p)?.restartCount ?? 0) > restarts),
        180_000
      )
      const late = yield* waitFor("while-down Running", runningPod(workNamespace, "while-down"), 60_000)
      sandboxPods.set(`${workNamespace}/while-down`, claimIdOf(late))
      yield* nothingLost

      // The kubelet restarted: the running container stays, the node comes back Ready.
      const beforeKubelet = yield* onlyDaemonPod
      yield* world.node.kubelet.restart
      yield* waitFor(`${HostNode} Ready`, nodeReady(HostNode), 120_000)
      const afterKubelet = yield* waitFor("the daemon Pod Ready", world.readyDaemonPod, 120_000)
      assert.strictEqual(afterKubelet.metadata.uid, beforeKubelet.metadata.uid, "the same Pod")
      assert.strictEqual(daemonContainer(afterKubelet)?.restartCount, daemonContainer(beforeKubelet)?.restartCount, "its container not restarted")
      yield* nothingLost

      // Cordon and drain, as for host maintenance: `kubectl drain` leaves DaemonSet Pods.
      yield* world.tools.kubectl("cordon", ["cordon", HostNode])
      yield* world.tools.kubectl("drain", ["drain", HostNode, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s"])
      const drained = yield* onlyDaemonPod
      assert.strictEqual(drained.metadata.uid, afterKubelet.metadata.uid, "the DaemonSet Pod stays")
      assert.isTrue(yield* nodeReady(VirtualNode), "the virtual node stays Ready")
      yield* nothingLost
      yield* world.tools.kubectl("uncordon", ["uncordon", HostNode])
    })), 480_000)

  it.effect("figures: the daemon container's memory as the kubelet reports it", () =>
    Effect.gen(function*() {
      const world = yield* installedWorld
      const pod = yield* onlyDaemonPod
      const memory = yield* waitFor("the kubelet's stats for the daemon", memoryOfDaemon(world, pod), 60_000)
      figures["daemon container workingSetBytes (kubelet /stats/summary)"] = memory.workingSetBytes
      figures["daemon container rssBytes (kubelet /stats/summary)"] = memory.rssBytes
      assert.isTrue(memory.workingSetBytes > 0)
      // After the Pods, the upgrade and the faults: still no peer off loopback.
      yield* onlyLoopbackPeers
      console.log(`real-node figures: ${JSON.stringify(figures)}`)
    }))

  it.effect("uninstall: helm uninstall releases no VM and leaves the claims file; what remains is recorded", () =>
    quiet(Effect.gen(function*() {
      const world = yield* installedWorld
      const tableBefore = (yield* claimsOf(world)).file
      yield* world.tools.helm("helm uninstall", ["uninstall", Release, "--namespace", Namespace, "--wait", "--timeout=120s"])
      yield* waitFor("no daemon Pod", Effect.map(world.daemonPods, (pods) => pods.length === 0), 120_000)
      const claims = yield* nothingLost
      assert.deepStrictEqual(claims.file, tableBefore, "the claims file is kept as it was")
      const remains = {
        virtualNode: (yield* adminGet<object>(`/api/v1/nodes/${VirtualNode}`)) !== undefined,
        lease: (yield* adminGet<object>(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${VirtualNode}`)) !== undefined,
        nodeInventory: (yield* adminGet<object>(`/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories/${VirtualNode}`)) !== undefined,
        claimsFileRows: claims.file?.size ?? 0,
        sandboxPods: sandboxPods.size
      }
      // What an operator must still remove by hand; the world's teardown removes it here.
      console.log(`real-node uninstall leaves: ${JSON.stringify(remains)}`)
      assert.isTrue(remains.claimsFileRows === sandboxPods.size)
    })), 300_000)

  it.effect("uninstall runbook (docs/operations.md) as written: reinstalled, sandboxes ended, no virtual Node, Lease or NodeInventory left", () =>
    quiet(Effect.gen(function*() {
      const world = yield* installedWorld
      const kubectl = world.tools.kubectl
      // Installed again on what the uninstall left: the daemon adopts every VM and claims nothing.
      yield* world.chart("install", "reinstall", world.values)
      yield* waitFor("the daemon Pod Ready", world.readyDaemonPod, 180_000)
      yield* waitFor(`the virtual node ${VirtualNode} Ready`, nodeReady(VirtualNode), 120_000)
      yield* nothingLost

      // The runbook, "Uninstall and cleanup", with this suite's release, namespace and state path.
      // 1. New sandbox Pods kept off the virtual nodes.
      yield* kubectl("1. cordon", ["cordon", "-l", RuntimeSelector])
      // 2. The owners first, then the bare Pods; until no Pod is bound to a virtual node.
      yield* kubectl("2. delete the Sandboxes", ["-n", workNamespace, "delete", "sandboxes.agents.x-k8s.io", "--all", "--wait=false"])
      const bare = [...sandboxPods.keys()].map((key) => key.split("/")[1] ?? "").filter((name) => name !== "owned")
      yield* kubectl("2. delete the bare Pods", ["-n", workNamespace, "delete", "pod", ...bare, "--wait=false"])
      yield* waitFor(
        "no Pod bound to the virtual node",
        Effect.map(kubectl("2. pods on the node", ["get", "pods", "-A", "--field-selector", `spec.nodeName=${VirtualNode}`, "--no-headers"]), (out) =>
          out.trim() === ""),
        120_000
      )
      // The claims table, with the runbook's command in the daemon's container (through containerd:
      // `kubectl exec` needs the apiserver to reach the kubelet, at an address this node has not).
      const pod = yield* onlyDaemonPod
      const container = (daemonContainer(pod)?.containerID ?? "").replace(/^containerd:\/\//, "")
      const table = yield* world.node.containerd.ctr("2. the claims table", [
        "tasks", "exec", "--exec-id", `claims-${pod.metadata.uid.slice(0, 8)}`, container,
        "node", "/app/dist/main.js", "claims", "--state-path", world.statePath
      ])
      assert.include(table, "no claims in", table)
      const ended = yield* claimsOf(world)
      for (const [key, claimId] of sandboxPods) assert.isFalse(ended.held.has(claimId), `${key}'s VM released`)
      assert.strictEqual(ended.released.length, sandboxPods.size, "each VM released once, by its daemon")

      // 3. Uninstall, the virtual nodes named first.
      const nodes = (yield* kubectl("3. the virtual nodes", ["get", "nodes", "-l", RuntimeSelector, "-o", "name"]))
        .split("\n").filter((line) => line !== "").map((line) => line.replace(/^node\//, ""))
      assert.include(nodes, VirtualNode)
      yield* world.tools.helm("3. helm uninstall", ["uninstall", Release, "-n", Namespace, "--wait"])
      // 4. What the daemons left.
      for (const node of nodes) {
        yield* kubectl("4. delete node", ["delete", "node", node])
        yield* kubectl("4. delete lease", ["-n", "kube-node-lease", "delete", "lease", node, "--ignore-not-found"])
        yield* kubectl("4. delete nodeinventory", ["delete", "nodeinventory", node, "--ignore-not-found"])
      }
      // 5. The claims file, once step 2 showed no rows.
      rmSync(world.statePath)
      // 6. None of those nodes anywhere.
      const left = [
        yield* kubectl("6. nodes", ["get", "nodes", "-l", RuntimeSelector, "-o", "name"]),
        yield* kubectl("6. leases", ["-n", "kube-node-lease", "get", "leases", "-o", "name"]),
        yield* kubectl("6. nodeinventories", ["get", "nodeinventories", "-o", "name"])
      ].join("\n").split("\n")
      for (const node of nodes) assert.deepStrictEqual(left.filter((line) => line.endsWith(`/${node}`)), [], `${node} is gone`)
      assert.strictEqual((yield* claimsOf(world)).released.length, sandboxPods.size, "the uninstall released nothing more")
    })), 360_000)
})

const DaemonSetName = `${Release}-vk-sandbox`
const RuntimeSelector = "sandbox.cocoonstack.io/runtime=sandboxd"

const getDaemonPod = (name: string) => adminGet<DaemonPod>(`/api/v1/namespaces/${Namespace}/pods/${name}`)
