/**
 * The heap trim: once the daemon is quiet again after its V8 heap grew (a burst of Pods, a
 * restart that decoded thousands of claims), the heap's free memory is given back to the OS.
 *
 * Why the daemon does this itself: when 2000 Pods are bound at once, every one of them is
 * reconciled at once, the short-lived objects of thousands of reconciles in flight are promoted
 * to V8's old generation, and the old generation grows to ~60 MB committed for ~32 MB live. Only
 * a memory-reducing collection returns those pages (`Layers/HeapControlV8.ts`); an ordinary
 * major collection keeps them resident. V8 runs such a collection on its own (its "memory
 * reducer") only once it judges the allocation rate low, and under the Node version the image
 * ships it never does so in this daemon: `node --trace-memory-reducer` prints
 * "Memory reducer: high alloc" at every 8 s check, idle or not. So after a burst the RSS stayed
 * ~35 MB above what the live heap needs, for as long as the daemon ran (bench: the RSS 5 s after
 * a 2000-Pod burst, and still 40 s after it).
 *
 * When: the committed heap has grown by `growthBytes` since the last trim (from zero before the
 * first, so the startup's own garbage is trimmed too), and the event loop was busy for at most
 * `quietShare` of the last `interval`. Busy means the burst is still running: trimming then
 * would stop the process mid-burst and be undone by the next seconds' garbage. (The loop's busy
 * time rather than the process's CPU: on a loaded machine a daemon still working gets only a few
 * percent of a core and would look quiet by its CPU.)
 * Each trim stops the process for its duration (tens to hundreds of ms, logged; ~1-2 s with
 * 10,000 Pods), so it is never repeated without new growth, nor sooner than `pauseFactor` times
 * its own pause.
 */
import { Clock, Duration, Effect } from "effect"
import { HeapControl, type HeapSample } from "../Services/HeapControl.ts"
import { every } from "../Services/Loops.ts"

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
export const runHeapTrim = (options: HeapTrimOptions = defaultHeapTrimOptions): Effect.Effect<unknown, never, HeapControl> =>
  Effect.gen(function*() {
    const heap = yield* HeapControl
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
