/**
 * The node-restriction policy as strict as NodeRestriction for the daemon's own Node (DEP-1 — the
 * node restriction is as strict as NodeRestriction for what it covers), on the real apiserver:
 * the daemon may set only its own labels and its two taints, other writers' stay, and node.names
 * gives one host a full node name (DEP-3 — a full node name per host, in the daemon and in the
 * policy). Refusals are dry runs, so a pass never depends on a stored write.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { kube, uniqueName } from "./fixture/Kube.ts"
import { isAllowed, isRefused, restrictedIdentity, Suffix } from "./restrictedIdentity.ts"
import { admin, adminGet, createNamespace, quiet, rawRequest, type RawReply, tempDir } from "./scenarioHarness.ts"

const merge = "application/merge-patch+json"
const strategic = "application/strategic-merge-patch+json"
const providerTaint = { key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" }
const unavailableTaint = { key: "sandbox.cocoonstack.io/sandboxd-unavailable", value: "Unreachable", effect: "NoSchedule" }
/** The daemon's own labels: its defaults and the chart's default node.labels. */
const ownLabels = (name: string) => ({
  "type": "virtual-kubelet",
  "kubernetes.io/role": "agent",
  "kubernetes.io/hostname": name,
  "sandbox.cocoonstack.io/runtime": "sandboxd",
  "node.kubernetes.io/exclude-from-external-load-balancers": "true"
})

interface NodeView {
  readonly metadata: { readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> }
  readonly spec: { readonly taints?: ReadonlyArray<Record<string, string>> }
}

const refused = (what: string, reply: RawReply, reason?: RegExp) => {
  assert.isTrue(isRefused(reply), `${what}: HTTP ${reply.status} ${JSON.stringify(reply.body)}`)
  if (reason !== undefined) assert.match(JSON.stringify(reply.body), reason, what)
}
const allowed = (what: string, reply: RawReply) => assert.isTrue(isAllowed(reply), `${what}: HTTP ${reply.status} ${JSON.stringify(reply.body)}`)

