/**
 * Per-key serialized work, with a bound on runs in flight but no rate limit on admission.
 *
 * - At most one run per key at a time; an enqueue during a run marks the key dirty and the key
 *   runs again right after, reading the newest state. A run is never interrupted by an enqueue.
 * - Different keys run concurrently, at most `maxInFlight` runs at once; a key beyond that
 *   waits its turn in arrival order as an entry of the map, with no fiber of its own. A run in
 *   flight holds a fiber whose stack and context cost some 20 KB of heap while it waits (on a
 *   claims-file write, on sandboxd, on the apiserver's rate limit), so a burst of N keys would
 *   otherwise hold N of them at once; the heap V8 grows for that peak stays resident after it.
 * - A run that asks for a retry waits out a jittered exponential backoff (1 s doubling to 30 s,
 *   ±20 %, forever: Q-07); one that asks for a slow retry (a refused node token: hammering cannot help) waits
 *   a step of the slow schedule (the longest delay) instead; one that can only be fixed by a
 *   change parks until the next change or resync.
 *   A change (or an explicit "now") resets the backoff and wakes a waiting key at once.
 * - `wakeRetrying` sends every key waiting out a retry on at once, its backoff kept (a dependency
 *   answered again, Q-08), and a run in flight then that asks for a retry goes again at once too;
 *   one that fails again waits its next step, so a flapping dependency costs each key one extra
 *   run per recovery, never a reset to the fast end.
 * - `drain` stops admitting work and waits, within a bound, for the runs in flight.
 * - With a `runPriority` above 0, every run first yields at that scheduler priority: tasks of
 *   the default priority queued meanwhile (an HTTP request, an apiserver reply) run, from the
 *   next scheduler turn on, before the runs that have not started yet, however many keys were
 *   admitted at once.
 */
import { Cause, Deferred, Duration, Effect, FiberSet, Schedule, type Scope } from "effect"
import * as Backoff from "./Backoff.ts"

export type RunOutcome = "Done" | "Retry" | "RetrySlow" | "Park"

/** Why a key is enqueued. */
export type Trigger = "change" | "resync" | "now"

/** The next backoff wait of a key, on the shared retry schedule; none until its first retry. */
type Step = Effect.Effect<void> | undefined

type KeyState =
  /** Waiting for one of the `maxInFlight` slots, in `ready` (no fiber). */
  | { readonly _tag: "Ready"; step: Step }
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
  /** Keys waiting for a slot to run (beyond `maxInFlight`). */
  readonly ready: Effect.Effect<number>
  /** Stop admitting work; wait for in-flight runs at most `timeout`. */
  readonly drain: (timeout: Duration.Duration) => Effect.Effect<void>
  /** Keys waiting out a retry (not parked) run now, their backoff kept; how many were woken. */
  readonly wakeRetrying: Effect.Effect<number>
}

/**
 * `retry` is the shared retry schedule (`Backoff.ts`); each key steps its own run of it, started
 * afresh by a change. Per-key state lives in one mutable map updated in place (no copy per
 * enqueue: the cost of an event does not grow with the number of keys). At most `maxInFlight`
 * runs at once (unbounded when absent).
 */
