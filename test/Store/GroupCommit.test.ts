import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import * as GroupCommit from "../../src/Store/GroupCommit.ts"

/**
 * An engine whose writes are recorded and whose first write waits for `release`, so that the
 * requests submitted meanwhile queue up behind it.
 */
const held = <R>(fail?: (batch: ReadonlyArray<R>) => Effect.Effect<void, string>) =>
  Effect.gen(function*() {
    const batches: Array<ReadonlyArray<R>> = []
    const started = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const submit = yield* GroupCommit.make((batch: ReadonlyArray<R>) =>
      Effect.gen(function*() {
        batches.push(batch)
        if (batches.length === 1) {
          yield* Deferred.succeed(started, undefined)
          yield* Deferred.await(release)
        }
        if (fail !== undefined) yield* fail(batch)
      })
    )
    return { batches, started, release, submit }
  })

describe("GroupCommit", () => {
  it.effect("requests that arrive during a write share the next one, in arrival order", () =>
    Effect.gen(function*() {
      const engine = yield* held<string>()
      const first = yield* Effect.forkChild(engine.submit("a"), { startImmediately: true })
      yield* Deferred.await(engine.started)
      const rest = yield* Effect.forEach(["b", "c", "d"], (r) =>
        Effect.forkChild(engine.submit(r), { startImmediately: true }))
      assert.isUndefined(first.pollUnsafe(), "the first caller waits for its write")
      yield* Deferred.succeed(engine.release, undefined)
      yield* Fiber.join(first)
      yield* Effect.forEach(rest, Fiber.join)
      assert.deepStrictEqual(engine.batches, [["a"], ["b", "c", "d"]])
    }))

  it.effect("a failed write fails every caller of its batch and only those; the writer goes on", () =>
    Effect.gen(function*() {
      const engine = yield* held<string>((batch) => batch.includes("bad") ? Effect.fail("disk full") : Effect.void)
      const first = yield* Effect.forkChild(engine.submit("a"), { startImmediately: true })
      yield* Deferred.await(engine.started)
      const b = yield* Effect.forkChild(Effect.exit(engine.submit("b")), { startImmediately: true })
      const bad = yield* Effect.forkChild(Effect.exit(engine.submit("bad")), { startImmediately: true })
      yield* Deferred.succeed(engine.release, undefined)
      yield* Fiber.join(first)
      assert.deepStrictEqual(yield* Fiber.join(b), Exit.fail("disk full"))
      assert.deepStrictEqual(yield* Fiber.join(bad), Exit.fail("disk full"))
      yield* engine.submit("c")
      assert.deepStrictEqual(engine.batches.at(-1), ["c"])
    }))

  it.effect("a defect in a write reaches its callers, and the writer lives on", () =>
    Effect.gen(function*() {
      let calls = 0
      const submit = yield* GroupCommit.make((_: ReadonlyArray<number>) =>
        Effect.suspend(() => (++calls === 1 ? Effect.die("broken") : Effect.void))
      )
      assert.isTrue(Exit.hasDies(yield* Effect.exit(submit(1))))
      yield* submit(2)
      assert.strictEqual(calls, 2)
    }))

  it.effect("closing the scope lets the write in flight finish; queued and later requests are interrupted", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const engine = yield* held<string>().pipe(Scope.provide(scope))
      const first = yield* Effect.forkChild(Effect.exit(engine.submit("a")), { startImmediately: true })
      yield* Deferred.await(engine.started)
      const queued = yield* Effect.forkChild(Effect.exit(engine.submit("b")), { startImmediately: true })
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void), { startImmediately: true })
      yield* Deferred.succeed(engine.release, undefined)
      yield* Fiber.join(closing)
      assert.isTrue(Exit.isSuccess(yield* Fiber.join(first)), "the write in flight completes")
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.join(queued)))
      assert.isTrue(Exit.hasInterrupts(yield* Effect.exit(engine.submit("late"))))
      assert.deepStrictEqual(engine.batches, [["a"]], "nothing was written after the close")
    }))
})
