/**
 * The `podList` section: the daemon's read of a 10,000-Pod list body (`ListBody.readList` with
 * `decodePod`, the reader `listPods` feeds chunk by chunk on a restart), timed apart from the rest
 * of a restart; warm, also fed in 64 KB chunks.
 * Each run is a fresh node (the image's node flags, so the young generation is the daemon's size)
 * that reads the body once cold, as a restart does, and then a few times warm; the figures are
 * the medians over the runs of the main thread's CPU (`process.threadCpuUsage`: what the other
 * helpers' load adds to wall time is left out, though not all of what it does to caches).
 *
 * The body is made here in the shape the in-memory apiserver serves a Running Pod of the daemon
 * section's burst (two managedFields entries, the spec the apiserver fills in, the Running status
 * the daemon writes), each Pod with its own name, uid, resourceVersion and claim id.
 *
 *   VK_BENCH_PODLIST_N    Pods in the list (10000)
 *   VK_BENCH_PODLIST_RUNS fresh processes (5)
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
