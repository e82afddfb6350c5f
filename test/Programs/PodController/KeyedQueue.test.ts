import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Logger, Metric, Ref, Schedule } from "effect"
import { TestClock } from "effect/testing"
import * as Backoff from "../../../src/Programs/PodController/Backoff.ts"
import * as KeyedQueue from "../../../src/Programs/PodController/KeyedQueue.ts"
import * as Metrics from "../../../src/Services/Metrics.ts"
import { manualScheduler } from "../../support/ManualScheduler.ts"

/**
 * 100 keys admitted at once whose runs are 1 ms of work each with no I/O (a restart's re-attached
 * Pods, in miniature), on the daemon's scheduler in 10 ms turns on a clock the test moves; after
 * the first turn a task of the default priority is queued (an HTTP request's fiber stands in).
 * Returns how many runs had happened when that task ran.
 */
const runsBeforeAnArrival = (runPriority: number): number => {
  const { clock, pending, scheduler } = manualScheduler({ sliceMillis: 10, checkEvery: 1 })
  let runs = 0
  Effect.runFork(
    Effect.scoped(Effect.gen(function*() {
      const queue = yield* KeyedQueue.make<string>(
        () =>
          Effect.sync(() => {
            runs++
            clock.now += 1
            return "Done" as const
          }),
        { maxInFlight: 256, runPriority }
      )
      for (let i = 0; i < 100; i++) yield* queue.enqueue(`k${i}`, "change")
      yield* Effect.never
    })),
    { scheduler }
  )
  pending.shift()?.()
  let seen = -1
  scheduler.makeDispatcher().scheduleTask(() => (seen = runs), 0)
  while (pending.length > 0) pending.shift()?.()
  assert.strictEqual(runs, 100)
  return seen
}

/** Lets forked fibers run to their next suspension point. */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

