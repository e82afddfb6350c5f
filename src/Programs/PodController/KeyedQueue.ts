/**
 * Per-key serialized work (virtual-kubelet, ARCHITECTURE.md §6.7, §6.8, §6.15).
 *
 * - At most one run per key at a time; an enqueue during a run marks the key dirty and the key
 *   runs again right after, reading the newest state. A run is never interrupted by an enqueue.
 * - Different keys run concurrently; there is no global rate limit.
 * - A run that asks for a retry waits out a jittered exponential backoff (1 s doubling to 30 s,
 *   forever); one that can only be fixed by a change parks until the next change or resync.
 *   A change (or an explicit "now") resets the backoff and wakes a waiting key at once.
 * - `drain` stops admitting work and waits, within a bound, for the runs in flight.
 */
import { Deferred, Duration, Effect, FiberSet, Random, Ref, Schedule, type Scope } from "effect"

export type RunOutcome = "Done" | "Retry" | "Park"

/** Why a key is enqueued. */
export type Trigger = "change" | "resync" | "now"

type KeyState<K> =
  | { readonly _tag: "Running"; readonly dirty: boolean; readonly reset: boolean; readonly attempts: number; readonly key: K }
  | {
    readonly _tag: "Waiting"
    readonly attempts: number
    readonly parked: boolean
    readonly wake: Deferred.Deferred<boolean> // true = reset the backoff
    readonly key: K
  }

export interface BackoffPolicy {
  readonly initial: Duration.Duration
  readonly max: Duration.Duration
}

export const defaultBackoff: BackoffPolicy = { initial: Duration.seconds(1), max: Duration.seconds(30) }

/** Exponential from `initial`, capped at `max`, with ±20 % jitter (never above the cap). */
export const backoffDelay = (policy: BackoffPolicy, attempt: number) =>
  Effect.gen(function*() {
    const base = Math.min(Duration.toMillis(policy.initial) * 2 ** Math.max(0, attempt - 1), Duration.toMillis(policy.max))
    const jitter = 0.8 + (yield* Random.next) * 0.4
    return Duration.millis(Math.min(Math.round(base * jitter), Duration.toMillis(policy.max)))
  })

export interface KeyedQueue<K> {
  readonly enqueue: (key: K, trigger: Trigger) => Effect.Effect<void>
  /** Keys currently running or waiting. */
  readonly size: Effect.Effect<number>
  /** Number of keys whose run is in flight right now. */
  readonly inFlight: Effect.Effect<number>
  /** Stop admitting work; wait for in-flight runs at most `timeout`. */
  readonly drain: (timeout: Duration.Duration) => Effect.Effect<void>
}

