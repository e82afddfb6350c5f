/**
 * HeapControl on V8: the committed size from `v8.getHeapStatistics()`, the event loop's busy time
 * from `performance.eventLoopUtilization()`, and the trim through V8's own `gc` function.
 *
 * `gc` exists only in a context made after `--expose-gc` was set; the daemon does not take that
 * flag on node's command line (as with `--heap-growing-percent`, `Cli/HeapFlags.ts`: V8 compares
 * its flags with those a code cache was made under), so it sets the flag here, makes one small
 * context (~0.25 MB) to take `gc` from, and unsets it again. `gc({ flavor: "last-resort" })` is the
 * collection V8 runs when memory is short: repeated full collections in memory-reducing mode,
 * which compact partly used pages and release empty and pooled ones. A plain `gc()` (and every
 * ordinary major collection) shrinks the heap's committed size but keeps its pages resident, so
 * it would not lower the RSS (measured with the bench: after a 2000-Pod burst a plain full
 * collection took the committed heap from ~67 to ~47 MB and the RSS not at all; the last-resort
 * one took the RSS down by ~34 MB).
 */
import { Effect, Layer } from "effect"
import { getHeapStatistics, setFlagsFromString } from "node:v8"
import { HeapControl } from "../Services/HeapControl.ts"

interface CollectOptions {
  readonly type: "major"
  readonly execution: "sync"
  readonly flavor: "last-resort"
}

type Collect = (options: CollectOptions) => void

const isCollect = (value: unknown): value is Collect => typeof value === "function"

/** V8's `gc`, taken from a context made while `--expose-gc` is set; undefined if there is none. */
export const memoryReducingCollect = (): Collect | undefined => {
  // Loaded before the flag changes: a Node module compiled under other flags than its built-in code
  // cache was made with is compiled from source.
  const vm = process.getBuiltinModule("node:vm")
  setFlagsFromString("--expose-gc")
  try {
    const gc: unknown = vm.runInNewContext("typeof gc === 'function' ? gc : undefined")
    return isCollect(gc) ? gc : undefined
  } finally {
    setFlagsFromString("--no-expose-gc")
  }
}

export const layer: Layer.Layer<HeapControl> = Layer.sync(HeapControl, () => {
  // Made at the first trim, not in the daemon's start (a new context is a few ms of it); node:vm
  // is loaded then too. `performance` is the global one, the same object node:perf_hooks exports,
  // without loading that module.
  let collect: Collect | undefined | null = null
  return HeapControl.of({
    sample: Effect.sync(() => ({
      committedBytes: getHeapStatistics().total_heap_size,
      busyMillis: performance.eventLoopUtilization().active
    })),
    trim: Effect.sync(() => {
      if (collect === null) collect = memoryReducingCollect()
      if (collect === undefined) return false
      collect({ type: "major", execution: "sync", flavor: "last-resort" })
      return true
    })
  })
})
