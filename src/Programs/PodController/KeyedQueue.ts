/**
 * Per-key serialized work, without a rate limit on admission.
 *
 * - At most one run per key at a time; an enqueue during a run marks the key dirty and the key
 *   runs again right after, reading the newest state. A run is never interrupted by an enqueue.
 * - Different keys run concurrently; there is no global rate limit.
 * - A run that asks for a retry waits out a jittered exponential backoff (1 s doubling to 30 s,
 *   forever); one that asks for a slow retry (a refused node token: hammering cannot help) waits
 *   a step of the slow schedule (the longest delay) instead; one that can only be fixed by a
 *   change parks until the next change or resync.
 *   A change (or an explicit "now") resets the backoff and wakes a waiting key at once.
 * - `drain` stops admitting work and waits, within a bound, for the runs in flight.
 */
import { Cause, Deferred, Duration, Effect, FiberSet, Schedule, type Scope } from "effect"
import * as Backoff from "./Backoff.ts"

export type RunOutcome = "Done" | "Retry" | "RetrySlow" | "Park"

/** Why a key is enqueued. */
export type Trigger = "change" | "resync" | "now"

/** The next backoff wait of a key, on the shared retry schedule; none until its first retry. */
type Step = Effect.Effect<void> | undefined

type KeyState =
  | { readonly _tag: "Running"; dirty: boolean; reset: boolean; step: Step }
  | {
    readonly _tag: "Waiting"
    readonly parked: boolean
    readonly wake: Deferred.Deferred<boolean> // true = reset the backoff
    step: Step
  }

export interface KeyedQueue<K> {
  readonly enqueue: (key: K, trigger: Trigger) => Effect.Effect<void>
  /** Keys currently running or waiting. */
  readonly size: Effect.Effect<number>
  /** Number of keys whose run is in flight right now. */
  readonly inFlight: Effect.Effect<number>
  /** Stop admitting work; wait for in-flight runs at most `timeout`. */
  readonly drain: (timeout: Duration.Duration) => Effect.Effect<void>
}

/**
 * `retry` is the shared retry schedule (`Backoff.ts`); each key steps its own run of it, started
 * afresh by a change. Per-key state lives in one mutable map updated in place (no copy per
 * enqueue: the cost of an event does not grow with the number of keys).
 */
export const make = <K extends string>(
  run: (key: K) => Effect.Effect<RunOutcome>,
  retry: Backoff.RetrySchedule = Backoff.schedule(Backoff.defaultBackoff),
  slowRetry: Backoff.RetrySchedule = Backoff.slowSchedule(Backoff.defaultBackoff)
): Effect.Effect<KeyedQueue<K>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const states = new Map<K, KeyState>()
    let draining = false
    let running = 0
    const fibers = yield* FiberSet.make<void, never>()

    /** A run that dies is logged with its cause and retried (a defect is a bug, never silent). */
    const guarded = (key: K) =>
      run(key).pipe(
        Effect.catchCause((cause) =>
          Effect.logError("reconcile failed unexpectedly; retrying").pipe(
            Effect.annotateLogs({ key, cause: Cause.pretty(cause) }),
            Effect.as<RunOutcome>("Retry")
          )
        )
      )

    const worker = (key: K): Effect.Effect<void> =>
      Effect.gen(function*() {
        while (true) {
          running++
          const outcome = yield* guarded(key).pipe(Effect.ensuring(Effect.sync(() => running--)))
          const state = states.get(key)
          if (state === undefined || state._tag !== "Running" || draining) {
            states.delete(key)
            return
          }
          const step = state.reset || outcome === "Done" ? undefined : state.step
          if (state.dirty) {
            states.set(key, { _tag: "Running", dirty: false, reset: false, step })
            continue
          }
          if (outcome === "Done") {
            states.delete(key)
            return
          }
          const wake = yield* Deferred.make<boolean>()
          const parked = outcome === "Park"
          const waiting: KeyState = { _tag: "Waiting", parked, wake, step }
          states.set(key, waiting)
          let woken: Effect.Effect<boolean> = Deferred.await(wake)
          if (outcome === "RetrySlow") {
            const slowStep = yield* Backoff.stepper(slowRetry)
            woken = Effect.race(Deferred.await(wake), slowStep.pipe(Effect.as(false)))
          } else if (!parked) {
            if (waiting.step === undefined) waiting.step = yield* Backoff.stepper(retry)
            woken = Effect.race(Deferred.await(wake), waiting.step.pipe(Effect.as(false)))
          }
          const reset = yield* woken
          if (draining) {
            states.delete(key)
            return
          }
          states.set(key, { _tag: "Running", dirty: false, reset: false, step: reset ? undefined : waiting.step })
        }
      })

    const enqueue = (key: K, trigger: Trigger) =>
      Effect.suspend(() => {
        if (draining) return Effect.void
        const state = states.get(key)
        const resets = trigger !== "resync"
        if (state === undefined) {
          states.set(key, { _tag: "Running", dirty: false, reset: false, step: undefined })
          return FiberSet.run(fibers, worker(key)).pipe(Effect.asVoid)
        }
        if (state._tag === "Running") {
          state.dirty = true
          state.reset = state.reset || resets
          return Effect.void
        }
        // Waiting: a change always wakes; a resync wakes only a parked key (a backoff runs its course).
        if (resets || state.parked) return Deferred.succeed(state.wake, resets).pipe(Effect.asVoid)
        return Effect.void
      })

    const inFlight = Effect.sync(() => running)

    const drain = (timeout: Duration.Duration) =>
      Effect.gen(function*() {
        draining = true
        // Waiting keys hold no work in flight: release them now.
        for (const state of states.values()) {
          if (state._tag === "Waiting") yield* Deferred.succeed(state.wake, false)
        }
        yield* inFlight.pipe(
          Effect.repeat({ until: (n: number) => n === 0, schedule: Schedule.spaced(Duration.millis(20)) }),
          Effect.timeout(timeout),
          Effect.ignore
        )
      })

    return {
      enqueue,
      size: Effect.sync(() => states.size),
      inFlight,
      drain
    }
  })
