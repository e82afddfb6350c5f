/**
 * The alerting and recording rules of deploy/monitoring/: `promtool check rules`, `promtool test
 * rules` on rules.test.yaml, and what every alert must carry for an operator on day one: a
 * severity, a summary, a description naming the node, a runbook_url whose anchor is a section of
 * docs/operations.md, and unit tests in which it fires for one node and stays silent for another.
 *
 * Rules: MON-1 — every alert can be acted on from the page it sends; MON-3 — every scrape is
 * labelled job and node.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { parse } from "yaml"
import { alertRules, documentedDaemonSetRules, documentedScrapeConfigs, prometheusTool, repoRoot, required, type Rule, ruleGroups, rulesFile, runbookBase } from "../support/Prometheus.ts"

const promtool = prometheusTool("promtool")
const unitTests = path.join(import.meta.dirname, "rules.test.yaml")

/** GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as dashes. */
const anchorOf = (heading: string) => heading.trim().toLowerCase().replace(/[^a-z0-9 _-]/g, "").replace(/ /g, "-")
const operationsAnchors = new Set(
  [...fs.readFileSync(path.join(repoRoot, "docs", "operations.md"), "utf8").matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!))
)

/** An alert about the whole fleet (label scope="fleet"): it fires once, for no node. */
const isFleet = (rule: Rule) => rule.labels?.["scope"] === "fleet"

interface AlertCase {
  readonly alertname: string
  readonly exp_alerts?: ReadonlyArray<{ readonly exp_labels?: Record<string, string> }>
}
interface UnitTest {
  readonly name: string
  readonly input_series: ReadonlyArray<{ readonly series: string }>
  readonly alert_rule_test?: ReadonlyArray<AlertCase>
}

describe("alerting and recording rules", () => {
  it.skipIf("missing" in promtool && !required)("promtool check rules and promtool test rules pass", () => {
    assert.isTrue("path" in promtool, "missing" in promtool ? promtool.missing : "")
    if (!("path" in promtool)) return
    const check = spawnSync(promtool.path, ["check", "rules", rulesFile], { encoding: "utf8" })
    assert.strictEqual(check.status, 0, `${check.stdout}${check.stderr}`)
    const test = spawnSync(promtool.path, ["test", "rules", path.basename(unitTests)], { cwd: path.dirname(unitTests), encoding: "utf8" })
    assert.strictEqual(test.status, 0, `${test.stdout}${test.stderr}`)
  })

  it("every alert: severity, summary, a description naming the node, a runbook section of its own", () => {
    const alerts = alertRules()
    assert.isAtLeast(alerts.length, 14)
    for (const rule of alerts) {
      assert.match(rule.alert, /^VkSandbox[A-Z][A-Za-z]+$/, rule.alert)
      assert.include(["critical", "warning"], rule.labels?.["severity"], `${rule.alert} severity`)
      assert.isAbove((rule.annotations?.["summary"] ?? "").length, 0, `${rule.alert} summary`)
      // A fleet alert (no daemon scraped anywhere) has no node to name; it says it is the fleet's.
      if (isFleet(rule)) assert.notInclude(rule.annotations?.["description"] ?? "", "$labels.node", `${rule.alert} is the fleet's`)
      else assert.include(rule.annotations?.["description"] ?? "", "{{ $labels.node }}", `${rule.alert} names the node`)
      const anchor = rule.alert.toLowerCase()
      assert.strictEqual(rule.annotations?.["runbook_url"], `${runbookBase}#${anchor}`, `${rule.alert} runbook_url`)
      assert.isTrue(operationsAnchors.has(anchor), `docs/operations.md has a section for ${rule.alert}`)
    }
    assert.strictEqual(new Set(alerts.map((r) => r.alert)).size, alerts.length, "alert names are unique")
  })

  it("every alert has a unit test where it fires for one node while another stays silent, and one where it is quiet", () => {
    const tests = (parse(fs.readFileSync(unitTests, "utf8")) as { readonly tests: ReadonlyArray<UnitTest> }).tests
    for (const rule of alertRules()) {
      const alert = rule.alert
      const cases = tests.flatMap((t) => (t.alert_rule_test ?? []).filter((c) => c.alertname === alert).map((c) => ({ test: t, c })))
      const firing = cases.filter(({ c }) => (c.exp_alerts ?? []).length > 0)
      assert.isAbove(firing.length, 0, `${alert} fires in a test`)
      assert.isTrue(cases.some(({ c }) => (c.exp_alerts ?? []).length === 0), `${alert} is quiet in a test`)
      if (isFleet(rule)) {
        const labels = firing.flatMap(({ c }) => (c.exp_alerts ?? []).map((a) => a.exp_labels ?? {}))
        assert.isTrue(labels.every((l) => l["node"] === undefined && l["scope"] === "fleet"), `${alert} fires once, for no node`)
        continue
      }
      // In a firing case, some node of the input series is not among the alerts: it stayed silent.
      const silentNodeSomewhere = firing.some(({ c, test }) => {
        const fired = new Set((c.exp_alerts ?? []).map((a) => a.exp_labels?.["node"]))
        const nodes = new Set(test.input_series.map((s) => /node="([^"]+)"/.exec(s.series)?.[1]))
        return [...nodes].some((n) => n !== undefined && !fired.has(n))
      })
      assert.isTrue(silentNodeSomewhere, `${alert}: a node in the same test stays silent`)
    }
  })

  it("every recording rule is named level:metric:operations and checked on known rates", () => {
    const recorded = ruleGroups().flatMap((g) => g.rules.flatMap((r) => (r.record === undefined ? [] : [r.record])))
    assert.isAtLeast(recorded.length, 5)
    const tested = fs.readFileSync(unitTests, "utf8")
    for (const name of recorded) {
      assert.match(name, /^[a-z_]+:[a-z_]+:[a-z0-9_]+$/, name)
      assert.include(tested, `- expr: ${name}`, `${name} has a promql_expr_test`)
    }
  })
})