export const make = <K extends string>(
  run: (key: K) => Effect.Effect<RunOutcome>,
  policy: BackoffPolicy = defaultBackoff
): Effect.Effect<KeyedQueue<K>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const states = yield* Ref.make(new Map<K, KeyState<K>>())
    const draining = yield* Ref.make(false)
    const fibers = yield* FiberSet.make<void, never>()

    const setState = (key: K, state: KeyState<K> | undefined) =>
      Ref.update(states, (current) => {
        const next = new Map(current)
        if (state === undefined) next.delete(key)
        else next.set(key, state)
        return next
      })

    /** After a run: decide atomically whether to run again, wait, or go idle. */
    const afterRun = (key: K, outcome: RunOutcome, stopping: boolean) =>
      Effect.gen(function*() {
        const wake = yield* Deferred.make<boolean>()
        return yield* Ref.modify(states, (current): readonly [
          { readonly _tag: "Again"; readonly attempts: number } | { readonly _tag: "Wait"; readonly attempts: number; readonly parked: boolean } | { readonly _tag: "Idle" },
          Map<K, KeyState<K>>
        ] => {
          const state = current.get(key)
          const next = new Map(current)
          if (state === undefined || state._tag !== "Running" || stopping) {
            next.delete(key)
            return [{ _tag: "Idle" }, next]
          }
          const attempts = state.reset ? 0 : outcome === "Done" ? 0 : state.attempts + 1
          if (state.dirty) {
            next.set(key, { _tag: "Running", dirty: false, reset: false, attempts, key })
            return [{ _tag: "Again", attempts }, next]
          }
          if (outcome === "Done") {
            next.delete(key)
            return [{ _tag: "Idle" }, next]
          }
          next.set(key, { _tag: "Waiting", attempts, parked: outcome === "Park", wake, key })
          return [{ _tag: "Wait", attempts, parked: outcome === "Park" }, next]
        })
      })

    const worker = (key: K): Effect.Effect<void> =>
      Effect.gen(function*() {
        while (true) {
          const outcome = yield* run(key).pipe(Effect.catchCause(() => Effect.succeed<RunOutcome>("Retry")))
          const stopping = yield* Ref.get(draining)
          const decision = yield* afterRun(key, outcome, stopping)
          if (decision._tag === "Idle") return
          if (decision._tag === "Again") continue
          const current = (yield* Ref.get(states)).get(key)
          if (current === undefined || current._tag !== "Waiting") return
          const woken = decision.parked
            ? Deferred.await(current.wake)
            : Effect.race(
              Deferred.await(current.wake),
              backoffDelay(policy, decision.attempts).pipe(Effect.flatMap(Effect.sleep), Effect.as(false))
            )
          const reset = yield* woken
          if (yield* Ref.get(draining)) {
            yield* setState(key, undefined)
            return
          }
          yield* setState(key, { _tag: "Running", dirty: false, reset: false, attempts: reset ? 0 : decision.attempts, key })
        }
      })

    const enqueue = (key: K, trigger: Trigger) =>
      Effect.gen(function*() {
        if (yield* Ref.get(draining)) return
        const action = yield* Ref.modify(states, (current): readonly [
          { readonly _tag: "Start" } | { readonly _tag: "Wake"; readonly wake: Deferred.Deferred<boolean>; readonly reset: boolean } | { readonly _tag: "None" },
          Map<K, KeyState<K>>
        ] => {
          const state = current.get(key)
          const next = new Map(current)
          const resets = trigger !== "resync"
          if (state === undefined) {
            next.set(key, { _tag: "Running", dirty: false, reset: false, attempts: 0, key })
            return [{ _tag: "Start" }, next]
          }
          if (state._tag === "Running") {
            next.set(key, { ...state, dirty: true, reset: state.reset || resets })
            return [{ _tag: "None" }, next]
          }
          // Waiting: a change always wakes; a resync wakes only a parked key (a backoff runs its course).
          if (resets || state.parked) return [{ _tag: "Wake", wake: state.wake, reset: resets }, current]
          return [{ _tag: "None" }, current]
        })
        if (action._tag === "Start") yield* FiberSet.run(fibers, worker(key))
        else if (action._tag === "Wake") yield* Deferred.succeed(action.wake, action.reset)
      })

    const inFlight = Ref.get(states).pipe(
      Effect.map((current) => [...current.values()].filter((s) => s._tag === "Running").length)
    )

    const drain = (timeout: Duration.Duration) =>
      Effect.gen(function*() {
        yield* Ref.set(draining, true)
        // Waiting keys hold no work in flight: release them now.
        const waiting = [...(yield* Ref.get(states)).values()].filter((s) => s._tag === "Waiting")
        yield* Effect.forEach(waiting, (s) => (s._tag === "Waiting" ? Deferred.succeed(s.wake, false) : Effect.void), {
          discard: true
        })
        yield* inFlight.pipe(
          Effect.repeat({ until: (n: number) => n === 0, schedule: Schedule.spaced(Duration.millis(20)) }),
          Effect.timeout(timeout),
          Effect.ignore
        )
      })

    return {
      enqueue,
      size: Ref.get(states).pipe(Effect.map((s) => s.size)),
      inFlight,
      drain
    }
  })
