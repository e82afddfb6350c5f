/**
 * A daemon identity under the chart's node-restriction policy, for the suites that check what it
 * may write: a service account of the test's own bound to deploy/rbac's roles, the policy and its
 * binding as the chart renders them for that account (`helm template`, `--set` values of the
 * test's), host Nodes with a placeholder Pod each, and a token bound to each placeholder (the
 * apiserver then names that host in the token's user). Returns once the policy is in force.
 */
import * as k8s from "@kubernetes/client-node"
import { Effect } from "effect"
import { kubeconfigForToken, renderChart, repoManifests, serviceAccountToken } from "./daemonIdentity.ts"
import { kube, uniqueName } from "./fixture/Kube.ts"
import { admin, eventually, rawRequest, type RawReply, ScenarioFailed } from "./scenarioHarness.ts"

export const Suffix = "-sandboxd"

export interface Identity {
  readonly file: string
  readonly config: k8s.KubeConfig
}

export interface RestrictedOptions {
  /** The namespace of the service account (created by the caller). */
  readonly namespace: string
  readonly dir: string
  /** Host Nodes to create (names from `uniqueName`), each with a placeholder Pod and a token bound to it. */
  readonly hosts: ReadonlyArray<string>
  /** More `--set` values for the chart's render (node.labels, node.names, …). */
  readonly sets?: ReadonlyArray<string>
  /** Also grant patch and update on Nodes, so only the policy stands between the daemon and a Node's spec. */
  readonly nodeUpdates?: boolean
  /** Another chart directory (an older release's), to show what its policy let through. */
  readonly chartDir?: string
}

/** The chart's policy and binding for `user`'s release, created; their names. */
export const installChartPolicy = (namespace: string, serviceAccount: string, sets: ReadonlyArray<string> = [], chartDir?: string) =>
  Effect.gen(function*() {
    const { config, objects } = yield* admin
    const release = uniqueName("nr")
    const docs = yield* renderChart(
      release,
      namespace,
      ["serviceAccount.create=false", `serviceAccount.name=${serviceAccount}`, "sandboxd.token.source=none", ...sets],
      "templates/admission-policy.yaml",
      chartDir
    )
    const policy = docs.find((doc) => doc.kind === "ValidatingAdmissionPolicy")
    if (policy === undefined) {
      return yield* new ScenarioFailed({ message: `the chart's policy render holds ${docs.map((doc) => doc.kind).join(", ")}` })
    }
    for (const doc of docs) yield* kube(`create ${doc.kind}`, () => objects.create(doc))
    const name = policy.metadata?.name ?? ""
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        const admission = config.makeApiClient(k8s.AdmissionregistrationV1Api)
        yield* kube("delete binding", () => admission.deleteValidatingAdmissionPolicyBinding({ name }))
        yield* kube("delete policy", () => admission.deleteValidatingAdmissionPolicy({ name }))
      }).pipe(Effect.ignore)
    )
    return { policy, name }
  })

export const restrictedIdentity = (options: RestrictedOptions) =>
  Effect.gen(function*() {
    const { config: adminConfig, core, rbac } = yield* admin
    const { namespace, dir } = options
    const serviceAccount = uniqueName("vk-restricted")
    const user = `system:serviceaccount:${namespace}:${serviceAccount}`

    // ---- the shipped RBAC (ClusterRole + the Lease Role), bound to a service account of our own
    yield* kube("service account", () => core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: serviceAccount } } }))
    const subjects = [{ kind: "ServiceAccount", name: serviceAccount, namespace }]
    const bindCluster = (name: string, role: string) =>
      kube("cluster role binding", () =>
        rbac.createClusterRoleBinding({
          body: { metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role }, subjects }
        }))
    for (const role of repoManifests("deploy/rbac/clusterrole.yaml")) {
      yield* bindCluster(`${serviceAccount}-${role.metadata?.name ?? ""}`, role.metadata?.name ?? "")
    }
    for (const role of repoManifests("deploy/rbac/lease-role.yaml")) {
      const leaseNamespace = role.metadata?.namespace ?? "kube-node-lease"
      yield* kube("role binding", () =>
        rbac.createNamespacedRoleBinding({
          namespace: leaseNamespace,
          body: {
            metadata: { name: serviceAccount, namespace: leaseNamespace },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role.metadata?.name ?? "" },
            subjects
          }
        }))
    }
    if (options.nodeUpdates === true) {
      const role = `${serviceAccount}-nodes`
      yield* kube("node update role", () =>
        rbac.createClusterRole({
          body: { metadata: { name: role }, rules: [{ apiGroups: [""], resources: ["nodes", "nodes/status"], verbs: ["patch", "update"] }] }
        }))
      yield* bindCluster(role, role)
    }

    const { name: policyName } = yield* installChartPolicy(namespace, serviceAccount, options.sets ?? [], options.chartDir)

    // ---- host Nodes, a placeholder Pod on each, a token bound to each Pod
    const hosts = options.hosts
    const bound: Array<Identity> = []
    for (const host of hosts) {
      yield* kube("host node", () => core.createNode({ body: { metadata: { name: host } } }))
      yield* Effect.addFinalizer(() => kube("delete host", () => core.deleteNode({ name: host })).pipe(Effect.ignore))
      const placeholder = yield* kube("placeholder pod", () =>
        core.createNamespacedPod({
          namespace,
          body: {
            metadata: { name: `${host}-daemon` },
            spec: {
              nodeName: host,
              serviceAccountName: serviceAccount,
              automountServiceAccountToken: false,
              // A host without a kubelet goes NotReady: the placeholder must not be evicted, or the
              // token bound to it stops working.
              tolerations: [{ operator: "Exists", effect: "NoExecute" }],
              containers: [{ name: "vk-sandbox", image: "vk-sandbox" }]
            }
          }
        }))
      const token = yield* serviceAccountToken(core, namespace, serviceAccount, {
        kind: "Pod",
        apiVersion: "v1",
        name: `${host}-daemon`,
        uid: placeholder.metadata?.uid ?? ""
      })
      bound.push(kubeconfigForToken(adminConfig, dir, host, token))
    }
    const unbound = kubeconfigForToken(adminConfig, dir, `${serviceAccount}-unbound`, yield* serviceAccountToken(core, namespace, serviceAccount))

    // The policy is in force once a write it refuses is refused (dry run: nothing is stored).
    const probe = bound[0] ?? unbound
    let lastProbe: RawReply | undefined
    yield* eventually(
      "the policy in force",
      Effect.map(
        rawRequest(probe.config, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?dryRun=All", {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name: uniqueName("not-mine"), namespace: "kube-node-lease" },
          spec: {}
        }),
        (reply) => {
          lastProbe = reply
          return reply.status === 403 && JSON.stringify(reply.body).includes("vk-sandbox node restriction")
        }
      ),
      30_000
    ).pipe(Effect.tapError(() => Effect.sync(() => console.log("the policy not in force; last probe:", JSON.stringify(lastProbe)))))

    return { serviceAccount, user, policyName, hosts, bound, unbound }
  })

/** Assertions on one reply, with the body in the message. */
export const isRefused = (reply: RawReply, byPolicy = true) =>
  reply.status === 403 && (!byPolicy || JSON.stringify(reply.body).includes("vk-sandbox node restriction"))
export const isAllowed = (reply: RawReply) => reply.status >= 200 && reply.status < 300
