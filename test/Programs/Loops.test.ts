/**
 * The background loops as layers: a loop starts when its layer is built, runs on its Schedule,
 * stops when the layer's scope closes, and DaemonLoops names the must-run loops that ended.
 * The loops' own ticks are tested in their own files (LeaseWatcher, InventoryPublisher, …).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, Ref, Schedule, Scope } from "effect"
import { TestClock } from "effect/testing"
import {
  DaemonLoopsLayer,
  idleLayer,
  loopLayer,
  OrphanScannerLayer
} from "../../src/Programs/Loops.ts"
import { ClaimTableRefLayer } from "../../src/Layers/ClaimTableRef.ts"
import { testConfig } from "../../src/Schemas/Config.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import {
  ClaimVerifierLoop,
  DaemonLoops,
  InventoryPublisherLoop,
  LeaseWatcherLoop,
  OrphanScannerLoop
} from "../../src/Services/Loops.ts"
import * as SandboxdClientSim from "../../testkit/Layers/SandboxdClientSim.ts"
import { defaultSimOptions } from "../support/Sandboxd.ts"

/** A loop that counts its ticks, one per second, the first at once. */
const counting = (ticks: Ref.Ref<number>) => Ref.update(ticks, (n) => n + 1).pipe(Effect.repeat(Schedule.spaced(Duration.seconds(1))))

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
