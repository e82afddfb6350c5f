/**
 * Several daemons under the node-scoped admission policy (the chart's, ../restrictedIdentity.ts):
 * each daemon's token is bound to a placeholder Pod on a host Node, so the apiserver names that
 * host in the token's user; the policy lets it write only the objects of its own virtual node
 * (host name + suffix). Each daemon runs its Pods, and each is refused on the others' Node, Node
 * status, Lease, Pod status and Pod deletion.
 *
 * The policy is rendered here for a service account of this test only, so the other scenarios'
 * daemons (unbound tokens) are not affected.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { uniqueName } from "../fixture/Kube.ts"
import { type Identity, restrictedIdentity, Suffix } from "../restrictedIdentity.ts"
import { admin, eventually, quiet, rawRequest, runningPod, tempDir } from "../scenarioHarness.ts"
import { createReadyNamespace, createSandboxPod, PoolLabel, startVirtualNode, useClusterPlane } from "./harness.ts"

useClusterPlane()

const DaemonNamespace = "vk-sandbox"

describe("the node restriction policy with several daemons", () => {
  it.live("each daemon runs its own node and is refused on the other's objects", () =>
    Effect.scoped(Effect.gen(function*() {
      const { config: adminConfig } = yield* admin
      const dir = yield* tempDir("vk-restricted-")
      const hosts = [uniqueName("host"), uniqueName("host")]
      // The daemons label their nodes with the scenario's pool too: a label of theirs (node.labels).
      const poolLabel = PoolLabel.replaceAll(".", "\\.")
      const { bound } = yield* restrictedIdentity({ namespace: DaemonNamespace, dir, hosts, sets: [`node.labels.${poolLabel}=any`] })
      const [ownA, ownB] = hosts.map((host) => host + Suffix) as [string, string]
      const [asA, asB] = bound as [Identity, Identity]

      // ---- both daemons run their own node under the policy
      const nodeA = yield* startVirtualNode({ nodeName: ownA, kubeconfig: asA.file })
      const nodeB = yield* startVirtualNode({ nodeName: ownB, kubeconfig: asB.file })
      const namespace = yield* createReadyNamespace("restricted")
      yield* createSandboxPod(namespace, "on-a", { pool: nodeA.pool })
      yield* createSandboxPod(namespace, "on-b", { pool: nodeB.pool })
      yield* eventually("on-a Running", runningPod(namespace, "on-a"), 60_000)
      const onB = yield* eventually("on-b Running", runningPod(namespace, "on-b"), 60_000)

      // ---- A is refused on B's objects (dry runs: a refusal is the policy's, nothing changes)
      const refused = (what: string, method: string, path: string, body?: object, type?: string) =>
        Effect.map(rawRequest(asA.config, method, path, body, type), (reply) => {
          assert.strictEqual(reply.status, 403, `${what}: ${JSON.stringify(reply.body)}`)
          assert.include(JSON.stringify(reply.body), "vk-sandbox node restriction", what)
        })
      const merge = "application/merge-patch+json"
      yield* refused("B's Node status", "PATCH", `/api/v1/nodes/${ownB}/status?dryRun=All`, { status: { conditions: [] } }, merge)
      yield* refused("B's Node", "PATCH", `/api/v1/nodes/${ownB}?dryRun=All`, { metadata: { labels: { x: "y" } } }, merge)
      const leaseB = yield* rawRequest(adminConfig, "GET", `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${ownB}`)
      yield* refused("B's Lease", "PUT", `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${ownB}?dryRun=All`, leaseB.body as object)
      const podB = yield* rawRequest(adminConfig, "GET", `/api/v1/namespaces/${namespace}/pods/on-b`)
      yield* refused("B's Pod status", "PUT", `/api/v1/namespaces/${namespace}/pods/on-b/status?dryRun=All`, podB.body as object)
      yield* refused("B's Pod", "DELETE", `/api/v1/namespaces/${namespace}/pods/on-b?dryRun=All`)
      // ... and may still write its own (dry run).
      const ownPatch = yield* rawRequest(asA.config, "PATCH", `/api/v1/nodes/${ownA}/status?dryRun=All`, { status: {} }, merge)
      assert.strictEqual(ownPatch.status, 200, JSON.stringify(ownPatch.body))
      assert.strictEqual((yield* runningPod(namespace, "on-b"))?.metadata.uid, onB.metadata.uid, "B's Pod untouched")
    }).pipe(quiet)), { timeout: 240_000 })
})
