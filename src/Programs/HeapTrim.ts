/**
 * The heap trim (a performance device; off with `heap-trim` in VK_SANDBOX_TUNING_OFF): once the
 * daemon is quiet after its V8 heap grew (a burst of Pods, a restart), a memory-reducing collection
 * gives the heap's free pages back to the OS. V8's own memory reducer never does so in this daemon,
 * and an ordinary major collection leaves the pages resident. Quiet is the event loop's busy share,
 * not the CPU's (a loaded machine starves a busy daemon too). Each trim stops the process, so it is
 * never repeated without new growth, nor sooner than `pauseFactor` times its own pause. Figures and
 * the why: docs/operations.md, "Memory".
 */
import { getHeapStatistics, setFlagsFromString } from "node:v8"
import { Clock, Duration, Effect } from "effect"
import { every } from "../Services/Loops.ts"

export interface HeapSample {
  /** Bytes the V8 heap holds from the OS (all spaces, free space inside them included). */
  readonly committedBytes: number
  /** How long the event loop has spent running callbacks so far, in ms (not shrunk by other processes' CPU). */
  readonly busyMillis: number
}

/** The process's own heap as the trim sees it; `v8Heap` is the real one, tests give a fake. */
export interface HeapControl {
  readonly sample: Effect.Effect<HeapSample>
  /** A full, memory-reducing collection, now (it stops the process); false when the runtime has none. */
  readonly trim: Effect.Effect<boolean>
}

export interface HeapTrimOptions {
  /** How often the heap and the event loop's busy time are sampled. */
  readonly interval: Duration.Duration
  /** Growth of the committed heap since the last trim that makes another one worth its pause. */
  readonly growthBytes: number
  /** The share of the last interval the event loop may have been busy and the daemon still be quiet. */
  readonly quietShare: number
  /**
   * After a trim that stopped the process for P ms, none for `pauseFactor` × P: trims then take at
   * most about 1/pauseFactor of the daemon's time, however its heap grows (e.g. Pods added a few
   * at a time up to 10,000, where each trim frees little and stops the process for a second).
   */
  readonly pauseFactor: number
}

export const defaultHeapTrimOptions: HeapTrimOptions = {
  interval: Duration.seconds(1),
  growthBytes: 16 * 1024 * 1024,
  quietShare: 0.1,
  pauseFactor: 100
}

/** A sample and when it was taken (the clock's milliseconds). */
export interface Observed extends HeapSample {
  readonly atMillis: number
}

/** Whether to trim now, from the committed size after the last trim and the last two samples; pure. */
export const trimDue = (floorBytes: number, previous: Observed, current: Observed, options: HeapTrimOptions): boolean => {
  if (current.committedBytes - floorBytes < options.growthBytes) return false
  const elapsedMillis = current.atMillis - previous.atMillis
  if (elapsedMillis <= 0) return false
  return current.busyMillis - previous.busyMillis <= options.quietShare * elapsedMillis
}

const mb = (bytes: number) => Math.round(bytes / 104857.6) / 10

/** Samples every `interval` and trims when `trimDue` says so; runs until interrupted. */
export const runHeapTrim = (options: HeapTrimOptions = defaultHeapTrimOptions, heap: HeapControl = v8Heap()): Effect.Effect<unknown> =>
  Effect.gen(function*() {
    const observe = Effect.map(Effect.all([heap.sample, Clock.currentTimeMillis]), ([sample, atMillis]): Observed => ({
      ...sample,
      atMillis
    }))
    // The committed size right after the last trim; zero before the first.
    let floorBytes = 0
    // No trim before this time (the clock's ms): `pauseFactor` times the last trim's pause after it.
    let notBeforeMillis = 0
    let previous = yield* observe
    const tick = Effect.gen(function*() {
      const current = yield* observe
      if (current.atMillis < notBeforeMillis || !trimDue(floorBytes, previous, current, options)) {
        previous = current
        return
      }
      const trimmed = yield* heap.trim
      // Sampled again after the trim: its own pause must not make the next interval look busy.
      const after = yield* observe
      previous = after
      // Without a collector nothing shrank: the floor still moves up, so nothing is retried until the heap grows again.
      floorBytes = after.committedBytes
      const pauseMillis = after.busyMillis - current.busyMillis
      notBeforeMillis = after.atMillis + options.pauseFactor * pauseMillis
      yield* Effect.logInfo(trimmed ? "heap trimmed: free V8 heap returned to the OS" : "heap trim unavailable in this runtime").pipe(
        Effect.annotateLogs({
          committedBeforeMb: mb(current.committedBytes),
          committedAfterMb: mb(after.committedBytes),
          pauseMs: Math.round(pauseMillis)
        })
      )
    })
    // The first look one interval after the start, not at once: an interval is what "quiet" is judged over.
    return yield* every(options.interval, tick)
  })

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

/**
 * The V8 heap: the committed size, the event loop's busy time, and V8's last-resort collection
 * (`gc`, taken from one small context made while `--expose-gc` is set: the daemon does not take
 * the flag on node's command line, where it would cost the code caches; Cli/HeapFlags.ts says why).
 */
export const v8Heap = (): HeapControl => {
  // Made at the first trim, not in the daemon's start (a new context is a few ms of it); node:vm
  // is loaded then too. `performance` is the global one, the same object node:perf_hooks exports,
  // without loading that module.
  let collect: Collect | undefined | null = null
  return {
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
  }
}
