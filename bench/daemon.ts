/**
 * The `daemon` section: the real daemon process, started as the image starts it (`node
 * dist/main.js` when built, else `bin/vk-sandbox`), against both simulators in this process on
 * loopback; memory from /proc and from the daemon's own /metrics. Sizes and switches are
 * `VK_BENCH_*` environment variables, listed in docs/development.md ("Benchmarks").
 * It reports; it does not assert: say which machine (and what else ran on it) next to figures.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Deferred, Effect, Exit, Scope } from "effect"
import { type Cluster, spawnDaemon, startCluster } from "../testkit/Demo/Harness.ts"
import { Pods } from "../testkit/Simulators/Apiserver/Resources.ts"
import { benchMallocEnv, benchNodeFlags, imageCompileCacheStep, nodeBin, repoRoot } from "./nodeFlags.ts"
import type { BenchSection, Figures } from "./types.ts"

const root = repoRoot
// VK_BENCH_DAEMON_BUNDLE: another build's dist/main.js, to compare two builds with one bench
const bundle = process.env["VK_BENCH_DAEMON_BUNDLE"] ?? path.join(root, "dist/main.js")

const nodeFlags = benchNodeFlags(process.env, root)
/** The image's malloc arena limit (or VK_BENCH_MALLOC_ARENA_MAX's), for every daemon start. */
const mallocEnv = benchMallocEnv(process.env, root)
/** The daemon's entry: the production build when there is one, as the image runs it. */
const entryScript = () => (fs.existsSync(bundle) ? bundle : path.join(root, "src/main.ts"))

const envNumber = (name: string, fallback: number) => {
  const raw = process.env[name]
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : fallback
}

const QPS = 200
const BURST = 400
const round1 = (n: number) => Math.round(n * 10) / 10
const round2 = (n: number) => Math.round(n * 100) / 100
const mb = (bytes: number) => round1(bytes / (1024 * 1024))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

/** VmRSS and VmHWM (peak RSS) of a process, in bytes. */
const procMemory = (pid: number) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? "0") * 1024
  return { rss: kb("VmRSS"), peak: kb("VmHWM") }
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
const procCpuSeconds = (pid: number): number => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  // the fields after the command name (which may hold spaces) start after the last ")"
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the state field
  return (Number(fields[11]) + Number(fields[12])) / 100
}

// ---- module load: what importing each part costs a fresh Node process ----------------------

const rssAfter = (imports: ReadonlyArray<string>): number => {
  const script = `${imports.map((m) => `await import(${JSON.stringify(m)});`).join("")}` +
    `globalThis.gc?.();await new Promise((r)=>setTimeout(r,300));process.stdout.write(String(process.memoryUsage().rss))`
  const out = spawnSync(nodeBin, ["--expose-gc", "--input-type=module", "-e", script], { cwd: root, encoding: "utf8" })
  return Number(out.stdout.trim() || "0")
}

/** Peak RSS of `node <args>` run to its end (a preload reports it at exit). */
const peakRssOf = (args: ReadonlyArray<string>): number => {
  const report = `data:text/javascript,process.on("exit",()=>process.stderr.write("\\nRSS "+process.memoryUsage().rss+"\\n"))`
  const out = spawnSync(nodeBin, ["--import", report, ...args], { cwd: root, encoding: "utf8" })
  return Number(/RSS (\d+)/.exec(out.stderr)?.[1] ?? "0")
}

const moduleLoad = (): Figures => {
  const median = (imports: ReadonlyArray<string>) => percentile([rssAfter(imports), rssAfter(imports), rssAfter(imports)], 50)
  const bare = median([])
  const effect = median(["effect"])
  const clientNode = median(["@kubernetes/client-node"])
  const daemonSource = median([path.join(root, "src/Daemon.ts")])
  const figures: Record<string, number> = {
    module_load_node_mb: mb(bare),
    // the whole barrels, as an unbundled start would load them
    module_load_effect_mb: mb(effect - bare),
    module_load_client_node_mb: mb(clientNode - bare),
    // the daemon's own modules: its whole import graph from source, less the two barrels
    module_load_daemon_code_mb: mb(Math.max(0, daemonSource - effect - clientNode + bare)),
    module_load_source_total_mb: mb(daemonSource - bare)
  }
  // the production bundle: everything it loads to print --version (the whole bundle is evaluated)
  if (fs.existsSync(bundle)) figures["module_load_bundle_total_mb"] = mb(percentile([1, 2, 3].map(() => peakRssOf([bundle, "--version"])), 50) - bare)
  return figures
}

