/**
 * the event loop is shared in turns: the daemon's scheduler runs every fiber's tasks in
 * turns of at most a slice of the event loop. The clock is the test's own (each task moves it), and
 * turns run when the test says so or on Node's own setImmediate queue: no sleeps, no wall clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scheduler } from "effect"
import { onDaemonScheduler } from "../../src/Daemon.ts"
import * as EventLoopScheduler from "../../src/Programs/EventLoopScheduler.ts"
import { manualScheduler } from "../support/ManualScheduler.ts"

/** A scheduler on a clock the test moves, whose turns wait in `pending` until `turn()` runs one. */
const manual = (sliceMillis: number) => {
  const { clock, pending, scheduler } = manualScheduler({ sliceMillis })
  const dispatcher = scheduler.makeDispatcher()
  const turn = () => {
    const next = pending.shift()
    assert.isDefined(next, "a turn is pending")
    next!()
  }
  return { clock, pending, scheduler, dispatcher, turn }
}

describe("the daemon's event-loop scheduler (Q-06)", () => {
  it("a turn ends once its slice is used; what is left runs first in the next turn, after the loop's own pass", () => {
    const { clock, dispatcher, pending, turn } = manual(10)
    const ran: Array<string> = []
    const task = (name: string, then?: () => void) => () => {
      ran.push(name)
      clock.now += 4
      then?.()
    }
    for (const name of ["a", "b", "c", "d", "e"]) {
      dispatcher.scheduleTask(task(name, name === "b" ? () => dispatcher.scheduleTask(task("late"), 0) : undefined), 0)
    }
    assert.strictEqual(pending.length, 1, "one turn asked for, however many tasks")
    turn()
    // 4 + 4 + 4 ms: the third task used up the 10 ms slice.
    assert.deepStrictEqual(ran, ["a", "b", "c"])
    assert.strictEqual(pending.length, 1, "the rest waits for the next turn, after the event loop's pass")
    turn()
    assert.deepStrictEqual(ran, ["a", "b", "c", "d", "e", "late"], "left-over tasks before the ones scheduled later")
    assert.strictEqual(pending.length, 0, "nothing queued, no turn asked for")
  })

  it("a turn cut short with hundreds of thousands of tasks queued behind it keeps them all, in order", () => {
    // Left-over tasks are merged with those scheduled meanwhile: a spread of that many arguments
    // would overflow the stack (RangeError) and end the process from a setImmediate callback.
    const { clock, dispatcher, pending, turn } = manual(10)
    const many = 300_000
    let ran = 0
    let inOrder = true
    // First the task that schedules them, then the one left over from its turn, then 1 … many.
    const numbered = (n: number) => () => {
      if (ran !== n + 1) inOrder = false
      ran++
    }
    dispatcher.scheduleTask(() => {
      for (let n = 1; n <= many; n++) dispatcher.scheduleTask(numbered(n), 0)
      ran++
      clock.now += 20
    }, 0)
    dispatcher.scheduleTask(() => {
      if (ran !== 1) inOrder = false
      ran++
    }, 0)
    turn()
    assert.strictEqual(ran, 1, "the slice is used by the first task")
    while (pending.length > 0) turn()
    assert.strictEqual(ran, many + 2)
    assert.isTrue(inOrder, "the left-over task first, then the scheduled ones in the order they came")
  })

  it("lower priority numbers first, first come first served within one", () => {
    const { dispatcher, turn } = manual(10)
    const ran: Array<string> = []
    dispatcher.scheduleTask(() => ran.push("p1-a"), 1)
    dispatcher.scheduleTask(() => ran.push("p0-a"), 0)
    dispatcher.scheduleTask(() => ran.push("p1-b"), 1)
    dispatcher.scheduleTask(() => ran.push("p0-b"), 0)
    turn()
    assert.deepStrictEqual(ran, ["p0-a", "p0-b", "p1-a", "p1-b"])
  })

  it("every fiber shares one dispatcher", () => {
    const { scheduler } = manual(10)
    assert.strictEqual(scheduler.makeDispatcher(), scheduler.makeDispatcher())
  })

  it.effect("the daemon runs on it: its fibers, forked ones too, share one dispatcher", () =>
    Effect.gen(function*() {
      const outside = yield* Effect.service(Scheduler.Scheduler)
      assert.notStrictEqual(outside.makeDispatcher(), outside.makeDispatcher(), "Effect's default: one per fiber")
      const current = Effect.service(Scheduler.Scheduler)
      const inside = yield* onDaemonScheduler(Effect.forkChild(current).pipe(Effect.flatMap(Fiber.join)))
      assert.strictEqual(inside.makeDispatcher(), inside.makeDispatcher())
    }))

  it("a fiber that keeps running yields once its turn's slice is used, and finishes in later turns", () => {
    const { clock, scheduler, pending, turn } = manual(10)
    let steps = 0
    // Started on a turn (it yields first), then 10,000 steps of 0.01 ms each: 100 ms of work.
    const fiber = Effect.runFork(
      Effect.yieldNow.pipe(
        Effect.andThen(Effect.forEach(Array.from({ length: 10_000 }), () =>
          Effect.sync(() => {
            steps++
            clock.now += 0.01
          }), { discard: true }))
      ),
      { scheduler }
    )
    turn()
    // 10 ms of steps, give or take the steps between two looks at the clock; far below the
    // default scheduler's 2048 operations a fiber runs before it yields.
    assert.isAtLeast(steps, 1000)
    assert.isBelow(steps, 1200)
    assert.strictEqual(pending.length, 1)
    let turns = 1
    while (pending.length > 0) {
      turn()
      turns++
    }
    assert.strictEqual(steps, 10_000)
    assert.isTrue(Exit.isSuccess(fiber.pollUnsafe() ?? Exit.fail("not done")))
    assert.isAtLeast(turns, 10)
  })

  it("Node's own callbacks run between turns: a storm of work without I/O waits for them", async () => {
    const clock = { now: 0 }
    // The clock read at every step: these fibers are a step or two each.
    const scheduler = EventLoopScheduler.make({ sliceMillis: 10, checkEvery: 1, now: () => clock.now })
    let stormSteps = 0
    let stepsWhenCalledBack = -1
    // 100 fibers of 1 ms of work each (the re-attached Pods of a restart, in miniature).
    const storm = Effect.runFork(
      Effect.andThen(Effect.yieldNow, Effect.forEach(
        Array.from({ length: 100 }),
        () =>
          Effect.sync(() => {
            stormSteps++
            clock.now += 1
          }),
        { concurrency: "unbounded", discard: true }
      )),
      { scheduler }
    )
    // Queued by code outside Effect while the storm is under way (an I/O callback stands in).
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        stepsWhenCalledBack = stormSteps
        resolve()
      })
    )
    await Effect.runPromise(Fiber.join(storm))
    assert.strictEqual(stormSteps, 100)
    // One turn of 10 ms ran before Node's callback got its pass, not the whole storm (the
    // default scheduler runs all 100 first).
    assert.isAtMost(stepsWhenCalledBack, 11)
  })
})
