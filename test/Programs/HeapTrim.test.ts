/**
 * The heap trim (`Programs/HeapTrim.ts`): it trims once the heap has grown and the process is
 * quiet, never while it is busy, and not again until the heap has grown by as much once more.
 * A fake heap stands in for V8 (the real one, `v8Heap`, is tested at the end).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { TestClock } from "effect/testing"
import { defaultHeapTrimOptions, type HeapControl, type Observed, runHeapTrim, trimDue, v8Heap } from "../../src/Programs/HeapTrim.ts"

const MB = 1024 * 1024

/** A heap whose size and loop time the test sets; a trim shrinks it to `afterTrim`, keeps the loop busy for `trimMs` and counts. */
const fakeHeap = (available = true) => {
  const heap = { committed: 0, busyMillis: 0, afterTrim: 0, trimMs: 0, trims: 0 }
  const control: HeapControl = {
    sample: Effect.sync(() => ({ committedBytes: heap.committed, busyMillis: heap.busyMillis })),
    trim: Effect.sync(() => {
      heap.trims += 1
      heap.busyMillis += heap.trimMs
      if (available) heap.committed = heap.afterTrim
      return available
    })
  }
  return { heap, control }
}

/** One second of the process's life, the event loop busy for `busyMs` of it. */
const second = (heap: { busyMillis: number }, busyMs: number) =>
  Effect.andThen(Effect.sync(() => void (heap.busyMillis += busyMs)), TestClock.adjust(Duration.seconds(1)))

describe("trimDue", () => {
  const at = (atMillis: number, committedMb: number, busyMs: number): Observed => ({
    atMillis,
    committedBytes: committedMb * MB,
    busyMillis: busyMs
  })
  const options = defaultHeapTrimOptions

  it("trims a heap grown by the step once an interval was quiet", () => {
    assert.isTrue(trimDue(30 * MB, at(0, 50, 0), at(1000, 50, 100), options))
  })
  it("not while the daemon is busy (its event loop for more than a tenth of the interval)", () => {
    assert.isFalse(trimDue(30 * MB, at(0, 50, 0), at(1000, 50, 101), options))
  })
  it("not for growth below the step since the last trim", () => {
    assert.isFalse(trimDue(30 * MB, at(0, 45, 0), at(1000, 45.9, 0), options))
    assert.isTrue(trimDue(30 * MB, at(0, 46, 0), at(1000, 46, 0), options))
  })
  it("not over an empty interval", () => {
    assert.isFalse(trimDue(0, at(1000, 50, 0), at(1000, 50, 0), options))
  })
})

describe("runHeapTrim", () => {
  it.effect("after a burst: no trim while busy, one once quiet, none again without new growth", () => {
    const { heap, control } = fakeHeap()
    return Effect.gen(function*() {
      heap.committed = 10 * MB
      yield* Effect.forkScoped(runHeapTrim(defaultHeapTrimOptions, control))
      yield* second(heap, 20)
      assert.strictEqual(heap.trims, 0, "10 MB is below the step")
      // the burst: the heap grows while the process is busy
      heap.committed = 60 * MB
      heap.afterTrim = 30 * MB
      for (let i = 0; i < 5; i++) yield* second(heap, 900)
      assert.strictEqual(heap.trims, 0, "never while busy")
      yield* second(heap, 50)
      assert.strictEqual(heap.trims, 1, "the first quiet second after the burst")
      for (let i = 0; i < 10; i++) yield* second(heap, 0)
      assert.strictEqual(heap.trims, 1, "not again without new growth")
      heap.committed = 45 * MB
      yield* second(heap, 0)
      assert.strictEqual(heap.trims, 1, "15 MB above the last trim's 30 MB is below the step")
      heap.committed = 46 * MB
      yield* second(heap, 0)
      assert.strictEqual(heap.trims, 2)
    })
  })

  it.effect("the startup's heap counts from zero, and is judged over a whole interval first", () => {
    const { heap, control } = fakeHeap()
    return Effect.gen(function*() {
      heap.committed = 20 * MB
      heap.afterTrim = 15 * MB
      yield* Effect.forkScoped(runHeapTrim(defaultHeapTrimOptions, control))
      yield* TestClock.adjust(Duration.millis(999))
      assert.strictEqual(heap.trims, 0)
      yield* TestClock.adjust(Duration.millis(1))
      assert.strictEqual(heap.trims, 1)
    })
  })

  it.effect("a trim's own pause does not make the next interval look busy", () => {
    const { heap, control } = fakeHeap()
    return Effect.gen(function*() {
      heap.committed = 60 * MB
      heap.afterTrim = 20 * MB
      heap.trimMs = 400
      yield* Effect.forkScoped(runHeapTrim({ ...defaultHeapTrimOptions, pauseFactor: 0 }, control))
      yield* second(heap, 0)
      assert.strictEqual(heap.trims, 1)
      // the heap grows again at once; the trim's pause is counted before the next interval starts
      heap.committed = 40 * MB
      yield* second(heap, 0)
      assert.strictEqual(heap.trims, 2)
    })
  })

  it.effect("after a trim that stopped the process for P ms, none for 100 × P, however the heap grows", () => {
    const { heap, control } = fakeHeap()
    return Effect.gen(function*() {
      heap.committed = 60 * MB
      heap.afterTrim = 20 * MB
      heap.trimMs = 400
      yield* Effect.forkScoped(runHeapTrim(defaultHeapTrimOptions, control))
      yield* second(heap, 0)
      assert.strictEqual(heap.trims, 1)
      // live data keeps growing the heap while the daemon is quiet between additions
      heap.committed = 60 * MB
      for (let i = 0; i < 39; i++) yield* second(heap, 0)
      assert.strictEqual(heap.trims, 1, "not within 40 s of a 400 ms pause")
      yield* second(heap, 0)
      assert.strictEqual(heap.trims, 2, "once 40 s have passed")
    })
  })

  it.effect("a runtime without the collection is asked once per growth step, not every second", () => {
    const { heap, control } = fakeHeap(false)
    return Effect.gen(function*() {
      heap.committed = 30 * MB
      yield* Effect.forkScoped(runHeapTrim(defaultHeapTrimOptions, control))
      for (let i = 0; i < 10; i++) yield* second(heap, 0)
      assert.strictEqual(heap.trims, 1)
    })
  })
})

/** ~100 MB of small objects, kept long enough to reach the old generation, then dropped. */
const makeGarbage = (): number => {
  let kept: Array<{ readonly n: number; readonly s: string; readonly a: ReadonlyArray<number> }> | undefined = []
  for (let i = 0; i < 600_000; i++) kept.push({ n: i, s: `item-${i}`, a: [i] })
  const count = kept.length
  kept = undefined
  return count
}

describe("v8Heap", () => {
  it.effect("samples the committed heap and the event loop's busy time", () =>
    Effect.gen(function*() {
      const heap = v8Heap()
      const first = yield* heap.sample
      makeGarbage()
      const second = yield* heap.sample
      assert.isAbove(first.committedBytes, 0)
      assert.isAbove(second.busyMillis, first.busyMillis)
    }))

  it.effect("the trim returns the freed heap's pages to the OS, not only to V8", () =>
    Effect.gen(function*() {
      const heap = v8Heap()
      makeGarbage()
      const before = process.memoryUsage.rss()
      assert.isTrue(yield* heap.trim)
      const after = process.memoryUsage.rss()
      assert.isAbove(before - after, 40 * MB, `RSS ${Math.round(before / MB)} MB -> ${Math.round(after / MB)} MB`)
    }))
})
