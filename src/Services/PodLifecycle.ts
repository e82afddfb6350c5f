/**
 * What the pod controller needs from the provider: the virtual-kubelet provider contract in
 * Effect form. Every method is keyed by the Pod it is given; `deletePod` may be called more than
 * once for the same Pod and must be idempotent (virtual-kubelet DEL-04).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Context, type Effect, type Option, type Stream } from "effect"
import type { PodKey } from "../Schemas/Ids.ts"
import type { ClaimInDoubt, CreatePodError, ReleaseFailed } from "./ProviderErrors.ts"

export type { ClaimInDoubt, CreatePodError, ReleaseFailed }

/** Why a delete did not finish: a release sandboxd did not confirm, or a claim in doubt not yet settled. */
export type DeletePodError = ReleaseFailed | ClaimInDoubt

/** What a successful createPod did, for events and metrics. */
export type CreateOutcome =
  | { readonly _tag: "Claimed"; readonly claimId: string }
  | { readonly _tag: "Adopted"; readonly claimId: string }

export class PodLifecycle extends Context.Service<PodLifecycle, {
  /** The typed failures say whether a retry of the same Pod can help (else only a Pod change can). */
  readonly createPod: (pod: V1Pod) => Effect.Effect<CreateOutcome, CreatePodError>
  /** Records the newer Pod; never fails. */
  readonly updatePod: (pod: V1Pod) => Effect.Effect<void>
  /** Idempotent; a release that failed (or a doubt not yet settled) is retried. */
  readonly deletePod: (pod: V1Pod) => Effect.Effect<void, DeletePodError>
  /**
   * DEL-3: the key's Pod is gone from the apiserver and not tracked: a claim of the key in doubt
   * is settled (its VM released, or shown never made); fails while that cannot be done yet.
   * Cheap when the key is not in doubt.
   */
  readonly settleGone: (key: PodKey) => Effect.Effect<void, DeletePodError>
  /**
   * VER-7: the Pod is terminal (the controller calls nothing else for it): the provider lets go of
   * what it kept only so that the Pod would never be claimed for again. Cheap when it kept nothing.
   */
  readonly settleTerminal: (pod: V1Pod) => Effect.Effect<void>
  /** Keys in doubt now: after a restart, some may name Pods that no longer exist. */
  readonly doubtKeys: Effect.Effect<ReadonlyArray<PodKey>>
  /** Keys with a Lost row (VER-7): after a restart, some may name Pods that no longer exist. */
  readonly lostKeys: Effect.Effect<ReadonlyArray<PodKey>>
  readonly getPod: (key: PodKey) => Effect.Effect<Option.Option<V1Pod>>
  readonly getPods: Effect.Effect<ReadonlyArray<V1Pod>>
  /** Status pushes (NotifyPods): each is a whole Pod whose status (and annotations) should be written. */
  readonly statusPushes: Stream.Stream<V1Pod>
  /** Keys to retry at once, e.g. when a verification pass lifted their quarantine. */
  readonly retryNow: Stream.Stream<PodKey>
}>()("vk-sandbox/PodLifecycle") {}
