/**
 * The background loops as layers: each layer forks its loop into the layer's scope (so closing
 * the daemon's scope stops it) and provides the loop's service. The loops' bodies and Schedules
 * stay in their own modules; this file only decides how each one is started.
 */
import { Duration, Effect, Layer } from "effect"
import type { Context } from "effect"
import type { ClaimId } from "../Schemas/Ids.ts"
import { ClaimTable } from "../Services/ClaimTable.ts"
import { AppConfig } from "../Services/Config.ts"
import { TuningOff } from "../Services/Tuning.ts"
import {
  type BackgroundLoop,
  ClaimVerifierLoop,
  DaemonLoops,
  HeapTrimLoop,
  InventoryPublisherLoop,
  LeaseWatcherLoop,
  OrphanScannerLoop
} from "../Services/Loops.ts"
import { runClaimVerification } from "./ClaimVerifier.ts"
import { runHeapTrim } from "./HeapTrim.ts"
import { runPublisher } from "./InventoryPublisher.ts"
import { runLeaseWatch } from "./LeaseWatcher.ts"
import * as OrphanScanner from "./OrphanScanner.ts"

/** A layer that runs `loop` in its scope and reports on it through `tag`. */
export const loopLayer = <I, E, R>(
  tag: Context.Service<I, BackgroundLoop>,
  name: string,
  mustRun: boolean,
  loop: Effect.Effect<unknown, E, R>
): Layer.Layer<I, never, R> =>
  Layer.effect(
    tag,
    Effect.gen(function*() {
      const fiber = yield* Effect.forkScoped(loop)
      return { name, mustRun, ended: Effect.sync(() => fiber.pollUnsafe() !== undefined) }
    })
  )

/** The loop's service without the loop: for tests that drive a loop's tick themselves, and for a disabled loop. */
export const idleLayer = <I>(tag: Context.Service<I, BackgroundLoop>, name: string): Layer.Layer<I> =>
  Layer.succeed(tag, { name, mustRun: false, ended: Effect.succeed(false) })

/** Stops for good once nothing is quarantined, so its end is not a failure. */
export const ClaimVerifierLayer = loopLayer(ClaimVerifierLoop, "claim-verifier", false, runClaimVerification)

export const LeaseWatcherLayer = loopLayer(LeaseWatcherLoop, "lease-watch", true, runLeaseWatch)

/** Runs only with a positive `--orphan-scan-interval`. */
export const OrphanScannerLayer = Layer.unwrap(
  Effect.map(AppConfig.use(Effect.succeed), (config) =>
    Duration.toMillis(config.orphanScanInterval) > 0
      ? loopLayer(OrphanScannerLoop, "orphan-scan", true, OrphanScanner.run)
      : idleLayer(OrphanScannerLoop, "orphan-scan"))
)

/** Runs only with `--publish-inventory`; addresses come from every claim of this node, tentative and quarantined included. */
export const InventoryPublisherLayer = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (!config.publishInventory) return idleLayer(InventoryPublisherLoop, "inventory-publisher")
    const table = yield* ClaimTable
    const addressById = Effect.map(table.state, (state): ReadonlyMap<ClaimId, string> => {
      const byId = new Map<ClaimId, string>()
      for (const row of state.rows.values()) if (row.record.address !== "") byId.set(row.record.id, row.record.address)
      return byId
    })
    return loopLayer(InventoryPublisherLoop, "inventory-publisher", true, runPublisher({ addressById }))
  })
)

/** Not must-run: without it the daemon works as before, only with more resident memory after a burst. Off by `heap-trim` in VK_SANDBOX_TUNING_OFF. */
export const HeapTrimLayer = Layer.unwrap(
  Effect.gen(function*() {
    const off = yield* TuningOff
    return off.has("heap-trim") ? idleLayer(HeapTrimLoop, "heap-trim") : loopLayer(HeapTrimLoop, "heap-trim", false, runHeapTrim())
  })
)

/** DaemonLoops over the four loop services, whichever layers provide them. */
export const DaemonLoopsLayer = Layer.effect(
  DaemonLoops,
  Effect.gen(function*() {
    const loops = [yield* ClaimVerifierLoop, yield* LeaseWatcherLoop, yield* OrphanScannerLoop, yield* InventoryPublisherLoop]
    return DaemonLoops.of({
      stopped: Effect.map(
        Effect.forEach(loops, (loop) => Effect.map(loop.ended, (ended) => (ended && loop.mustRun ? [loop.name] : []))),
        (names) => names.flat()
      )
    })
  })
)

/** Every background loop, started in the layer's scope, and DaemonLoops over them. */
export const LoopsLayer = DaemonLoopsLayer.pipe(
  Layer.provideMerge(Layer.mergeAll(ClaimVerifierLayer, LeaseWatcherLayer, OrphanScannerLayer, InventoryPublisherLayer, HeapTrimLayer))
)
