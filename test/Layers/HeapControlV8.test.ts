/**
 * HeapControl on V8 (`Layers/HeapControlV8.ts`): its trim is the memory-reducing collection, the
 * one that gives freed heap pages back to the OS. A plain full collection frees the same objects
 * but keeps most of their pages resident (here the RSS fell by ~15 MB after a plain one and by
 * ~200 MB after the trim), so the test reads the process's RSS around it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as HeapControlV8 from "../../src/Layers/HeapControlV8.ts"
import { HeapControl } from "../../src/Services/HeapControl.ts"

const MB = 1024 * 1024

/** ~100 MB of small objects, kept long enough to reach the old generation, then dropped. */
const makeGarbage = (): number => {
  let kept: Array<{ readonly n: number; readonly s: string; readonly a: ReadonlyArray<number> }> | undefined = []
  for (let i = 0; i < 600_000; i++) kept.push({ n: i, s: `item-${i}`, a: [i] })
  const count = kept.length
  kept = undefined
  return count
}

describe("HeapControlV8", () => {
  it.effect("samples the committed heap and the event loop's busy time", () =>
    Effect.gen(function*() {
      const heap = yield* HeapControl
      const first = yield* heap.sample
      makeGarbage()
      const second = yield* heap.sample
      assert.isAbove(first.committedBytes, 0)
      assert.isAbove(second.busyMillis, first.busyMillis)
    }).pipe(Effect.provide(HeapControlV8.layer)))

  it.effect("the trim returns the freed heap's pages to the OS, not only to V8", () =>
    Effect.gen(function*() {
      const heap = yield* HeapControl
      makeGarbage()
      const before = process.memoryUsage.rss()
      assert.isTrue(yield* heap.trim)
      const after = process.memoryUsage.rss()
      assert.isAbove(before - after, 40 * MB, `RSS ${Math.round(before / MB)} MB -> ${Math.round(after / MB)} MB`)
    }).pipe(Effect.provide(HeapControlV8.layer)))
})
