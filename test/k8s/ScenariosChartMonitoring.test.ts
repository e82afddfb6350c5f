/**
 * The chart's monitoring switches on the real kube-apiserver, installed with the real helm as the
 * admin (MON-3 — every scrape is labelled job and node). Enabled on a cluster without the
 * Prometheus Operator's CRDs, the install succeeds, creates none of the operator's objects nor the
 * metrics Service, and its notes say what was skipped. Once CRDs of those kinds exist (minimal ones
 * of our own: the operator's are not fetched here), `helm upgrade` creates the ServiceMonitor, its
 * headless Service and the PrometheusRule, and the apiserver stores them: the rule as the plain
 * rule file's groups.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { join, resolve } from "node:path"
import { kube, uniqueName } from "./fixture/Kube.ts"
import { admin, createNamespace, eventually, kubeconfigPath, rawRequest, ScenarioFailed, tempDir } from "./scenarioHarness.ts"
import { ruleGroups } from "../support/Prometheus.ts"

const repoRoot = resolve(import.meta.dirname, "..", "..")
const group = "monitoring.coreos.com"
const kinds = [
  { kind: "ServiceMonitor", plural: "servicemonitors" },
  { kind: "PodMonitor", plural: "podmonitors" },
  { kind: "PrometheusRule", plural: "prometheusrules" }
] as const

/** A namespaced v1 CRD of the operator's group that keeps whatever it is given. */
const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
const crdOf = (kind: string, plural: string) => ({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: `${plural}.${group}` },
  spec: {
    group,
    scope: "Namespaced",
    names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
    versions: [{
      name: "v1",
      served: true,
      storage: true,
      schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } }
    }]
  }
})

/** The real helm against the suite's apiserver as the admin, with its own config and cache. */
const helm = (home: string, args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const binDir = process.env["VK_K8S_BIN"] ?? ""
    if (binDir === "") return yield* new ScenarioFailed({ message: "VK_K8S_BIN is not set: run with npm run test:k8s" })
    const kubeconfig = yield* kubeconfigPath("VK_K8S_ADMIN_KUBECONFIG")
    return yield* Effect.callback<string, ScenarioFailed>((resume) => {
      const child = execFile(
        join(binDir, "helm"),
        [...args, "--kubeconfig", kubeconfig],
        {
          maxBuffer: 16 * 1024 * 1024,
          env: { PATH: process.env["PATH"] ?? "", HOME: home, HELM_CACHE_HOME: join(home, "cache"), HELM_CONFIG_HOME: join(home, "config"), HELM_DATA_HOME: join(home, "data") }
        },
        (error, out, err) =>
          resume(error === null ? Effect.succeed(out) : Effect.fail(new ScenarioFailed({ message: `helm ${args[0]}: ${String(error)}\n${err}` })))
      )
      return Effect.sync(() => child.kill("SIGKILL"))
    })
  })

describe("the chart's monitoring on the real apiserver", () => {
  it.live("enabled without the operator's CRDs the install succeeds without them; with the CRDs an upgrade creates them", () =>
    Effect.scoped(Effect.gen(function*() {
      const { config, core, custom } = yield* admin
      const namespace = yield* createNamespace("monitoring")
      const release = uniqueName("mon")
      const home = yield* tempDir("vk-helm-home-")
      const chart = join(repoRoot, "deploy", "helm", "vk-sandbox")
      const values = ["--set", "sandboxd.token.value=monitoring-test-token", "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true"]
      const absent = (kind: string, plural: string) =>
        Effect.gen(function*() {
          const listed = yield* Effect.exit(kube(`list ${plural}`, () => custom.listNamespacedCustomObject({ group, version: "v1", namespace, plural })))
          // No CRD: the API does not exist (404). With the CRD: an empty list.
          if (listed._tag === "Failure") return true
          return ((listed.value as { readonly items?: ReadonlyArray<unknown> }).items ?? []).length === 0 || `${kind} present`
        })
      yield* Effect.addFinalizer(() =>
        Effect.andThen(
          Effect.ignore(helm(home, ["uninstall", release, "--namespace", namespace])),
          Effect.forEach(kinds, ({ plural }) => Effect.ignore(rawRequest(config, "DELETE", `${crdPath}/${plural}.${group}`)), { discard: true })
        )
      )

      // ---- no CRDs: the install goes through, and says what it skipped.
      const installed = yield* helm(home, ["install", release, chart, "--namespace", namespace, ...values])
      for (const kind of ["ServiceMonitor", "PrometheusRule"]) {
        assert.include(installed, `NOTE: ${kind} not created: the cluster does not serve monitoring.coreos.com/v1 ${kind}`)
      }
      assert.notInclude(installed, "NOTE: PodMonitor")
      const services = yield* kube("list services", () => core.listNamespacedService({ namespace }))
      assert.deepStrictEqual(services.items.map((s) => s.metadata?.name), [], "no metrics Service without the ServiceMonitor")
      for (const { kind, plural } of kinds) assert.isTrue(yield* absent(kind, plural), kind)

      // ---- the operator's CRDs arrive: an upgrade with the same values creates the objects.
      for (const { kind, plural } of kinds) {
        // As JSON on the wire: the client's typed models would drop x-kubernetes-preserve-unknown-fields.
        const created = yield* rawRequest(config, "POST", crdPath, crdOf(kind, plural))
        assert.strictEqual(created.status, 201, created.text)
      }
      yield* eventually("the CRDs served", Effect.gen(function*() {
        for (const { plural } of kinds) {
          const listed = yield* Effect.exit(kube(`list ${plural}`, () => custom.listNamespacedCustomObject({ group, version: "v1", namespace, plural })))
          if (listed._tag === "Failure") return false
        }
        return true
      }))
      const upgraded = yield* helm(home, ["upgrade", release, chart, "--namespace", namespace, ...values])
      assert.notInclude(upgraded, "NOTE: ServiceMonitor not created")
      const monitor = (yield* kube("read ServiceMonitor", () =>
        custom.getNamespacedCustomObject({ group, version: "v1", namespace, plural: "servicemonitors", name: `${release}-vk-sandbox` }))) as {
          readonly spec: { readonly endpoints: ReadonlyArray<{ readonly relabelings: ReadonlyArray<Record<string, unknown>> }> }
        }
      assert.deepStrictEqual(monitor.spec.endpoints[0]?.relabelings.map((r) => r["targetLabel"]), ["node", "job"])
      const service = yield* kube("read metrics Service", () => core.readNamespacedService({ namespace, name: `${release}-vk-sandbox-metrics` }))
      assert.strictEqual(service.spec?.clusterIP, "None")
      const rule = (yield* kube("read PrometheusRule", () =>
        custom.getNamespacedCustomObject({ group, version: "v1", namespace, plural: "prometheusrules", name: `${release}-vk-sandbox` }))) as {
          readonly spec: { readonly groups: unknown }
        }
      assert.deepStrictEqual(rule.spec.groups, ruleGroups())
      assert.isTrue(yield* absent("PodMonitor", "podmonitors"), "no PodMonitor unless asked for")
    })), { timeout: 180_000 })
})
