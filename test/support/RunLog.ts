/**
 * The pod controller's reconcile runs per key, read from its own spans (`PodController.reconcile`,
 * attribute `pod`): the receipt a test waits for before it checks that a run did nothing (no
 * claim, no release, a row kept), instead of a span of real time or a count of I/O turns.
 */
import { Effect, type Exit, Tracer } from "effect"
import { within } from "./Wait.ts"

const runSpan = "PodController.reconcile"

export interface RunLog {
  /** The tracer to run the controller with (`Effect.withTracer`): its reconcile spans are counted. */
  readonly tracer: Tracer.Tracer
  /**
   * Notes how many runs of `key` have begun; the effect it gives waits until a run begun after
   * that has ended. Runs of one key are serial (Q-04 — one worker per key), so the runs end in
   * the order they began. A run that never ends fails the test after 20 s, naming the key.
   */
  readonly next: (key: string) => Effect.Effect<Effect.Effect<void>>
}

export const makeRunLog = (): RunLog => {
  const begun = new Map<string, number>()
  const ended = new Map<string, number>()
  const waiting = new Set<{ readonly key: string; readonly count: number; readonly wake: () => void }>()

  class RunSpan extends Tracer.NativeSpan {
    override attribute(name: string, value: unknown): void {
      if (this.status._tag === "Ended") return
      super.attribute(name, value)
      if (name === "pod") begun.set(String(value), (begun.get(String(value)) ?? 0) + 1)
    }
    override end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
      if (this.status._tag === "Ended") return
      super.end(endTime, exit)
      const key = String(this.attributes.get("pod"))
      const count = (ended.get(key) ?? 0) + 1
      ended.set(key, count)
      for (const waiter of waiting) {
        if (waiter.key === key && waiter.count <= count) {
          waiting.delete(waiter)
          waiter.wake()
        }
      }
    }
  }

  const tracer = Tracer.make({
    span: (options) => (options.name === runSpan ? new RunSpan(options) : new Tracer.NativeSpan(options))
  })

  const endedCount = (key: string, count: number): Effect.Effect<void> =>
    Effect.callback<void>((resume) => {
      if ((ended.get(key) ?? 0) >= count) return resume(Effect.void)
      const waiter = { key, count, wake: () => resume(Effect.void) }
      waiting.add(waiter)
      return Effect.sync(() => void waiting.delete(waiter))
    })

  return {
    tracer,
    next: (key) =>
      Effect.sync(() => {
        const count = (begun.get(key) ?? 0) + 1
        return within(`run ${count} of ${key} to end`, endedCount(key, count))
      })
  }
}