describe("the kube-state-metrics rule group in docs/operations.md", () => {
  it.skipIf("missing" in promtool && !required)("passes promtool check rules and its unit test; its runbook is a section", () => {
    assert.isTrue("path" in promtool, "missing" in promtool ? promtool.missing : "")
    if (!("path" in promtool)) return
    const group = documentedDaemonSetRules()
    assert.include(group, "alert: VkSandboxDaemonSetUnavailable")
    for (const [, anchor] of group.matchAll(/runbook_url: \S+#(\S+)/g)) assert.isTrue(operationsAnchors.has(anchor!), anchor)
    const dir = fs.mkdtempSync(path.join(process.env["TMPDIR"] ?? "/tmp", "vk-ksm-rules-"))
    try {
      fs.writeFileSync(path.join(dir, "daemonset.rules.yaml"), group)
      fs.copyFileSync(path.join(import.meta.dirname, "daemonset.test.yaml"), path.join(dir, "daemonset.test.yaml"))
      const check = spawnSync(promtool.path, ["check", "rules", "daemonset.rules.yaml"], { cwd: dir, encoding: "utf8" })
      assert.strictEqual(check.status, 0, `${check.stdout}${check.stderr}`)
      const test = spawnSync(promtool.path, ["test", "rules", "daemonset.test.yaml"], { cwd: dir, encoding: "utf8" })
      assert.strictEqual(test.status, 0, `${test.stdout}${test.stderr}`)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("the scrape configurations in docs/installation.md", () => {
  const configs = documentedScrapeConfigs()

  it("name the job vk-sandbox and give every target a node label", () => {
    assert.strictEqual(configs.length, 2, "the Kubernetes and the systemd configurations")
    for (const config of configs) {
      const jobs = (parse(config) as { readonly scrape_configs: ReadonlyArray<Record<string, unknown>> }).scrape_configs
      assert.deepStrictEqual(jobs.map((j) => j["job_name"]), ["vk-sandbox"])
      const text = JSON.stringify(jobs)
      assert.isTrue(
        text.includes("\"source_labels\":[\"__meta_kubernetes_pod_node_name\"],\"target_label\":\"node\"") || /"labels":\{"node":/.test(text),
        `a node label in ${text}`
      )
    }
  })

  // Debian's prometheus is built without Kubernetes discovery, so its promtool refuses
  // kubernetes_sd_configs; that configuration's relabeling runs in Prometheus.test.ts instead.
  it.skipIf("missing" in promtool && !required)("pass promtool check config, with the rule file (the static one)", () => {
    assert.isTrue("path" in promtool, "missing" in promtool ? promtool.missing : "")
    if (!("path" in promtool)) return
    const dir = fs.mkdtempSync(path.join(process.env["TMPDIR"] ?? "/tmp", "vk-scrape-"))
    try {
      const statics = configs.filter((c) => !c.includes("kubernetes_sd_configs"))
      assert.strictEqual(statics.length, 1)
      for (const [i, config] of statics.entries()) {
        const file = path.join(dir, `prometheus-${i}.yml`)
        fs.writeFileSync(file, `rule_files:\n  - ${rulesFile}\n${config}`)
        const check = spawnSync(promtool.path, ["check", "config", file], { encoding: "utf8" })
        assert.strictEqual(check.status, 0, `${config}\n${check.stdout}${check.stderr}`)
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
