/**
 * The daemon's identity on the real kube-apiserver, for the suites that check its RBAC or run it
 * under a token of their own: its manifests, the verbs it uses, a SubjectAccessReview of one of them, a
 * TokenRequest of a service account, a kubeconfig for that token, and the whole daemon in a scope.
 */
import * as k8s from "@kubernetes/client-node"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { kube } from "./fixture/Kube.ts"
import { ScenarioFailed } from "./scenarioHarness.ts"

/**
 * (apiGroup, resource[/subresource]) → the verbs the daemon uses, publishing on; what
 * deploy/rbac and the chart grant it. Leases are granted in kube-node-lease only (a Role there).
 */
export const daemonVerbs: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
  ["", "nodes", ["get", "create", "patch"]],
  ["", "nodes/status", ["patch"]],
  ["", "pods", ["get", "list", "watch", "delete"]],
  ["", "pods/status", ["update", "patch"]],
  ["", "events", ["create", "patch"]],
  ["coordination.k8s.io", "leases", ["get", "create", "update"]],
  ["agents.x-k8s.io", "sandboxes", ["get"]],
  ["extensions.agents.x-k8s.io", "nodeinventories", ["get", "create", "patch"]],
  ["authentication.k8s.io", "tokenreviews", ["create"]],
  ["authorization.k8s.io", "subjectaccessreviews", ["create"]]
]
const clusterScoped = ["nodes", "nodeinventories", "tokenreviews", "subjectaccessreviews"]
export const allVerbs = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]

/**
 * Whether the service account `serviceAccount` of `accountNamespace` may `verb` the
 * resource[/subresource]: cluster-scoped for nodes, node inventories and reviews, Leases in
 * `leaseNamespace`, everything else in the namespace team-a.
 */
export const mayDo = (
  authz: k8s.AuthorizationV1Api,
  accountNamespace: string,
  serviceAccount: string,
  verb: string,
  group: string,
  resourcePath: string,
  leaseNamespace = "kube-node-lease"
) =>
  Effect.gen(function*() {
    const [resource, subresource] = resourcePath.split("/")
    const answer = yield* kube(`access review ${verb} ${resourcePath}`, () =>
      authz.createSubjectAccessReview({
        body: {
          spec: {
            user: `system:serviceaccount:${accountNamespace}:${serviceAccount}`,
            groups: ["system:serviceaccounts", `system:serviceaccounts:${accountNamespace}`, "system:authenticated"],
            resourceAttributes: {
              group,
              resource: resource ?? "",
              ...(subresource !== undefined ? { subresource } : {}),
              verb,
              namespace: clusterScoped.includes(resource ?? "")
                ? ""
                : resource === "leases"
                ? leaseNamespace
                : "team-a"
            }
          }
        }
      }))
    return answer.status?.allowed === true
  })

/** The objects of a multi-document YAML text (client-node's loader), empty documents dropped. */
export const yamlObjects = (text: string) =>
  k8s.loadAllYaml(text).filter((doc): doc is k8s.KubernetesObject & Record<string, unknown> => typeof doc === "object" && doc !== null)

/** The manifests of a file of the repository (a path from its root), as objects. */
export const repoManifests = (path: string) =>
  yamlObjects(NodeFs.readFileSync(NodePath.join(import.meta.dirname, "..", "..", path), "utf8"))

/**
 * `helm template` of the chart (the helm binary of the suite's cache) for `release` in `namespace`
 * with `--set` values, the documents parsed. The chart needs Kubernetes 1.30 (kubeVersion): the
 * render says which version it is for, as `helm install` takes the server's.
 */
export const renderChart = (
  release: string,
  namespace: string,
  sets: ReadonlyArray<string>,
  showOnly?: string,
  chartDir = NodePath.join(import.meta.dirname, "..", "..", "deploy", "helm", "vk-sandbox")
) =>
  Effect.gen(function*() {
    const binDir = process.env["VK_K8S_BIN"] ?? ""
    if (binDir === "") return yield* new ScenarioFailed({ message: "VK_K8S_BIN is not set: run with npm run test:k8s" })
    const stdout = yield* Effect.callback<string, ScenarioFailed>((resume) => {
      const child = execFile(
        NodePath.join(binDir, "helm"),
        [
          "template",
          release,
          chartDir,
          "--namespace",
          namespace,
          "--kube-version",
          "1.37.0",
          ...(showOnly === undefined ? [] : ["--show-only", showOnly]),
          ...sets.flatMap((value) => ["--set", value])
        ],
        { maxBuffer: 16 * 1024 * 1024 },
        (error, out, err) =>
          resume(error === null ? Effect.succeed(out) : Effect.fail(new ScenarioFailed({ message: `helm template: ${String(error)}\n${err}` })))
      )
      return Effect.sync(() => child.kill("SIGKILL"))
    })
    return yamlObjects(stdout)
  })

/** A TokenRequest token of the service account, valid an hour, bound to `boundObjectRef` when given. */
export const serviceAccountToken = (
  core: k8s.CoreV1Api,
  namespace: string,
  serviceAccount: string,
  boundObjectRef?: k8s.V1BoundObjectReference
) =>
  Effect.map(
    kube("token request", () =>
      core.createNamespacedServiceAccountToken({
        name: serviceAccount,
        namespace,
        body: { spec: { audiences: [], expirationSeconds: 3600, ...(boundObjectRef === undefined ? {} : { boundObjectRef }) } }
      })),
    (answer) => answer.status?.token ?? ""
  )

/** A kubeconfig for `token` against the admin's cluster: the file (under `dir`) and the KubeConfig. */
export const kubeconfigForToken = (adminConfig: k8s.KubeConfig, dir: string, name: string, token: string) => {
  const cluster = adminConfig.getCurrentCluster()
  const config = new k8s.KubeConfig()
  config.loadFromOptions({
    clusters: cluster === null ? [] : [cluster],
    users: [{ name, token }],
    contexts: [{ name, cluster: cluster?.name ?? "", user: name }],
    currentContext: name
  })
  const file = NodePath.join(dir, `${name}.kubeconfig`)
  NodeFs.writeFileSync(file, config.exportConfig(), { mode: 0o600 })
  return { file, config }
}

/** The whole daemon in this process (`test/support/InProcessDaemon.ts`). */
export { startDaemon } from "../support/InProcessDaemon.ts"
