/**
 * Tests over the rendered chart (test/helm/run.sh renders it with the helm binary built from Go
 * modules). The container's args and env are fed to the daemon's own CLI parser: every value the
 * chart can produce must be accepted.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Result } from "effect"
import { parseGoDurationNanos } from "../../src/Cli/GoDuration.ts"
import { parseConfig } from "../../src/Cli/ParseConfig.ts"
import { at, expandEnv, find, list, manifests, strings, text } from "../support/Rendered.ts"

const renderDir = process.env["VK_HELM_RENDER_DIR"] ?? ""
/** The helm binary test/helm/run.sh built, for renders with values of a test's own. */
const helmBin = process.env["VK_HELM_BIN"] ?? ""

const renders: ReadonlyArray<readonly [string, ReadonlyArray<unknown>]> = renderDir === ""
  ? []
  : readdirSync(renderDir)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => [
      file.replace(/\.yaml$/, ""),
      manifests(readFileSync(join(renderDir, file), "utf8"))
    ] as const)


const repoRoot = join(import.meta.dirname, "..", "..")
const plainPolicy = find(
  manifests(readFileSync(join(repoRoot, "deploy", "admission", "node-restriction.yaml"), "utf8")),
  "ValidatingAdmissionPolicy"
)[0]

/** The kubelet.tls.source each ci/*-values.yaml chooses (the default is vkCocoon). */
const tlsSourceOf = (name: string) => name === "tls-secret" ? "secret" : name === "tls-hostpath-client-ca" ? "hostPath" : "vkCocoon"
/** Where the daemon reads the pair the chart mounts for it. */
const tlsCopy = ["/etc/vk-sandbox/tls/tls.crt", "/etc/vk-sandbox/tls/tls.key"]

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

      it("runs the daemon unprivileged: uid 65532, non-root, read-only root, no capabilities, RuntimeDefault seccomp", () => {
        assert.strictEqual(at(pod, "spec", "securityContext", "runAsUser"), 65532)
        assert.strictEqual(at(pod, "spec", "securityContext", "runAsGroup"), 65532)
        assert.strictEqual(at(pod, "spec", "securityContext", "fsGroup"), 65532, "the 0400 token Secret readable by the group")
        assert.strictEqual(at(pod, "spec", "securityContext", "seccompProfile", "type"), "RuntimeDefault")
        assert.strictEqual(at(container, "securityContext", "runAsNonRoot"), true)
        assert.isUndefined(at(container, "securityContext", "runAsUser"))
        assert.strictEqual(at(container, "securityContext", "allowPrivilegeEscalation"), false)
        assert.strictEqual(at(container, "securityContext", "readOnlyRootFilesystem"), true)
        assert.deepStrictEqual(strings(at(container, "securityContext", "capabilities", "drop")), ["ALL"])
        assert.isUndefined(at(container, "securityContext", "capabilities", "add"))
        assert.strictEqual(at(daemonSet, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"), 1)
        // 10s shutdown bound, rounded up, plus the 10 s margin
        assert.strictEqual(at(pod, "spec", "terminationGracePeriodSeconds"), 20)
      })

      it("prepares the state directory in an init container that has CAP_CHOWN and nothing else", () => {
        const inits = list(at(pod, "spec", "initContainers"))
        assert.strictEqual(inits.length, 1)
        const init = inits[0]
        assert.strictEqual(at(init, "name"), "prepare-state")
        assert.strictEqual(at(init, "image"), at(container, "image"))
        assert.strictEqual(at(init, "securityContext", "runAsUser"), 0)
        assert.strictEqual(at(init, "securityContext", "allowPrivilegeEscalation"), false)
        assert.strictEqual(at(init, "securityContext", "readOnlyRootFilesystem"), true)
        assert.deepStrictEqual(strings(at(init, "securityContext", "capabilities", "drop")), ["ALL"])
        assert.deepStrictEqual(strings(at(init, "securityContext", "capabilities", "add")), ["CHOWN"])
        const command = strings(at(init, "command"))
        assert.deepStrictEqual([command[0], command[1]], ["node", "-e"])
        assert.deepStrictEqual(command.slice(3, 6), ["/var/lib/vk-sandbox", "65532", "65532"])
        const state = { name: "state", mountPath: "/var/lib/vk-sandbox" }
        const source = tlsSourceOf(name)
        if (source === "secret") {
          assert.deepStrictEqual(command.slice(6), [])
          return assert.deepStrictEqual(list(at(init, "volumeMounts")), [state])
        }
        // vkCocoon and hostPath (TLS-4): the host's pair is copied for the daemon's user; only
        // vk-cocoon's may be absent.
        assert.deepStrictEqual(command.slice(6), [
          source === "vkCocoon" ? "optional" : "required",
          "/run/vk-sandbox/host-tls/cert/vk-kubelet.crt",
          "/run/vk-sandbox/host-tls/key/vk-kubelet.key",
          "/run/vk-sandbox/tls"
        ])
        assert.deepStrictEqual(list(at(init, "volumeMounts")), [
          state,
          { name: "host-tls-cert", mountPath: "/run/vk-sandbox/host-tls/cert", readOnly: true },
          { name: "host-tls-key", mountPath: "/run/vk-sandbox/host-tls/key", readOnly: true },
          { name: "tls", mountPath: "/run/vk-sandbox/tls" }
        ])
        const volumes = list(at(pod, "spec", "volumes"))
        const volume = (volumeName: string) => volumes.find((v) => at(v, "name") === volumeName)
        assert.deepStrictEqual(at(volume("tls"), "emptyDir"), { medium: "Memory", sizeLimit: "1Mi" })
        for (const host of ["host-tls-cert", "host-tls-key"]) {
          assert.deepStrictEqual(at(volume(host), "hostPath"), {
            path: "/etc/cocoon/vk/tls",
            type: source === "vkCocoon" ? "DirectoryOrCreate" : "Directory"
          })
        }
        // The daemon sees the copy only, read-only; never the host's directory.
        const mounts = list(at(container, "volumeMounts"))
        assert.deepStrictEqual(mounts.find((m) => at(m, "name") === "tls"), { name: "tls", mountPath: "/etc/vk-sandbox/tls", readOnly: true })
        assert.isFalse(mounts.some((m) => text(at(m, "name")).startsWith("host-tls")))
      })

      it("runs only on nodes that opted in, with narrow tolerations", () => {
        assert.strictEqual(at(pod, "spec", "nodeSelector", "sandbox.cocoonstack.io/sandboxd"), "true")
        const tolerations = list(at(pod, "spec", "tolerations"))
        for (const toleration of tolerations) assert.notStrictEqual(text(at(toleration, "key")), "", "no toleration of every taint")
        assert.deepStrictEqual(tolerations, [{ key: "sandbox.cocoonstack.io/sandboxd", operator: "Exists" }])
      })

      it("a startup probe on /healthz gives the first start time before liveness applies", () => {
        assert.strictEqual(at(container, "startupProbe", "httpGet", "path"), "/healthz")
        assert.strictEqual(at(container, "startupProbe", "httpGet", "port"), "metrics")
        assert.isAtLeast(Number(at(container, "startupProbe", "failureThreshold")) * Number(at(container, "startupProbe", "periodSeconds")), 60)
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
        // An operator's pair is given as --tls-cert (strict, TLS-2); vk-cocoon's as the pair to
        // look for (TLS-4).
        const vkCocoonDefaults = ["/etc/cocoon/vk/tls/vk-kubelet.crt", "/etc/cocoon/vk/tls/vk-kubelet.key"]
        const [strict, looked] = tlsSourceOf(name) === "vkCocoon" ? [["", ""], tlsCopy] : [tlsCopy, vkCocoonDefaults]
        assert.deepStrictEqual([config.tlsCert, config.tlsKey], strict)
        assert.deepStrictEqual([config.vkCocoonTlsCert, config.vkCocoonTlsKey], looked)
        if (name === "tls-hostpath-client-ca") assert.strictEqual(config.clientCaFile, "/etc/vk-sandbox/client-ca/ca.crt")
      })

      it("RBAC: exactly the daemon's verbs; nodeinventories only when publishing; leases only in kube-node-lease", () => {
        const rules = list(at(find(docs, "ClusterRole")[0], "rules"))
        const resources = rules.flatMap((r) => strings(at(r, "resources")))
        assert.strictEqual(resources.includes("nodeinventories"), name === "publishing")
        assert.notInclude(resources, "leases", "no cluster-wide lease access")
        const pods = rules.find((r) => strings(at(r, "resources")).includes("pods"))
        assert.deepStrictEqual(strings(at(pods, "verbs")), ["get", "list", "watch", "delete"])
        const serviceAccount = at(find(docs, "ServiceAccount")[0], "metadata", "name")
        const binding = find(docs, "ClusterRoleBinding")[0]
        assert.strictEqual(at(binding, "subjects", 0, "name"), serviceAccount)
        const role = find(docs, "Role")[0]
        assert.strictEqual(at(role, "metadata", "namespace"), "kube-node-lease")
        assert.deepStrictEqual(list(at(role, "rules")), [{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] }])
        const roleBinding = find(docs, "RoleBinding")[0]
        assert.strictEqual(at(roleBinding, "metadata", "namespace"), "kube-node-lease")
        assert.strictEqual(at(roleBinding, "roleRef", "name"), at(role, "metadata", "name"))
        assert.deepStrictEqual(at(roleBinding, "subjects"), [{ kind: "ServiceAccount", name: serviceAccount, namespace: "vk-sandbox" }])
      })

      it("the node-restriction policy is on, is deploy/admission's policy, and is bound to this daemon's identity and suffix", () => {
        const policy = find(docs, "ValidatingAdmissionPolicy")[0]
        assert.deepStrictEqual(at(policy, "spec"), at(plainPolicy, "spec"))
        const binding = find(docs, "ValidatingAdmissionPolicyBinding")[0]
        assert.strictEqual(at(binding, "spec", "policyName"), at(policy, "metadata", "name"))
        assert.deepStrictEqual(strings(at(binding, "spec", "validationActions")), ["Deny"])
        assert.strictEqual(at(binding, "spec", "paramRef", "parameterNotFoundAction"), "Allow")
        const params = find(docs, "ConfigMap").find((cm) => at(cm, "metadata", "name") === at(binding, "spec", "paramRef", "name"))
        assert.strictEqual(at(params, "metadata", "namespace"), at(binding, "spec", "paramRef", "namespace"))
        const serviceAccount = text(at(find(docs, "ServiceAccount")[0], "metadata", "name"))
        assert.deepStrictEqual(at(params, "data"), {
          serviceAccount: `system:serviceaccount:vk-sandbox:${serviceAccount}`,
          nodeNameSuffix: env["VK_NODE_NAME"]?.replace(/^worker-7/, ""),
          allowUnboundTokens: "false"
        })
      })

      it("the token: a Secret only when the chart makes it; none at all for an explicitly open sandboxd", () => {
        assert.match(text(at(pod, "metadata", "annotations", "checksum/sandboxd-token")), /^[0-9a-f]{64}$/)
        // existing-secret and tls-secret name a Secret of the operator's; open has no token at all
        assert.strictEqual(find(docs, "Secret").length > 0, !["existing-secret", "tls-secret", "open"].includes(name))
        const tokenVolume = list(at(pod, "spec", "volumes")).find((v) => at(v, "name") === "sandboxd-token")
        assert.strictEqual(tokenVolume !== undefined, name !== "open")
        assert.strictEqual(env["SANDBOXD_TOKEN_FILE"] !== undefined, name !== "open")
      })
    })
  }
})

