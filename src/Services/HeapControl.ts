/**
 * The process's own V8 heap, as the heap trim (`Programs/HeapTrim.ts`) sees it: how large it is,
 * how long the event loop has been busy, and a collection that gives free heap memory back to the OS.
 * The live layer is `Layers/HeapControlV8.ts`; tests give a fake.
 */
import { Context, type Effect } from "effect"

export interface HeapSample {
  /** Bytes the V8 heap holds from the OS (all spaces, free space inside them included). */
  readonly committedBytes: number
  /**
   * How long the event loop has spent running callbacks so far (not waiting for I/O or timers), in
   * ms. Unlike the process's CPU time it does not shrink when other processes take the cores: a
   * daemon working through a burst on a loaded machine is busy for the whole wall time it waits
   * to be scheduled, while its CPU share may be a few percent.
   */
  readonly busyMillis: number
}

export class HeapControl extends Context.Service<HeapControl, {
  readonly sample: Effect.Effect<HeapSample>
  /**
   * A full, memory-reducing collection, now: unreachable objects are freed, partly used pages
   * compacted, and the pages left empty (and free space inside the rest) returned to the OS.
   * It stops the process for its duration (tens to hundreds of ms for the heap of a few thousand
   * Pods). False when the runtime offers no such collection (nothing was done).
   */
  readonly trim: Effect.Effect<boolean>
}>()("vk-sandbox/HeapControl") {}
