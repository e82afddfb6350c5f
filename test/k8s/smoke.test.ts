/**
 * First real-apiserver checks: the control plane of the global setup is up with RBAC on, our CRDs
 * serve, and the daemon's identity can do exactly what deploy/rbac/clusterrole.yaml grants.
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Effect } from "effect"
import { allVerbs, daemonVerbs, mayDo } from "./daemonIdentity.ts"
import { adminKubeconfig, daemonKubeconfig, kube, statusOf, uniqueName } from "./fixture/Kube.ts"

const sandboxGroup = { group: "agents.x-k8s.io", version: "v1beta1", plural: "sandboxes" } as const
const inventoryApiVersion = "extensions.agents.x-k8s.io/v1beta1"

const sandboxBody = (name: string, namespace: string) => ({
  apiVersion: "agents.x-k8s.io/v1beta1",
  kind: "Sandbox",
  metadata: { name, namespace },
  spec: {
    podTemplate: {
      metadata: { annotations: { "sandbox.cocoonstack.io/runtime": "sandboxd" } },
      spec: { containers: [{ name: "agent", image: "ghcr.io/acme/agent-runtime:1.4.2" }] }
    }
  }
})

/** Admin: a fresh namespace holding one Sandbox; returns the Sandbox as stored. */
const namespaceWithSandbox = Effect.gen(function*() {
  const admin = yield* adminKubeconfig
  const core = admin.makeApiClient(k8s.CoreV1Api)
  const custom = admin.makeApiClient(k8s.CustomObjectsApi)
  const namespace = uniqueName("smoke")
  const name = uniqueName("sandbox")
  yield* kube("create namespace", () => core.createNamespace({ body: { metadata: { name: namespace } } }))
  yield* kube("create sandbox", () =>
    custom.createNamespacedCustomObject({ ...sandboxGroup, namespace, body: sandboxBody(name, namespace) }))
  const stored = (yield* kube("get sandbox", () =>
    custom.getNamespacedCustomObject({ ...sandboxGroup, namespace, name }))) as {
      metadata: { uid: string; name: string }
      spec: { operatingMode: string; shutdownPolicy: string; podTemplate: { spec: { containers: Array<{ image: string }> } } }
    }
  return { namespace, name, stored }
})

describe("real kube-apiserver as the test admin", () => {
  it.effect("lists the namespaces, including the daemon's", () =>
    Effect.gen(function*() {
      const core = (yield* adminKubeconfig).makeApiClient(k8s.CoreV1Api)
      const list = yield* kube("list namespaces", () => core.listNamespace())
      const names = list.items.map((ns) => ns.metadata?.name)
      assert.include(names, "default")
      assert.include(names, "kube-system")
      assert.include(names, "vk-sandbox")
    }))

  it.effect("creates a Sandbox and reads it back with the CRD's defaults applied", () =>
    Effect.gen(function*() {
      const { name, stored } = yield* namespaceWithSandbox
      assert.strictEqual(stored.metadata.name, name)
      assert.isNotEmpty(stored.metadata.uid)
      assert.strictEqual(stored.spec.operatingMode, "Running")
      assert.strictEqual(stored.spec.shutdownPolicy, "Retain")
      assert.strictEqual(stored.spec.podTemplate.spec.containers[0]?.image, "ghcr.io/acme/agent-runtime:1.4.2")
    }))

  it.effect("answers a missing Sandbox with a NotFound Status naming it", () =>
    Effect.gen(function*() {
      const custom = (yield* adminKubeconfig).makeApiClient(k8s.CustomObjectsApi)
      const failure = yield* kube("get missing sandbox", () =>
        custom.getNamespacedCustomObject({ ...sandboxGroup, namespace: "default", name: "review-bot-gone" })).pipe(Effect.flip)
      assert.strictEqual(failure.status, 404)
      const body = failure.body as { kind?: string; reason?: string; details?: { name?: string; group?: string; kind?: string } }
      assert.strictEqual(body.kind, "Status")
      assert.strictEqual(body.reason, "NotFound")
      assert.deepStrictEqual(body.details, { name: "review-bot-gone", group: "agents.x-k8s.io", kind: "sandboxes" })
    }))
})