/** `helm template` of the chart with `--set` values (a token unless the case says otherwise). */
const render = (sets: ReadonlyArray<string>) => {
  const run = spawnSync(
    helmBin,
    ["template", "vk-sandbox", join(repoRoot, "deploy", "helm", "vk-sandbox"), "--namespace", "vk-sandbox", ...sets.flatMap((v) => ["--set", v])],
    { encoding: "utf8" }
  )
  const docs = run.status === 0
    ? manifests(run.stdout)
    : []
  return { ok: run.status === 0, stderr: run.stderr, docs }
}
const podOf = (docs: ReadonlyArray<unknown>) => at(find(docs, "DaemonSet")[0], "spec", "template", "spec")
const withToken = "sandboxd.token.value=t0ken"

describe.skipIf(helmBin === "")("chart values", () => {
  it("refuses to render without a token, an existing Secret or an explicit open sandboxd", () => {
    const bare = render([])
    assert.isFalse(bare.ok)
    assert.include(bare.stderr, "sandboxd.token: set existingSecret")
    assert.include(bare.stderr, "sandboxd.token.allowOpen=true")
    assert.isTrue(render(["sandboxd.token.allowOpen=true"]).ok)
    assert.isTrue(render(["sandboxd.token.existingSecret=mine"]).ok)
    assert.isTrue(render([withToken]).ok)
  })

  it("terminationGracePeriodSeconds: the shutdown bound in the daemon's duration grammar, rounded up, plus the margin", () => {
    const forms = ["10s", "500ms", "1.5s", "1m30s", "250us", "250µs", "250μs", "1500000ns", "0.5h", ".5s", "1.s", "2h45m0.5s", "+3s", "10.000000001s"]
    for (const form of forms) {
      const out = render([withToken, `shutdownTimeout=${form}`])
      assert.isTrue(out.ok, `${form}: ${out.stderr}`)
      const nanos = parseGoDurationNanos(form)
      if (Result.isFailure(nanos)) return assert.fail(`${form}: the daemon rejects it`)
      const expected = Math.ceil(Number(nanos.success) / 1e9) + 10
      assert.strictEqual(at(podOf(out.docs), "terminationGracePeriodSeconds"), expected, form)
      assert.include(strings(at(podOf(out.docs), "containers", 0, "args")), `--shutdown-timeout=${form}`)
    }
    assert.strictEqual(at(podOf(render([withToken, "shutdownTimeout=500ms"]).docs), "terminationGracePeriodSeconds"), 11)
    assert.strictEqual(at(podOf(render([withToken, "shutdownTimeout=1m30s"]).docs), "terminationGracePeriodSeconds"), 100)
    for (const bad of ["0", "0s", "-1s", "5", "1d", "s"]) {
      assert.isFalse(render([withToken, `shutdownTimeout=${bad}`]).ok, bad)
    }
  })

  it("works as a subchart: global and enabled are allowed", () => {
    const out = render([withToken, "global.imageRegistry=example.com", "enabled=true"])
    assert.isTrue(out.ok, out.stderr)
    assert.isFalse(render([withToken, "bogus=1"]).ok, "other unknown keys are still refused")
  })

  it("the admission policy can be turned off, and unbound tokens allowed only explicitly", () => {
    assert.strictEqual(find(render([withToken, "admissionPolicy.enabled=false"]).docs, "ValidatingAdmissionPolicy").length, 0)
    const open = render([withToken, "admissionPolicy.allowUnboundTokens=true"])
    assert.strictEqual(at(find(open.docs, "ConfigMap")[0], "data", "allowUnboundTokens"), "true")
    assert.isFalse(render([withToken, "node.nameSuffix="]).ok, "an empty suffix would name the host node itself")
  })

  it("node.hostIP replaces the Pod's status.hostIP wherever the daemon takes the host's address", () => {
    const container = at(podOf(render([withToken, "node.hostIP=127.0.0.1", "inventory.publish=true"]).docs), "containers", 0)
    const hostIp = list(at(container, "env")).find((e) => at(e, "name") === "HOST_IP")
    assert.isUndefined(at(hostIp, "valueFrom"), "no downward-API read the kubelet could refuse")
    const env = expandEnv(list(at(container, "env")))
    assert.strictEqual(env["VK_NODE_IP"], "127.0.0.1")
    assert.strictEqual(env["SANDBOXD_ADVERTISE_ADDR"], "127.0.0.1:7777")
    const byDefault = list(at(podOf(render([withToken]).docs), "containers", 0, "env")).find((e) => at(e, "name") === "HOST_IP")
    assert.strictEqual(at(byDefault, "valueFrom", "fieldRef", "fieldPath"), "status.hostIP")
  })

  it("the init container follows podSecurityContext's user and can be turned off", () => {
    const out = render([withToken, "podSecurityContext.runAsUser=4242", "podSecurityContext.runAsGroup=4343"])
    assert.deepStrictEqual(strings(at(podOf(out.docs), "initContainers", 0, "command")).slice(3, 6), ["/var/lib/vk-sandbox", "4242", "4343"])
    assert.isUndefined(at(podOf(render([withToken, "prepareState.enabled=false", "kubelet.tls.source=selfSigned"]).docs), "initContainers"))
    assert.isFalse(render([withToken, "podSecurityContext.runAsUser=0"]).ok, "the daemon never runs as root")
  })

  it("kubelet.tls.source: vk-cocoon's pair by default, copied by the root step; selfSigned never looks for it (TLS-4)", () => {
    const parsed = (docs: ReadonlyArray<unknown>) => {
      const container = at(podOf(docs), "containers", 0)
      const result = parseConfig(strings(at(container, "args")), expandEnv(list(at(container, "env"))))
      return Result.isSuccess(result) ? result.success : assert.fail(result.failure.message)
    }
    const byDefault = parsed(render([withToken]).docs)
    assert.deepStrictEqual([byDefault.tlsCert, byDefault.vkCocoonTlsCert, byDefault.vkCocoonTlsKey], ["", ...tlsCopy])

    const selfSigned = render([withToken, "kubelet.tls.source=selfSigned"])
    assert.deepStrictEqual([parsed(selfSigned.docs).tlsCert, parsed(selfSigned.docs).vkCocoonTlsCert, parsed(selfSigned.docs).vkCocoonTlsKey], ["", "", ""])
    assert.deepStrictEqual(strings(at(podOf(selfSigned.docs), "initContainers", 0, "command")).slice(6), [], "nothing copied")
    assert.isFalse(list(at(podOf(selfSigned.docs), "volumes")).some((v) => ["tls", "host-tls-cert", "host-tls-key"].includes(text(at(v, "name")))))

    // The pair's two halves may live apart; the init step sees each directory, read-only.
    const apart = render([withToken, "kubelet.tls.source=hostPath", "kubelet.tls.hostCertPath=/etc/pki/node.crt", "kubelet.tls.hostKeyPath=/etc/pki/private/node.key"])
    assert.isTrue(apart.ok, apart.stderr)
    assert.deepStrictEqual(strings(at(podOf(apart.docs), "initContainers", 0, "command")).slice(6), [
      "required",
      "/run/vk-sandbox/host-tls/cert/node.crt",
      "/run/vk-sandbox/host-tls/key/node.key",
      "/run/vk-sandbox/tls"
    ])
    const hostDirs = list(at(podOf(apart.docs), "volumes")).flatMap((v) => text(at(v, "name")).startsWith("host-tls") ? [at(v, "hostPath")] : [])
    assert.deepStrictEqual(hostDirs, [{ path: "/etc/pki", type: "Directory" }, { path: "/etc/pki/private", type: "Directory" }])

    // Without the root step nothing could read vk-cocoon's root-only key: the chart says so.
    for (const source of ["vkCocoon", "hostPath"]) {
      const refused = render([withToken, "prepareState.enabled=false", `kubelet.tls.source=${source}`])
      assert.isFalse(refused.ok, source)
      assert.include(refused.stderr, `kubelet.tls.source=${source} needs prepareState.enabled=true`)
    }
    assert.isTrue(render([withToken, "prepareState.enabled=false", "kubelet.tls.source=secret", "kubelet.tls.secretName=mine"]).ok)
    assert.isFalse(render([withToken, "kubelet.tls.hostCertPath=relative.crt"]).ok, "a host path is absolute")
    assert.isFalse(render([withToken, "kubelet.tls.source=files"]).ok, "an unknown source")
  })
})

