/**
 * The `podList` section: the daemon's read of a 10,000-Pod list body (`ListBody.readList` with
 * `decodePod`, as a restart's `listPods` feeds it), timed apart from the rest of a restart, cold
 * then warm (also in 64 KB chunks), in fresh node processes with the image's flags. Figures are
 * medians of main-thread CPU (`process.threadCpuUsage`), so other load adds little.
 * The body has the shape the in-memory apiserver serves a burst's Running Pod.
 * `VK_BENCH_PODLIST_N` (10000) and `VK_BENCH_PODLIST_RUNS` (5) size it.
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { benchNodeFlags, nodeBin, repoRoot } from "./nodeFlags.ts"
import type { BenchSection, Figures } from "./types.ts"

const root = repoRoot
const worker = fileURLToPath(new URL("podListWorker.ts", import.meta.url))

const envNumber = (name: string, fallback: number): number => {
  const value = Number(process.env[name])
  return Number.isFinite(value) && process.env[name] !== "" ? value : fallback
}
const median = (samples: ReadonlyArray<number>): number => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}
const round1 = (n: number) => Math.round(n * 10) / 10

interface WorkerResult {
  readonly bodyBytes: number
  readonly firstCpuMs: number
  readonly warmCpuMs: ReadonlyArray<number>
  readonly warmChunkedCpuMs: ReadonlyArray<number>
  readonly heapPerPodBytes: number
}

export const podListSection: BenchSection = {
  name: "podList",
  run: async (): Promise<Figures> => {
    const n = envNumber("VK_BENCH_PODLIST_N", 10_000)
    const runs = Math.max(1, envNumber("VK_BENCH_PODLIST_RUNS", 5))
    const flags = [...benchNodeFlags(process.env, root), "--expose-gc"]
    const results: Array<WorkerResult> = []
    for (let i = 0; i < runs; i++) {
      const child = spawnSync(nodeBin, [...flags, worker, String(n)], { encoding: "utf8", maxBuffer: 1 << 20 })
      if (child.status !== 0) return { error: `worker failed: ${child.stderr.slice(0, 500)}` }
      results.push(JSON.parse(child.stdout) as WorkerResult)
    }
    return {
      podlist_n: n,
      podlist_runs: runs,
      podlist_node_flags: flags.join(" "),
      podlist_body_mb: round1((results[0]?.bodyBytes ?? 0) / 1e6),
      podlist_first_cpu_ms: round1(median(results.map((r) => r.firstCpuMs))),
      podlist_first_cpu_runs_ms: results.map((r) => Math.round(r.firstCpuMs)).join(" "),
      podlist_warm_cpu_ms: round1(median(results.flatMap((r) => r.warmCpuMs))),
      // the same body pushed to the reader in 64 KB chunks, as listPods reads a response
      podlist_warm_chunked_cpu_ms: round1(median(results.flatMap((r) => r.warmChunkedCpuMs))),
      // the decoded list's heap (after a full GC) per Pod: what the informer's cache holds per Pod
      podlist_heap_per_pod_bytes: Math.round(median(results.map((r) => r.heapPerPodBytes)))
    }
  }
}
