/**
 * The monitoring files against the running daemon (MON-2 — what the rules and the dashboard read
 * is served; MON-3 — every scrape is labelled job and node): every metric they read is served,
 * and a real Prometheus scraping it every second with the rule file (each `for` cut to 2 s) fires
 * and resolves VkSandboxSandboxdUnreachable and VkSandboxClaimsInDoubt as sandboxd stops, slows
 * and recovers; every rule and dashboard query evaluates. Transitions are waited for through
 * Prometheus' API. Without Prometheus the scenario is skipped with one line, except under CI.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { serve as serveSandboxd } from "../../testkit/Simulators/Sandboxd/Server.ts"
import {
  type Cluster,
  createPod,
  type Daemon,
  freePort,
  getPod,
  httpGet,
  spawnDaemon,
  startCluster,
  waitFor
} from "../../testkit/Demo/Harness.ts"
import { parse, stringify } from "yaml"
import {
  alertRules,
  dashboardExprs,
  documentedScrapeConfigs,
  metricNames,
  prometheusTool,
  required,
  ruleGroups,
  runPrometheus,
  shortenedRules
} from "../support/Prometheus.ts"

/** The host node the scrape labels the daemon with, as the chart's relabeling would. */
const HOST_NODE = "worker-7"
/** Long enough for a slow CI machine; only a hung scenario reaches it. */
const WAIT = "90 seconds"

/** sandboxd's simulator served on a port this test can stop and start again (a sandboxd restart). */
const stoppableSandboxd = (cluster: Cluster) =>
  Effect.gen(function*() {
    let scope = yield* Scope.make()
    const first = yield* serveSandboxd(cluster.sandboxd, { host: "127.0.0.1", port: 0 }).pipe(Scope.provide(scope), Effect.orDie)
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    return {
      url: first.url,
      stop: Effect.suspend(() => Scope.close(scope, Exit.void)),
      start: Effect.gen(function*() {
        scope = yield* Scope.make()
        yield* serveSandboxd(cluster.sandboxd, { host: "127.0.0.1", port: first.port }).pipe(Scope.provide(scope), Effect.orDie)
      })
    }
  })

/** A daemon that has created a Pod, against a sandboxd the test can stop, slow down and bring back. */
const world = Effect.gen(function*() {
  const cluster = yield* startCluster({ warmPerPool: 4 })
  const sandboxd = yield* stoppableSandboxd(cluster)
  const daemon = yield* spawnDaemon({ ...cluster, sandboxdUrl: sandboxd.url }, {
    extraArgs: [
      "--sandboxd-probe-interval", "200ms",
      "--sandboxd-probe-grace", "2",
      "--sandboxd-timeout", "1s",
      "--claim-settle-time", "1s"
    ]
  })
  yield* waitFor("startup", "/readyz 200", httpGet(`${daemon.metricsUrl}/readyz`).pipe(Effect.map(Option.filter((r) => r.status === 200))), {
    timeout: WAIT,
    describe: daemon.output
  })
  yield* createPod(cluster, "first pod", "first")
  yield* running(cluster, daemon, "first")
  return { cluster, sandboxd, daemon }
})

const running = (cluster: Cluster, daemon: Daemon, name: string) =>
  waitFor(name, `${name} Running`, Effect.sync(() => Option.filter(getPod(cluster, name), (p) => p.phase === "Running")), {
    timeout: WAIT,
    describe: daemon.output
  })

/** The names of every sample line in a Prometheus text body (histograms' _bucket, _sum, _count included). */
const seriesNames = (body: string) =>
  new Set(body.split("\n").filter((l) => l !== "" && !l.startsWith("#")).map((l) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l)?.[0] ?? ""))

const liveMetrics = (daemon: Daemon) =>
  Effect.map(httpGet(`${daemon.metricsUrl}/metrics`), (r) => Option.getOrThrow(r).body)

/**
 * The Kubernetes scrape job of docs/installation.md with its relabeling as written, its Pod
 * discovery played by one static target carrying the labels discovery gives the daemon's Pod
 * (Debian's Prometheus has no Kubernetes discovery, and there is no cluster here): `node` must come
 * from the documented relabeling, as it would from `__meta_kubernetes_pod_node_name`.
 */