// ---- the compile cache the image ships -----------------------------------------------------

/** The environment every daemon start gets besides PATH (the compile cache, once made). */
let daemonEnv: Record<string, string> = {}

/**
 * Makes the compile cache as the image's build does (the Dockerfile's step: its command with the
 * daemon's flags, on the entry the bench runs) in a directory of its own, and has every daemon
 * start use it. Returns the figure that says so, and the directory to remove at the end.
 */
const prepareCompileCache = (): { readonly figure: string; readonly dir?: string } => {
  const step = imageCompileCacheStep(root)
  if (step === undefined) return { figure: "none in the image" }
  if (process.env["VK_BENCH_COMPILE_CACHE"] === "0") return { figure: "off (VK_BENCH_COMPILE_CACHE=0)" }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vk-bench-compile-cache-"))
  const made = spawnSync(nodeBin, [...nodeFlags, entryScript(), ...step.args], {
    env: { PATH: process.env["PATH"] ?? "", NODE_COMPILE_CACHE: dir },
    encoding: "utf8"
  })
  const files = fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())
  if (made.status !== 0 || files.length === 0) return { figure: `not made (exit ${made.status}: ${made.stderr.trim()})`, dir }
  daemonEnv = { NODE_COMPILE_CACHE: dir }
  const bytes = files.reduce((sum, entry) => sum + fs.statSync(path.join(entry.parentPath, entry.name)).size, 0)
  return { figure: `made at start (${mb(bytes)} MB)`, dir }
}

// ---- the daemon child ----------------------------------------------------------------------

interface Child {
  readonly pid: number
  readonly metricsUrl: string
  readonly stop: () => Promise<void>
}

const startDaemon = async (cluster: Cluster, nodePods: number, extraNodeFlags: ReadonlyArray<string> = []): Promise<Child> => {
  const entry = [...nodeFlags, ...extraNodeFlags, entryScript()]
  const scope = await Effect.runPromise(Scope.make())
  const daemon = await Effect.runPromise(Scope.provide(
    spawnDaemon(cluster, {
      command: [nodeBin, ...entry],
      env: { ...mallocEnv, ...daemonEnv },
      flags: [
        "--node-pods", String(nodePods),
        "--kube-api-qps", String(QPS),
        "--kube-api-burst", String(BURST),
        "--log-level", process.env["VK_BENCH_LOG_LEVEL"] ?? "warn",
        "--log-format", "json"
      ],
      ...(process.env["VK_BENCH_DAEMON_LOG"] ? { logFile: process.env["VK_BENCH_DAEMON_LOG"], logHeader: `---- daemon start ${new Date().toISOString()}` } : {})
    }),
    scope
  ))
  return {
    pid: daemon.pid,
    metricsUrl: daemon.metricsUrl,
    stop: async () => {
      // SIGTERM and up to 30 s to drain; then SIGKILL whatever is left
      await Effect.runPromise(
        daemon.signal("SIGTERM").pipe(Effect.andThen(Deferred.await(daemon.exited)), Effect.timeout("30 seconds"), Effect.ignore)
      )
      await Effect.runPromise(Effect.andThen(daemon.kill, Scope.close(scope, Exit.void)))
    }
  }
}

const fetchText = async (url: string): Promise<{ status: number; body: string } | undefined> => {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) })
    return { status: response.status, body: await response.text() }
  } catch {
    return undefined
  }
}

const waitReady = async (child: Child, timeoutMs: number): Promise<number> => {
  const started = performance.now()
  while (performance.now() - started < timeoutMs) {
    const reply = await fetchText(`${child.metricsUrl}/readyz`)
    if (reply?.status === 200) return performance.now() - started
    await sleep(25)
  }
  throw new Error(`daemon not ready within ${timeoutMs} ms`)
}

