/**
 * The background loops as layers: a loop starts when its layer is built, runs on its Schedule,
 * stops when the layer's scope closes, and DaemonLoops names the must-run loops that ended.
 * The loops' own ticks are tested in their own files (LeaseWatcher, InventoryPublisher, …).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Duration, Effect, Exit, Fiber, Layer, Queue, Ref, Schedule, Scope } from "effect"
import { TestClock } from "effect/testing"
import {
  DaemonLoopsLayer,
  idleLayer,
  loopLayer,
  OrphanScannerLayer
} from "../../src/Programs/Loops.ts"
import { ClaimTableRefLayer } from "../../src/Layers/ClaimTableRef.ts"
import { testConfig } from "../../testkit/Config.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import {
  ClaimVerifierLoop,
  DaemonLoops,
  InventoryPublisherLoop,
  LeaseWatcherLoop,
  every,
  OrphanScannerLoop
} from "../../src/Services/Loops.ts"
import * as SandboxdClientSim from "../../testkit/Layers/SandboxdClientSim.ts"
import { defaultSimOptions } from "../support/Sandboxd.ts"

/** A loop that counts its ticks, one per second, the first at once. */
const counting = (ticks: Ref.Ref<number>) => Ref.update(ticks, (n) => n + 1).pipe(Effect.repeat(Schedule.spaced(Duration.seconds(1))))

/** The clock's seconds at each tick of `loop(tick)`, over `seconds` moved one at a time. */
const tickTimes = (
  loop: (tick: Effect.Effect<number>) => Effect.Effect<unknown>,
  seconds: number,
  during: (second: number) => Effect.Effect<void> = () => Effect.void
) =>
  Effect.gen(function*() {
    const times: Array<number> = []
    const tick = Effect.map(Clock.currentTimeMillis, (now) => times.push(now / 1000))
    const fiber = yield* Effect.forkChild(loop(tick))
    for (let second = 1; second <= seconds; second++) {
      yield* during(second)
      yield* TestClock.adjust(Duration.seconds(1))
    }
    yield* Fiber.interrupt(fiber)
    return times
  })

describe("every", () => {
  it.effect("the first tick one interval after the start, then one every interval", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* tickTimes((tick) => every("10 seconds", tick), 35), [10, 20, 30])
    }))

  it.effect("immediately: the first tick at once", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* tickTimes((tick) => every("10 seconds", tick, { immediately: true }), 25), [0, 10, 20])
    }))

  it.effect("the wait starts when a tick ends: a slow tick is not followed by a burst", () =>
    Effect.gen(function*() {
      const slow = (tick: Effect.Effect<number>) => every("10 seconds", Effect.andThen(tick, Effect.sleep("4 seconds")))
      assert.deepStrictEqual(yield* tickTimes(slow, 40), [10, 24, 38])
    }))

  it.effect("until: the loop ends with the tick whose result passes", () =>
    Effect.gen(function*() {
      const count = yield* Ref.make(0)
      const fiber = yield* Effect.forkChild(every("1 second", Ref.updateAndGet(count, (n) => n + 1), { until: (n) => n === 3 }))
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(yield* Fiber.join(fiber), 3)
      assert.strictEqual(yield* Ref.get(count), 3)
    }))

  it.effect("wake: a wait ends early, and the next one is a full interval", () =>
    Effect.gen(function*() {
      const wake = yield* Queue.sliding<void>(1)
      const times = yield* tickTimes(
        (tick) => every("10 seconds", tick, { wake: Queue.take(wake) }),
        30,
        (second) => (second === 4 ? Queue.offer(wake, undefined).pipe(Effect.asVoid) : Effect.void)
      )
      assert.deepStrictEqual(times, [3, 13, 23])
    }))
})

describe("loop layers", () => {
  it.effect("a loop starts when its layer is built and stops when the layer's scope closes", () =>
    Effect.gen(function*() {
      const ticks = yield* Ref.make(0)
      const scope = yield* Scope.make()
      const built = yield* Layer.buildWithScope(loopLayer(LeaseWatcherLoop, "lease-watch", true, counting(ticks)), scope)
      yield* TestClock.adjust(Duration.seconds(3))
      assert.strictEqual(yield* Ref.get(ticks), 4)
      assert.isFalse(yield* Context.get(built, LeaseWatcherLoop).ended)
      yield* Scope.close(scope, Exit.void)
      yield* TestClock.adjust(Duration.seconds(10))
      assert.strictEqual(yield* Ref.get(ticks), 4)
    }))

  it.effect("DaemonLoops names the must-run loops that ended, not a finished verifier nor an idle loop", () =>
    Effect.gen(function*() {
      const loops = yield* DaemonLoops
      yield* TestClock.adjust(Duration.seconds(1))
      assert.deepStrictEqual(yield* loops.stopped, ["lease-watch"])
      const publisher = yield* InventoryPublisherLoop
      assert.isFalse(yield* publisher.ended)
    }).pipe(
      Effect.provide(
        DaemonLoopsLayer.pipe(
          Layer.provideMerge(Layer.mergeAll(
            loopLayer(ClaimVerifierLoop, "claim-verifier", false, Effect.void),
            loopLayer(LeaseWatcherLoop, "lease-watch", true, Effect.void),
            loopLayer(OrphanScannerLoop, "orphan-scan", true, Effect.never),
            idleLayer(InventoryPublisherLoop, "inventory-publisher")
          ))
        )
      )
    ))

  it.effect("a zero --orphan-scan-interval turns the scan off: idle, not must-run", () =>
    Effect.gen(function*() {
      const scanner = yield* OrphanScannerLoop
      assert.isFalse(scanner.mustRun)
      assert.isFalse(yield* scanner.ended)
    }).pipe(
      Effect.provide(
        OrphanScannerLayer.pipe(
          Layer.provide(Layer.mergeAll(ClaimTableRefLayer, SandboxdClientSim.layerWithSim(defaultSimOptions))),
          Layer.provide(AppConfig.layer(testConfig({ orphanScanInterval: Duration.zero })))
        )
      )
    ))
})
