/**
 * Services the composition root wires between parts of the daemon: what the claims startup
 * found (for the Node event once the node exists) and the running pod controller (for
 * readiness and the shutdown drain).
 */
import { Context, type Duration, type Effect } from "effect"
import type { Pod } from "../Schemas/Pod.ts"

/** What bringing the claims table up found. */
export interface StartupSummary {
  readonly loaded: number
  readonly backfilled: number
  /** False when the startup pass could not list: every loaded row stays quarantined. */
  readonly verified: boolean
  readonly quarantined: number
  /** Claim intents found in the file: claims that may have made a VM no row records. */
  readonly intents: number
}

export class ClaimsStartup extends Context.Service<ClaimsStartup, StartupSummary>()("vk-sandbox/ClaimsStartup") {}

export interface PodControllerHandle {
  /** True once the first complete list succeeded and every Pod was handed to the workers. */
  readonly synced: Effect.Effect<boolean>
  /** The Pods this controller currently knows from the apiserver (slim). */
  readonly cachedPods: Effect.Effect<ReadonlyArray<Pod>>
  /** Stop admitting reconciles and wait, at most `timeout`, for those in flight. */
  readonly drain: (timeout: Duration.Duration) => Effect.Effect<void>
  /** Keys holding per-pod state besides the cache (pushes, handed Pods, queues): a leak check. */
  readonly retainedKeys: Effect.Effect<number>
}

/** The running pod controller. */
export class RunningPodController extends Context.Service<RunningPodController, PodControllerHandle>()(
  "vk-sandbox/RunningPodController"
) {}