/** Sum of a metric family's samples whose labels include every `match` pair. */
const metricSum = (text: string, family: string, match: Readonly<Record<string, string>> = {}): number => {
  let sum = 0
  for (const line of text.split("\n")) {
    if (!line.startsWith(family)) continue
    const rest = line.slice(family.length)
    if (rest !== "" && rest[0] !== "{" && rest[0] !== " ") continue
    const labels = /^\{([^}]*)\}/.exec(rest)?.[1] ?? ""
    if (!Object.entries(match).every(([k, v]) => labels.includes(`${k}="${v}"`))) continue
    const value = Number(line.trim().split(/\s+/).at(-1))
    if (Number.isFinite(value)) sum += value
  }
  return sum
}

const scrape = async (child: Child): Promise<string> => (await fetchText(`${child.metricsUrl}/metrics`))?.body ?? ""

const heapUsed = (metrics: string) => metricSum(metrics, "nodejs_heap_size_used_bytes")

/**
 * VK_BENCH_MEM_DEBUG=1: a breakdown of the daemon's memory to stderr (heap, external, smaps);
 * `snap` also sends SIGUSR2, which writes a heap snapshot when the node flags include
 * --heapsnapshot-signal=SIGUSR2, and waits for it.
 */
const memDebug = async (child: Child, label: string) => {
  if (!process.env["VK_BENCH_MEM_DEBUG"]) return
  const m = await scrape(child)
  const rollup = fs.readFileSync(`/proc/${child.pid}/smaps_rollup`, "utf8")
  const kb = (f: string) => Number(new RegExp(`^${f}:\\s+(\\d+) kB`, "m").exec(rollup)?.[1] ?? "0")
  process.stderr.write(`MEM ${label} rss=${mb(procMemory(child.pid).rss)} heapTotal=${mb(metricSum(m, "nodejs_heap_size_total_bytes"))} heapUsed=${mb(heapUsed(m))} external=${mb(metricSum(m, "nodejs_external_memory_bytes"))} arrayBuffers=${mb(metricSum(m, "nodejs_array_buffers_bytes"))} anon=${Math.round(kb("Anonymous") / 1024)} file=${Math.round((kb("Rss") - kb("Anonymous")) / 1024)}\n`)
  if (process.env["VK_BENCH_MEM_DEBUG"] === "snap") {
    process.kill(child.pid, "SIGUSR2")
    await sleep(4_000)
  }
}
const apiserverRequests = (metrics: string) =>
  metricSum(metrics, "vk_sandbox_apiserver_requests_total") - metricSum(metrics, "vk_sandbox_apiserver_requests_total", { verb: "WATCH" })

// ---- the cluster's side --------------------------------------------------------------------

/**
 * Which Pods are Running, kept from a watch on the in-memory apiserver (each event is one Pod;
 * polling a list of 10,000 Pods would cost the bench process more CPU than the daemon uses).
 */
interface PhaseTracker {
  readonly running: (prefix: string) => number
  /** When `name` was first seen Running (performance.now()), if it was. */
  readonly runningSince: (name: string) => number | undefined
  readonly close: () => void
}

const trackPhases = (cluster: Cluster): PhaseTracker => {
  const since = new Map<string, number>()
  const started = cluster.model.watch(Pods, cluster.namespace, {}, {
    onEvent: (event) => {
      const object = event.object as { metadata?: { name?: string }; status?: { phase?: string } }
      const name = object.metadata?.name ?? ""
      if (event.type === "DELETED") since.delete(name)
      else if (object.status?.phase === "Running" && !since.has(name)) since.set(name, performance.now())
    },
    onClose: () => {}
  })
  if (started._tag !== "Success") throw new Error(`cannot watch pods: ${started.failure.message}`)
  return {
    running: (prefix) => {
      let n = 0
      for (const name of since.keys()) if (name.startsWith(prefix)) n++
      return n
    },
    runningSince: (name) => since.get(name),
    close: () => started.success.close()
  }
}

const createPodNow = (cluster: Cluster, name: string) =>
  cluster.model.create(Pods, cluster.namespace, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, annotations: { "sandbox.cocoonstack.io/template": "python" } },
    spec: { nodeName: cluster.nodeName, containers: [{ name: "main", image: "python" }] }
  })

