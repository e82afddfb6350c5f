/**
 * The kubelet port's authentication and authorization on the real kube-apiserver (KAPI-1 — who a
 * kubelet API request comes from..3): the daemon under deploy/rbac's role with a client CA of
 * this test's own; anonymous, a token with no rights, metrics-server's role, another node's
 * certificate and kubelet-api-admin each ask for what a scraper, a stranger, a node and the
 * apiserver would, and get 401, 403 or 200 as each test says; a role limited to another node's
 * name opens nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as k8s from "@kubernetes/client-node"
import { Effect } from "effect"
import * as NodePath from "node:path"
import { writeFileSync } from "node:fs"
import { serviceAccountToken, startDaemon } from "./daemonIdentity.ts"
import { kube, uniqueName } from "./fixture/Kube.ts"
import { admin, createNamespace, daemonGround, eventually, freeLoopbackPorts, quiet, rawRequest } from "./scenarioHarness.ts"
import { kubeletRequest, makeClientCa } from "../support/KubeletClient.ts"

type Rules = ReadonlyArray<k8s.V1PolicyRule>

describe("the kubelet port on the real kube-apiserver", () => {
  // anonymous                                       → 401 everywhere but /healthz
  // a token of a service account with no rights     → 403
  // metrics-server's role (nodes/metrics, and nodes/stats as its releases before 0.6 had it)
  //                                                 → 200 on /metrics/resource and /stats/summary, 403 on /pods
  // a certificate for system:node:<another node>    → 403 on /pods
  // a certificate bound to system:kubelet-api-admin → 200 on /pods
  // and the review is about this node: a role limited by resourceNames to another node opens nothing.
  it.live("authenticates by certificate or TokenReview and authorizes each path by SubjectAccessReview", () =>
    Effect.scoped(Effect.gen(function*() {
      const { config: adminConfig, core, rbac, authz } = yield* admin
      const ca = yield* makeClientCa
      const [kubeletPort = 0, metricsPort = 0] = yield* freeLoopbackPorts(2)
      const ground = yield* daemonGround("vk-k8s-kubelet-", {}, {
        listenAddr: { host: "127.0.0.1", port: kubeletPort },
        metricsAddr: { host: "127.0.0.1", port: metricsPort }
      })
      const caFile = NodePath.join(ground.dir, "client-ca.crt")
      writeFileSync(caFile, ca.caPem)
      const config = { ...ground.config, clientCaFile: caFile }
      const node = config.nodeName
      const otherNode = uniqueName("vk-other")

      // ---- identities: service accounts with their roles, users named by certificates
      const namespace = yield* createNamespace("kubelet-auth")
      const roles: Array<string> = []
      const clusterRole = (name: string, rules: Rules, subject: k8s.RbacV1Subject) =>
        Effect.gen(function*() {
          const roleName = uniqueName(name)
          roles.push(roleName)
          yield* kube(`role ${name}`, () => rbac.createClusterRole({ body: { metadata: { name: roleName }, rules: [...rules] } }))
          yield* kube(`binding ${name}`, () =>
            rbac.createClusterRoleBinding({
              body: {
                metadata: { name: roleName },
                roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: roleName },
                subjects: [subject]
              }
            }))
        })
      const account = (name: string) =>
        Effect.gen(function*() {
          yield* kube(`service account ${name}`, () => core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } }))
          return {
            subject: { kind: "ServiceAccount", name, namespace } satisfies k8s.RbacV1Subject,
            user: `system:serviceaccount:${namespace}:${name}`,
            token: yield* serviceAccountToken(core, namespace, name)
          }
        })
      const nodeRule = (subresources: ReadonlyArray<string>, resourceNames?: ReadonlyArray<string>): k8s.V1PolicyRule => ({
        apiGroups: [""],
        resources: subresources.map((s) => `nodes/${s}`),
        verbs: ["get"],
        ...(resourceNames === undefined ? {} : { resourceNames: [...resourceNames] })
      })
      const nobody = yield* account("nobody")
      // metrics-server's ClusterRole: its releases from 0.6 scrape /metrics/resource (nodes/metrics),
      // earlier ones /stats/summary (nodes/stats); both with reads of Pods and Nodes.
      const metricsServer = yield* account("metrics-server")
      yield* clusterRole("metrics-server", [
        { apiGroups: [""], resources: ["pods", "nodes"], verbs: ["get", "list", "watch"] },
        nodeRule(["metrics", "stats"])
      ], metricsServer.subject)
      const metricsOnly = yield* account("metrics-only")
      yield* clusterRole("metrics-only", [nodeRule(["metrics"])], metricsOnly.subject)
      const thisNodeOnly = yield* account("this-node")
      yield* clusterRole("this-node", [nodeRule(["pods"], [node])], thisNodeOnly.subject)
      const otherNodeOnly = yield* account("other-node")
      yield* clusterRole("other-node", [nodeRule(["pods", "proxy", "metrics", "stats"], [otherNode])], otherNodeOnly.subject)
      const apiserverClient = uniqueName("kubelet-client")
      const apiserverBinding = uniqueName("kubelet-api-admin")
      yield* kube("binding kubelet-api-admin", () =>
        rbac.createClusterRoleBinding({
          body: {
            metadata: { name: apiserverBinding },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:kubelet-api-admin" },
            subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: apiserverClient }]
          }
        }))
      yield* Effect.addFinalizer(() =>
        Effect.ignore(Effect.forEach([...roles, apiserverBinding], (name) =>
          Effect.all([
            kube("delete binding", () => rbac.deleteClusterRoleBinding({ name })),
            kube("delete role", () => rbac.deleteClusterRole({ name }))
          ], { mode: "result" })))
      )
      // The daemon caches a denial for 30 s: ask only once the apiserver's authorizer sees every binding.
      const allowed = (user: string, subresource: string) =>
        Effect.map(
          kube("access review", () =>
            authz.createSubjectAccessReview({
              body: { spec: { user, resourceAttributes: { verb: "get", resource: "nodes", subresource, name: node } } }
            })),
          (review) => review.status?.allowed === true
        )
      yield* eventually("the bindings in effect", Effect.map(
        Effect.all([allowed(metricsServer.user, "stats"), allowed(metricsOnly.user, "metrics"), allowed(thisNodeOnly.user, "pods"), allowed(apiserverClient, "proxy")]),
        (answers) => answers.every((a) => a)
      ), 10_000)

      // ---- the reviews' answers are created (201), never stored: what the daemon's metrics count
      const tokenReview = yield* rawRequest(adminConfig, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: { token: metricsServer.token }
      })
      assert.strictEqual(tokenReview.status, 201)

      const daemon = yield* startDaemon(config)
      yield* Effect.addFinalizer(() => daemon.stop)
      const get = (path: string, as: Parameters<typeof kubeletRequest>[3] = {}) =>
        Effect.map(kubeletRequest(kubeletPort, "GET", path, as), (reply) => reply.status)
      const table = (as: Parameters<typeof kubeletRequest>[3]) =>
        Effect.forEach(["/pods", "/runningpods/", "/stats/summary", "/metrics/resource", "/healthz"], (path) =>
          Effect.map(get(path, as), (status) => `${path} ${status}`))

      assert.deepStrictEqual(yield* table({}), [
        "/pods 401",
        "/runningpods/ 401",
        "/stats/summary 401",
        "/metrics/resource 401",
        "/healthz 200"
      ], "anonymous")
      assert.deepStrictEqual(yield* table({ token: "not-a-token" }), [
        "/pods 401",
        "/runningpods/ 401",
        "/stats/summary 401",
        "/metrics/resource 401",
        "/healthz 200"
      ], "a token the apiserver does not know")
      assert.deepStrictEqual(yield* table({ token: nobody.token }), [
        "/pods 403",
        "/runningpods/ 403",
        "/stats/summary 403",
        "/metrics/resource 403",
        "/healthz 200"
      ], "a token without rights")
      assert.deepStrictEqual(yield* table({ token: metricsServer.token }), [
        "/pods 403",
        "/runningpods/ 403",
        "/stats/summary 200",
        "/metrics/resource 200",
        "/healthz 200"
      ], "metrics-server")
      assert.deepStrictEqual(yield* table({ token: metricsOnly.token }), [
        "/pods 403",
        "/runningpods/ 403",
        "/stats/summary 403",
        "/metrics/resource 200",
        "/healthz 200"
      ], "nodes/metrics alone")
      assert.deepStrictEqual(yield* table({ token: thisNodeOnly.token }), [
        "/pods 200",
        "/runningpods/ 200",
        "/stats/summary 403",
        "/metrics/resource 403",
        "/healthz 200"
      ], "nodes/pods of this node")
      assert.deepStrictEqual(yield* table({ token: otherNodeOnly.token }), [
        "/pods 403",
        "/runningpods/ 403",
        "/stats/summary 403",
        "/metrics/resource 403",
        "/healthz 200"
      ], "every subresource, of another node")

      const anotherNode = yield* ca.issue(`CN=system:node:${otherNode}, O=system:nodes`)
      assert.deepStrictEqual(yield* table({ certificate: anotherNode }), [
        "/pods 403",
        "/runningpods/ 403",
        "/stats/summary 403",
        "/metrics/resource 403",
        "/healthz 200"
      ], "a certificate of another node")
      const forbidden = yield* kubeletRequest(kubeletPort, "GET", "/pods", { certificate: anotherNode })
      assert.strictEqual(
        forbidden.body,
        `403 Forbidden: user "system:node:${otherNode}" may not get nodes/pods or nodes/proxy of node ${node}\n`
      )
      const client = yield* ca.issue(`CN=${apiserverClient}`)
      assert.deepStrictEqual(yield* table({ certificate: client }), [
        "/pods 200",
        "/runningpods/ 200",
        "/stats/summary 200",
        "/metrics/resource 200",
        "/healthz 200"
      ], "the apiserver's kubelet client")
      const pods = JSON.parse((yield* kubeletRequest(kubeletPort, "GET", "/pods", { certificate: client })).body) as { kind?: string }
      assert.strictEqual(pods.kind, "PodList")
      const stranger = yield* (yield* makeClientCa).issue(`CN=${apiserverClient}`)
      assert.strictEqual(yield* get("/pods", { certificate: stranger }), 401, "a certificate another CA signed")
    }).pipe(quiet)), { timeout: 60_000 })
})
