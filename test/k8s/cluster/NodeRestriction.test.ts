/**
 * Several daemons under the node-scoped admission policy (deploy/admission/node-restriction.yaml):
 * each daemon's token is bound to a placeholder Pod on a host Node, so the apiserver names that
 * host in the token's user; the policy lets it write only the objects of its own virtual node
 * (host name + suffix). Each daemon runs its Pods, and each is refused on the others' Node, Node
 * status, Lease, Pod status and Pod deletion.
 *
 * The policy is bound here to a service account of this test only, so the other scenarios'
 * daemons (unbound tokens) are not affected.
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Effect } from "effect"
import { inject } from "vitest"
import { kubeconfigForToken, repoManifests as manifests, serviceAccountToken } from "../daemonIdentity.ts"
import { kube, uniqueName } from "../fixture/Kube.ts"
import { admin, eventually, quiet, rawRequest, runningPod, tempDir } from "../scenarioHarness.ts"
import { createReadyNamespace, createSandboxPod, startVirtualNode, useClusterPlane } from "./harness.ts"

useClusterPlane()

const Suffix = "-sandboxd"
const DaemonNamespace = "vk-sandbox"


describe("the node restriction policy with several daemons", () => {
  it.live("each daemon runs its own node and is refused on the other's objects", () =>
    Effect.scoped(Effect.gen(function*() {
      const { config: adminConfig, core, objects, rbac } = yield* admin
      const dir = yield* tempDir("vk-restricted-")
      const serviceAccount = uniqueName("vk-restricted")
      const user = `system:serviceaccount:${DaemonNamespace}:${serviceAccount}`

      // ---- an identity with the shipped RBAC (ClusterRole + the Lease Role), restricted by the policy
      yield* kube("service account", () =>
        core.createNamespacedServiceAccount({ namespace: DaemonNamespace, body: { metadata: { name: serviceAccount } } }))
      const subjects = [{ kind: "ServiceAccount", name: serviceAccount, namespace: DaemonNamespace }]
      for (const role of manifests("deploy/rbac/clusterrole.yaml")) {
        const name = `${serviceAccount}-${role.metadata?.name ?? ""}`
        yield* kube("cluster role binding", () =>
          rbac.createClusterRoleBinding({
            body: { metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata?.name ?? "" }, subjects }
          }))
      }
      for (const role of manifests("deploy/rbac/lease-role.yaml")) {
        const namespace = role.metadata?.namespace ?? "kube-node-lease"
        yield* kube("role binding", () =>
          rbac.createNamespacedRoleBinding({
            namespace,
            body: {
              metadata: { name: serviceAccount, namespace },
              roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role.metadata?.name ?? "" },
              subjects
            }
          }))
      }
      // The policy as shipped; its binding and parameters renamed to this identity.
      const params = `${serviceAccount}-params`
      for (const doc of manifests("deploy/admission/node-restriction.yaml")) {
        const renamed = doc.kind === "ValidatingAdmissionPolicy"
          ? doc
          : doc.kind === "ValidatingAdmissionPolicyBinding"
          ? {
            ...doc,
            metadata: { name: serviceAccount },
            spec: {
              ...(doc as { spec: { paramRef: object } }).spec,
              paramRef: { name: params, namespace: DaemonNamespace, parameterNotFoundAction: "Allow" }
            }
          }
          : {
            ...doc,
            metadata: { name: params, namespace: DaemonNamespace },
            data: { serviceAccount: user, nodeNameSuffix: Suffix, allowUnboundTokens: "false" }
          }
        yield* kube(`create ${doc.kind}`, () => objects.create(renamed as k8s.KubernetesObject)).pipe(
          // The policy object may be there already (cluster-wide, shared by all bindings).
          Effect.catchTag("KubeCallFailed", (e) => (e.status === 409 ? Effect.void : Effect.fail(e)))
        )
      }
      yield* Effect.addFinalizer(() =>
        Effect.gen(function*() {
          const admission = adminConfig.makeApiClient(k8s.AdmissionregistrationV1Api)
          yield* kube("delete binding", () => admission.deleteValidatingAdmissionPolicyBinding({ name: serviceAccount }))
        }).pipe(Effect.ignore)
      )

      // ---- two host nodes, a placeholder Pod on each, a token bound to each Pod
      const hosts = [uniqueName("host"), uniqueName("host")]
      const identities: Array<{ readonly file: string; readonly config: k8s.KubeConfig }> = []
      for (const host of hosts) {
        yield* kube("host node", () => core.createNode({ body: { metadata: { name: host } } }))
        yield* Effect.addFinalizer(() => kube("delete host", () => core.deleteNode({ name: host })).pipe(Effect.ignore))
        const placeholder = yield* kube("placeholder pod", () =>
          core.createNamespacedPod({
            namespace: DaemonNamespace,
            body: {
              metadata: { name: `${host}-daemon` },
              spec: {
                nodeName: host,
                serviceAccountName: serviceAccount,
                automountServiceAccountToken: false,
                // The host has no kubelet and goes NotReady: the placeholder must not be evicted,
                // or the token bound to it stops working.
                tolerations: [{ operator: "Exists", effect: "NoExecute" }],
                containers: [{ name: "vk-sandbox", image: "vk-sandbox" }]
              }
            }
          }))
        const token = yield* serviceAccountToken(core, DaemonNamespace, serviceAccount, {
          kind: "Pod",
          apiVersion: "v1",
          name: `${host}-daemon`,
          uid: placeholder.metadata?.uid ?? ""
        })
        identities.push(kubeconfigForToken(adminConfig, dir, host, token))
      }

      // The policy is in force once a write it refuses is refused (dry run: nothing is stored).
      const [ownA, ownB] = hosts.map((host) => host + Suffix) as [string, string]
      const [asA, asB] = identities as [(typeof identities)[number], (typeof identities)[number]]
      const lease = (name: string) => ({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name, namespace: "kube-node-lease" },
        spec: { holderIdentity: name }
      })
      yield* eventually(
        "the policy in force",
        Effect.map(
          rawRequest(asA.config, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?dryRun=All", lease(ownB)),
          (reply) => reply.status === 403
        ),
        30_000
      )

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