describe("the daemon's identity", () => {
  it.effect("authenticates as the vk-sandbox service account", () =>
    Effect.gen(function*() {
      const auth = (yield* daemonKubeconfig).makeApiClient(k8s.AuthenticationV1Api)
      const review = yield* kube("self subject review", () =>
        auth.createSelfSubjectReview({ body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } }))
      assert.strictEqual(review.status?.userInfo?.username, "system:serviceaccount:vk-sandbox:vk-sandbox")
    }))

  it.effect("is granted exactly deploy/rbac's verbs (SubjectAccessReview over every verb)", () =>
    Effect.gen(function*() {
      const authz = (yield* adminKubeconfig).makeApiClient(k8s.AuthorizationV1Api)
      const mismatches: Array<string> = []
      // Leases through the Role in kube-node-lease only: nowhere else (not kube-system's).
      const cases = daemonVerbs.flatMap(([group, resourcePath, verbs]): ReadonlyArray<readonly [string, string, ReadonlyArray<string>, string]> =>
        resourcePath === "leases"
          ? ["kube-node-lease", "kube-system", "team-a"].map((leaseNamespace) => [group, resourcePath, verbs, leaseNamespace] as const)
          : [[group, resourcePath, verbs, "kube-node-lease"] as const]
      )
      for (const [group, resourcePath, verbs, leaseNamespace] of cases) {
        const resource = resourcePath.split("/")[0]
        for (const verb of allVerbs) {
          const allowed = yield* mayDo(authz, "vk-sandbox", "vk-sandbox", verb, group, resourcePath, leaseNamespace)
          if (allowed !== (verbs.includes(verb) && leaseNamespace === "kube-node-lease")) {
            mismatches.push(`${verb} ${group}/${resourcePath}${resource === "leases" ? ` in ${leaseNamespace}` : ""}: allowed=${allowed}`)
          }
        }
      }
      assert.deepStrictEqual(mismatches, [])
    }))

  it.effect("lists pods of its node cluster-wide", () =>
    Effect.gen(function*() {
      const core = (yield* daemonKubeconfig).makeApiClient(k8s.CoreV1Api)
      const list = yield* kube("list pods", () =>
        core.listPodForAllNamespaces({ fieldSelector: "spec.nodeName=vk-smoke-node" }))
      assert.deepStrictEqual(list.items, [])
      assert.isNotEmpty(list.metadata?.resourceVersion)
    }))

  it.effect("creates its node and strategic-merge patches nodes/status", () =>
    Effect.gen(function*() {
      const core = (yield* daemonKubeconfig).makeApiClient(k8s.CoreV1Api)
      const name = uniqueName("vk-node")
      const created = yield* kube("create node", () =>
        core.createNode({ body: { metadata: { name, labels: { type: "virtual-kubelet" } } } }))
      assert.strictEqual(created.metadata?.name, name)
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z")
      yield* kube("patch node status", () =>
        core.patchNodeStatus(
          {
            name,
            body: {
              status: {
                conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "ok", lastHeartbeatTime: now, lastTransitionTime: now }]
              }
            }
          },
          k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch)
        ))
      const read = yield* kube("get node", () => core.readNode({ name }))
      const ready = read.status?.conditions?.find((condition) => condition.type === "Ready")
      assert.strictEqual(ready?.status, "True")
      assert.strictEqual(ready?.reason, "KubeletReady")
    }))

  it.effect("gets a Sandbox (the owner lookup)", () =>
    Effect.gen(function*() {
      const { namespace, name, stored } = yield* namespaceWithSandbox
      const custom = (yield* daemonKubeconfig).makeApiClient(k8s.CustomObjectsApi)
      const got = (yield* kube("get sandbox as daemon", () =>
        custom.getNamespacedCustomObject({ ...sandboxGroup, namespace, name }))) as { metadata: { uid: string } }
      assert.strictEqual(got.metadata.uid, stored.metadata.uid)
    }))

  it.effect("server-side applies its NodeInventory; a later apply drops omitted entries and pools", () =>
    Effect.gen(function*() {
      const objects = k8s.KubernetesObjectApi.makeApiClient(yield* daemonKubeconfig)
      const node = uniqueName("node1-sandboxd")
      const apply = (body: object) =>
        kube("apply node inventory", () =>
          objects.patch(
            { apiVersion: inventoryApiVersion, kind: "NodeInventory", metadata: { name: node, creationTimestamp: null }, node, ...body } as
              unknown as k8s.KubernetesObject,
            undefined,
            undefined,
            "vk-sandbox",
            true,
            k8s.PatchStrategy.ServerSideApply
          ))
      const first = (yield* apply({
        address: "10.0.0.5:7777",
        entries: [
          { name: "sb_c0ffee0012345678", id: "sb_c0ffee0012345678", phase: "Running", claimRef: "sb_c0ffee0012345678" },
          { name: "team-a/notebook-x9", id: "sb_4f9a0c2e7b1d3a65", phase: "Hibernated", claimRef: "team-a/notebook-x9", addr: "10.0.0.5:7777" }
        ],
        pools: [{ template: "base:24.04", net: "none", size: "small", warm: 4, target: 4 }]
      })) as { metadata: { managedFields?: Array<{ manager?: string; operation?: string }> }; entries?: Array<unknown> }
      assert.strictEqual(first.entries?.length, 2)
      assert.deepStrictEqual(
        first.metadata.managedFields?.map((field) => [field.manager, field.operation]),
        [["vk-sandbox", "Apply"]]
      )
      const second = (yield* apply({
        address: "10.0.0.5:7777",
        entries: [{ name: "team-a/notebook-x9", id: "sb_4f9a0c2e7b1d3a65", phase: "Running", claimRef: "team-a/notebook-x9" }]
      })) as { entries?: Array<unknown>; pools?: Array<unknown> }
      assert.deepStrictEqual(second.entries, [{ name: "team-a/notebook-x9", id: "sb_4f9a0c2e7b1d3a65", phase: "Running", claimRef: "team-a/notebook-x9" }])
      assert.isUndefined(second.pools)
    }))

  it.effect("is forbidden what the ClusterRole does not grant", () =>
    Effect.gen(function*() {
      const daemon = yield* daemonKubeconfig
      const core = daemon.makeApiClient(k8s.CoreV1Api)
      const custom = daemon.makeApiClient(k8s.CustomObjectsApi)
      const node = uniqueName("vk-node")
      yield* kube("create node", () => core.createNode({ body: { metadata: { name: node } } }))

      const createPod = yield* statusOf(kube("create pod", () =>
        core.createNamespacedPod({
          namespace: "default",
          body: { metadata: { name: uniqueName("pod") }, spec: { containers: [{ name: "c", image: "busybox" }] } }
        })))
      const deleteNode = yield* statusOf(kube("delete node", () => core.deleteNode({ name: node })))
      const listNodes = yield* statusOf(kube("list nodes", () => core.listNode()))
      // patch on nodes is granted (the sandboxd taint); a whole-object update is not.
      const updateNode = yield* statusOf(kube("update node", () =>
        core.replaceNode({ name: node, body: { metadata: { name: node, labels: { extra: "x" } } } })))
      const listSandboxes = yield* statusOf(kube("list sandboxes", () =>
        custom.listNamespacedCustomObject({ ...sandboxGroup, namespace: "default" })))
      const readSecret = yield* statusOf(kube("list secrets", () => core.listNamespacedSecret({ namespace: "vk-sandbox" })))
      assert.deepStrictEqual(
        { createPod, deleteNode, listNodes, updateNode, listSandboxes, readSecret },
        { createPod: 403, deleteNode: 403, listNodes: 403, updateNode: 403, listSandboxes: 403, readSecret: 403 }
      )
    }))
})