describe("KeyedQueue", () => {
  it.effect("runs one key at a time; an enqueue during a run reruns once with the newest state", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const runs = yield* Ref.make<ReadonlyArray<string>>([])
      const concurrent = yield* Ref.make(0)
      const maxConcurrent = yield* Ref.make(0)
      const version = yield* Ref.make(0)
      const queue = yield* KeyedQueue.make<string>((key) =>
        Effect.gen(function*() {
          const now = yield* Ref.updateAndGet(concurrent, (n) => n + 1)
          yield* Ref.update(maxConcurrent, (m) => Math.max(m, now))
          const seen = yield* Ref.get(version)
          yield* Deferred.await(gate)
          yield* Ref.update(runs, (r) => [...r, `${key}@${seen}`])
          yield* Ref.update(concurrent, (n) => n - 1)
          return "Done" as const
        })
      )
      yield* queue.enqueue("a", "change")
      yield* settle
      // a burst of events while the first run is blocked: one more run, not three
      for (let i = 1; i <= 3; i++) {
        yield* Ref.set(version, i)
        yield* queue.enqueue("a", "change")
      }
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.deepStrictEqual(yield* Ref.get(runs), ["a@0", "a@3"])
      assert.strictEqual(yield* Ref.get(maxConcurrent), 1)
      assert.strictEqual(yield* queue.size, 0)
    }))

  it.effect("different keys run concurrently", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const started = yield* Ref.make(0)
      const queue = yield* KeyedQueue.make<string>(() =>
        Ref.update(started, (n) => n + 1).pipe(Effect.andThen(Deferred.await(gate)), Effect.as("Done" as const))
      )
      for (const key of ["a", "b", "c"]) yield* queue.enqueue(key, "change")
      yield* settle
      assert.strictEqual(yield* Ref.get(started), 3)
      assert.strictEqual(yield* queue.inFlight, 3)
      yield* Deferred.succeed(gate, undefined)
    }))

  it.effect("at most maxInFlight runs at once: the other keys wait their turn without a run and start in arrival order as slots free", () =>
    Effect.gen(function*() {
      const gates = new Map<string, Deferred.Deferred<void>>()
      const started: Array<string> = []
      const queue = yield* KeyedQueue.make<string>(
        (key) =>
          Effect.gen(function*() {
            started.push(key)
            const gate = yield* Deferred.make<void>()
            gates.set(key, gate)
            yield* Deferred.await(gate)
            return "Done" as const
          }),
        { maxInFlight: 2 }
      )
      for (const key of ["a", "b", "c", "d", "e"]) yield* queue.enqueue(key, "change")
      // a key already waiting for a slot is not queued twice
      yield* queue.enqueue("d", "change")
      yield* settle
      assert.deepStrictEqual(started, ["a", "b"])
      assert.strictEqual(yield* queue.inFlight, 2)
      assert.strictEqual(yield* queue.ready, 3)
      assert.strictEqual(yield* queue.size, 5)
      yield* Deferred.succeed(gates.get("b")!, undefined)
      yield* settle
      assert.deepStrictEqual(started, ["a", "b", "c"])
      for (const key of ["a", "c", "d", "e"]) {
        yield* Deferred.succeed(gates.get(key)!, undefined)
        yield* settle
      }
      assert.deepStrictEqual(started, ["a", "b", "c", "d", "e"])
      assert.strictEqual(yield* queue.inFlight, 0)
      assert.strictEqual(yield* queue.size, 0)
    }))

  it.effect("a key waiting out its backoff holds no slot; woken with every slot taken, it waits its turn", () =>
    Effect.gen(function*() {
      const attempts = new Map<string, number>()
      const gate = yield* Deferred.make<void>()
      const queue = yield* KeyedQueue.make<string>(
        (key) =>
          Effect.gen(function*() {
            const n = (attempts.get(key) ?? 0) + 1
            attempts.set(key, n)
            if (key === "a") return n === 1 ? "Retry" as const : "Done" as const
            yield* Deferred.await(gate)
            return "Done" as const
          }),
        { maxInFlight: 1 }
      )
      yield* queue.enqueue("a", "change")
      yield* settle
      // "a" waits out its backoff: "b" gets the slot
      yield* queue.enqueue("b", "change")
      yield* settle
      assert.strictEqual(attempts.get("b"), 1)
      assert.strictEqual(yield* queue.inFlight, 1)
      // "a" is woken while "b" holds the only slot: it runs once "b" is done
      yield* queue.enqueue("a", "change")
      yield* settle
      assert.strictEqual(attempts.get("a"), 1)
      assert.strictEqual(yield* queue.ready, 1)
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.strictEqual(attempts.get("a"), 2)
      assert.strictEqual(yield* queue.size, 0)
    }))

  it.effect("drain drops the keys waiting for a slot: they never start", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const started: Array<string> = []
      const queue = yield* KeyedQueue.make<string>(
        (key) => Effect.sync(() => started.push(key)).pipe(Effect.andThen(Deferred.await(gate)), Effect.as("Done" as const)),
        { maxInFlight: 1 }
      )
      yield* queue.enqueue("a", "change")
      yield* queue.enqueue("b", "change")
      yield* settle
      const draining = yield* Effect.forkChild(queue.drain(Duration.seconds(10)))
      yield* settle
      yield* Deferred.succeed(gate, undefined)
      // On the signal of the last run's end: no clock needs to move.
      yield* Fiber.join(draining)
      assert.deepStrictEqual(started, ["a"])
      assert.strictEqual(yield* queue.size, 0)
    }))

  it.effect("idle: resolves once no run is in flight or waits for a slot, whatever waits out a retry", () =>
    Effect.gen(function*() {
      const gates = new Map<string, Deferred.Deferred<void>>()
      const queue = yield* KeyedQueue.make<string>(
        (key) =>
          Effect.gen(function*() {
            if (key === "failing") return "Retry" as const
            const gate = yield* Deferred.make<void>()
            gates.set(key, gate)
            yield* Deferred.await(gate)
            return "Done" as const
          }),
        { maxInFlight: 1 }
      )
      yield* queue.idle
      yield* queue.enqueue("failing", "change")
      yield* queue.idle
      for (const key of ["a", "b"]) yield* queue.enqueue(key, "change")
      const idle = yield* Effect.forkChild(queue.idle)
      yield* settle
      yield* Deferred.succeed(gates.get("a")!, undefined)
      yield* settle
      assert.isUndefined(idle.pollUnsafe(), "b took the slot a left")
      yield* Deferred.succeed(gates.get("b")!, undefined)
      yield* Fiber.join(idle)
      assert.strictEqual(yield* queue.size, 1, "the failing key waits out its retry")
    }))

  it.effect("retries with exponential backoff from 1 s capped at 30 s, jittered ±20 % (Q-07)", () =>
    Effect.gen(function*() {
      const attempts = yield* Ref.make(0)
      const queue = yield* KeyedQueue.make<string>(
        () => Ref.update(attempts, (n) => n + 1).pipe(Effect.as("Retry" as const)),
        // jitter is ±20 %: check the bounds, not exact instants
        { retry: Backoff.schedule({ initial: Duration.seconds(1), max: Duration.seconds(30) }) }
      )
      yield* queue.enqueue("a", "change")
      yield* settle
      assert.strictEqual(yield* Ref.get(attempts), 1)
      yield* TestClock.adjust("799 millis")
      yield* settle
      assert.strictEqual(yield* Ref.get(attempts), 1, "not before 0.8 s")
      yield* TestClock.adjust("401 millis")
      yield* settle
      assert.strictEqual(yield* Ref.get(attempts), 2, "by 1.2 s")
      // attempts keep coming forever, never more than 36 s apart (the 30 s cap, +20 % jitter: Q-07
      // — one jittered retry schedule)
      for (let i = 0; i < 10; i++) {
        const before = yield* Ref.get(attempts)
        yield* TestClock.adjust("36 seconds")
        yield* settle
        assert.isAbove(yield* Ref.get(attempts), before)
      }
    }))

  it.effect("a change resets the backoff and wakes a waiting key at once; a resync does not", () =>
    Effect.gen(function*() {
      const attempts = yield* Ref.make(0)
      const queue = yield* KeyedQueue.make<string>(() => Ref.update(attempts, (n) => n + 1).pipe(Effect.as("Retry" as const)))
      yield* queue.enqueue("a", "change")
      yield* settle
      yield* queue.enqueue("a", "resync")
      yield* settle
      assert.strictEqual(yield* Ref.get(attempts), 1, "a resync does not cut a backoff short")
      yield* queue.enqueue("a", "change")
      yield* settle
      assert.strictEqual(yield* Ref.get(attempts), 2, "a change wakes it")
    }))

  it.effect("wakeRetrying (Q-08): keys waiting out a retry run now with their backoff kept, a run failing meanwhile goes again, a parked key stays", () =>
    Effect.gen(function*() {
      const attempts = new Map<string, number>()
      const gate = yield* Deferred.make<void>()
      const queue = yield* KeyedQueue.make<string>((key) =>
        Effect.gen(function*() {
          const n = (attempts.get(key) ?? 0) + 1
          attempts.set(key, n)
          // "inflight" is in the middle of its second run when the dependency comes back
          if (key === "inflight" && n === 2) yield* Deferred.await(gate)
          return key === "parked" ? "Park" as const : "Retry" as const
        })
      )
      for (const key of ["waiting", "inflight", "parked"]) yield* queue.enqueue(key, "change")
      yield* settle
      // Backed off to the 16 s step: runs at 0, 1, 3, 7 and 15 s (±20 %).
      yield* TestClock.adjust("20 seconds")
      yield* settle
      const waitingBefore = attempts.get("waiting") ?? 0
      assert.strictEqual(attempts.get("inflight"), 2, "in flight")
      assert.strictEqual(yield* queue.wakeRetrying, 1, "only the waiting key was waiting to be woken")
      yield* settle
      assert.strictEqual(attempts.get("waiting"), waitingBefore + 1, "the waiting key ran at once")
      assert.strictEqual(attempts.get("parked"), 1, "a parked key is not a retry")
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.strictEqual(attempts.get("inflight"), 3, "the run that failed while the dependency came back went again at once")
      // The backoff was kept: the next retry is not 1 s away.
      yield* TestClock.adjust("2 seconds")
      yield* settle
      assert.strictEqual(attempts.get("waiting"), waitingBefore + 1, "no reset to the fast end")
    }))

  it.effect("a parked key waits for a change or a resync, not for time", () =>
    Effect.gen(function*() {
      const attempts = yield* Ref.make(0)
      const queue = yield* KeyedQueue.make<string>(() => Ref.update(attempts, (n) => n + 1).pipe(Effect.as("Park" as const)))
      yield* queue.enqueue("a", "change")
      yield* settle
      yield* TestClock.adjust("1 hour")
      yield* settle
      assert.strictEqual(yield* Ref.get(attempts), 1)
      yield* queue.enqueue("a", "resync")
      yield* settle
      assert.strictEqual(yield* Ref.get(attempts), 2)
    }))

  it.effect("drain stops admitting work and waits for the run in flight", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const finished = yield* Ref.make<ReadonlyArray<string>>([])
      const queue = yield* KeyedQueue.make<string>((key) =>
        Deferred.await(gate).pipe(Effect.andThen(Ref.update(finished, (f) => [...f, key])), Effect.as("Done" as const))
      )
      yield* queue.enqueue("a", "change")
      yield* settle
      const draining = yield* Effect.forkChild(queue.drain(Duration.seconds(10)))
      yield* settle
      yield* queue.enqueue("b", "change")
      yield* Deferred.succeed(gate, undefined)
      // On the signal of the last run's end: no clock needs to move.
      yield* Fiber.join(draining)
      assert.deepStrictEqual(yield* Ref.get(finished), ["a"])
    }))

  it.effect("every retry waits on a step of the schedule it was given; a change starts the backoff afresh", () =>
    Effect.gen(function*() {
      const steps = yield* Ref.make(0)
      const counting = Backoff.schedule(Backoff.defaultBackoff).pipe(
        Schedule.tap(() => Ref.update(steps, (n) => n + 1))
      )
      const attempts = yield* Ref.make(0)
      const queue = yield* KeyedQueue.make<string>(
        () => Ref.update(attempts, (n) => n + 1).pipe(Effect.as("Retry" as const)),
        { retry: counting }
      )
      yield* queue.enqueue("a", "change")
      yield* settle
      for (let i = 0; i < 4; i++) {
        yield* TestClock.adjust("31 seconds")
        yield* settle
      }
      const runs = yield* Ref.get(attempts)
      assert.isAtLeast(runs, 4)
      // one step per wait: the run that is now waiting took the last one
      assert.strictEqual(yield* Ref.get(steps), runs)
    }))

  const logged: Array<unknown> = []
  it.effect("a run that dies is logged with its cause and retried, not dropped", () =>
    Effect.gen(function*() {
      const attempts = yield* Ref.make(0)
      const queue = yield* KeyedQueue.make<string>(() =>
        Ref.updateAndGet(attempts, (n) => n + 1).pipe(
          Effect.flatMap((n) => (n === 1 ? Effect.die(new Error("boom")) : Effect.succeed("Done" as const)))
        )
      )
      yield* queue.enqueue("a", "change")
      yield* settle
      yield* TestClock.adjust("2 seconds")
      yield* settle
      assert.strictEqual(yield* Ref.get(attempts), 2)
      assert.isTrue(JSON.stringify(logged).includes("reconcile failed unexpectedly"))
    }).pipe(Effect.provide(Logger.layer([Logger.make((options) => void logged.push(options.message))]))))

  const defectLogs: Array<{ readonly message: unknown; readonly cause: string }> = []
  it.effect("Q-09: a key whose runs keep dying backs off to the cap, then waits for a change; its defects are logged and counted, other keys run on", () =>
    Effect.gen(function*() {
      const runs = new Map<string, number>()
      const defectsCounted = Effect.map(
        Metric.value(Metrics.labelled(Metrics.runDefects, { queue: "q09" })),
        (state) => state.count
      )
      const before = yield* defectsCounted
      const queue = yield* KeyedQueue.make<string>(
        (key) =>
          Effect.suspend(() => {
            runs.set(key, (runs.get(key) ?? 0) + 1)
            return key === "broken" ? Effect.die(new TypeError("a bug")) : Effect.succeed("Done" as const)
          }),
        { name: "q09" }
      )
      yield* queue.enqueue("broken", "change")
      yield* settle
      // Backed off 1, 2, 4, 8, 16, 30 s (±20 %): seven runs in under two minutes, then none.
      for (let i = 0; i < 12; i++) {
        yield* TestClock.adjust("10 seconds")
        yield* settle
        yield* queue.enqueue(`healthy-${i}`, "change")
        yield* settle
      }
      assert.strictEqual(runs.get("broken"), 7)
      assert.strictEqual(runs.get("healthy-11"), 1, "other keys run on")
      yield* TestClock.adjust("1 hour")
      yield* queue.enqueue("broken", "resync")
      assert.strictEqual(yield* queue.wakeRetrying, 0, "a stopped key is not a retry")
      yield* settle
      assert.strictEqual(runs.get("broken"), 7, "neither time, a resync nor a recovered dependency runs it again")
      // An explicit "now" runs it once; dying again, it stops again at once.
      yield* queue.enqueue("broken", "now")
      yield* settle
      yield* TestClock.adjust("1 hour")
      yield* settle
      assert.strictEqual(runs.get("broken"), 8)
      // A change to its Pod gives it a fresh budget: seven more runs, backed off, then it stops again.
      yield* queue.enqueue("broken", "change")
      yield* settle
      for (let i = 0; i < 12; i++) {
        yield* TestClock.adjust("10 seconds")
        yield* settle
      }
      assert.strictEqual(runs.get("broken"), 15)
      assert.strictEqual((yield* defectsCounted) - before, 15)
      const stopped = defectLogs.filter((line) => String(line.message).includes("too many times in a row"))
      assert.strictEqual(stopped.length, 3)
      assert.isTrue(defectLogs.every((line) => line.cause.includes("TypeError: a bug")), "each line carries the defect")
      assert.strictEqual(defectLogs.length, 15)
    }).pipe(
      Effect.provide(Logger.layer([
        Logger.make((options) => void defectLogs.push({ message: options.message, cause: String(options.cause) }))
      ]))
    ))

  it("runs with a runPriority start after a task of the default priority that arrived while they waited (Q-06)", () => {
    // At the default priority the arrival waits for every run admitted before it.
    assert.strictEqual(runsBeforeAnArrival(0), 100)
    // At a lower one (a higher number) it waits for the first turn's runs only.
    assert.isAtMost(runsBeforeAnArrival(1), 11)
  })
})
