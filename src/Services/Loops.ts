/**
 * The daemon's background loops as services. Each loop's layer starts the loop in the layer's
 * own scope, driven by the loop's Schedule, so it stops when that scope closes (shutdown, or
 * the end of a test); the service tells the composition root whether the loop is still
 * running. Live layers are in `Programs/Loops.ts`, with an idle layer for tests and for loops
 * the configuration turns off.
 */
import { Context, type Effect } from "effect"

export interface BackgroundLoop {
  readonly name: string
  /**
   * Whether the daemon is unhealthy once this loop has ended. False for a loop that finishes by
   * design (claim verification stops when nothing is quarantined) and for a disabled one.
   */
  readonly mustRun: boolean
  /** True once the loop has ended, for whatever reason. */
  readonly ended: Effect.Effect<boolean>
}

/** Re-checks quarantined claims until sandboxd vouches for or drops every one of them. */
export class ClaimVerifierLoop extends Context.Service<ClaimVerifierLoop, BackgroundLoop>()("vk-sandbox/ClaimVerifierLoop") {}

/** Pushes lease-expired status for claims past their deadline that sandboxd no longer lists. */
export class LeaseWatcherLoop extends Context.Service<LeaseWatcherLoop, BackgroundLoop>()("vk-sandbox/LeaseWatcherLoop") {}

/** The audit-only comparison of sandboxd's listing with the claims table. */
export class OrphanScannerLoop extends Context.Service<OrphanScannerLoop, BackgroundLoop>()("vk-sandbox/OrphanScannerLoop") {}

/** Server-side applies this node's NodeInventory. */
export class InventoryPublisherLoop extends Context.Service<InventoryPublisherLoop, BackgroundLoop>()(
  "vk-sandbox/InventoryPublisherLoop"
) {}

/** The names of the loops that must run for as long as the daemon does but have stopped (healthz, node lease). */
export class DaemonLoops extends Context.Service<DaemonLoops, {
  readonly stopped: Effect.Effect<ReadonlyArray<string>>
}>()("vk-sandbox/DaemonLoops") {}

/** Gives the V8 heap's free memory back to the OS once the daemon is quiet after its heap grew. */
export class HeapTrimLoop extends Context.Service<HeapTrimLoop, BackgroundLoop>()("vk-sandbox/HeapTrimLoop") {}
