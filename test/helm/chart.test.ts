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

type Manifest = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered YAML is untyped

const renders: ReadonlyArray<readonly [string, ReadonlyArray<Manifest>]> = renderDir === ""
  ? []
  : readdirSync(renderDir)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => [
      file.replace(/\.yaml$/, ""),
      parseAllDocuments(readFileSync(join(renderDir, file), "utf8"))
        .map((doc) => doc.toJS() as Manifest | null)
        .filter((doc): doc is Manifest => doc !== null)
    ] as const)

const find = (docs: ReadonlyArray<Manifest>, kind: string) => docs.filter((doc) => doc["kind"] === kind)

/** What the kubelet does with `$(VAR)` in env values, for a fake node. */
const expandEnv = (env: ReadonlyArray<Manifest>) => {
  const resolved: Record<string, string> = {}
  const fieldValues: Record<string, string> = { "spec.nodeName": "worker-7", "status.hostIP": "10.0.0.5" }
  for (const entry of env) {
    if (entry["valueFrom"]?.["fieldRef"] !== undefined) {
      resolved[entry["name"]] = fieldValues[entry["valueFrom"]["fieldRef"]["fieldPath"]] ?? ""
    } else {
      resolved[entry["name"]] = String(entry["value"] ?? "").replace(/\$\(([A-Z_][A-Z0-9_]*)\)/g, (_, v: string) => resolved[v] ?? "")
    }
  }
  return resolved
}

describe.skipIf(renderDir === "")("rendered chart", () => {
  it("renders every values file", () => assert.isAbove(renders.length, 1))

  for (const [name, docs] of renders) {
    describe(name, () => {
      const daemonSet = find(docs, "DaemonSet")[0]!
      const pod = daemonSet["spec"]["template"]
      const container = pod["spec"]["containers"][0]
      const env = expandEnv(container["env"])

      it("labels and selectors: selector is name + instance only and matches the Pod labels", () => {
        const selector = daemonSet["spec"]["selector"]["matchLabels"]
        assert.deepStrictEqual(Object.keys(selector).sort(), ["app.kubernetes.io/instance", "app.kubernetes.io/name"])
        for (const [k, v] of Object.entries(selector)) assert.strictEqual(pod["metadata"]["labels"][k], v)
        for (const doc of docs) assert.isDefined(doc["metadata"]["labels"]["helm.sh/chart"], `${doc["kind"]} has helm.sh/chart`)
      })

      it("runs on the host network with the node identity from the downward API", () => {
        assert.isTrue(pod["spec"]["hostNetwork"])
        assert.strictEqual(env["VK_NODE_NAME"], "worker-7-sandboxd")
        assert.strictEqual(env["VK_NODE_IP"], "10.0.0.5")
      })

      it("the advertise address is the host IP whenever publishing is on", () => {
        const publishing = container["args"].includes("--publish-inventory")
        assert.strictEqual(publishing, name === "publishing")
        if (publishing) assert.strictEqual(env["SANDBOXD_ADVERTISE_ADDR"], "10.0.0.5:7777")
        else assert.isUndefined(env["SANDBOXD_ADVERTISE_ADDR"])
      })

      it("keeps the claims state on a hostPath", () => {
        const state = pod["spec"]["volumes"].find((v: Manifest) => v["name"] === "state")
        assert.strictEqual(state["hostPath"]["path"], "/var/lib/vk-sandbox")
        assert.strictEqual(state["hostPath"]["type"], "DirectoryOrCreate")
        assert.include(container["args"], "--state-path=/var/lib/vk-sandbox/claims.json")
      })

      it("probes /healthz and /readyz on the metrics port", () => {
        assert.strictEqual(container["livenessProbe"]["httpGet"]["path"], "/healthz")
        assert.strictEqual(container["readinessProbe"]["httpGet"]["path"], "/readyz")
        assert.strictEqual(container["livenessProbe"]["httpGet"]["port"], "metrics")
      })

      it("has a tight security context and a grace period above the shutdown bound", () => {
        const sc = container["securityContext"]
        assert.isFalse(sc["allowPrivilegeEscalation"])
        assert.isTrue(sc["readOnlyRootFilesystem"])
        assert.deepStrictEqual(sc["capabilities"]["drop"], ["ALL"])
        assert.strictEqual(pod["spec"]["securityContext"]["seccompProfile"]["type"], "RuntimeDefault")
        assert.isAbove(pod["spec"]["terminationGracePeriodSeconds"], 10)
        assert.strictEqual(daemonSet["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"], 1)
      })

      it("the container's args and env are accepted by the daemon's own parser", () => {
        const parsed = parseConfig(container["args"], env)
        if (Result.isFailure(parsed)) assert.fail(parsed.failure.message)
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
        const role = find(docs, "ClusterRole")[0]!
        const resources = role["rules"].flatMap((r: Manifest) => r["resources"])
        assert.strictEqual(resources.includes("nodeinventories"), name === "publishing")
        const pods = role["rules"].find((r: Manifest) => r["resources"].includes("pods"))
        assert.deepStrictEqual(pods["verbs"], ["get", "list", "watch", "delete"])
        const binding = find(docs, "ClusterRoleBinding")[0]!
        assert.strictEqual(binding["subjects"][0]["name"], find(docs, "ServiceAccount")[0]!["metadata"]["name"])
      })

      it("the token Secret rolls the Pods through a checksum annotation", () => {
        assert.match(pod["metadata"]["annotations"]["checksum/sandboxd-token"], /^[0-9a-f]{64}$/)
        const created = find(docs, "Secret").length > 0
        assert.strictEqual(created, name !== "existing-secret")
      })
    })
  }
})
