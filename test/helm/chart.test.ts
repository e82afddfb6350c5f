/**
 * Tests over the rendered chart (test/helm/run.sh renders it with the helm binary built from Go
 * modules). The container's args and env are fed to the daemon's own CLI parser: every value the
 * chart can produce must be accepted.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Result } from "effect"
import { parseAllDocuments } from "yaml"
import { parseConfig } from "../../src/Cli/ParseConfig.ts"

const renderDir = process.env["VK_HELM_RENDER_DIR"] ?? ""

/** Rendered YAML is untyped: read it through `at`, which returns undefined on any miss. */
const at = (value: unknown, ...path: ReadonlyArray<string | number>): unknown => {
  let current: unknown = value
  for (const step of path) {
    if (current === null || typeof current !== "object") return undefined
    current = (current as Record<string | number, unknown>)[step]
  }
  return current
}
const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])
const text = (value: unknown): string => (typeof value === "string" ? value : value === undefined ? "" : String(value))
const strings = (value: unknown): ReadonlyArray<string> => list(value).map(text)

const renders: ReadonlyArray<readonly [string, ReadonlyArray<unknown>]> = renderDir === ""
  ? []
  : readdirSync(renderDir)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => [
      file.replace(/\.yaml$/, ""),
      parseAllDocuments(readFileSync(join(renderDir, file), "utf8")).map((doc) => doc.toJS() as unknown).filter((doc) => doc !== null)
    ] as const)

const find = (docs: ReadonlyArray<unknown>, kind: string) => docs.filter((doc) => at(doc, "kind") === kind)

/** What the kubelet does with `$(VAR)` in env values, for a fake node. */
const expandEnv = (env: ReadonlyArray<unknown>) => {
  const resolved: Record<string, string> = {}
  const fieldValues: Record<string, string> = { "spec.nodeName": "worker-7", "status.hostIP": "10.0.0.5" }
  for (const entry of env) {
    const name = text(at(entry, "name"))
    const fieldPath = at(entry, "valueFrom", "fieldRef", "fieldPath")
    resolved[name] = fieldPath !== undefined
      ? fieldValues[text(fieldPath)] ?? ""
      : text(at(entry, "value")).replace(/\$\(([A-Z_][A-Z0-9_]*)\)/g, (_, v: string) => resolved[v] ?? "")
  }
  return resolved
}