const documentedPodJob = (target: string) => {
  const documented = documentedScrapeConfigs().find((c) => c.includes("kubernetes_sd_configs")) ?? ""
  const job = (parse(documented) as { readonly scrape_configs: ReadonlyArray<Record<string, unknown>> }).scrape_configs[0] ?? {}
  return {
    job_name: job["job_name"],
    static_configs: [{
      targets: [target],
      labels: {
        __meta_kubernetes_pod_node_name: HOST_NODE,
        __meta_kubernetes_pod_label_app_kubernetes_io_name: "vk-sandbox",
        __meta_kubernetes_pod_container_port_name: "metrics",
        __meta_kubernetes_pod_name: "vk-sandbox-x7k2p"
      }
    }],
    relabel_configs: job["relabel_configs"]
  }
}

/** Series Prometheus makes itself for every target, not the daemon. */
const prometheusOwn = new Set(["up"])

describe("monitoring against a running daemon", () => {
  it.live("every metric name the rules and the dashboard read is served by a daemon that created a Pod and saw sandboxd fail", () =>
    Effect.scoped(Effect.gen(function*() {
      const { daemon, sandboxd } = yield* world
      yield* sandboxd.stop
      // The probe's failure is counted: sandboxd's errors are a family that appears with the first.
      const body = yield* waitFor("sandboxd stopped", "a sandboxd failure in /metrics", Effect.map(liveMetrics(daemon), (b) =>
        /^vk_sandbox_sandboxd_errors_total\{/m.test(b) ? Option.some(b) : Option.none()), { timeout: WAIT, describe: daemon.output })
      const served = seriesNames(body)
      const recorded = new Set(ruleGroups().flatMap((g) => g.rules.flatMap((r) => (r.record === undefined ? [] : [r.record]))))
      const exprs = [...ruleGroups().flatMap((g) => g.rules.map((r) => r.expr)), ...dashboardExprs()]
      const read = new Set(exprs.flatMap(metricNames))
      assert.isAbove(read.size, 25, "the expressions were read")
      for (const name of read) {
        if (prometheusOwn.has(name)) continue
        if (name.includes(":")) assert.isTrue(recorded.has(name), `${name} is a recording rule of the rule file`)
        else assert.isTrue(served.has(name), `${name} in the live /metrics`)
      }
    })), { timeout: 120_000 })

  const prometheus = prometheusTool("prometheus")
  it.live.skipIf("missing" in prometheus && !required)(
    "a real Prometheus: stopping sandboxd fires its alert and starting it resolves it; a slow sandboxd fires the in-doubt alert",
    () =>
      Effect.scoped(Effect.gen(function*() {
        assert.isTrue("path" in prometheus, "missing" in prometheus ? prometheus.missing : "")
        if (!("path" in prometheus)) return
        const { cluster, daemon, sandboxd } = yield* world
        const dir = fs.mkdtempSync(path.join(cluster.dir, "prometheus-"))
        fs.writeFileSync(path.join(dir, "vk-sandbox.rules.yaml"), shortenedRules("2s"))
        const metricsTarget = daemon.metricsUrl.replace("http://", "")
        const server = yield* runPrometheus(prometheus.path, dir, stringify({
          global: { scrape_interval: "1s", evaluation_interval: "1s" },
          rule_files: [path.join(dir, "vk-sandbox.rules.yaml")],
          scrape_configs: [documentedPodJob(metricsTarget)]
        }), yield* freePort)
        const describeAll = () => `prometheus: ${server.output()}\ndaemon: ${daemon.output().slice(-4000)}`

        /** The alert `name` in Prometheus' active alerts (pending or firing), by its state. */
        const alert = (name: string, state: "firing" | "pending") =>
          Effect.map(server.api("/api/v1/alerts"), (data) => {
            const alerts = (data as { readonly alerts?: ReadonlyArray<Alert> } | undefined)?.alerts ?? []
            return Option.fromNullishOr(alerts.find((a) => a.labels["alertname"] === name && a.state === state))
          })
        const gone = (name: string) =>
          Effect.map(server.api("/api/v1/alerts"), (data) => {
            const alerts = (data as { readonly alerts?: ReadonlyArray<Alert> } | undefined)?.alerts
            return alerts !== undefined && !alerts.some((a) => a.labels["alertname"] === name) ? Option.some(true) : Option.none()
          })
        const wait = <A>(step: string, expectation: string, probe: Effect.Effect<Option.Option<A>>) =>
          waitFor(step, expectation, probe, { timeout: WAIT, describe: describeAll })

        // ---- scraped, and every rule loaded and evaluated without error.
        yield* wait("scrape", `up{job="vk-sandbox",node="${HOST_NODE}"} 1`, Effect.map(server.api(`/api/v1/query?query=${encodeURIComponent(`up{job="vk-sandbox",node="${HOST_NODE}"} == 1`)}`), (data) =>
          ((data as { readonly result?: ReadonlyArray<unknown> } | undefined)?.result ?? []).length === 1 ? Option.some(true) : Option.none()))
        const rules = yield* wait("rules", "every rule evaluated", Effect.map(server.api("/api/v1/rules"), (data) => {
          const all = ((data as { readonly groups?: ReadonlyArray<{ readonly rules: ReadonlyArray<RuleState> }> } | undefined)?.groups ?? [])
            .flatMap((g) => g.rules)
          return all.length > 0 && all.every((r) => r.health !== "unknown") ? Option.some(all) : Option.none()
        }))
        assert.strictEqual(rules.length, ruleGroups().flatMap((g) => g.rules).length, "every rule of the file is loaded")
        for (const rule of rules) assert.strictEqual(rule.health, "ok", `${rule.name}: ${rule.lastError ?? ""}`)
        assert.isTrue(Option.isNone(yield* alert("VkSandboxSandboxdUnreachable", "pending")), "quiet while sandboxd serves")

        // ---- sandboxd stops: the alert fires, naming the node and the reason.
        yield* sandboxd.stop
        const fired = yield* wait("sandboxd stopped", "VkSandboxSandboxdUnreachable firing", alert("VkSandboxSandboxdUnreachable", "firing"))
        assert.strictEqual(fired.labels["node"], HOST_NODE)
        // One alert per node whatever the reasons in turn; the metric's reason label says which.
        assert.isUndefined(fired.labels["reason"])
        assert.strictEqual(fired.labels["severity"], "critical")
        assert.include(fired.annotations["description"] ?? "", `sandboxd on node ${HOST_NODE} `)
        assert.match(fired.annotations["runbook_url"] ?? "", /docs\/operations\.md#vksandboxsandboxdunreachable$/)

        // ---- sandboxd is back on the same port: resolved.
        yield* sandboxd.start
        yield* wait("sandboxd back", "VkSandboxSandboxdUnreachable resolved", gone("VkSandboxSandboxdUnreachable"))

        // ---- a slow sandboxd: the claim times out, and so does every listing that could settle it.
        yield* cluster.sandboxd.injectFault("claim", SimFault.latency("3 seconds"))
        yield* cluster.sandboxd.injectFault("list", SimFault.latency("3 seconds"))
        yield* createPod(cluster, "slow sandboxd", "slow")
        const doubt = yield* wait("slow sandboxd", "VkSandboxClaimsInDoubt firing", alert("VkSandboxClaimsInDoubt", "firing"))
        assert.strictEqual(doubt.labels["node"], HOST_NODE)
        assert.isTrue(Option.isNone(yield* alert("VkSandboxSandboxdUnreachable", "pending")), "a slow claim is not an unreachable sandboxd")
        assert.isTrue(Option.isNone(yield* alert("VkSandboxSandboxdUnreachable", "firing")))

        // ---- fast again: the listing settles the doubt (the VM made for it is adopted), and the alert resolves.
        yield* cluster.sandboxd.clearFaults
        yield* running(cluster, daemon, "slow")
        yield* wait("sandboxd fast again", "VkSandboxClaimsInDoubt resolved", gone("VkSandboxClaimsInDoubt"))

        // ---- every query of the dashboard runs (its variables as Grafana would fill them).
        for (const expr of dashboardExprs()) {
          if (expr.startsWith("label_values(")) continue
          const query = expr.replaceAll("$node", ".*").replaceAll("$__rate_interval", "1m")
          const data = yield* server.api(`/api/v1/query?query=${encodeURIComponent(query)}`)
          assert.isDefined(data, `dashboard query runs: ${query}`)
        }
        assert.isAtLeast(alertRules().length, 14)
      })),
    { timeout: 240_000 }
  )
})

interface Alert {
  readonly labels: Record<string, string>
  readonly annotations: Record<string, string>
  readonly state: string
}
interface RuleState {
  readonly name: string
  readonly health: string
  readonly lastError?: string
}
