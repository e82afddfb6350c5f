/**
 * Tests over the rendered chart (test/helm/run.sh renders it with the helm binary built from Go
 * modules). The container's args and env are fed to the daemon's own CLI parser: every value the
 * chart can produce must be accepted.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Duration, Result } from "effect"
import { parseGoDurationNanos } from "../../src/Cli/GoDuration.ts"
import { parseConfig } from "../../src/Cli/ParseConfig.ts"
import { at, expandEnv, list, manifests, strings, text } from "../support/Rendered.ts"
import { find, helmBin, hooks, parsedLabels, podOf, render, renderDir, renders, repoRoot, withToken } from "./render.ts"

const plainPolicy = find(
  manifests(readFileSync(join(repoRoot, "deploy", "admission", "node-restriction.yaml"), "utf8")),
  "ValidatingAdmissionPolicy"
)[0]

/** The kubelet.tls.source each ci/*-values.yaml chooses (the default is vkCocoon). */
const tlsSourceOf = (name: string) => name === "tls-secret" ? "secret" : name === "tls-hostpath-client-ca" ? "hostPath" : "vkCocoon"
/** The sandboxd.token.source each ci/*-values.yaml comes to (a token value or Secret unless named). */
const tokenSourceOf = (name: string) => name === "open" ? "none" : ["host-file", "migrated"].includes(name) ? "hostFile" : "secret"
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
        // a tenth of the nodes at a time (rounded up), each ready 10 s before the rollout moves on
        assert.strictEqual(at(daemonSet, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"), "10%")
        assert.strictEqual(at(daemonSet, "spec", "minReadySeconds"), 10)
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
        // The host's own sandboxd token (DEP-2 — each host's own sandboxd token by default) and,
        // for vkCocoon and hostPath, the host's kubelet pair (TLS-4 — vk-cocoon's certificate is
        // reused when it is usable; only vk-cocoon's may be absent) are copied for the daemon's
        // user.
        const hostFile = tokenSourceOf(name) === "hostFile"
        const source = tlsSourceOf(name)
        assert.deepStrictEqual(command.slice(3), [
          "--",
          "--owner",
          "65532:65532",
          "--state",
          "/var/lib/vk-sandbox",
          ...(hostFile ? ["--copy", "/run/vk-sandbox/host-sandboxd-token", "/run/vk-sandbox/sandboxd/token"] : []),
          ...(source === "secret"
            ? []
            : [
              "--pair",
              source === "vkCocoon" ? "optional" : "required",
              "/run/vk-sandbox/host-tls/cert/vk-kubelet.crt",
              "/run/vk-sandbox/host-tls/key/vk-kubelet.key",
              "/run/vk-sandbox/tls"
            ])
        ])
        assert.deepStrictEqual(list(at(init, "volumeMounts")), [
          { name: "state", mountPath: "/var/lib/vk-sandbox" },
          ...(hostFile
            ? [
              { name: "host-sandboxd-token", mountPath: "/run/vk-sandbox/host-sandboxd-token", readOnly: true },
              { name: "sandboxd-token", mountPath: "/run/vk-sandbox/sandboxd" }
            ]
            : []),
          ...(source === "secret"
            ? []
            : [
              { name: "host-tls-cert", mountPath: "/run/vk-sandbox/host-tls/cert", readOnly: true },
              { name: "host-tls-key", mountPath: "/run/vk-sandbox/host-tls/key", readOnly: true },
              { name: "tls", mountPath: "/run/vk-sandbox/tls" }
            ])
        ])
        if (source === "secret") return
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

      it("probes wait 5 s for an answer (a heap trim pauses the daemon ~2.3 s after 10,000 Pods)", () => {
        for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"]) {
          assert.strictEqual(at(container, probe, "timeoutSeconds"), 5, probe)
        }
      })

      it("the memory request covers the measured peak RSS at the default node.pods (139 MB for 2000 Pods)", () => {
        assert.strictEqual(at(container, "resources", "requests", "memory"), "160Mi")
        assert.isAtLeast(160 * 1024 * 1024, 139e6)
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
        // node.names gives worker-7 its Go-era name (CFG-19 — a full node name per host);
        // --host-node-name is $HOST_NODE_NAME
        assert.strictEqual(config.nodeName, name === "migrated" ? "vk-sandboxd" : "worker-7-sandboxd")
        if (name === "migrated") assert.strictEqual(config.sandboxdProbeGrace, 5, "extraArgs after the chart's")
        assert.strictEqual(config.statePath, "/var/lib/vk-sandbox/claims.json")
        assert.strictEqual(config.listenAddr.port, 10260)
        // BIND-1 — bind addresses: both servers listen on the host's IP, where the apiserver and
        // the scrapers reach them.
        assert.deepStrictEqual([config.listenAddr.host, config.metricsAddr.host], ["10.0.0.5", "10.0.0.5"])
        assert.strictEqual(config.sandboxdUrl, "http://127.0.0.1:7777")
        assert.strictEqual(config.nodeLabels["sandbox.cocoonstack.io/runtime"], "sandboxd")
        assert.strictEqual(config.nodeLabels["node.kubernetes.io/exclude-from-external-load-balancers"], "true")
        if (name === "publishing") assert.strictEqual(config.sandboxdAdvertiseAddr, "10.0.0.5:7777")
        // An operator's pair is given as --tls-cert (strict; TLS-2 — which certificate);
        // vk-cocoon's as the pair to look for (TLS-4).
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
        // The kubelet API's reviews (KAPI-1 — who a kubelet API request comes from; KAPI-2 — every
        // request but /healthz is authorized for this node): create, and nothing else, on each.
        for (const [group, resource] of [["authentication.k8s.io", "tokenreviews"], ["authorization.k8s.io", "subjectaccessreviews"]]) {
          assert.deepStrictEqual(rules.filter((r) => strings(at(r, "resources")).includes(resource)), [
            { apiGroups: [group], resources: [resource], verbs: ["create"] }
          ])
        }
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

      it("the node-restriction policy is on, is deploy/admission's policy, and carries this daemon's identity, suffix and labels itself (DEP-1)", () => {
        const policy = find(docs, "ValidatingAdmissionPolicy")[0]
        const variable = (name: string) => text(at(list(at(policy, "spec", "variables")).find((v) => at(v, "name") === name), "expression"))
        // deploy/admission's is the defaults' policy: node.names (ci/migrated) is the one parameter to set aside
        const names = JSON.stringify(Object.fromEntries(text(env["VK_NODE_NAME_MAP"]).split(",").filter((i) => i !== "").map((i) => i.split("="))))
        assert.strictEqual(variable("nodeNames"), names)
        const withDefaultNames = {
          ...(at(policy, "spec") as object),
          variables: list(at(policy, "spec", "variables")).map((v) => (at(v, "name") === "nodeNames" ? { ...(v as object), expression: "{}" } : v))
        }
        assert.deepStrictEqual(withDefaultNames, at(plainPolicy, "spec"), "deploy/admission: regenerate with bash test/helm/plain-policy.sh")
        assert.isUndefined(at(policy, "spec", "paramKind"), "no parameter object another user could delete or edit")
        const binding = find(docs, "ValidatingAdmissionPolicyBinding")[0]
        assert.strictEqual(at(binding, "spec", "policyName"), at(policy, "metadata", "name"))
        assert.deepStrictEqual(strings(at(binding, "spec", "validationActions")), ["Deny"])
        assert.isUndefined(at(binding, "spec", "paramRef"))
        assert.strictEqual(find(docs, "ConfigMap").length, 0)
        const serviceAccount = text(at(find(docs, "ServiceAccount")[0], "metadata", "name"))
        assert.strictEqual(
          at(policy, "spec", "matchConditions", 0, "expression"),
          `request.userInfo.username == "system:serviceaccount:vk-sandbox:${serviceAccount}"`
        )
        assert.strictEqual(variable("suffix"), JSON.stringify(env["VK_NODE_NAME"]?.replace(/^worker-7/, "")))
        assert.strictEqual(variable("allowUnboundTokens"), "false")
        assert.deepStrictEqual(JSON.parse(variable("ownLabelKeys")), ["type", "kubernetes.io/role", "kubernetes.io/hostname", ...Object.keys(parsedLabels(args)).sort()])
      })

      it("helm test: the image's node runs the health check, not as root, under an account that reads only this DaemonSet and lists Pods", () => {
        const [testPod] = hooks(docs, "Pod")
        assert.strictEqual(at(testPod, "metadata", "annotations", "helm.sh/hook"), "test")
        const selector = at(daemonSet, "spec", "selector", "matchLabels") as Record<string, unknown>
        for (const key of Object.keys(selector)) assert.isUndefined(at(testPod, "metadata", "labels", key), "the DaemonSet would adopt it")
        const test = at(testPod, "spec", "containers", 0)
        const command = strings(at(test, "command"))
        assert.deepStrictEqual([command[0], command[1], ...command.slice(3)], ["node", "-e", "--", "vk-sandbox", text(at(daemonSet, "metadata", "name")), "10261"])
        assert.include(command[2], "health-check")
        assert.strictEqual(at(test, "image"), at(container, "image"))
        assert.strictEqual(at(testPod, "spec", "securityContext", "runAsNonRoot"), true)
        assert.strictEqual(at(test, "securityContext", "readOnlyRootFilesystem"), true)
        assert.deepStrictEqual(strings(at(test, "securityContext", "capabilities", "drop")), ["ALL"])
        const account = text(at(testPod, "spec", "serviceAccountName"))
        assert.strictEqual(at(hooks(docs, "ServiceAccount")[0], "metadata", "name"), account)
        assert.deepStrictEqual(list(at(hooks(docs, "Role")[0], "rules")), [
          { apiGroups: ["apps"], resources: ["daemonsets"], resourceNames: [text(at(daemonSet, "metadata", "name"))], verbs: ["get"] },
          { apiGroups: [""], resources: ["pods"], verbs: ["list"] }
        ])
        assert.deepStrictEqual(at(hooks(docs, "RoleBinding")[0], "subjects"), [{ kind: "ServiceAccount", name: account, namespace: "vk-sandbox" }])
        // the daemon's way to the apiserver, where a host has no kube-proxy (ci/migrated)
        const testEnv = expandEnv(list(at(test, "env")))
        assert.strictEqual(testEnv["KUBERNETES_SERVICE_HOST"], name === "migrated" ? "10.0.0.1" : undefined)
      })

      it("the token: the host's own file by default, a Secret only when asked for, none for an explicitly open sandboxd (DEP-2)", () => {
        assert.match(text(at(pod, "metadata", "annotations", "checksum/sandboxd-token")), /^[0-9a-f]{64}$/)
        const source = tokenSourceOf(name)
        // existing-secret and tls-secret name a Secret of the operator's
        assert.strictEqual(find(docs, "Secret").length > 0, source === "secret" && !["existing-secret", "tls-secret"].includes(name))
        const volumes = list(at(pod, "spec", "volumes"))
        const volume = (volumeName: string) => volumes.find((v) => at(v, "name") === volumeName)
        // one place for the daemon, whichever the source: the Secret, or the copy of the host's file
        assert.strictEqual(at(volume("sandboxd-token"), "secret") !== undefined, source === "secret")
        assert.strictEqual(at(volume("sandboxd-token"), "emptyDir") !== undefined, source === "hostFile")
        assert.strictEqual(env["SANDBOXD_TOKEN_FILE"], source === "none" ? undefined : `/etc/vk-sandbox/sandboxd/${name === "existing-secret" ? "api-token" : "token"}`)
        const mounts = list(at(container, "volumeMounts"))
        assert.deepStrictEqual(
          mounts.find((m) => at(m, "name") === "sandboxd-token"),
          source === "none" ? undefined : { name: "sandboxd-token", mountPath: "/etc/vk-sandbox/sandboxd", readOnly: true }
        )
        if (source === "hostFile") {
          // the host's file, read only by the init container; the daemon's copy in memory
          assert.deepStrictEqual(at(volume("host-sandboxd-token"), "hostPath"), { path: "/etc/vk-sandbox/sandboxd-token", type: "File" })
          assert.deepStrictEqual(at(volume("sandboxd-token"), "emptyDir"), { medium: "Memory", sizeLimit: "1Mi" })
          assert.isUndefined(mounts.find((m) => at(m, "name") === "host-sandboxd-token"), "the daemon never sees the host file")
        }
      })
    })
  }
})

