/**
 * Per-key serialized work (Q-03 — one queue entry per key; Q-04 — one worker per key): one run per
 * key at a time, an enqueue during a run runs the key again right after, on the newest state.
 * Different keys run concurrently, at most `maxInFlight` at once (Q-05 — bounded work in flight);
 * a key beyond that waits as a map entry, with no fiber of its own. Retries follow one jittered
 * backoff (Q-07 — one jittered retry schedule); a run that keeps dying stops the key until its Pod
 * changes (Q-09 — a run that keeps dying stops until its Pod changes). The state is one `KeyBook`,
 * whose methods never yield; this module holds the fibers.
 */
import { type Cause, Deferred, type Duration, Effect, FiberSet, Metric, type Scope } from "effect"
import * as Metrics from "../../Services/Metrics.ts"
import * as Backoff from "./Backoff.ts"
import { type Ended, KeyBook, type KeyState, type Wake } from "./KeyBook.ts"

export type RunOutcome = "Done" | "Retry" | "RetrySlow" | "Park"

/** Why a key is enqueued. */
export type Trigger = "change" | "resync" | "now"

export interface KeyedQueue<K> {
  readonly enqueue: (key: K, trigger: Trigger) => Effect.Effect<void>
  /** Keys currently running or waiting. */
  readonly size: Effect.Effect<number>
  /** Number of keys whose run is in flight right now. */
  readonly inFlight: Effect.Effect<number>
  /** Keys waiting for a slot to run (beyond `maxInFlight`). */
  readonly ready: Effect.Effect<number>
  /** Resolves once no run is in flight and no key waits for a slot (keys waiting out a retry are idle). */
  readonly idle: Effect.Effect<void>
  /** Stop admitting work; wait for in-flight runs at most `timeout`. */
  readonly drain: (timeout: Duration.Duration) => Effect.Effect<void>
  /** Keys waiting out a retry (not parked) run now, their backoff kept; how many were woken. */
  readonly wakeRetrying: Effect.Effect<number>
}

export interface KeyedQueueOptions {
  /** The shared retry schedule (`Backoff.ts`); each key steps its own run of it, started afresh by a change. */
  readonly retry?: Backoff.RetrySchedule | undefined
  readonly slowRetry?: Backoff.RetrySchedule | undefined
  /** Runs in flight at once (unbounded when absent). */
  readonly maxInFlight?: number | undefined
  readonly runPriority?: number | undefined
  /** The queue's name in its defect logs and in `vk_sandbox_run_defects_total`. */
  readonly name?: string | undefined
  /** Defects in a row after which a key stops until a change. */
  readonly defectLimit?: number | undefined
}

/** Seven runs that die in a row: the waits between them back off 1, 2, 4, 8, 16 s, then the 30 s cap. */
export const defaultDefectLimit = 7

/** A wait that ends with nothing new: its backoff step, a recovered dependency, a drain. */
const timer: Wake = "none"

export const make = <K extends string>(
  run: (key: K) => Effect.Effect<RunOutcome>,
  options: KeyedQueueOptions = {}
): Effect.Effect<KeyedQueue<K>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const retry = options.retry ?? Backoff.schedule(Backoff.defaultBackoff)
    const slowRetry = options.slowRetry ?? Backoff.slowSchedule(Backoff.defaultBackoff)
    const name = options.name ?? "queue"
    const book = new KeyBook<K>(options.maxInFlight ?? Number.POSITIVE_INFINITY, options.defectLimit ?? defaultDefectLimit)
    const fibers = yield* FiberSet.make<void, never>()
    const defects = Metrics.labelled(Metrics.runDefects, { queue: name })

    const runPriority = options.runPriority ?? 0
    const start = runPriority > 0 ? Effect.yieldNowWith(runPriority) : Effect.void

    /** A run that died, logged with its cause and counted (a defect is a bug, never silent). */
    const reportDefect = (key: K, cause: Cause.Cause<unknown>, stopped: boolean) =>
      Effect.logError(
        stopped
          ? "reconcile failed unexpectedly too many times in a row; the key waits for a change"
          : "reconcile failed unexpectedly; retrying",
        cause
      ).pipe(
        Effect.annotateLogs({ key, queue: name, defects: book.defectsOf(key) }),
        Effect.andThen(Metric.update(defects, 1))
      )

    const startAll = (keys: ReadonlyArray<K>): Effect.Effect<void> =>
      keys.length === 0 ? Effect.void : Effect.forEach(keys, (key) => FiberSet.run(fibers, worker(key)), { discard: true })

    /** Waits until a wake or the key's next backoff step; says what woke it. */
    const waitOut = (waiting: Extract<KeyState, { _tag: "Waiting" }>, ended: Ended) =>
      Effect.gen(function*() {
        const woken = Deferred.await(waiting.wake)
        if (waiting.parked || waiting.stopped) return yield* woken
        if (ended === "RetrySlow") {
          const slowStep = yield* Backoff.stepper(slowRetry)
          return yield* Effect.race(woken, slowStep.pipe(Effect.as(timer)))
        }
        if (waiting.step === undefined) waiting.step = yield* Backoff.stepper(retry)
        return yield* Effect.race(woken, waiting.step.pipe(Effect.as(timer)))
      })

    const worker = (key: K): Effect.Effect<void> =>
      Effect.gen(function*() {
        while (true) {
          const wakesBefore = book.wakes
          let died: Cause.Cause<unknown> | undefined
          const ended: Ended = yield* Effect.andThen(start, run(key)).pipe(
            Effect.catchCause((cause) => {
              died = cause
              return Effect.succeed("Defect" as const)
            })
          )
          const next = book.afterRun(key, ended, wakesBefore)
          if (died !== undefined) yield* reportDefect(key, died, next._tag === "Wait" && next.state.stopped)
          if (next._tag === "Again") continue
          if (next._tag === "End") return yield* startAll(book.finish(key))
          // a key waiting out its backoff holds no slot
          yield* startAll(book.release())
          const by = yield* waitOut(next.state, ended)
          if (!book.woken(key, next.state, by)) return
        }
      })

    const enqueue = (key: K, trigger: Trigger) =>
      Effect.suspend(() => {
        const admission = book.admit(key, trigger === "resync" ? "none" : trigger)
        switch (admission._tag) {
          case "Nothing":
            return Effect.void
          case "Start":
            return FiberSet.run(fibers, worker(key)).pipe(Effect.asVoid)
          case "Wake":
            return Deferred.succeed(admission.wake, admission.by).pipe(Effect.asVoid)
        }
      })

    const drain = (timeout: Duration.Duration) =>
      Effect.gen(function*() {
        // Ready and waiting keys hold no work in flight: dropped and let go now.
        for (const wake of book.drain()) yield* Deferred.succeed(wake, timer)
        yield* book.idle.await.pipe(Effect.timeout(timeout), Effect.ignore)
      })

    const wakeRetrying = Effect.gen(function*() {
      let woken = 0
      for (const wake of book.retrying()) if (yield* Deferred.succeed(wake, timer)) woken++
      return woken
    })

    return {
      enqueue,
      wakeRetrying,
      size: Effect.sync(() => book.states.size),
      inFlight: Effect.sync(() => book.running),
      ready: Effect.sync(() => book.readyCount),
      idle: book.idle.await,
      drain
    }
  })
