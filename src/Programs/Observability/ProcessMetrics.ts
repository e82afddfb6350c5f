/**
 * The process and runtime families every Node service exports (`process_*` as the Prometheus
 * client guidelines name them, `nodejs_*` as the usual Node client names them), read at scrape
 * time from `process`, `/proc/self` and `perf_hooks`. Written here rather than taken from
 * prom-client: loading that library costs about 20 MB of resident memory, a seventh of the
 * daemon's whole idle budget, for what a few system calls give.
 */
import { Effect, type Scope } from "effect"
import * as NodeFs from "node:fs"
import { constants as PerfConstants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks"

/** One sample of everything the families report; gathered by `sample`, rendered by `render`. */
export interface ProcessSample {
  readonly cpuUserSeconds: number
  readonly cpuSystemSeconds: number
  readonly startTimeSeconds: number
  readonly residentBytes: number
  readonly virtualBytes: number
  /** Undefined where /proc is not readable (the family is then left out). */
  readonly openFds: number | undefined
  readonly maxFds: number | undefined
  readonly heapTotalBytes: number
  readonly heapUsedBytes: number
  readonly externalBytes: number
  readonly arrayBuffersBytes: number
  readonly eventLoopLagSeconds: { readonly mean: number; readonly p50: number; readonly p99: number; readonly max: number }
  readonly activeResources: number
  readonly gc: ReadonlyMap<string, { readonly count: number; readonly seconds: number }>
  readonly nodeVersion: string
}

export interface BuildLabels {
  readonly version: string
  readonly revision: string
}

const gcKinds: Record<number, string> = {
  [PerfConstants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [PerfConstants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [PerfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [PerfConstants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb"
}

/** The page size Linux reports sizes in through /proc/self/stat (4 KiB on every platform we ship). */
const PageBytes = 4096

const readText = (path: string): string | undefined => {
  try {
    return NodeFs.readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

const countFds = (): number | undefined => {
  try {
    return NodeFs.readdirSync("/proc/self/fd").length
  } catch {
    return undefined
  }
}

/** `Max open files` soft limit from /proc/self/limits. */
const maxFds = (): number | undefined => {
  const line = readText("/proc/self/limits")?.split("\n").find((l) => l.startsWith("Max open files"))
  const soft = line === undefined ? undefined : Number(line.slice("Max open files".length).trim().split(/\s+/)[0])
  return soft !== undefined && Number.isFinite(soft) ? soft : undefined
}

/** Virtual size in bytes: field 23 of /proc/self/stat (after the parenthesised command name). */
const virtualBytes = (): number => {
  const stat = readText("/proc/self/stat")
  if (stat === undefined) return 0
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  const vsize = Number(fields[20])
  return Number.isFinite(vsize) ? vsize : 0
}

/**
 * Starts the event-loop delay histogram and the GC observer for the surrounding scope, and
 * returns the sampler. Both are stopped when the scope closes.
 */
export const make: Effect.Effect<Effect.Effect<ProcessSample>, never, Scope.Scope> = Effect.gen(function*() {
  const delay = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const histogram = monitorEventLoopDelay({ resolution: 20 })
      histogram.enable()
      return histogram
    }),
    (histogram) => Effect.sync(() => histogram.disable())
  )
  const gc = new Map<string, { count: number; seconds: number }>()
  yield* Effect.acquireRelease(
    Effect.sync(() => {
      const observer = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          const detail = (entry as { readonly detail?: { readonly kind?: number } }).detail
          const kind = gcKinds[detail?.kind ?? -1] ?? "other"
          const totals = gc.get(kind) ?? { count: 0, seconds: 0 }
          totals.count += 1
          totals.seconds += entry.duration / 1000
          gc.set(kind, totals)
        }
      })
      observer.observe({ entryTypes: ["gc"] })
      return observer
    }),
    (observer) => Effect.sync(() => observer.disconnect())
  )
  const startTimeSeconds = Math.round((Date.now() - process.uptime() * 1000) / 1000)
  return Effect.sync((): ProcessSample => {
    const cpu = process.cpuUsage()
    const memory = process.memoryUsage()
    const ns = (value: number) => (Number.isFinite(value) ? value / 1e9 : 0)
    return {
      cpuUserSeconds: cpu.user / 1e6,
      cpuSystemSeconds: cpu.system / 1e6,
      startTimeSeconds,
      residentBytes: memory.rss,
      virtualBytes: virtualBytes(),
      openFds: countFds(),
      maxFds: maxFds(),
      heapTotalBytes: memory.heapTotal,
      heapUsedBytes: memory.heapUsed,
      externalBytes: memory.external,
      arrayBuffersBytes: memory.arrayBuffers,
      eventLoopLagSeconds: {
        mean: ns(delay.mean),
        p50: ns(delay.percentile(50)),
        p99: ns(delay.percentile(99)),
        max: ns(delay.max)
      },
      activeResources: process.getActiveResourcesInfo().length,
      gc: new Map([...gc].map(([kind, totals]) => [kind, { ...totals }])),
      nodeVersion: process.versions.node
    }
  })
})

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")

const family = (name: string, type: "gauge" | "counter", help: string, samples: ReadonlyArray<string>): string =>
  `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${samples.join("\n")}\n`

/** Prometheus text for one sample, plus `vk_sandbox_build_info`. */
export const render = (sample: ProcessSample, build: BuildLabels): string => {
  const one = (name: string, value: number) => `${name} ${value}`
  const families = [
    family("vk_sandbox_build_info", "gauge", "always 1; labels name the running build", [
      `vk_sandbox_build_info{version="${escapeLabel(build.version)}",revision="${escapeLabel(build.revision)}"} 1`
    ]),
    family("process_cpu_user_seconds_total", "counter", "user CPU time spent, in seconds", [
      one("process_cpu_user_seconds_total", sample.cpuUserSeconds)
    ]),
    family("process_cpu_system_seconds_total", "counter", "system CPU time spent, in seconds", [
      one("process_cpu_system_seconds_total", sample.cpuSystemSeconds)
    ]),
    family("process_cpu_seconds_total", "counter", "user and system CPU time spent, in seconds", [
      one("process_cpu_seconds_total", sample.cpuUserSeconds + sample.cpuSystemSeconds)
    ]),
    family("process_start_time_seconds", "gauge", "start time of the process since the Unix epoch, in seconds", [
      one("process_start_time_seconds", sample.startTimeSeconds)
    ]),
    family("process_resident_memory_bytes", "gauge", "resident memory size, in bytes", [
      one("process_resident_memory_bytes", sample.residentBytes)
    ]),
    family("process_virtual_memory_bytes", "gauge", "virtual memory size, in bytes", [
      one("process_virtual_memory_bytes", sample.virtualBytes)
    ]),
    ...(sample.openFds === undefined ? [] : [
      family("process_open_fds", "gauge", "open file descriptors", [one("process_open_fds", sample.openFds)])
    ]),
    ...(sample.maxFds === undefined ? [] : [
      family("process_max_fds", "gauge", "the soft limit on open file descriptors", [one("process_max_fds", sample.maxFds)])
    ]),
    family("nodejs_heap_size_total_bytes", "gauge", "V8 heap size, in bytes", [
      one("nodejs_heap_size_total_bytes", sample.heapTotalBytes)
    ]),
    family("nodejs_heap_size_used_bytes", "gauge", "V8 heap in use, in bytes", [
      one("nodejs_heap_size_used_bytes", sample.heapUsedBytes)
    ]),
    family("nodejs_external_memory_bytes", "gauge", "memory of C++ objects bound to JavaScript objects, in bytes", [
      one("nodejs_external_memory_bytes", sample.externalBytes)
    ]),
    family("nodejs_array_buffers_bytes", "gauge", "memory of ArrayBuffers and Buffers, in bytes", [
      one("nodejs_array_buffers_bytes", sample.arrayBuffersBytes)
    ]),
    family("nodejs_eventloop_lag_seconds", "gauge", "mean event-loop delay since start, in seconds", [
      one("nodejs_eventloop_lag_seconds", sample.eventLoopLagSeconds.mean)
    ]),
    family("nodejs_eventloop_lag_p50_seconds", "gauge", "median event-loop delay since start, in seconds", [
      one("nodejs_eventloop_lag_p50_seconds", sample.eventLoopLagSeconds.p50)
    ]),
    family("nodejs_eventloop_lag_p99_seconds", "gauge", "99th percentile event-loop delay since start, in seconds", [
      one("nodejs_eventloop_lag_p99_seconds", sample.eventLoopLagSeconds.p99)
    ]),
    family("nodejs_eventloop_lag_max_seconds", "gauge", "largest event-loop delay since start, in seconds", [
      one("nodejs_eventloop_lag_max_seconds", sample.eventLoopLagSeconds.max)
    ]),
    family("nodejs_active_resources", "gauge", "resources keeping the event loop alive (sockets, timers, handles)", [
      one("nodejs_active_resources", sample.activeResources)
    ]),
    family(
      "nodejs_gc_runs_total",
      "counter",
      "garbage collections by kind",
      [...sample.gc].map(([kind, t]) => `nodejs_gc_runs_total{kind="${kind}"} ${t.count}`)
    ),
    family(
      "nodejs_gc_duration_seconds_total",
      "counter",
      "time spent in garbage collection by kind, in seconds",
      [...sample.gc].map(([kind, t]) => `nodejs_gc_duration_seconds_total{kind="${kind}"} ${t.seconds}`)
    ),
    family("nodejs_version_info", "gauge", "always 1; the label names the Node.js version", [
      `nodejs_version_info{version="v${escapeLabel(sample.nodeVersion)}"} 1`
    ])
  ]
  return families.join("")
}
