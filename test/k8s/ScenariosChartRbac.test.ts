/**
 * The Helm chart's own RBAC on the real kube-apiserver. The chart is rendered with
 * the helm binary of the suite's cache (publishing on), its ServiceAccount, ClusterRole and
 * ClusterRoleBinding are applied as the admin in a fresh namespace, a TokenRequest token of that
 * ServiceAccount becomes a kubeconfig, and the whole daemon (`daemonLayer`, as `vk-sandbox run`
 * builds it) runs under that identity against the sandboxd simulator: node and lease, Pods
 * Running, a delete preserved and one released, inventory publishes, then a restart (the status
 * patch of an existing Node, the lease update, adoption). A verb missing from the chart's role
 * fails the behaviour below, and the access review table fails on any verb missing or extra.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { allVerbs, daemonVerbs, kubeconfigForToken, mayDo, renderChart, serviceAccountToken, startDaemon } from "./daemonIdentity.ts"
import { kube, uniqueName } from "./fixture/Kube.ts"
import {
  admin,
  adminGet,
  claimCount,
  claimIdOf,
  createNamespace,
  createPod,
  createSandbox,
  deletePodGracefully,
  deleteOwnerThenPod,
  eventually,
  freeLoopbackPorts,
  getPod,
  quiet,
  releasePaths,
  runningPod,
  sandboxdHolds,
  scenarioConfig,
  ScenarioFailed,
  startSandboxd,
  tempDir
} from "./scenarioHarness.ts"

interface NodeView {
  readonly metadata: { readonly uid: string }
  readonly status: { readonly conditions: ReadonlyArray<{ readonly type: string; readonly status: string }> }
}
interface LeaseView {
  readonly metadata: { readonly ownerReferences?: ReadonlyArray<Record<string, unknown>> }
  readonly spec: { readonly renewTime?: string }
}
interface InventoryView {
  readonly entries?: ReadonlyArray<{ readonly name: string; readonly id?: string; readonly addr?: string }>
  readonly address?: string
}

const httpStatus = (url: string) =>
  Effect.tryPromise({
    try: async () => (await fetch(url, { signal: AbortSignal.timeout(2_000) })).status,
    catch: (cause) => new ScenarioFailed({ message: `GET ${url}: ${String(cause)}` })
  })

describe("the Helm chart's RBAC on the real kube-apiserver", () => {
  it.live("the daemon runs under the chart's ServiceAccount and ClusterRole", () =>
    Effect.scoped(Effect.gen(function*() {
      const { config: adminConfig, core, objects, authz } = yield* admin

      // ---- render, extract, apply as the admin in a fresh namespace
      const installNamespace = yield* createNamespace("chart")
      const release = uniqueName("chart")
      const docs = yield* renderChart(release, installNamespace, ["inventory.publish=true", "sandboxd.token.value=chart-test-token"])
      const wanted = ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]
      // The release's own objects (the `helm test` hook's account is not the daemon's).
      const rbac = docs.filter((doc) => wanted.includes(doc.kind ?? "") && doc.metadata?.annotations?.["helm.sh/hook"] === undefined)
      assert.deepStrictEqual(rbac.map((doc) => doc.kind), wanted, "one of each, in this order")
      for (const doc of rbac) yield* kube(`apply ${doc.kind}`, () => objects.create(doc))
      const serviceAccount = rbac[0]?.metadata?.name ?? ""

      // ---- the access review: exactly the daemon's verbs, nothing missing, nothing extra
      const review = (verb: string, group: string, resourcePath: string, leaseNamespace?: string) =>
        mayDo(authz, installNamespace, serviceAccount, verb, group, resourcePath, leaseNamespace)
      // The authorizer's cache follows the new binding shortly.
      yield* eventually("the binding in effect", review("get", "", "nodes"), 10_000)
      const mismatches: Array<string> = []
      for (const [group, resourcePath, verbs] of daemonVerbs) {
        for (const verb of allVerbs) {
          const allowed = yield* review(verb, group, resourcePath)
          if (allowed !== verbs.includes(verb)) mismatches.push(`${verb} ${group}/${resourcePath}: allowed=${allowed}`)
        }
      }
      // Leases nowhere but kube-node-lease: not the leader-election Leases in kube-system.
      for (const namespace of ["kube-system", "team-a", "default"]) {
        for (const verb of allVerbs) {
          if (yield* review(verb, "coordination.k8s.io", "leases", namespace)) mismatches.push(`${verb} leases in ${namespace}`)
        }
      }
      assert.deepStrictEqual(mismatches, [])

      // ---- a token of that ServiceAccount, as a kubeconfig
      const dir = yield* tempDir("vk-k8s-chart-")
      const kubeconfigFile = kubeconfigForToken(adminConfig, dir, serviceAccount, yield* serviceAccountToken(core, installNamespace, serviceAccount)).file

      // ---- the daemon under that identity
      const sandboxd = yield* startSandboxd()
      const [kubeletPort = 0, metricsPort = 0] = yield* freeLoopbackPorts(2)
      const config = scenarioConfig(kubeconfigFile, sandboxd.url, dir, {
        listenAddr: { host: "127.0.0.1", port: kubeletPort },
        metricsAddr: { host: "127.0.0.1", port: metricsPort },
        publishInventory: true,
        publishInterval: Duration.millis(500),
        shutdownTimeout: Duration.seconds(3)
      })
      const nodeName = config.nodeName
      const nodePath = `/api/v1/nodes/${nodeName}`
      const leasePath = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeName}`
      const inventoryPath = `/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories/${nodeName}`
      const namespace = yield* createNamespace("chart-pods")
      const keeperUid = yield* createSandbox(namespace, "keeper")
      const leaverUid = yield* createSandbox(namespace, "leaver")

      const first = yield* startDaemon(config)
      const node = yield* eventually("the node", adminGet<NodeView>(nodePath))
      assert.strictEqual(node.status.conditions.find((c) => c.type === "Ready")?.status, "True")
      const lease = yield* eventually("the lease", adminGet<LeaseView>(leasePath))
      assert.deepStrictEqual(lease.metadata.ownerReferences?.map((o) => o["uid"]), [node.metadata.uid])
      yield* eventually("readyz 200", Effect.map(httpStatus(`http://127.0.0.1:${metricsPort}/readyz`), (s) => s === 200))
      yield* eventually(
        "the Registered event",
        Effect.map(
          adminGet<{ items: ReadonlyArray<{ reason?: string }> }>(
            `/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D${nodeName}`
          ),
          (list) => (list?.items ?? []).some((e) => e.reason === "Registered")
        ),
        5_000
      )

      // ---- Pods Running; the inventory lists their sandboxes
      yield* createPod(namespace, "kept", nodeName, { name: "keeper", uid: keeperUid })
      yield* createPod(namespace, "released", nodeName, { name: "leaver", uid: leaverUid })
      const keptClaim = claimIdOf(yield* eventually("kept Running", runningPod(namespace, "kept")))
      const releasedClaim = claimIdOf(yield* eventually("released Running", runningPod(namespace, "released")))
      const inventory = yield* eventually(
        "both sandboxes in the inventory",
        Effect.map(adminGet<InventoryView>(inventoryPath), (inv) => (inv?.entries ?? []).length === 2 ? inv : undefined),
        5_000
      )
      assert.deepStrictEqual(inventory.entries?.map((e) => [e.name, e.id]), [
        [`${namespace}/kept`, keptClaim],
        [`${namespace}/released`, releasedClaim]
      ])
      assert.isTrue((inventory.entries ?? []).every((e) => (e.addr ?? "") !== ""), "own claims carry their address")
      assert.strictEqual(inventory.address, "10.0.0.5:7777")

      // ---- owner alive: a 30 s graceful delete → preserved, the object gone at once
      yield* deletePodGracefully(namespace, "kept", 30)
      yield* eventually("kept removed", Effect.map(getPod(namespace, "kept"), (pod) => pod === undefined), 5_000)
      assert.deepStrictEqual(yield* releasePaths(sandboxd), [], "preserved: no release")
      assert.isTrue(yield* sandboxdHolds(sandboxd, keptClaim))

      // ---- owner gone (the owner GET's NotFound), then the Pod → released
      yield* deleteOwnerThenPod(sandboxd, namespace, "leaver", "released", releasedClaim)
      yield* eventually(
        "the inventory without the released sandbox",
        Effect.map(adminGet<InventoryView>(inventoryPath), (inv) =>
          (inv?.entries ?? []).map((e) => e.id).join(",") === keptClaim),
        5_000
      )

      // ---- restart: the existing Node's status is patched, the Lease updated, the preserved
      // sandbox adopted by a same-name replacement
      yield* first.stop
      const leaseBefore = yield* eventually("the lease", adminGet<LeaseView>(leasePath))
      const claimsBefore = yield* claimCount(sandboxd)
      yield* createPod(namespace, "kept", nodeName, { name: "keeper", uid: keeperUid })
      const second = yield* startDaemon(config)
      yield* eventually(
        "the lease renewed by the second start",
        Effect.map(adminGet<LeaseView>(leasePath), (l) => l !== undefined && l.spec.renewTime !== leaseBefore.spec.renewTime),
        5_000
      )
      const adopted = yield* eventually("the replacement Running", runningPod(namespace, "kept"))
      assert.strictEqual(claimIdOf(adopted), keptClaim)
      assert.strictEqual(yield* claimCount(sandboxd), claimsBefore, "adopted: no new claim")
      assert.strictEqual((yield* adminGet<NodeView>(nodePath))?.metadata.uid, node.metadata.uid, "the same Node")
      yield* second.stop
    }).pipe(quiet)), { timeout: 60_000 })
})
