/**
 * The chart's monitoring objects, rendered by the helm binary test/helm/run.sh built: each
 * Prometheus Operator kind only when enabled AND served by the cluster (here `--api-versions`
 * plays the cluster), both monitors relabeling `node` and `job`, the PrometheusRule equal to the
 * plain rule file but for the runbook base, and the dashboard ConfigMap holding the plain JSON.
 *
 * Rules: MON-1 — every alert can be acted on from the page it sends; MON-3 — every scrape is
 * labelled job and node.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { join } from "node:path"
import { parse, parseAllDocuments } from "yaml"
import { dashboardFile, prometheusTool, repoRoot, required, ruleGroups, rulesFile, runbookBase } from "../support/Prometheus.ts"

const helmBin = process.env["VK_HELM_BIN"] ?? ""
const operatorKinds = ["ServiceMonitor", "PodMonitor", "PrometheusRule"] as const

const render = (sets: ReadonlyArray<string>, apiVersions: ReadonlyArray<string> = []) => {
  const run = spawnSync(
    helmBin,
    [
      "template", "vk-sandbox", join(repoRoot, "deploy", "helm", "vk-sandbox"), "--namespace", "vk-sandbox", "--kube-version", "1.30.0",
      "--set", "sandboxd.token.value=t0ken",
      ...sets.flatMap((v) => ["--set", v]),
      ...apiVersions.flatMap((kind) => ["--api-versions", `monitoring.coreos.com/v1/${kind}`])
    ],
    { encoding: "utf8" }
  )
  const docs = run.status === 0
    ? parseAllDocuments(run.stdout).map((doc) => doc.toJS() as Record<string, unknown> | null).filter((doc) => doc !== null)
    : []
  return { ok: run.status === 0, stderr: run.stderr, docs }
}
const kindsOf = (docs: ReadonlyArray<Record<string, unknown>>) => docs.map((d) => String(d["kind"]))
/** The one document of `kind`, read as the shape the test expects (rendered YAML is untyped). */
const one = <T>(docs: ReadonlyArray<Record<string, unknown>>, kind: string): T => {
  const found = docs.filter((d) => d["kind"] === kind)
  assert.strictEqual(found.length, 1, kind)
  return found[0] as T
}
interface Labelled {
  readonly metadata: { readonly namespace?: string; readonly labels: Record<string, string> }
}
interface Monitor extends Labelled {
  readonly spec: { readonly selector: { readonly matchLabels: unknown }; readonly endpoints?: unknown; readonly podMetricsEndpoints?: unknown }
}
interface RuleDoc extends Labelled {
  readonly spec: { readonly groups: ReadonlyArray<{ readonly rules: ReadonlyArray<{ readonly alert?: string; readonly annotations?: Record<string, string> }> }> }
}
interface HeadlessService extends Labelled {
  readonly spec: { readonly clusterIP: string; readonly selector: unknown }
}
interface DaemonSetDoc {
  readonly spec: { readonly template: { readonly spec: { readonly containers: ReadonlyArray<{ readonly ports: ReadonlyArray<{ readonly name: string }> }> } } }
}
interface DashboardMap extends Labelled {
  readonly data: Record<string, string>
}
const dashboardOf = (docs: ReadonlyArray<Record<string, unknown>>) =>
  docs.find((d) => d["kind"] === "ConfigMap" && String((d["metadata"] as { name?: string }).name).endsWith("-dashboard"))
const relabelings = [
  { action: "replace", sourceLabels: ["__meta_kubernetes_pod_node_name"], targetLabel: "node" },
  { action: "replace", targetLabel: "job", replacement: "vk-sandbox" }
]

