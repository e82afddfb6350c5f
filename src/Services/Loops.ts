/**
 * The daemon's background loops as services, and `every`, the one way any loop of the daemon
 * runs every interval. Each loop's layer starts the loop in the layer's own scope, so it stops
 * when that scope closes (shutdown, or the end of a test); the service tells the composition
 * root whether the loop is still running. Live layers are in `Programs/Loops.ts`, with an idle
 * layer for tests and for loops the configuration turns off.
 */
import { Clock, Context, type Duration, Effect, Pull, Schedule } from "effect"

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

/** How `every` starts, ends and is woken. */
export interface EveryOptions<A> {
  /** The first tick at once; by default one interval after the start. */
  readonly immediately?: boolean
  /** Ends the loop after a tick whose result passes (that result is the loop's). */
  readonly until?: (result: A) => boolean
  /** Ends a wait early when it succeeds: the next tick runs at once, and the next wait is a full interval. */
  readonly wake?: Effect.Effect<unknown>
}

/**
 * LOOP-1 — a loop runs once per interval: `tick`, then a wait of `interval`
 * from its end, on a `Schedule.spaced` (a tick that runs long is never followed by a burst), until
 * the fiber is interrupted or `until` passes. A tick's failure ends the loop: a loop that must
 * outlive its failures catches them in `tick`.
 */
export const every = <A, E, R>(
  interval: Duration.Input,
  tick: Effect.Effect<A, E, R>,
  options: EveryOptions<A> = {}
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const step = yield* Schedule.toStep(Schedule.spaced(interval))
    const sleep = (delay: Duration.Duration) =>
      options.wake === undefined ? Effect.sleep(delay) : Effect.raceFirst(Effect.sleep(delay), Effect.asVoid(options.wake))
    // `spaced` never ends; were it to, the loop would go on without a wait.
    const wait = Effect.flatMap(Clock.currentTimeMillis, (now) => step(now, undefined)).pipe(
      Effect.flatMap(([, delay]) => sleep(delay)),
      Pull.catchDone(() => Effect.void)
    )
    if (options.immediately !== true) yield* wait
    while (true) {
      const result = yield* tick
      if (options.until?.(result) === true) return result
      yield* wait
    }
  })