describe("the node restriction on the daemon's own Node (real kube-apiserver)", () => {
  it.live("labels, annotations, taints and spec at create and update; parameters in the policy; a full name per host", () =>
    Effect.scoped(Effect.gen(function*() {
      const { config: adminConfig, core } = yield* admin
      const dir = yield* tempDir("vk-k8s-node-rules-")
      const namespace = yield* createNamespace("node-rules")
      // A (named in node.names), B (default name), C (whose default name D's entry takes), D
      const [hostA, hostB, hostC, hostD] = [uniqueName("host"), uniqueName("host"), uniqueName("host"), uniqueName("host")]
      const nodeA = uniqueName("vk-a")
      const { bound, unbound, policyName } = yield* restrictedIdentity({
        namespace,
        dir,
        hosts: [hostA, hostB, hostC, hostD],
        nodeUpdates: true,
        sets: [`node.names.${hostA}=${nodeA}`, `node.names.${hostD}=${hostC}${Suffix}`]
      })
      const as = (index: number) => (method: string, path: string, body?: object, type?: string) =>
        rawRequest((bound[index] ?? unbound).config, method, path, body, type)
      const [asA, asB, asC, asD] = [as(0), as(1), as(2), as(3)]
      const nodeBody = (name: string, extra: { labels?: object; annotations?: object; taints?: ReadonlyArray<object>; spec?: object } = {}) => ({
        apiVersion: "v1",
        kind: "Node",
        metadata: {
          name,
          labels: { ...ownLabels(name), ...extra.labels },
          ...(extra.annotations === undefined ? {} : { annotations: extra.annotations })
        },
        spec: { taints: extra.taints ?? [providerTaint], ...extra.spec }
      })
      const createDry = "/api/v1/nodes?dryRun=All"

      // ---- the parameters are the policy's own: no paramKind, no paramRef, nothing to delete
      const policy = yield* adminGet<{ spec: Record<string, unknown> }>(`/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${policyName}`)
      assert.isUndefined(policy?.spec["paramKind"], "no parameter object")
      const binding = yield* adminGet<{ spec: Record<string, unknown> }>(
        `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/${policyName}`
      )
      assert.isUndefined(binding?.spec["paramRef"], "the binding names no parameters")
      // Deleting every ConfigMap of the release namespace (where parameters used to live) changes nothing.
      const configMaps = yield* kube("config maps", () => core.listNamespacedConfigMap({ namespace }))
      for (const cm of configMaps.items) {
        yield* kube("delete config map", () => core.deleteNamespacedConfigMap({ namespace, name: cm.metadata?.name ?? "" }))
      }

      // ---- create: only its own labels and taints, no annotations, nothing else in spec
      refused("create with node-role.kubernetes.io/control-plane", yield* asA("POST", createDry, nodeBody(nodeA, { labels: { "node-role.kubernetes.io/control-plane": "" } })))
      refused("create with a node-restriction.kubernetes.io/ label", yield* asA("POST", createDry, nodeBody(nodeA, { labels: { "node-restriction.kubernetes.io/pool": "x" } })))
      refused("create with a label that attracts workloads", yield* asA("POST", createDry, nodeBody(nodeA, { labels: { "topology.kubernetes.io/zone": "z1" } })))
      refused("create with an annotation", yield* asA("POST", createDry, nodeBody(nodeA, { annotations: { "example.com/note": "x" } })))
      refused("create with another taint", yield* asA("POST", createDry, nodeBody(nodeA, { taints: [providerTaint, { key: "example.com/x", effect: "NoSchedule" }] })))
      refused("create unschedulable", yield* asA("POST", createDry, nodeBody(nodeA, { spec: { unschedulable: true } })))
      refused("create with a podCIDR", yield* asA("POST", createDry, nodeBody(nodeA, { spec: { podCIDR: "10.9.0.0/24" } })))
      allowed("create as the daemon does", yield* asA("POST", "/api/v1/nodes", nodeBody(nodeA, { taints: [providerTaint, unavailableTaint] })))
      yield* Effect.addFinalizer(() => kube("delete node", () => core.deleteNode({ name: nodeA })).pipe(Effect.ignore))

      // ---- other writers: a label, an annotation and a taint of the admin's
      const nodePath = `/api/v1/nodes/${nodeA}`
      allowed("the admin's label, annotation and taint", yield* rawRequest(adminConfig, "PATCH", nodePath, {
        metadata: { labels: { team: "blue" }, annotations: { "example.com/note": "kept" } },
        spec: { taints: [providerTaint, unavailableTaint, { key: "example.com/dedicated", value: "x", effect: "NoSchedule" }] }
      }, merge))
      const statusPath = `${nodePath}/status`
      const before = yield* adminGet<NodeView>(nodePath)
      const taints = before?.spec.taints ?? []
      const labels = (patch: Record<string, string | null>) => ({ metadata: { labels: patch } })
      for (const [path, via] of [[nodePath, "nodes"], [statusPath, "nodes/status"]] as const) {
        refused(`${via}: add node-role.kubernetes.io/control-plane`, yield* asA("PATCH", `${path}?dryRun=All`, labels({ "node-role.kubernetes.io/control-plane": "" }), merge))
        refused(`${via}: add a subdomain of node-role.kubernetes.io`, yield* asA("PATCH", `${path}?dryRun=All`, labels({ "x.node-role.kubernetes.io/gpu": "" }), merge))
        refused(`${via}: add node-restriction.kubernetes.io/`, yield* asA("PATCH", `${path}?dryRun=All`, labels({ "node-restriction.kubernetes.io/pool": "x" }), merge))
        refused(`${via}: add a label that attracts workloads`, yield* asA("PATCH", `${path}?dryRun=All`, labels({ "topology.kubernetes.io/zone": "z1" }), merge))
        refused(`${via}: change another writer's label`, yield* asA("PATCH", `${path}?dryRun=All`, labels({ team: "red" }), merge))
        refused(`${via}: remove another writer's label`, yield* asA("PATCH", `${path}?dryRun=All`, labels({ team: null }), merge))
        refused(`${via}: change another writer's annotation`, yield* asA("PATCH", `${path}?dryRun=All`, { metadata: { annotations: { "example.com/note": "changed" } } }, merge))
        refused(`${via}: remove another writer's annotation`, yield* asA("PATCH", `${path}?dryRun=All`, { metadata: { annotations: null } }, merge))
        refused(`${via}: add an annotation`, yield* asA("PATCH", `${path}?dryRun=All`, { metadata: { annotations: { "example.com/more": "x" } } }, merge))
        allowed(`${via}: change its own label`, yield* asA("PATCH", `${path}?dryRun=All`, labels({ "sandbox.cocoonstack.io/runtime": "other" }), merge))
        allowed(`${via}: remove its own label`, yield* asA("PATCH", `${path}?dryRun=All`, labels({ "kubernetes.io/role": null }), merge))
      }
      allowed("its status, as the daemon patches it", yield* asA("PATCH", statusPath, {
        metadata: { labels: ownLabels(nodeA) },
        status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "ok" }] }
      }, strategic))
      const withoutOwn = taints.filter((t) => t["key"] !== providerTaint.key && t["key"] !== unavailableTaint.key)
      allowed("its own taints removed", yield* asA("PATCH", `${nodePath}?dryRun=All`, { spec: { taints: withoutOwn } }, merge))
      refused("another writer's taint removed", yield* asA("PATCH", `${nodePath}?dryRun=All`, { spec: { taints: [providerTaint] } }, merge))
      refused("a taint of its own making", yield* asA("PATCH", `${nodePath}?dryRun=All`, { spec: { taints: [...taints, { key: "example.com/mine", effect: "NoExecute" }] } }, merge))
      refused("spec.unschedulable", yield* asA("PATCH", `${nodePath}?dryRun=All`, { spec: { unschedulable: true } }, merge))
      const after = yield* adminGet<NodeView>(nodePath)
      assert.deepStrictEqual(after?.metadata.labels, before?.metadata.labels, "nothing stored changed the labels")
      assert.deepStrictEqual(after?.metadata.annotations, before?.metadata.annotations)

      // ---- a full name per host: A's entry is A's alone; B keeps its default name
      refused("B writes A's node", yield* asB("POST", createDry, nodeBody(nodeA)), /may write only its own Node/)
      refused("B patches A's node", yield* asB("PATCH", `${statusPath}?dryRun=All`, { status: {} }, merge))
      refused("A writes its default name", yield* asA("POST", createDry, nodeBody(hostA + Suffix)))
      allowed("B writes its default name", yield* asB("POST", createDry, nodeBody(hostB + Suffix)))
      // C's default name is the name D's entry takes: C has no node at all, D has it.
      refused("C writes its default name, D's node", yield* asC("POST", createDry, nodeBody(hostC + Suffix)), /has no virtual node/)
      allowed("D writes its named node", yield* asD("POST", createDry, nodeBody(hostC + Suffix)))
    }).pipe(quiet)), { timeout: 90_000 })
})