interface BurstResult {
  readonly seconds: number
  readonly peakRss: number
  readonly peakHeap: number
  readonly requests: number
  /** CPU seconds the daemon used from the first create to the last Pod Running. */
  readonly cpuSeconds: number
  /** The daemon's /metrics text before the burst and when its last Pod was Running. */
  readonly metricsBefore: string
  readonly metricsAfter: string
  /** The daemon's apiserver requests (watches aside) before the burst. */
  readonly requestsBefore: number
  /** Durable writes of the claims file (group commits) during the burst. */
  readonly durableWrites: number
  /** CPU seconds this process (both simulators, the Pod creates, the phase watch) used meanwhile. */
  readonly simulatorCpuSeconds: number
  /** Seconds from the first create to the first Pod Running, and to half of them Running. */
  readonly firstSeconds: number
  readonly halfSeconds: number
}

/** N Pods bound at once; until every one is Running. */
const burst = async (cluster: Cluster, phases: PhaseTracker, child: Child, n: number, prefix: string): Promise<BurstResult> => {
  const beforeMetrics = await scrape(child)
  const before = apiserverRequests(beforeMetrics)
  const writesBefore = metricSum(beforeMetrics, "vk_sandbox_commit_batch_size_count")
  const cpuBefore = procCpuSeconds(child.pid)
  const ownCpuBefore = process.cpuUsage()
  const started = performance.now()
  for (let i = 0; i < n; i++) createPodNow(cluster, `${prefix}-${i}`)
  let peakHeap = 0
  let lastScrape = 0
  while (phases.running(`${prefix}-`) < n) {
    if (performance.now() - started > 30 * 60_000) throw new Error(`burst of ${n} not Running within 30 minutes`)
    if (performance.now() - lastScrape > 2_000) {
      lastScrape = performance.now()
      peakHeap = Math.max(peakHeap, heapUsed(await scrape(child)))
    }
    await sleep(50)
  }
  const cpuSeconds = procCpuSeconds(child.pid) - cpuBefore
  const ownCpu = process.cpuUsage(ownCpuBefore)
  const times: Array<number> = []
  for (let i = 0; i < n; i++) times.push((phases.runningSince(`${prefix}-${i}`) ?? started) - started)
  times.sort((a, b) => a - b)
  const seconds = (times.at(-1) ?? 0) / 1000
  const metrics = await scrape(child)
  peakHeap = Math.max(peakHeap, heapUsed(metrics))
  return {
    seconds,
    peakRss: procMemory(child.pid).peak,
    peakHeap,
    requests: apiserverRequests(metrics) - before,
    requestsBefore: before,
    metricsBefore: beforeMetrics,
    metricsAfter: metrics,
    durableWrites: metricSum(metrics, "vk_sandbox_commit_batch_size_count") - writesBefore,
    cpuSeconds,
    simulatorCpuSeconds: (ownCpu.user + ownCpu.system) / 1e6,
    firstSeconds: (times[0] ?? 0) / 1000,
    halfSeconds: (times[Math.floor(n / 2)] ?? 0) / 1000
  }
}

/** The average of a histogram's observations between two scrapes, in ms (0 when none). */
const avgMsBetween = (before: string, after: string, family: string, match: Readonly<Record<string, string>> = {}) => {
  const count = metricSum(after, `${family}_count`, match) - metricSum(before, `${family}_count`, match)
  const sum = metricSum(after, `${family}_sum`, match) - metricSum(before, `${family}_sum`, match)
  return count > 0 ? round1((sum / count) * 1000) : 0
}

