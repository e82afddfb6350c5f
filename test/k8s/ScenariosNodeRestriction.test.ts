/**
 * Node-scoped authorization on the real kube-apiserver: the node-restriction policy of
 * deploy/admission/node-restriction.yaml (the chart's, compared by test/helm) and the roles of
 * deploy/rbac, bound to a service account of this test's own. The daemon's token is bound to a
 * Pod on a host node (TokenRequest with a boundObjectRef), so the apiserver names that node in the
 * user's extra; the daemon runs whole under that token and does its work on `<host>-sandboxd`,
 * and the same identity is refused (403, from the policy or from RBAC) for another node's Pod
 * status, Pod delete, Node, Node status, Lease and NodeInventory, for Events reported as another
 * node, for a Lease in kube-system, and for everything when its token is not bound to a Pod.
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Duration, Effect } from "effect"
import { kubeconfigForToken, repoManifests, serviceAccountToken, startDaemon } from "./daemonIdentity.ts"
import { kube, uniqueName } from "./fixture/Kube.ts"
import {
  admin,
  adminGet,
  createNamespace,
  createPod,
  createSandbox,
  deletePodGracefully,
  eventually,
  freeLoopbackPort,
  getPod,
  quiet,
  rawRequest,
  type RawReply,
  runningPod,
  scenarioConfig,
  startSandboxd,
  tempDir
} from "./scenarioHarness.ts"

const suffix = "-sandboxd"
const unavailableTaint = "sandbox.cocoonstack.io/sandboxd-unavailable"

const forbidden = (what: string, reply: RawReply, reason?: RegExp) => {
  assert.strictEqual(reply.status, 403, `${what}: ${JSON.stringify(reply.body)}`)
  if (reason !== undefined) assert.match(JSON.stringify(reply.body), reason, what)
}
const allowed = (what: string, reply: RawReply) =>
  assert.isTrue(reply.status >= 200 && reply.status < 300, `${what}: HTTP ${reply.status} ${JSON.stringify(reply.body)}`)

const policyByPolicy = /vk-sandbox node restriction/
const mergePatch = "application/merge-patch+json"

describe("node restriction on the real kube-apiserver", () => {
  it.live("a Pod-bound token writes its own virtual node's objects and nothing of another node's", () =>
    Effect.scoped(Effect.gen(function*() {
      const { config: adminConfig, core, objects, rbac } = yield* admin
      const dir = yield* tempDir("vk-k8s-restrict-")

      // ---- the daemon's identity: a service account bound to deploy/rbac's roles
      const installNamespace = yield* createNamespace("restrict")
      const serviceAccount = "vk-sandbox"
      const user = `system:serviceaccount:${installNamespace}:${serviceAccount}`
      yield* kube("service account", () =>
        core.createNamespacedServiceAccount({ namespace: installNamespace, body: { metadata: { name: serviceAccount } } }))
      const subjects = [{ kind: "ServiceAccount", name: serviceAccount, namespace: installNamespace }]
      const bindingName = uniqueName("restrict")
      yield* kube("cluster role binding", () =>
        rbac.createClusterRoleBinding({
          body: {
            metadata: { name: bindingName },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "vk-sandbox" },
            subjects
          }
        }))
      yield* kube("lease role binding", () =>
        rbac.createNamespacedRoleBinding({
          namespace: "kube-node-lease",
          body: {
            metadata: { name: bindingName, namespace: "kube-node-lease" },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "vk-sandbox" },
            subjects
          }
        }))
      // Node patch (the sandboxd-unavailable taint) and update are granted here on purpose, so the
      // policy, not RBAC, is what keeps the rest of a Node's spec and other Nodes out of reach.
      yield* kube("node patch role", () =>
        rbac.createClusterRole({
          body: { metadata: { name: bindingName + "-nodes" }, rules: [{ apiGroups: [""], resources: ["nodes"], verbs: ["patch", "update"] }] }
        }))
      yield* kube("node patch binding", () =>
        rbac.createClusterRoleBinding({
          body: {
            metadata: { name: bindingName + "-nodes" },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: bindingName + "-nodes" },
            subjects
          }
        }))

      // ---- the policy from deploy/admission, its binding and parameters under names of this test
      const manifests = repoManifests("deploy/admission/node-restriction.yaml")
      assert.deepStrictEqual(manifests.map((doc) => doc.kind), ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ConfigMap"])
      const policyName = uniqueName("vk-restrict")
      for (const doc of manifests) {
        const renamed: Record<string, unknown> = { ...doc, metadata: { ...doc.metadata, name: policyName } }
        if (doc.kind === "ValidatingAdmissionPolicyBinding") {
          const spec = doc["spec"] as { paramRef: Record<string, unknown> }
          renamed["spec"] = { ...spec, policyName, paramRef: { ...spec.paramRef, name: policyName, namespace: installNamespace } }
        }
        if (doc.kind === "ConfigMap") {
          renamed["metadata"] = { name: policyName, namespace: installNamespace }
          renamed["data"] = { serviceAccount: user, nodeNameSuffix: suffix, allowUnboundTokens: "false" }
        }
        yield* kube(`create ${doc.kind}`, () => objects.create(renamed as k8s.KubernetesObject))
      }

      // ---- two host nodes; the daemon runs in a Pod on the first, the second has a virtual node
      const hostA = uniqueName("host")
      const hostB = uniqueName("host")
      const own = hostA + suffix
      const other = hostB + suffix
      for (const name of [hostA, hostB, other]) {
        yield* kube(`node ${name}`, () => core.createNode({ body: { metadata: { name } } }))
      }
      const daemonPod = yield* kube("the daemon's Pod", () =>
        core.createNamespacedPod({
          namespace: installNamespace,
          body: {
            metadata: { name: "vk-sandbox-daemon" },
            spec: { nodeName: hostA, serviceAccountName: serviceAccount, containers: [{ name: "vk-sandbox", image: "vk-sandbox" }] }
          }
        }))
      const token = (boundObjectRef?: k8s.V1BoundObjectReference) =>
        serviceAccountToken(core, installNamespace, serviceAccount, boundObjectRef)
      const bound = kubeconfigForToken(
        adminConfig,
        dir,
        "bound",
        yield* token({ kind: "Pod", apiVersion: "v1", name: "vk-sandbox-daemon", uid: daemonPod.metadata?.uid ?? "" })
      )
      const unbound = kubeconfigForToken(adminConfig, dir, "unbound", yield* token())
      const as = (identity: { readonly config: k8s.KubeConfig }, method: string, path: string, body?: object, type?: string) =>
        rawRequest(identity.config, method, path, body, type)

      // The apiserver names the Pod's node in the bound token's user.
      const review = yield* as(bound, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
        apiVersion: "authentication.k8s.io/v1",
        kind: "SelfSubjectReview"
      })
      const userInfo = (review.body as { status?: { userInfo?: { username?: string; extra?: Record<string, ReadonlyArray<string>> } } })
        .status?.userInfo
      assert.strictEqual(userInfo?.username, user)
      assert.deepStrictEqual(userInfo?.extra?.["authentication.kubernetes.io/node-name"], [hostA])

      // The policy is in force once a write it refuses is refused (dry run: nothing is stored).
      const leaseBody = (namespace: string, name: string) => ({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name, namespace },
        spec: { holderIdentity: name }
      })
      let lastProbe: RawReply | undefined
      yield* eventually(
        "the policy in force",
        Effect.map(
          as(bound, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?dryRun=All", leaseBody("kube-node-lease", other)),
          (reply) => {
            lastProbe = reply
            return reply.status === 403
          }
        ),
        30_000
      ).pipe(Effect.tapError(() =>
        Effect.gen(function*() {
          const policy = yield* adminGet(`/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${policyName}`)
          console.log("the policy not in force; last probe:", JSON.stringify(lastProbe), "policy status:", JSON.stringify((policy as { status?: unknown })?.status))
        })
      ))

      // ---- its work on its own node: the whole daemon under the bound token
      const sandboxd = yield* startSandboxd()
      const config = scenarioConfig(bound.file, sandboxd.url, dir, {
        nodeName: own,
        listenAddr: { host: "127.0.0.1", port: yield* freeLoopbackPort },
        metricsAddr: { host: "127.0.0.1", port: yield* freeLoopbackPort },
        publishInventory: true,
        publishInterval: Duration.millis(500),
        shutdownTimeout: Duration.seconds(3)
      })
      const podsNamespace = yield* createNamespace("restrict-pods")
      const ownerUid = yield* createSandbox(podsNamespace, "keeper")
      const daemon = yield* startDaemon(config)
      yield* eventually("its Node Ready", Effect.map(adminGet<{ status?: { conditions?: ReadonlyArray<{ type: string; status: string }> } }>(
        `/api/v1/nodes/${own}`
      ), (node) => node?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")))
      yield* eventually("its Lease", adminGet(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${own}`))
      yield* createPod(podsNamespace, "mine", own, { name: "keeper", uid: ownerUid })
      yield* eventually("its Pod Running (pods/status)", runningPod(podsNamespace, "mine"))
      yield* eventually(
        "its NodeInventory",
        Effect.map(adminGet<{ entries?: ReadonlyArray<unknown> }>(`/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories/${own}`), (inv) =>
          (inv?.entries ?? []).length === 1),
        10_000
      )
      const events = yield* eventually(
        "its Registered event",
        Effect.map(
          adminGet<{ items: ReadonlyArray<Record<string, unknown>> }>(`/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D${own}`),
          (list) => list?.items.find((e) => e["reason"] === "Registered")
        )
      )
      yield* deletePodGracefully(podsNamespace, "mine", 30)
      yield* eventually("its Pod deleted (pods delete)", Effect.map(getPod(podsNamespace, "mine"), (pod) => pod === undefined), 10_000)
      yield* daemon.stop

      // ---- another node's objects: refused
      yield* createPod(podsNamespace, "theirs", other)
      const theirs = yield* as(bound, "GET", `/api/v1/namespaces/${podsNamespace}/pods/theirs`)
      allowed("reading another node's Pod (reads stay cluster-wide)", theirs)
      const theirPod = theirs.body as { status?: Record<string, unknown> }
      forbidden(
        "another node's Pod status",
        yield* as(bound, "PUT", `/api/v1/namespaces/${podsNamespace}/pods/theirs/status`, {
          ...theirPod,
          status: { ...theirPod.status, phase: "Running" }
        }),
        policyByPolicy
      )
      forbidden("another node's Pod delete", yield* as(bound, "DELETE", `/api/v1/namespaces/${podsNamespace}/pods/theirs`), policyByPolicy)
      assert.isDefined(yield* getPod(podsNamespace, "theirs"), "still there")

      allowed("reading another node's Node", yield* as(bound, "GET", `/api/v1/nodes/${other}`))
      // a status patch, as the daemon writes its own (RBAC grants nodes/status patch)
      forbidden(
        "another node's Node status",
        yield* as(
          bound,
          "PATCH",
          `/api/v1/nodes/${other}/status`,
          { status: { conditions: [{ type: "Ready", status: "True", reason: "x", message: "x" }] } },
          "application/strategic-merge-patch+json"
        ),
        policyByPolicy
      )
      const addTaint = { spec: { taints: [{ key: unavailableTaint, effect: "NoSchedule" }] } }
      forbidden(
        "the taint on another node",
        yield* as(bound, "PATCH", `/api/v1/nodes/${other}`, addTaint, mergePatch),
        policyByPolicy
      )
      forbidden(
        "a Node of another name",
        yield* as(bound, "POST", "/api/v1/nodes?dryRun=All", { apiVersion: "v1", kind: "Node", metadata: { name: uniqueName("rogue") } }),
        policyByPolicy
      )
      // its own Node: the sandboxd-unavailable taint yes, anything else in spec no. Node taints
      // have no merge key, so a patch writes the whole list: the daemon's own taints kept.
      interface Taint {
        readonly key: string
        readonly effect: string
      }
      const ownTaints = Effect.map(
        as(bound, "GET", `/api/v1/nodes/${own}`),
        (reply) => (reply.body as { spec?: { taints?: ReadonlyArray<Taint> } }).spec?.taints ?? []
      )
      const before = yield* ownTaints
      assert.isAbove(before.length, 0, "the daemon registers its node with taints")
      const withUnavailable = [...before, { key: unavailableTaint, effect: "NoSchedule" }]
      allowed(
        "the taint on its own node",
        yield* as(bound, "PATCH", `/api/v1/nodes/${own}`, { spec: { taints: withUnavailable } }, mergePatch)
      )
      assert.deepStrictEqual(yield* ownTaints, withUnavailable)
      allowed("the taint removed again", yield* as(bound, "PATCH", `/api/v1/nodes/${own}`, { spec: { taints: before } }, mergePatch))
      forbidden(
        "the daemon's other taints dropped",
        yield* as(bound, "PATCH", `/api/v1/nodes/${own}`, { spec: { taints: [{ key: unavailableTaint, effect: "NoSchedule" }] } }, mergePatch),
        policyByPolicy
      )
      forbidden(
        "another taint on its own node",
        yield* as(bound, "PATCH", `/api/v1/nodes/${own}`, { spec: { taints: [...before, { key: "example.com/other", effect: "NoSchedule" }] } }, mergePatch),
        policyByPolicy
      )
      forbidden(
        "another spec field of its own node",
        yield* as(bound, "PATCH", `/api/v1/nodes/${own}`, { spec: { unschedulable: true } }, mergePatch),
        policyByPolicy
      )
      assert.deepStrictEqual(yield* ownTaints, before)

      yield* kube("another node's lease", () => objects.create(leaseBody("kube-node-lease", other)))
      const otherLease = (yield* as(bound, "GET", `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${other}`)).body as Record<string, unknown>
      forbidden(
        "another node's Lease",
        yield* as(bound, "PUT", `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${other}`, {
          ...otherLease,
          spec: { holderIdentity: own }
        }),
        policyByPolicy
      )
      forbidden(
        "a Lease in kube-system (RBAC: the Role is in kube-node-lease only)",
        yield* as(bound, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?dryRun=All", leaseBody("kube-system", own))
      )
      forbidden(
        "another node's NodeInventory",
        yield* as(bound, "POST", "/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories?dryRun=All", {
          apiVersion: "extensions.agents.x-k8s.io/v1beta1",
          kind: "NodeInventory",
          metadata: { name: other },
          node: other
        }),
        policyByPolicy
      )

      // Events: as itself yes, as another node no
      const eventAs = (reporter: string) => {
        const { metadata: _metadata, ...rest } = events
        return {
          ...rest,
          metadata: { name: uniqueName("event"), namespace: "default" },
          source: { component: "vk-sandbox", host: reporter },
          reportingInstance: reporter
        }
      }
      allowed("an Event reported as itself", yield* as(bound, "POST", "/api/v1/namespaces/default/events?dryRun=All", eventAs(own)))
      forbidden(
        "an Event reported as another node",
        yield* as(bound, "POST", "/api/v1/namespaces/default/events?dryRun=All", eventAs(other)),
        policyByPolicy
      )

      // ---- a token not bound to a Pod names no node: refused, even for the same names
      forbidden(
        "an unbound token",
        yield* as(unbound, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?dryRun=All", leaseBody("kube-node-lease", own)),
        /not bound to a Pod/
      )

      // ---- other users are not evaluated: the admin deletes another node's Pod freely
      yield* kube("admin deletes their Pod", () => core.deleteNamespacedPod({ namespace: podsNamespace, name: "theirs", gracePeriodSeconds: 0 }))
    }).pipe(quiet)), { timeout: 90_000 })
})