describe.skipIf(renderDir === "")("rendered chart", () => {
  it("renders every values file", () => assert.isAbove(renders.length, 1))

  for (const [name, docs] of renders) {
    describe(name, () => {
      const daemonSet = find(docs, "DaemonSet")[0]
      const pod = at(daemonSet, "spec", "template")
      const container = at(pod, "spec", "containers", 0)
      const args = strings(at(container, "args"))
      const env = expandEnv(list(at(container, "env")))

      it("labels and selectors: selector is name + instance only and matches the Pod labels", () => {
        const selector = at(daemonSet, "spec", "selector", "matchLabels") as Record<string, unknown>
        assert.deepStrictEqual(Object.keys(selector).sort(), ["app.kubernetes.io/instance", "app.kubernetes.io/name"])
        for (const [k, v] of Object.entries(selector)) assert.strictEqual(at(pod, "metadata", "labels", k), v)
        for (const doc of docs) assert.isDefined(at(doc, "metadata", "labels", "helm.sh/chart"), `${text(at(doc, "kind"))} has helm.sh/chart`)
      })

      it("runs on the host network with the node identity from the downward API", () => {
        assert.strictEqual(at(pod, "spec", "hostNetwork"), true)
        assert.strictEqual(env["VK_NODE_NAME"], "worker-7-sandboxd")
        assert.strictEqual(env["VK_NODE_IP"], "10.0.0.5")
      })

      it("the advertise address is the host IP whenever publishing is on", () => {
        const publishing = args.includes("--publish-inventory")
        assert.strictEqual(publishing, name === "publishing")
        if (publishing) assert.strictEqual(env["SANDBOXD_ADVERTISE_ADDR"], "10.0.0.5:7777")
        else assert.isUndefined(env["SANDBOXD_ADVERTISE_ADDR"])
      })

      it("keeps the claims state on a hostPath", () => {
        const state = list(at(pod, "spec", "volumes")).find((v) => at(v, "name") === "state")
        assert.strictEqual(at(state, "hostPath", "path"), "/var/lib/vk-sandbox")
        assert.strictEqual(at(state, "hostPath", "type"), "DirectoryOrCreate")
        assert.include(args, "--state-path=/var/lib/vk-sandbox/claims.json")
      })

      it("probes /healthz and /readyz on the metrics port", () => {
        assert.strictEqual(at(container, "livenessProbe", "httpGet", "path"), "/healthz")
        assert.strictEqual(at(container, "readinessProbe", "httpGet", "path"), "/readyz")
        assert.strictEqual(at(container, "livenessProbe", "httpGet", "port"), "metrics")
      })

      it("has a tight security context and a grace period above the shutdown bound", () => {
        assert.strictEqual(at(container, "securityContext", "allowPrivilegeEscalation"), false)
        assert.strictEqual(at(container, "securityContext", "readOnlyRootFilesystem"), true)
        assert.deepStrictEqual(strings(at(container, "securityContext", "capabilities", "drop")), ["ALL"])
        assert.strictEqual(at(pod, "spec", "securityContext", "seccompProfile", "type"), "RuntimeDefault")
        assert.isAbove(Number(at(pod, "spec", "terminationGracePeriodSeconds")), 10)
        assert.strictEqual(at(daemonSet, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"), 1)
      })

      it("the container's args and env are accepted by the daemon's own parser", () => {
        const parsed = parseConfig(args, env)
        if (Result.isFailure(parsed)) return assert.fail(parsed.failure.message)
        const config = parsed.success
        assert.strictEqual(config.nodeName, "worker-7-sandboxd")
        assert.strictEqual(config.statePath, "/var/lib/vk-sandbox/claims.json")
        assert.strictEqual(config.listenAddr.port, 10260)
        assert.strictEqual(config.sandboxdUrl, "http://127.0.0.1:7777")
        assert.strictEqual(config.nodeLabels["sandbox.cocoonstack.io/runtime"], "sandboxd")
        if (name === "publishing") assert.strictEqual(config.sandboxdAdvertiseAddr, "10.0.0.5:7777")
        if (name.startsWith("tls")) {
          assert.strictEqual(config.tlsCert, "/etc/vk-sandbox/tls/tls.crt")
          assert.strictEqual(config.tlsKey, "/etc/vk-sandbox/tls/tls.key")
        }
        if (name === "tls-hostpath-client-ca") assert.strictEqual(config.clientCaFile, "/etc/vk-sandbox/client-ca/ca.crt")
      })

      it("RBAC: exactly the daemon's verbs; nodeinventories only when publishing", () => {
        const rules = list(at(find(docs, "ClusterRole")[0], "rules"))
        const resources = rules.flatMap((r) => strings(at(r, "resources")))
        assert.strictEqual(resources.includes("nodeinventories"), name === "publishing")
        const pods = rules.find((r) => strings(at(r, "resources")).includes("pods"))
        assert.deepStrictEqual(strings(at(pods, "verbs")), ["get", "list", "watch", "delete"])
        const binding = find(docs, "ClusterRoleBinding")[0]
        assert.strictEqual(at(binding, "subjects", 0, "name"), at(find(docs, "ServiceAccount")[0], "metadata", "name"))
      })

      it("the token Secret rolls the Pods through a checksum annotation", () => {
        assert.match(text(at(pod, "metadata", "annotations", "checksum/sandboxd-token")), /^[0-9a-f]{64}$/)
        assert.strictEqual(find(docs, "Secret").length > 0, name !== "existing-secret")
      })
    })
  }
})