/** Pods created one after the other: create → Running in the apiserver, and the daemon's own share. */
const singles = async (cluster: Cluster, phases: PhaseTracker, child: Child, n: number): Promise<Figures> => {
  const before = await scrape(child)
  const samples: Array<number> = []
  for (let i = 0; i < n; i++) {
    const name = `single-${i}`
    const started = performance.now()
    createPodNow(cluster, name)
    while (phases.runningSince(name) === undefined) await sleep(2)
    samples.push((phases.runningSince(name) ?? started) - started)
    await sleep(100)
  }
  const after = await scrape(child)
  const avgMs = (family: string, match: Readonly<Record<string, string>> = {}) => {
    const count = metricSum(after, `${family}_count`, match) - metricSum(before, `${family}_count`, match)
    const sum = metricSum(after, `${family}_sum`, match) - metricSum(before, `${family}_sum`, match)
    return count > 0 ? round1((sum / count) * 1000) : 0
  }
  const p50 = percentile(samples, 50)
  const avg = samples.length > 0 ? samples.reduce((a, b) => a + b, 0) / samples.length : 0
  // the daemon's own share, stage by stage, from its own histograms (averages over the singles)
  const stage = (name: string) => avgMs("vk_sandbox_pod_start_stage_seconds", { stage: name })
  const queue = stage("queue")
  const create = avgMs("vk_sandbox_claim_duration_seconds")
  const statusWrite = stage("status_write")
  const daemon = queue + create + statusWrite
  return {
    create_to_running_p50_ms: round1(p50),
    create_to_running_p99_ms: round1(percentile(samples, 99)),
    create_to_running_avg_ms: round1(avg),
    // watch delivery → reconcile start (the keyed queue)
    daemon_queue_avg_ms: queue,
    // reconcile start → Running pushed (createPod), and the parts of it:
    daemon_create_avg_ms: create,
    daemon_intent_avg_ms: stage("intent"),
    daemon_claim_avg_ms: stage("claim"),
    daemon_sandboxd_claim_avg_ms: avgMs("vk_sandbox_sandboxd_request_duration_seconds", { operation: "claim" }),
    daemon_commit_avg_ms: stage("commit"),
    // Running pushed → status written (the status queue, the rate limiter, the PUT)
    daemon_status_write_avg_ms: statusWrite,
    daemon_share_avg_ms: round1(daemon),
    // the rest of the average: the create's own trip, the watch delivering it, and the watch
    // delivering the Running status to the bench
    apiserver_and_watch_avg_ms: round1(Math.max(0, avg - daemon))
  }
}