describe.skipIf(helmBin === "")("chart monitoring", () => {
  it("off by default: no Service, monitor, rule or dashboard, even where the cluster serves the kinds", () => {
    const rendered = render([], operatorKinds)
    assert.isTrue(rendered.ok, rendered.stderr)
    for (const kind of [...operatorKinds, "Service"]) assert.notInclude(kindsOf(rendered.docs), kind)
    assert.isUndefined(dashboardOf(rendered.docs))
  })

  it("enabled where the cluster does not serve the operator's kinds: the install renders, without them", () => {
    const rendered = render(["metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true"])
    assert.isTrue(rendered.ok, rendered.stderr)
    for (const kind of [...operatorKinds, "Service"]) assert.notInclude(kindsOf(rendered.docs), kind)
    const pods = render(["metrics.podMonitor.enabled=true"])
    assert.isTrue(pods.ok, pods.stderr)
    assert.notInclude(kindsOf(pods.docs), "PodMonitor")
  })

  it("a ServiceMonitor over a headless Service, or a PodMonitor, each labelling node and job; never both", () => {
    const service = render(["metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=kps", "metrics.serviceMonitor.interval=15s"], operatorKinds)
    assert.isTrue(service.ok, service.stderr)
    const monitor = one<Monitor>(service.docs, "ServiceMonitor")
    assert.strictEqual(monitor.metadata.labels["release"], "kps")
    assert.deepStrictEqual(monitor.spec.endpoints, [{ port: "metrics", path: "/metrics", interval: "15s", relabelings }])
    const headless = one<HeadlessService>(service.docs, "Service")
    assert.strictEqual(headless.spec.clusterIP, "None")
    assert.deepStrictEqual(headless.spec.selector, monitor.spec.selector.matchLabels)
    assert.notInclude(kindsOf(service.docs), "PodMonitor")

    const pods = render(["metrics.podMonitor.enabled=true"], operatorKinds)
    assert.isTrue(pods.ok, pods.stderr)
    const podMonitor = one<Monitor>(pods.docs, "PodMonitor")
    assert.deepStrictEqual(podMonitor.spec.podMetricsEndpoints, [{ port: "metrics", path: "/metrics", interval: "30s", relabelings }])
    // The endpoint's port is the daemon container's port of that name.
    const container = one<DaemonSetDoc>(pods.docs, "DaemonSet").spec.template.spec.containers[0]
    assert.isTrue(container?.ports.some((p) => p.name === "metrics"))
    assert.notInclude(kindsOf(pods.docs), "Service")

    const both = render(["metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true"], operatorKinds)
    assert.isFalse(both.ok)
    assert.include(both.stderr, "choose one")
  })

  it("the PrometheusRule is the plain rule file, with the runbook base of the values", () => {
    const plain = ruleGroups()
    const byDefault = render(["metrics.prometheusRule.enabled=true"], operatorKinds)
    assert.isTrue(byDefault.ok, byDefault.stderr)
    assert.deepStrictEqual(one<RuleDoc>(byDefault.docs, "PrometheusRule").spec.groups, plain)

    const base = "https://runbooks.example.com/vk-sandbox/"
    const own = render(["metrics.prometheusRule.enabled=true", `metrics.prometheusRule.runbookBaseUrl=${base}`, "metrics.prometheusRule.labels.role=alert-rules"], operatorKinds)
    assert.isTrue(own.ok, own.stderr)
    const rule = one<RuleDoc>(own.docs, "PrometheusRule")
    assert.strictEqual(rule.metadata.labels["role"], "alert-rules")
    const swapped = JSON.parse(JSON.stringify(plain).replaceAll(`${runbookBase}#`, "https://runbooks.example.com/vk-sandbox#"))
    assert.deepStrictEqual(rule.spec.groups, swapped)
    for (const group of rule.spec.groups) {
      for (const r of group.rules) if (r.alert !== undefined) assert.match(r.annotations?.["runbook_url"] ?? "", /^https:\/\/runbooks\.example\.com\/vk-sandbox#vksandbox[a-z]+$/)
    }
  })

  const promtool = prometheusTool("promtool")
  it.skipIf("missing" in promtool && !required)("the rendered PrometheusRule's groups pass promtool check rules", () => {
    assert.isTrue("path" in promtool, "missing" in promtool ? promtool.missing : "")
    if (!("path" in promtool)) return
    const rendered = render(["metrics.prometheusRule.enabled=true"], operatorKinds)
    const dir = fs.mkdtempSync(join(process.env["TMPDIR"] ?? "/tmp", "vk-rule-"))
    try {
      const file = join(dir, "rendered.rules.yaml")
      fs.writeFileSync(file, JSON.stringify({ groups: one<RuleDoc>(rendered.docs, "PrometheusRule").spec.groups }))
      const check = spawnSync(promtool.path, ["check", "rules", file], { encoding: "utf8" })
      assert.strictEqual(check.status, 0, `${check.stdout}${check.stderr}`)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("the dashboard ConfigMap holds the plain JSON, labelled for Grafana's sidecar", () => {
    const rendered = render(["metrics.grafanaDashboard.enabled=true", "metrics.grafanaDashboard.namespace=grafana"])
    assert.isTrue(rendered.ok, rendered.stderr)
    const map = dashboardOf(rendered.docs) as DashboardMap | undefined
    assert.strictEqual(map?.metadata.namespace, "grafana")
    assert.strictEqual(map?.metadata.labels["grafana_dashboard"], "1")
    assert.deepStrictEqual(JSON.parse(map?.data["vk-sandbox.json"] ?? "null"), JSON.parse(fs.readFileSync(dashboardFile, "utf8")))
  })

  it("deploy/monitoring is the chart's files/monitoring: one copy of the rules and the dashboard", () => {
    const chartRules = join(repoRoot, "deploy", "helm", "vk-sandbox", "files", "monitoring", "vk-sandbox.rules.yaml")
    assert.strictEqual(fs.realpathSync(rulesFile), fs.realpathSync(chartRules))
    assert.deepStrictEqual(parse(fs.readFileSync(chartRules, "utf8")).groups, ruleGroups())
  })
})