/**
 * The upgrade from a root-run release: the rendered init container's command, run as uid 0 with
 * CAP_CHOWN as its only capability (as the chart grants it), on a root-owned state directory; then
 * the daemon's uid reads and rewrites the claims file. Needs root and setpriv.
 */
const isRoot = process.getuid?.() === 0
const hasSetpriv = spawnSync("setpriv", ["--version"]).error === undefined
const upgradeSkip = helmBin === "" ? "no helm" : !isRoot ? "not root" : !hasSetpriv ? "no setpriv" : ""
if (upgradeSkip !== "" && helmBin !== "") console.log(`state directory upgrade: SKIPPED (${upgradeSkip})`)

describe.skipIf(upgradeSkip !== "")("state directory upgrade", () => {
  const command = strings(at(podOf(render([withToken]).docs), "initContainers", 0, "command"))
  const onlyChown = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all,+chown"]
  const prepare = (dir: string) =>
    spawnSync("setpriv", [...onlyChown, "--", process.execPath, ...command.slice(1, 3), dir, ...command.slice(4, 6)], { encoding: "utf8" })
  const asDaemon = (script: string, dir: string) =>
    spawnSync("setpriv", ["--reuid=65532", "--regid=65532", "--clear-groups", "--", process.execPath, "-e", script, dir], { encoding: "utf8" })

  it("a root-owned 0700 directory with a 0600 claims file becomes the daemon's, modes kept, content intact", () => {
    const root = mkdtempSync(join(tmpdir(), "vk-upgrade-"))
    chmodSync(root, 0o711) // as /var/lib: others may pass through to the state directory
    try {
      const dir = join(root, "vk-sandbox")
      mkdirSync(dir, { mode: 0o700 })
      writeFileSync(join(dir, "claims.json"), "{\"version\":1}\n", { mode: 0o600 })
      assert.notStrictEqual(asDaemon("require('fs').readFileSync(process.argv[1] + '/claims.json')", dir).status, 0, "unreadable before")
      // Without CAP_CHOWN the command fails: the capability is what it needs.
      const denied = spawnSync("setpriv", ["--inh-caps=-all", "--bounding-set=-all", "--", process.execPath, ...command.slice(1, 3), dir, ...command.slice(4, 6)], {
        encoding: "utf8"
      })
      assert.strictEqual(denied.status, 1)
      assert.match(denied.stderr, /^prepare-state: .*EPERM/)

      const first = prepare(dir)
      assert.strictEqual(first.status, 0, first.stderr)
      for (const [path, mode] of [[dir, 0o700], [join(dir, "claims.json"), 0o600]] as const) {
        const stat = statSync(path)
        assert.deepStrictEqual([stat.uid, stat.gid, stat.mode & 0o777], [65532, 65532, mode], path)
      }
      const rewrite = asDaemon(
        "const fs = require('fs'); const f = process.argv[1] + '/claims.json'; const t = fs.readFileSync(f, 'utf8'); " +
          "fs.writeFileSync(f + '.tmp', t, { mode: 0o600 }); fs.renameSync(f + '.tmp', f); process.stdout.write(t)",
        dir
      )
      assert.strictEqual(rewrite.status, 0, rewrite.stderr)
      assert.strictEqual(rewrite.stdout, "{\"version\":1}\n")
      // Idempotent: a restart of the Pod changes nothing.
      const again = prepare(dir)
      assert.strictEqual(again.status, 0, again.stderr)
      assert.include(again.stdout, "(0 entries changed)")
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it("a fresh directory as the kubelet creates it (root, 0755) becomes the daemon's, 0700", () => {
    const root = mkdtempSync(join(tmpdir(), "vk-upgrade-"))
    chmodSync(root, 0o711) // as /var/lib: others may pass through to the state directory
    try {
      const dir = join(root, "vk-sandbox")
      mkdirSync(dir)
      chmodSync(dir, 0o755)
      const run = prepare(dir)
      assert.strictEqual(run.status, 0, run.stderr)
      const stat = statSync(dir)
      assert.deepStrictEqual([stat.uid, stat.gid, stat.mode & 0o777], [65532, 65532, 0o700])
      assert.strictEqual(asDaemon("require('fs').writeFileSync(process.argv[1] + '/claims.json', '{}', { mode: 0o600 })", dir).status, 0)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

/**
 * The copy of vk-cocoon's kubelet pair (TLS-4): the rendered init command, as uid 0 with CAP_CHOWN
 * only, reads the root-only pair and writes a copy only the daemon's uid can read, leaving
 * vk-cocoon's files as they were. Needs root and setpriv.
 */
describe.skipIf(upgradeSkip !== "")("kubelet pair copy", () => {
  const command = strings(at(podOf(render([withToken]).docs), "initContainers", 0, "command"))
  const onlyChown = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all,+chown"]
  const statOf = (path: string) => {
    const stat = statSync(path)
    return [stat.uid, stat.gid, stat.mode & 0o777]
  }
  const asDaemon = (path: string) =>
    spawnSync("setpriv", ["--reuid=65532", "--regid=65532", "--clear-groups", "--", process.execPath, "-e", "process.stdout.write(require('fs').readFileSync(process.argv[1], 'utf8'))", path], {
      encoding: "utf8"
    })

  it("copies vk-cocoon's root-only pair for the daemon's user alone, leaves the host's as it was, and drops a half that went away", () => {
    const root = mkdtempSync(join(tmpdir(), "vk-pair-"))
    chmodSync(root, 0o711)
    try {
      const state = join(root, "state")
      mkdirSync(state, { mode: 0o700 })
      // vk-cocoon's layout: a root-only directory, the key 0600.
      const host = join(root, "cocoon-tls")
      mkdirSync(host, { mode: 0o700 })
      writeFileSync(join(host, "vk-kubelet.crt"), "CERT\n", { mode: 0o644 })
      writeFileSync(join(host, "vk-kubelet.key"), "KEY\n", { mode: 0o600 })
      // The memory volume as the kubelet makes it: open to all.
      const dest = join(root, "tls")
      mkdirSync(dest)
      chmodSync(dest, 0o777)
      assert.notStrictEqual(asDaemon(join(host, "vk-kubelet.key")).status, 0, "the daemon cannot read vk-cocoon's key itself")

      const run = (mode: string) =>
        spawnSync("setpriv", [
          ...onlyChown,
          "--",
          process.execPath,
          ...command.slice(1, 3),
          state,
          ...command.slice(4, 6),
          mode,
          join(host, "vk-kubelet.crt"),
          join(host, "vk-kubelet.key"),
          dest
        ], { encoding: "utf8" })
      assert.strictEqual(command[6], "optional")
      for (const attempt of ["first", "again, over the earlier copy"]) {
        const copied = run("optional")
        assert.strictEqual(copied.status, 0, `${attempt}: ${copied.stderr}`)
        for (const [name, content] of [["tls.crt", "CERT\n"], ["tls.key", "KEY\n"]] as const) {
          assert.deepStrictEqual(statOf(join(dest, name)), [65532, 65532, 0o400], `${attempt}: ${name}`)
          assert.strictEqual(asDaemon(join(dest, name)).stdout, content, `${attempt}: ${name}`)
        }
      }
      assert.deepStrictEqual(readdirSync(dest).sort(), ["tls.crt", "tls.key"], "no temporary left")
      assert.deepStrictEqual(statOf(host), [0, 0, 0o700])
      assert.deepStrictEqual(statOf(join(host, "vk-kubelet.key")), [0, 0, 0o600])
      assert.strictEqual(readFileSync(join(host, "vk-kubelet.key"), "utf8"), "KEY\n")

      // vk-cocoon's key gone: no stale copy is served; the daemon finds the pair incomplete.
      rmSync(join(host, "vk-kubelet.key"))
      const optional = run("optional")
      assert.strictEqual(optional.status, 0, optional.stderr)
      assert.include(optional.stdout, "not copied (ENOENT)")
      assert.deepStrictEqual(readdirSync(dest), ["tls.crt"])
      // An operator's pair (hostPath) must be there.
      const required = run("required")
      assert.strictEqual(required.status, 1)
      assert.match(required.stderr, /^prepare-state: kubelet pair: cannot read .*vk-kubelet\.key: ENOENT/)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})