/** `--set` values and what the refusal says: each must fail to render, saying it. */
type Refusals = ReadonlyArray<readonly [ReadonlyArray<string>, string]>
const assertRefused = (refusals: Refusals) => {
  for (const [sets, message] of refusals) {
    const out = render(sets)
    assert.isFalse(out.ok, sets.join(" "))
    assert.include(out.stderr, message, sets.join(" "))
  }
}

describe.skipIf(helmBin === "")("chart values", () => {
  it("the token source: the host's file unless a Secret or an open sandboxd is asked for; contradictions refused (DEP-2)", () => {
    /** Where the daemon's token comes from: the volume behind its token file, or none. */
    const tokenSource = (sets: ReadonlyArray<string>) => {
      const out = render(sets)
      assert.isTrue(out.ok, `${sets.join(" ")}: ${out.stderr}`)
      const spec = podOf(out.docs)
      if (expandEnv(list(at(spec, "containers", 0, "env")))["SANDBOXD_TOKEN_FILE"] === undefined) return "none"
      const volume = list(at(spec, "volumes")).find((v) => at(v, "name") === "sandboxd-token")
      return at(volume, "secret") !== undefined ? "secret" : at(volume, "emptyDir") !== undefined ? "hostFile" : "?"
    }
    assert.strictEqual(tokenSource([]), "hostFile", "new installs: each host's own token")
    assert.strictEqual(tokenSource(["sandboxd.token.source=hostFile"]), "hostFile")
    assert.strictEqual(tokenSource(["sandboxd.token.existingSecret=mine"]), "secret", "an upgrade that named a Secret keeps it")
    assert.strictEqual(tokenSource([withToken]), "secret")
    assert.strictEqual(tokenSource(["sandboxd.token.allowOpen=true"]), "none")
    assert.strictEqual(tokenSource(["sandboxd.token.source=none"]), "none")
    const hostPath = render(["sandboxd.token.hostPath=/etc/sandboxd/node-token"])
    const volume = list(at(podOf(hostPath.docs), "volumes")).find((v) => at(v, "name") === "host-sandboxd-token")
    assert.strictEqual(at(volume, "hostPath", "path"), "/etc/sandboxd/node-token")
    const refusals: Refusals = [
      [["sandboxd.token.existingSecret=mine", withToken], "not both"],
      [["sandboxd.token.source=secret"], "needs existingSecret"],
      [["sandboxd.token.source=hostFile", withToken], "are for source"],
      [["sandboxd.token.source=none", "sandboxd.token.existingSecret=mine"], "are for source"],
      [["sandboxd.token.source=hostFile", "sandboxd.token.allowOpen=true"], "allowOpen means"],
      [["prepareState.enabled=false"], "needs prepareState.enabled"],
      [["sandboxd.token.source=file"], "source"],
      [["sandboxd.token.hostPath=relative"], "hostPath"]
    ]
    assertRefused(refusals)
  })

  it("needs Kubernetes 1.30 (the admission policy and node-bound tokens)", () => {
    assert.include(render([], "1.29.9").stderr, "kubeVersion")
    assert.isTrue(render([], "1.30.0").ok)
  })

  it("refuses values that would be ignored or widen rights: an unnamed existing account, a short grace, reserved node labels", () => {
    const refusals: Refusals = [
      [["serviceAccount.create=false"], "serviceAccount.name is required"],
      [["terminationGraceExtraSeconds=5"], "terminationGraceExtraSeconds"],
      [["node.labels.node-role\\.kubernetes\\.io/worker=x"], "invalid propertyName 'node-role.kubernetes.io/worker'"],
      [["node.labels.a\\.node-restriction\\.kubernetes\\.io/x=y"], "invalid propertyName"],
      [["node.names.worker-7=Not_A_Name"], "/node/names/worker-7"],
      [["node.names.worker-7=vk-x", "node.names.worker-8=vk-x"], "both map to vk-x"],
      [["node.names.worker-7=worker-7"], "but worker-7 is a host's name"],
      [["node.names.worker-7=worker-8", "node.names.worker-8=vk-8"], "but worker-8 is a host's name"],
      [["updateStrategy.maxUnavailable=0"], "maxUnavailable"],
      [["updateStrategy.maxUnavailable=150%"], "maxUnavailable"],
      [["extraArgs[0]=stray"], "extraArgs"]
    ]
    assertRefused(refusals)
    const existing = render(["serviceAccount.create=false", "serviceAccount.name=vk-daemon"])
    assert.strictEqual(at(podOf(existing.docs), "serviceAccountName"), "vk-daemon")
    assert.strictEqual(find(existing.docs, "ServiceAccount").length, 0)
    assert.strictEqual(at(podOf(render(["terminationGraceExtraSeconds=6"]).docs), "terminationGracePeriodSeconds"), 16)
    assert.strictEqual(at(find(render(["updateStrategy.maxUnavailable=3"]).docs, "DaemonSet")[0], "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"), 3)
  })

  it("extraArgs, extraVolumes and extraVolumeMounts reach the daemon; node.names reaches the daemon and the policy (CFG-19, DEP-3)", () => {
    const out = render([
      "extraArgs[0]=--watch-check-interval=1m",
      "extraVolumes[0].name=extra",
      "extraVolumes[0].emptyDir.medium=Memory",
      "extraVolumeMounts[0].name=extra",
      "extraVolumeMounts[0].mountPath=/extra",
      "node.names.worker-7=vk-sandboxd"
    ])
    assert.isTrue(out.ok, out.stderr)
    const pod = podOf(out.docs)
    const args = strings(at(pod, "containers", 0, "args"))
    assert.strictEqual(args.at(-1), "--watch-check-interval=1m")
    assert.deepStrictEqual(list(at(pod, "volumes")).at(-1), { name: "extra", emptyDir: { medium: "Memory" } })
    assert.deepStrictEqual(list(at(pod, "containers", 0, "volumeMounts")).at(-1), { name: "extra", mountPath: "/extra" })
    const env = expandEnv(list(at(pod, "containers", 0, "env")))
    assert.strictEqual(env["VK_NODE_NAME_MAP"], "worker-7=vk-sandboxd")
    const parsed = parseConfig(args, env)
    if (Result.isFailure(parsed)) return assert.fail(parsed.failure.message)
    assert.strictEqual(parsed.success.nodeName, "vk-sandboxd")
    assert.strictEqual(Number(Duration.toSeconds(parsed.success.watchCheckInterval)), 60)
    const policy = find(out.docs, "ValidatingAdmissionPolicy")[0]
    const nodeNames = list(at(policy, "spec", "variables")).find((v) => at(v, "name") === "nodeNames")
    assert.strictEqual(at(nodeNames, "expression"), `{"worker-7":"vk-sandboxd"}`)
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

  it("BIND-1: bind addresses from values; loopback moves the probes with the metrics server", () => {
    const loopback = render([withToken, "kubelet.bindAddress=127.0.0.1", "metrics.bindAddress=127.0.0.1"])
    assert.isTrue(loopback.ok, loopback.stderr)
    const container = at(podOf(loopback.docs), "containers", 0)
    const env = expandEnv(list(at(container, "env")))
    const parsed = parseConfig(strings(at(container, "args")), env)
    if (Result.isFailure(parsed)) return assert.fail(parsed.failure.message)
    assert.deepStrictEqual([parsed.success.listenAddr.host, parsed.success.metricsAddr.host], ["127.0.0.1", "127.0.0.1"])
    for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"]) {
      assert.strictEqual(at(container, probe, "httpGet", "host"), "127.0.0.1", probe)
    }
    // A host IP given in values is where both listen, and so where the probes go.
    const given = at(podOf(render([withToken, "node.hostIP=127.0.0.1"]).docs), "containers", 0)
    const givenConfig = parseConfig(strings(at(given, "args")), expandEnv(list(at(given, "env"))))
    if (Result.isFailure(givenConfig)) return assert.fail(givenConfig.failure.message)
    assert.deepStrictEqual([givenConfig.success.listenAddr.host, givenConfig.success.metricsAddr.host], ["127.0.0.1", "127.0.0.1"])
    assert.strictEqual(at(given, "readinessProbe", "httpGet", "host"), "127.0.0.1")
    const everywhere = at(podOf(render([withToken, "metrics.bindAddress=0.0.0.0"]).docs), "containers", 0)
    assert.isUndefined(at(everywhere, "livenessProbe", "httpGet", "host"), "a wildcard is reached on the Pod IP")
    assert.isUndefined(at(podOf(render([withToken]).docs), "containers", 0, "livenessProbe", "httpGet", "host"))
    assert.isFalse(render([withToken, "kubelet.bindAddress=node-1.example"]).ok, "a host name is refused")
  })

  it("works as a subchart: global and enabled are allowed", () => {
    const out = render([withToken, "global.imageRegistry=example.com", "enabled=true"])
    assert.isTrue(out.ok, out.stderr)
    assert.isFalse(render([withToken, "bogus=1"]).ok, "other unknown keys are still refused")
  })

  it("the admission policy can be turned off, and unbound tokens allowed only explicitly", () => {
    assert.strictEqual(find(render([withToken, "admissionPolicy.enabled=false"]).docs, "ValidatingAdmissionPolicy").length, 0)
    const open = render([withToken, "admissionPolicy.allowUnboundTokens=true"])
    const variable = list(at(find(open.docs, "ValidatingAdmissionPolicy")[0], "spec", "variables")).find((v) => at(v, "name") === "allowUnboundTokens")
    assert.strictEqual(at(variable, "expression"), "true")
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
    assert.deepStrictEqual(strings(at(podOf(out.docs), "initContainers", 0, "command")).slice(3, 8), ["--", "--owner", "4242:4343", "--state", "/var/lib/vk-sandbox"])
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
    assert.notInclude(strings(at(podOf(selfSigned.docs), "initContainers", 0, "command")), "--pair", "no pair copied")
    assert.isFalse(list(at(podOf(selfSigned.docs), "volumes")).some((v) => ["tls", "host-tls-cert", "host-tls-key"].includes(text(at(v, "name")))))

    // The pair's two halves may live apart; the init step sees each directory, read-only.
    const apart = render([withToken, "kubelet.tls.source=hostPath", "kubelet.tls.hostCertPath=/etc/pki/node.crt", "kubelet.tls.hostKeyPath=/etc/pki/private/node.key"])
    assert.isTrue(apart.ok, apart.stderr)
    const apartCommand = strings(at(podOf(apart.docs), "initContainers", 0, "command"))
    assert.deepStrictEqual(apartCommand.slice(apartCommand.indexOf("--pair") + 1), [
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
