import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Ref } from "effect"
import { TestClock } from "effect/testing"
import * as TokenBucket from "../../src/Kube/TokenBucket.ts"

/** Starts `count` takers at once; returns a counter of how many have their token. */
const startTakers = (bucket: TokenBucket.TokenBucket, count: number) =>
  Effect.gen(function*() {
    const granted = yield* Ref.make(0)
    const fibers = yield* Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      () => Effect.forkChild(bucket.take.pipe(Effect.andThen(Ref.update(granted, (n) => n + 1)))),
      { concurrency: 1 }
    )
    yield* TestClock.adjust("0 millis")
    return { granted, fibers }
  })

describe("TokenBucket", () => {
  it.effect("grants the burst at once, then one token per 1/qps", () =>
    Effect.gen(function*() {
      const bucket = yield* TokenBucket.make(10, 3)
      const { granted } = yield* startTakers(bucket, 6)
      assert.strictEqual(yield* Ref.get(granted), 3, "burst of 3 immediately")
      yield* TestClock.adjust("99 millis")
      assert.strictEqual(yield* Ref.get(granted), 3, "nothing before 100 ms")
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* Ref.get(granted), 4, "the 4th at 100 ms")
      yield* TestClock.adjust("100 millis")
      assert.strictEqual(yield* Ref.get(granted), 5, "the 5th at 200 ms")
      yield* TestClock.adjust("100 millis")
      assert.strictEqual(yield* Ref.get(granted), 6, "the 6th at 300 ms")
    }))

  it.effect("refills while idle, but never beyond the burst", () =>
    Effect.gen(function*() {
      const bucket = yield* TokenBucket.make(100, 2)
      const first = yield* startTakers(bucket, 2)
      assert.strictEqual(yield* Ref.get(first.granted), 2)
      yield* TestClock.adjust("10 seconds") // would be 1000 tokens without the cap
      const second = yield* startTakers(bucket, 4)
      assert.strictEqual(yield* Ref.get(second.granted), 2, "only the burst is banked")
      yield* TestClock.adjust("10 millis")
      assert.strictEqual(yield* Ref.get(second.granted), 3)
      yield* TestClock.adjust("10 millis")
      assert.strictEqual(yield* Ref.get(second.granted), 4)
    }))

  it.effect("an interrupted waiter returns its token", () =>
    Effect.gen(function*() {
      const bucket = yield* TokenBucket.make(1, 1)
      const first = yield* startTakers(bucket, 1)
      assert.strictEqual(yield* Ref.get(first.granted), 1)
      const waiting = yield* startTakers(bucket, 1) // promised the token due at t = 1 s
      yield* Fiber.interrupt(waiting.fibers[0]!)
      const next = yield* startTakers(bucket, 1)
      yield* TestClock.adjust("999 millis")
      assert.strictEqual(yield* Ref.get(next.granted), 0)
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* Ref.get(next.granted), 1, "served at 1 s, not 2 s")
    }))

  it.effect("qps 0 switches limiting off", () =>
    Effect.gen(function*() {
      const bucket = yield* TokenBucket.make(0, 1)
      const { granted } = yield* startTakers(bucket, 50)
      assert.strictEqual(yield* Ref.get(granted), 50)
    }))
})
