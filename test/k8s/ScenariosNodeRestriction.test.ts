/**
 * Node-scoped authorization on the real kube-apiserver: the chart's node-restriction policy and
 * deploy/rbac's roles, bound to a service account of this test's own whose token is bound to a
 * Pod on a host node. The daemon runs whole under it on `<host>-sandboxd`, and the same identity
 * is refused (403) for another node's Pods, Node, Lease and NodeInventory, Events as another
 * node, a Lease in kube-system, and everything when its token is not bound to a Pod.
 * ScenariosNodeRestrictionNode.test.ts holds the rules of the daemon's own Node.
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Duration, Effect } from "effect"
import { startDaemon } from "./daemonIdentity.ts"
import { kube, uniqueName } from "./fixture/Kube.ts"
import { restrictedIdentity } from "./restrictedIdentity.ts"
import {
  admin,
  adminGet,
  createNamespace,
  createPod,
  createSandbox,
  deletePodGracefully,
  eventually,
  freeLoopbackPorts,
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
      const { core, objects } = yield* admin
      const dir = yield* tempDir("vk-k8s-restrict-")

      // ---- the daemon's identity under the chart's policy; a Pod on each of two host nodes, the
      // daemon's on the first; the second has a virtual node. Node patch and update are granted
      // on purpose, so the policy, not RBAC, keeps the rest of a Node and other Nodes out of reach.
      const installNamespace = yield* createNamespace("restrict")
      const hostA = uniqueName("host")
      const hostB = uniqueName("host")
      const own = hostA + suffix
      const other = hostB + suffix
      const identity = yield* restrictedIdentity({ namespace: installNamespace, dir, hosts: [hostA, hostB], nodeUpdates: true })
      const user = identity.user
      const bound = identity.bound[0] ?? identity.unbound
      const unbound = identity.unbound
      yield* kube(`node ${other}`, () => core.createNode({ body: { metadata: { name: other } } }))
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

      const leaseBody = (namespace: string, name: string) => ({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name, namespace },
        spec: { holderIdentity: name }
      })

      // ---- its work on its own node: the whole daemon under the bound token
      const sandboxd = yield* startSandboxd()
      const [kubeletPort = 0, metricsPort = 0] = yield* freeLoopbackPorts(2)
      const config = scenarioConfig(bound.file, sandboxd.url, dir, {
        nodeName: own,
        listenAddr: { host: "127.0.0.1", port: kubeletPort },
        metricsAddr: { host: "127.0.0.1", port: metricsPort },
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
      allowed(
        "its own provider taint dropped (its own to set, change or remove)",
        yield* as(bound, "PATCH", `/api/v1/nodes/${own}?dryRun=All`, {
          spec: { taints: before.filter((t) => t.key !== "virtual-kubelet.io/provider") }
        }, mergePatch)
      )
      assert.isTrue(before.some((t) => t.key === "node.kubernetes.io/not-ready"), "the apiserver's TaintNodesByCondition taint")
      forbidden(
        "another writer's taint dropped (the apiserver's node.kubernetes.io/not-ready)",
        yield* as(bound, "PATCH", `/api/v1/nodes/${own}?dryRun=All`, { spec: { taints: [{ key: unavailableTaint, effect: "NoSchedule" }] } }, mergePatch),
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
