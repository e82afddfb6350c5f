/**
 * The monitoring files (deploy/monitoring/: the rule file and the Grafana dashboard) and the real
 * Prometheus tools that check them: `promtool` and `prometheus` from Debian's `prometheus`
 * package, which `.ci/run` installs. Where they are absent a test is skipped with one line, except
 * under CI, where their absence fails: CI must run these checks.
 */
import { Effect, type Scope } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { parse, stringify } from "yaml"

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url))
export const monitoringDir = path.join(repoRoot, "deploy", "monitoring")
export const rulesFile = path.join(monitoringDir, "vk-sandbox.rules.yaml")
export const dashboardFile = path.join(monitoringDir, "vk-sandbox.dashboard.json")
/** The runbooks' default base; the chart swaps it for `metrics.prometheusRule.runbookBaseUrl`. */
export const runbookBase = "https://github.com/cocoonstack/vk-sandbox/blob/main/docs/operations.md"

/** A binary of the `prometheus` package: its path, or why it cannot be used. */
export const prometheusTool = (name: "promtool" | "prometheus"): { readonly path: string } | { readonly missing: string } => {
  const candidates = [process.env[`VK_${name.toUpperCase()}`] ?? "", `/usr/bin/${name}`, `/usr/local/bin/${name}`]
  for (const candidate of candidates) {
    if (candidate === "") continue
    const probe = spawnSync(candidate, ["--version"], { encoding: "utf8" })
    if (probe.status === 0) return { path: candidate }
  }
  return { missing: `${name} not found (apt-get install prometheus)` }
}

/** True when the tool must be there: under CI an absent tool fails instead of skipping. */
export const required = process.env["CI"] === "true"

export interface Rule {
  readonly alert?: string
  readonly record?: string
  readonly expr: string
  readonly for?: string
  readonly labels?: Record<string, string>
  readonly annotations?: Record<string, string>
}
export interface RuleGroup {
  readonly name: string
  readonly rules: ReadonlyArray<Rule>
}

export const ruleGroups = (): ReadonlyArray<RuleGroup> =>
  (parse(fs.readFileSync(rulesFile, "utf8")) as { readonly groups: ReadonlyArray<RuleGroup> }).groups

export const alertRules = (): ReadonlyArray<Rule & { readonly alert: string }> =>
  ruleGroups().flatMap((g) => g.rules.filter((r): r is Rule & { readonly alert: string } => r.alert !== undefined))

/** The `prometheus.yml` fragments with a `scrape_configs:` in the Monitoring section of docs/installation.md. */
export const documentedScrapeConfigs = (): ReadonlyArray<string> => {
  const installation = fs.readFileSync(path.join(repoRoot, "docs", "installation.md"), "utf8")
  const start = installation.indexOf("## Monitoring")
  const section = installation.slice(start, installation.indexOf("\n## ", start + 1))
  return [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((block) => block.includes("scrape_configs:"))
}

/** The rule group of docs/operations.md over kube-state-metrics' DaemonSet status (not in the rule file). */
export const documentedDaemonSetRules = (): string => {
  const operations = fs.readFileSync(path.join(repoRoot, "docs", "operations.md"), "utf8")
  const blocks = [...operations.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!)
  return blocks.find((block) => block.includes("kube_daemonset_status_number_unavailable")) ?? ""
}

/** Every PromQL expression of the dashboard's panels (and its variables' queries). */
export const dashboardExprs = (): ReadonlyArray<string> => {
  const dashboard = JSON.parse(fs.readFileSync(dashboardFile, "utf8")) as unknown
  const found: Array<string> = []
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk)
    if (value === null || typeof value !== "object") return
    // A data source variable's `query` is the plugin's name, not PromQL.
    if ((value as Record<string, unknown>)["type"] === "datasource") return
    for (const [key, inner] of Object.entries(value)) {
      if ((key === "expr" || key === "query") && typeof inner === "string") found.push(inner)
      else if (key === "definition" && typeof inner === "string") found.push(inner)
      else walk(inner)
    }
  }
  walk(dashboard)
  return found
}

