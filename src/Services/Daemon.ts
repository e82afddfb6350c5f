/**
 * Services the composition root wires between parts of the daemon: the first pod list (asked for
 * while the claims load, read by the pod controller), what the claims startup found (for the
 * Node event once the node exists) and the running pod controller (for readiness and the
 * shutdown drain).
 */
import { Context, type Duration, type Effect } from "effect"
import type { Pod } from "../Schemas/Pod/Schema.ts"
import type { KubeError, PodList } from "./KubeApi.ts"

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
  /**
   * The controller's parts that should run for as long as it does but have ended (HZ-1 — a stopped
   * part fails liveness).
   */
  readonly stopped: Effect.Effect<ReadonlyArray<string>>
  /** The Pods this controller currently knows from the apiserver (slim). */
  readonly cachedPods: Effect.Effect<ReadonlyArray<Pod>>
  /**
   * Waits until no reconcile and no status write is in flight (keys waiting out a retry hold
   * none): what the controller was given so far has been acted on.
   */
  readonly idle: Effect.Effect<void>
  /** Stop admitting reconciles and wait, at most `timeout`, for those in flight. */
  readonly drain: (timeout: Duration.Duration) => Effect.Effect<void>
  /** Keys holding per-pod state besides the cache (pushes, handed Pods, queues): a leak check. */
  readonly retainedKeys: Effect.Effect<number>
}

/** The running pod controller. */
export class RunningPodController extends Context.Service<RunningPodController, PodControllerHandle>()(
  "vk-sandbox/RunningPodController"
) {}

/**
 * The node's first pod list, asked for before the claims file is read (right after the startup
 * verification's sandboxd listing; CFG-11 — start order): on a restart with thousands of Pods, the
 * apiserver's answer then comes while the claims load and verify instead of after. Only read: the
 * pod controller takes it as its first list once it starts (after the claims and the node), and
 * nothing acts on a Pod before that. `list` gives that answer once (waiting for it if need be) and
 * lists afresh after.
 */
export class EarlyPodList extends Context.Service<EarlyPodList, { readonly list: Effect.Effect<PodList, KubeError> }>()(
  "vk-sandbox/EarlyPodList"
) {}