export const make = <K extends string>(
  run: (key: K) => Effect.Effect<RunOutcome>,
  retry: Backoff.RetrySchedule = Backoff.schedule(Backoff.defaultBackoff),
  slowRetry: Backoff.RetrySchedule = Backoff.slowSchedule(Backoff.defaultBackoff),
  maxInFlight: number = Number.POSITIVE_INFINITY,
  runPriority = 0
): Effect.Effect<KeyedQueue<K>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const states = new Map<K, KeyState>()
    let draining = false
    /** Keys in the Running state: each holds one of the `maxInFlight` slots. */
    let running = 0
    /** Keys in the Ready state, oldest first, from `head` on. */
    let ready: Array<K> = []
    let head = 0
    /** How many times `wakeRetrying` ran: a run that saw it change while it failed goes again. */
    let wakes = 0
    const fibers = yield* FiberSet.make<void, never>()

    const start = runPriority > 0 ? Effect.yieldNowWith(runPriority) : Effect.void
    /** A run that dies is logged with its cause and retried (a defect is a bug, never silent). */
    const guarded = (key: K) =>
      Effect.andThen(start, run(key)).pipe(
        Effect.catchCause((cause) =>
          Effect.logError("reconcile failed unexpectedly; retrying").pipe(
            Effect.annotateLogs({ key, cause: Cause.pretty(cause) }),
            Effect.as<RunOutcome>("Retry")
          )
        )
      )

    /** Ready keys take the free slots, oldest first. */
    const startReady: Effect.Effect<void> = Effect.suspend(() => {
      const starting: Array<K> = []
      while (running < maxInFlight && head < ready.length) {
        const key = ready[head++]!
        const state = states.get(key)
        if (state?._tag !== "Ready") continue
        running++
        states.set(key, { _tag: "Running", dirty: false, reset: false, step: state.step })
        starting.push(key)
      }
      if (head === ready.length) {
        ready = []
        head = 0
      } else if (head > 1024 && head * 2 > ready.length) {
        ready = ready.slice(head)
        head = 0
      }
      return Effect.forEach(starting, (key) => FiberSet.run(fibers, worker(key)), { discard: true })
    })

    /** The key's run is over: its slot goes to the oldest ready key. */
    const release = Effect.suspend(() => {
      running--
      return startReady
    })

    const worker = (key: K): Effect.Effect<void> =>
      Effect.gen(function*() {
        while (true) {
          const wakesBefore = wakes
          const outcome = yield* guarded(key)
          const state = states.get(key)
          if (state === undefined || state._tag !== "Running" || draining) {
            states.delete(key)
            return yield* release
          }
          const step = state.reset || outcome === "Done" ? undefined : state.step
          if (state.dirty) {
            states.set(key, { _tag: "Running", dirty: false, reset: false, step })
            continue
          }
          if (outcome === "Done") {
            states.delete(key)
            return yield* release
          }
          // The dependency answered again while this run was failing on it (a request sent before
          // the recovery): it goes again now, as the keys that were waiting did.
          if (outcome !== "Park" && wakes !== wakesBefore) {
            states.set(key, { _tag: "Running", dirty: false, reset: false, step })
            continue
          }
          const wake = yield* Deferred.make<boolean>()
          const parked = outcome === "Park"
          const waiting: KeyState = { _tag: "Waiting", parked, wake, step }
          states.set(key, waiting)
          // a key waiting out its backoff holds no slot
          yield* release
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
          const next = reset ? undefined : waiting.step
          if (running < maxInFlight && head === ready.length) {
            running++
            states.set(key, { _tag: "Running", dirty: false, reset: false, step: next })
            continue
          }
          states.set(key, { _tag: "Ready", step: next })
          ready.push(key)
          return
        }
      })

    const enqueue = (key: K, trigger: Trigger) =>
      Effect.suspend(() => {
        if (draining) return Effect.void
        const state = states.get(key)
        const resets = trigger !== "resync"
        if (state === undefined) {
          if (running >= maxInFlight) {
            states.set(key, { _tag: "Ready", step: undefined })
            ready.push(key)
            return Effect.void
          }
          running++
          states.set(key, { _tag: "Running", dirty: false, reset: false, step: undefined })
          return FiberSet.run(fibers, worker(key)).pipe(Effect.asVoid)
        }
        if (state._tag === "Ready") {
          // it has not run yet, so it will read the newest state; a change starts its backoff afresh
          if (resets) state.step = undefined
          return Effect.void
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
        // Ready and waiting keys hold no work in flight: drop and release them now.
        for (const [key, state] of states) {
          if (state._tag === "Ready") states.delete(key)
          else if (state._tag === "Waiting") yield* Deferred.succeed(state.wake, false)
        }
        ready = []
        head = 0
        yield* inFlight.pipe(
          Effect.repeat({ until: (n: number) => n === 0, schedule: Schedule.spaced(Duration.millis(20)) }),
          Effect.timeout(timeout),
          Effect.ignore
        )
      })

    const wakeRetrying = Effect.gen(function*() {
      wakes++
      let woken = 0
      for (const state of states.values()) {
        if (state._tag === "Waiting" && !state.parked && (yield* Deferred.succeed(state.wake, false))) woken++
      }
      return woken
    })

    return {
      enqueue,
      wakeRetrying,
      size: Effect.sync(() => states.size),
      inFlight,
      ready: Effect.sync(() => ready.length - head),
      drain
    }
  })
