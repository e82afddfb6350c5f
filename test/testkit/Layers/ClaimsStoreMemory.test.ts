import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import * as ClaimsStoreMemory from "../../../testkit/Layers/ClaimsStoreMemory.ts"
import { ClaimsSnapshot, ClaimsStore } from "../../../src/Services/ClaimsStore.ts"
import { key, record } from "../../support/Claims.ts"


const TestLayer = (options?: ClaimsStoreMemory.ClaimsStoreMemoryOptions) =>
  ClaimsStoreMemory.layer(options).pipe(Layer.provideMerge(ClaimsStoreMemory.testSnapshotLayer))

describe("ClaimsStoreMemory", () => {
  it.effect("commits, records writes and batches concurrent commits", () =>
    Effect.gen(function*() {
      const store = yield* ClaimsStore
      const control = yield* ClaimsStoreMemory.ClaimsStoreMemoryControl
      const table = yield* ClaimsStoreMemory.TestClaimsTable
      yield* store.commit(Option.none())
      assert.strictEqual(yield* control.writeCount, 1)
      assert.strictEqual((yield* control.writes)[0]!.text, `{"claims":{}}`)

      yield* control.pause
      for (let n = 0; n < 10; n++) yield* table.put(key(n), record(n), { tentative: true })
      const fibers = yield* Effect.forEach(
        Array.from({ length: 10 }, (_, n) => n),
        (n) => Effect.forkChild(store.commit(Option.some(key(n))), { startImmediately: true })
      )
      yield* Effect.yieldNow
      yield* control.resume
      yield* Effect.forEach(fibers, Fiber.join)
      const writes = yield* control.writes
      assert.isAtMost(writes.length, 3) // the empty write, then at most two batches for ten commits
      assert.strictEqual((yield* control.disk).size, 10)
      assert.strictEqual((yield* table.tentative).size, 0)
    }).pipe(Effect.provide(TestLayer())))

  it.effect("an injected failure fails the batch and leaves the disk and the tentative row alone", () =>
    Effect.gen(function*() {
      const store = yield* ClaimsStore
      const control = yield* ClaimsStoreMemory.ClaimsStoreMemoryControl
      const table = yield* ClaimsStoreMemory.TestClaimsTable
      yield* table.put(key(1), record(1), { tentative: true })
      yield* control.failNext(1, "rename")
      const exit = yield* Effect.exit(store.commit(Option.some(key(1))))
      assert.isTrue(Exit.isFailure(exit))
      yield* store.commit(Option.none())
      assert.strictEqual((yield* control.disk).size, 0)
      assert.deepStrictEqual([...(yield* table.tentative)], [key(1)])
      const writes = yield* control.writes
      assert.deepStrictEqual(writes.map((w) => Option.getOrNull(w.failed)), ["rename", null])
      assert.strictEqual(writes[1]!.rows.size, 0)
    }).pipe(Effect.provide(TestLayer())))

  it.effect("load returns the initial table or the configured load error", () =>
    Effect.gen(function*() {
      const loaded = yield* ClaimsStore.use((s) => s.load).pipe(
        Effect.provide(TestLayer({ initial: new Map([[key(1), record(1)]]) }))
      )
      assert.strictEqual(loaded.get(key(1))?.id, record(1).id)
      const error = yield* Effect.flip(ClaimsStore.use((s) => s.load).pipe(Effect.provide(TestLayer({ loadError: "boom" }))))
      assert.strictEqual(error._tag, "ClaimsLoadError")
    }))

  it.effect("a defect while taking the rows reaches the batch's callers, and the writer lives on", () =>
    Effect.gen(function*() {
      let calls = 0
      const flaky = Layer.succeed(ClaimsSnapshot, ClaimsSnapshot.of({
        rowsForWrite: () =>
          Effect.suspend(() => (++calls === 1 ? Effect.die("snapshot broke") : Effect.succeed(new Map()))),
        landed: () => Effect.void
      }))
      yield* Effect.gen(function*() {
        const store = yield* ClaimsStore
        const first = yield* Effect.exit(store.commit(Option.none()))
        assert.isTrue(Exit.hasDies(first))
        yield* store.commit(Option.none())
        assert.strictEqual(calls, 2)
      }).pipe(Effect.provide(ClaimsStoreMemory.layer().pipe(Layer.provide(flaky))))
    }))

  it.effect("the test snapshot is copy-on-write: changes after rowsForWrite are not in the taken rows", () =>
    Effect.gen(function*() {
      const table = yield* ClaimsStoreMemory.TestClaimsTable
      const snapshot = yield* ClaimsSnapshot
      yield* table.put(key(1), record(1))
      yield* table.put(key(2), record(2), { tentative: true })
      yield* table.put(key(3), record(3), { tentative: true })
      const rows = yield* snapshot.rowsForWrite(new Set([key(2)]))
      yield* table.remove(key(1))
      yield* table.put(key(2), record(22), { tentative: true })
      yield* table.put(key(4), record(4))
      // Landing key 2 now must not turn the replacement (record 22) durable.
      yield* snapshot.landed(new Map([[key(2), rows.get(key(2))!.id]]))
      assert.deepStrictEqual([...rows.keys()].sort(), [key(1), key(2)])
      assert.strictEqual(rows.get(key(2))?.id, record(2).id)
      assert.isFalse(rows.has(key(3)), "a tentative row outside the batch is excluded")
      assert.isTrue((yield* table.tentative).has(key(2)))
      const next = yield* snapshot.rowsForWrite(new Set())
      assert.deepStrictEqual([...next.keys()].sort(), [key(4)])
    }).pipe(Effect.provide(ClaimsStoreMemory.testSnapshotLayer)))
})