/** Functions, keywords and aggregations of PromQL that look like names in an expression. */
const promqlWords = new Set([
  "sum", "avg", "min", "max", "count", "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
  "unless", "rate", "irate", "increase", "changes", "resets", "delta", "idelta", "histogram_quantile", "time",
  "clamp_min", "clamp_max", "abs", "topk", "bottomk", "label_values", "label_replace", "vector", "scalar",
  "max_over_time", "min_over_time", "avg_over_time", "absent", "offset", "bool", "le", "deriv", "sort", "sort_desc",
  "quantile", "count_values", "stddev", "round", "ceil", "floor"
])

/**
 * The metric names an expression reads: identifiers outside label matchers, strings and range
 * brackets that are neither PromQL words nor label names of a `by`/`without`/`on` list.
 * Recording-rule names (with colons) are returned too; the caller tells them apart.
 */
export const metricNames = (expr: string): ReadonlyArray<string> => {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, "\"\"")
    .replace(/\{[^}]*\}/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "")
    .replace(/\$\w+/g, "")
    // Grafana's label_values(metric, label): the label is not a metric.
    .replace(/label_values\(([^,)]*),[^)]*\)/g, "label_values($1)")
  const names = new Set<string>()
  for (const match of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = match[0]
    if (promqlWords.has(word) || /^\d/.test(word)) continue
    // A function call is a word followed by "(".
    const after = stripped.slice((match.index ?? 0) + word.length).trimStart()
    if (after.startsWith("(")) continue
    names.add(word)
  }
  return [...names]
}

/** The rule file with every alert's `for` cut to `holdFor`: a scenario sees transitions in seconds. */
export const shortenedRules = (holdFor: string): string =>
  stringify({
    groups: ruleGroups().map((group) => ({
      ...group,
      rules: group.rules.map((rule) => (rule.alert === undefined ? rule : { ...rule, for: holdFor }))
    }))
  })

export interface RunningPrometheus {
  readonly url: string
  /** GET on Prometheus' HTTP API (`/api/v1/...`): the `data` of a success, or undefined. */
  readonly api: (pathAndQuery: string) => Effect.Effect<unknown>
  readonly output: () => string
}

/**
 * A real Prometheus of its own, on loopback, with its own config and data directory in `dir`:
 * the package's service (if any) is never touched. Stopped with SIGTERM when the scope closes.
 */
export const runPrometheus = (
  binary: string,
  dir: string,
  config: string,
  port: number
): Effect.Effect<RunningPrometheus, never, Scope.Scope> =>
  Effect.gen(function*() {
    fs.writeFileSync(path.join(dir, "prometheus.yml"), config)
    let output = ""
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(binary, [
          `--config.file=${path.join(dir, "prometheus.yml")}`,
          `--storage.tsdb.path=${path.join(dir, "data")}`,
          `--web.listen-address=127.0.0.1:${port}`,
          "--log.level=warn"
        ], { stdio: ["ignore", "pipe", "pipe"] })
      ),
      (child) =>
        Effect.callback<void>((resume) => {
          if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
          child.once("close", () => resume(Effect.void))
          child.kill("SIGTERM")
        }).pipe(Effect.timeout("10 seconds"), Effect.ignore, Effect.andThen(Effect.sync(() => child.kill("SIGKILL"))))
    )
    const collect = (chunk: Buffer) => void (output += chunk.toString("utf8"))
    child.stdout.on("data", collect)
    child.stderr.on("data", collect)
    const url = `http://127.0.0.1:${port}`
    const api = (pathAndQuery: string): Effect.Effect<unknown> =>
      Effect.promise(() =>
        fetch(`${url}${pathAndQuery}`, { signal: AbortSignal.timeout(5_000) }).then(
          async (response) => {
            // Not JSON while it starts ("Service Unavailable"): no answer yet.
            const body = (await response.json().catch(() => ({}))) as { readonly status?: string; readonly data?: unknown }
            return body.status === "success" ? body.data : undefined
          },
          () => undefined
        )
      )
    return { url, api, output: () => output }
  })