const withCluster = async <A>(warm: number, run: (cluster: Cluster) => Promise<A>): Promise<A> => {
  const scope = await Effect.runPromise(Scope.make())
  try {
    const cluster = await Effect.runPromise(Scope.provide(startCluster({ warmPerPool: warm }), scope))
    return await run(cluster)
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const measure = async (compileCacheFigure: string): Promise<Figures> => {
  const burstN = envNumber("VK_BENCH_BURST_N", 2000)
  const scaleN = envNumber("VK_BENCH_SCALE_N", 10_000)
  const steadyS = envNumber("VK_BENCH_STEADY_S", 130)
  const singleN = envNumber("VK_BENCH_SINGLE_N", 25)
  const figures: Record<string, number | string | boolean> = {
    entry: fs.existsSync(bundle) ? `node ${path.relative(root, bundle)}` : "node src/main.ts (no dist/: npm run build)",
    node_flags: nodeFlags.join(" "),
    malloc_arena_max: mallocEnv["MALLOC_ARENA_MAX"] ?? "unset",
    compile_cache: compileCacheFigure,
    // VK_BENCH_MODULE_LOAD=0 skips the module-load figures (a dozen Node starts) while iterating
    ...(envNumber("VK_BENCH_MODULE_LOAD", 1) === 0 ? {} : moduleLoad())
  }

  // A phase that fails is reported as such; the figures measured before it are kept.
  const perPod2k = await withCluster(burstN + singleN + 16, async (cluster) => {
    const phases = trackPhases(cluster)
    const child = await startDaemon(cluster, Math.max(110, burstN + singleN + 16))
    try {
      // a first start on an empty claims file: spawn to /readyz 200, and the CPU it took (load-robust)
      figures["start_ready_s"] = round2((await waitReady(child, 60_000)) / 1000)
      figures["start_ready_cpu_s"] = round2(procCpuSeconds(child.pid))
      await sleep(3_000)
      const idle = procMemory(child.pid).rss
      figures["idle_rss_mb"] = mb(idle)
      figures["idle_heap_used_mb"] = mb(heapUsed(await scrape(child)))
      await memDebug(child, "idle")

      const result = await burst(cluster, phases, child, burstN, "burst")
      const floor = (burstN - Math.min(BURST, burstN)) / QPS
      figures["burst_n"] = burstN
      figures["burst_first_running_s"] = round2(result.firstSeconds)
      figures["burst_half_running_s"] = round2(result.halfSeconds)
      figures["burst_all_running_s"] = round2(result.seconds)
      figures["burst_floor_s"] = round2(floor)
      figures["burst_over_floor"] = floor > 0 ? round2(result.seconds / floor) : 0
      // the daemon's CPU for the burst: on a shared machine, a figure the load does not inflate
      figures["burst_daemon_cpu_s"] = round2(result.cpuSeconds)
      figures["burst_simulators_cpu_s"] = round2(result.simulatorCpuSeconds)
      figures["burst_durable_writes"] = result.durableWrites
      // where a burst Pod's time goes inside the daemon (averages over the burst's Pods)
      for (const stage of ["queue", "intent", "claim", "commit", "status_write"]) {
        figures[`burst_stage_${stage}_avg_ms`] = avgMsBetween(result.metricsBefore, result.metricsAfter, "vk_sandbox_pod_start_stage_seconds", { stage })
      }
      figures["burst_rate_limiter_wait_avg_ms"] = avgMsBetween(result.metricsBefore, result.metricsAfter, "vk_sandbox_apiserver_rate_limiter_wait_seconds")
      figures["burst_peak_rss_mb"] = mb(result.peakRss)
      figures["burst_peak_heap_used_mb"] = mb(result.peakHeap)
      figures["apiserver_requests_per_pod"] = round2(result.requests / burstN)
      await sleep(5_000)
      // with what the burst left to write afterwards (Events flushed after the last Pod was Running)
      figures["apiserver_requests_per_pod_settled"] = round2((apiserverRequests(await scrape(child)) - result.requestsBefore) / burstN)
      const settled = procMemory(child.pid).rss
      const perPod = (settled - idle) / burstN
      figures["after_burst_rss_mb"] = mb(settled)
      figures["after_burst_heap_used_mb"] = mb(heapUsed(await scrape(child)))
      figures["rss_per_pod_kb"] = round1(perPod / 1024)
      await memDebug(child, "after_burst")

      const writesBefore = metricSum(await scrape(child), "vk_sandbox_apiserver_requests_total", { verb: "PUT", resource: "pods/status" })
      await sleep(steadyS * 1000)
      const steadyMetrics = await scrape(child)
      const writes = metricSum(steadyMetrics, "vk_sandbox_apiserver_requests_total", { verb: "PUT", resource: "pods/status" }) - writesBefore
      figures["steady_seconds"] = steadyS
      figures["steady_status_writes_per_min"] = round2(writes / (steadyS / 60))
      figures["steady_rss_mb"] = mb(procMemory(child.pid).rss)
      figures["steady_heap_used_mb"] = mb(heapUsed(steadyMetrics))

      Object.assign(figures, await singles(cluster, phases, child, singleN))
      return perPod
    } finally {
      phases.close()
      await child.stop()
    }
  })

  if (scaleN > 0) {
    await withCluster(scaleN + 16, async (cluster) => {
      const phases = trackPhases(cluster)
      let child = await startDaemon(cluster, scaleN + 16)
      try {
        await waitReady(child, 60_000)
        await sleep(3_000)
        const idle = procMemory(child.pid).rss
        const result = await burst(cluster, phases, child, scaleN, "scale")
        await sleep(5_000)
        const perPod = (procMemory(child.pid).rss - idle) / scaleN
        figures["scale_n"] = scaleN
        figures["scale_all_running_s"] = round2(result.seconds)
        figures["scale_peak_rss_mb"] = mb(result.peakRss)
        figures["scale_peak_heap_used_mb"] = mb(result.peakHeap)
        figures["scale_rss_per_pod_kb"] = round1(perPod / 1024)
        figures["scale_10k_over_2k_per_pod"] = perPod2k > 0 ? round2(perPod / perPod2k) : 0
        await child.stop()
        // restarts on the same claims file (scaleN rows) and the same Pods; the median of several
        const restartLimitMs = envNumber("VK_BENCH_RESTART_LIMIT_S", 180) * 1000
        const profDir = process.env["VK_BENCH_RESTART_PROF"]
        const profFlags = profDir === undefined || profDir === "" ? [] : ["--cpu-prof", `--cpu-prof-dir=${profDir}`]
        const readies: Array<number> = []
        const cpus: Array<number> = []
        const podLists: Array<number> = []
        const restarts = Math.max(1, envNumber("VK_BENCH_RESTARTS", 3))
        for (let i = 0; i < restarts; i++) {
          child = await startDaemon(cluster, scaleN + 16, profFlags)
          const ready = await waitReady(child, restartLimitMs).then((ms) => ms, () => undefined)
          if (ready === undefined) {
            figures["restart_10k_ready_s"] = `not ready within ${restartLimitMs / 1000} s`
            break
          }
          readies.push(ready / 1000)
          cpus.push(procCpuSeconds(child.pid))
          // the GET pods calls until ready as the daemon timed them (asked for -> answered and
          // decoded): the first Pod list, and a single-Pod read if one ran; most of it is the
          // apiserver simulator rendering ~18 MB in this process, not the daemon's work
          podLists.push(metricSum(await scrape(child), "vk_sandbox_apiserver_request_duration_seconds_sum", { verb: "GET", resource: "pods" }))
          figures["restart_10k_rss_mb"] = mb(procMemory(child.pid).rss)
          if (i < restarts - 1) await child.stop()
        }
        if (readies.length === restarts) {
          figures["restart_10k_ready_s"] = round2(percentile(readies, 50))
          figures["restart_10k_ready_runs_s"] = readies.map(round2).join(" ")
        }
        // like the ready time, the median of the runs (one run's CPU moves with what else ran then)
        if (cpus.length > 0) {
          figures["restart_10k_cpu_s"] = round2(percentile(cpus, 50))
          figures["restart_10k_cpu_runs_s"] = cpus.map(round2).join(" ")
          figures["restart_10k_pod_list_s"] = round2(percentile(podLists, 50))
        }
        // VK_BENCH_RESTART_VARIANTS: more restarts with other node flags, to compare them on one run
        const variants = (process.env["VK_BENCH_RESTART_VARIANTS"] ?? "").split("|").map((v) => v.trim()).filter((v) => v !== "")
        for (const [v, variant] of variants.entries()) {
          const runs: Array<string> = []
          for (let i = 0; i < restarts; i++) {
            await child.stop()
            child = await startDaemon(cluster, scaleN + 16, [...variant.split(/\s+/), ...profFlags])
            const ready = await waitReady(child, restartLimitMs).then((ms) => ms, () => undefined)
            runs.push(ready === undefined ? "-" : `${round2(ready / 1000)}/${round2(procCpuSeconds(child.pid))}/${mb(procMemory(child.pid).rss)}`)
          }
          figures[`restart_variant_${v}`] = `${variant}: ${runs.join(" ")}`
        }
        // VK_BENCH_RESTART_HOLD=<file>: the cluster stays up while <file> (a script that starts one
        // more daemon on it, as the restarts above do) exists, to time or profile restarts by hand
        const hold = process.env["VK_BENCH_RESTART_HOLD"]
        if (hold !== undefined && hold !== "") {
          await child.stop()
          const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`
          const env = { ...mallocEnv, ...daemonEnv }
          const args = [
            "--kubeconfig", cluster.kubeconfigPath, "--sandboxd-url", cluster.sandboxdUrl,
            "--sandboxd-token-file", cluster.tokenFile, "--state-path", cluster.statePath,
            "--node-name", cluster.nodeName, "--node-ip", "127.0.0.1",
            "--node-pods", String(scaleN + 16), "--kube-api-qps", String(QPS), "--kube-api-burst", String(BURST),
            "--log-format", "json"
          ]
          const script = [
            "#!/bin/sh",
            "# usage: <this file> <kubelet port> <metrics port> [node flags...]; log level from VK_LOG_LEVEL (warn)",
            "k=$1; m=$2; shift 2",
            `exec env ${Object.entries(env).map(([k, v]) => `${k}=${quote(v)}`).join(" ")} ${quote(nodeBin)} ${nodeFlags.map(quote).join(" ")} "$@" ${quote(entryScript())} ${args.map(quote).join(" ")} --listen-addr 127.0.0.1:$k --metrics-addr 127.0.0.1:$m --log-level "\${VK_LOG_LEVEL:-warn}"`
          ].join("\n")
          fs.writeFileSync(hold, `${script}\n`, { mode: 0o755 })
          while (fs.existsSync(hold)) await sleep(500)
        }
      } finally {
        phases.close()
        await child.stop()
      }
    }).catch((error: unknown) => {
      figures["scale_error"] = String(error)
    })
  }
  return figures
}

const run = async (): Promise<Figures> => {
  const compileCache = prepareCompileCache()
  try {
    return await measure(compileCache.figure)
  } finally {
    if (compileCache.dir !== undefined) fs.rmSync(compileCache.dir, { recursive: true, force: true })
  }
}

export const daemonSection: BenchSection = { name: "daemon", run }
