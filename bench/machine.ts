/**
 * The `machine` section, printed with every run: what the machine was like while the bench ran
 * (cores, load, hypervisor steal, the cost of fresh memory, a fixed CPU workload before and
 * after). On one 2-core VM figures moved by up to 2× over a busy day with no code change on their
 * path, so a figure says little without these beside it.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import type { Figures } from "./types.ts"

const cpuReference = `
const runs = []
for (let r = 0; r < 5; r++) {
  const t0 = performance.now()
  let acc = 0
  for (let i = 0; i < 1e7; i++) acc = (acc + i * 2654435761) % 1000003
  const parsed = []
  for (let i = 0; i < 1e5; i++) parsed.push(JSON.parse('{"a":' + i + ',"b":"x' + i + '","c":[1,2,3]}'))
  runs.push(performance.now() - t0 + (acc & 0) + (parsed.length & 0))
}
runs.sort((a, b) => a - b)
process.stdout.write(String(runs[2]))
`

const freshMemory = `
const runs = []
for (let r = 0; r < 5; r++) {
  const t0 = performance.now()
  let kept = []
  for (let i = 0; i < 256; i++) kept.push(Buffer.alloc(1 << 20, 1))
  runs.push(performance.now() - t0)
  kept = null
  globalThis.gc()
}
runs.sort((a, b) => a - b)
process.stdout.write(String(runs[2]))
`

/** Milliseconds the script printed, or -1 when it did not run. */
const timed = (script: string, flags: ReadonlyArray<string> = []): number => {
  const child = spawnSync(process.execPath, [...flags, "-e", script], { encoding: "utf8", timeout: 120_000 })
  const ms = Number(child.stdout)
  return child.status === 0 && Number.isFinite(ms) ? Math.round(ms) : -1
}

interface CpuTicks {
  readonly total: number
  readonly steal: number
}

/** The first line of /proc/stat (user nice system idle iowait irq softirq steal …), summed. */
const cpuTicks = (): CpuTicks | undefined => {
  try {
    const fields = fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
    // guest times (9th and 10th) are already counted in user and nice
    const counted = fields.slice(0, 8)
    return { total: counted.reduce((a, b) => a + b, 0), steal: counted[7] ?? 0 }
  } catch {
    return undefined
  }
}

/** Call before the sections; the returned function, after them, gives the figures. */
export const machineBefore = (): (() => Figures) => {
  const ticks = cpuTicks()
  const load = os.loadavg()[0] ?? 0
  const referenceStart = timed(cpuReference)
  const memory = timed(freshMemory, ["--expose-gc"])
  return () => {
    const referenceEnd = timed(cpuReference)
    const after = cpuTicks()
    const spent = ticks === undefined || after === undefined ? 0 : after.total - ticks.total
    const steal = spent > 0 && ticks !== undefined && after !== undefined ? (after.steal - ticks.steal) / spent : 0
    return {
      cores: os.availableParallelism(),
      load_1m_at_start: Math.round(load * 100) / 100,
      cpu_reference_ms_start: referenceStart,
      cpu_reference_ms_end: referenceEnd,
      fresh_memory_ms: memory,
      cpu_steal_pct: Math.round(steal * 1000) / 10
    }
  }
}
