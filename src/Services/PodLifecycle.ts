/**
 * The provider as the pod controller sees it: the virtual-kubelet provider contract in Effect
 * form, with the pushes back to the controller as Streams. Every method is keyed by the Pod it is
 * given; `deletePod` may be called again for the same Pod and must be idempotent (DEL-04 —
 * DeletePod is idempotent). The live layer is `Programs/Provider/ProviderLive.ts`; the behaviour is
 * in `Programs/Provider/`.
 */
import type { V1Pod, V1PodStatus } from "@kubernetes/client-node"
import { Context, type Effect, type Option, type Stream } from "effect"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import type { ClaimInDoubt, CreatePodError, DeleteOutcome, PreserveNotPersisted, ReleaseFailed } from "./ProviderErrors.ts"

export type { ClaimInDoubt, CreatePodError, DeleteOutcome, PreserveNotPersisted, ReleaseFailed }

/** What a successful createPod did, for events and metrics. */
export type CreatePodOutcome =
  | { readonly _tag: "Claimed"; readonly claimId: ClaimId }
  | { readonly _tag: "Adopted"; readonly claimId: ClaimId }

/**
 * Why a delete did not finish: a release sandboxd did not confirm, a claim in doubt not yet
 * settled, or a preserved row's owner not yet in the claims file.
 */
export type DeletePodError = ReleaseFailed | ClaimInDoubt | PreserveNotPersisted

/**
 * What settling a gone Pod's key did: nothing (no doubt), or its stand-in delete's outcome
 * (`NoClaim`: the claim made no VM), or, for a key not in doubt, its Lost row dropped (VER-7 — a
 * lost sandbox's row outlives restarts until its Pod is settled).
 */
export type SettleGoneOutcome = "NotInDoubt" | DeleteOutcome["_tag"]

export class PodLifecycle extends Context.Service<PodLifecycle, {
  /**
   * CRT-3 — CreatePod's decision order: succeeds once the Pod is Running and its claim is on disk
   * (or it was adopted). The typed failures say whether a retry of the same Pod can help (else only
   * a Pod change can).
   */
  readonly createPod: (pod: V1Pod) => Effect.Effect<CreatePodOutcome, CreatePodError>
  /**
   * UPD-1 — UpdatePod: records the newer Pod (stale generations ignored); never touches sandboxd.
   */
  readonly updatePod: (pod: V1Pod) => Effect.Effect<void>
  /**
   * DEL-1 — DeletePod with the owner's verdict (AUTH-*); a release that failed (or a doubt not yet
   * settled) is retried.
   */
  readonly deletePod: (pod: V1Pod) => Effect.Effect<DeleteOutcome, DeletePodError>
  /**
   * DEL-3 — a claim in doubt is settled even when its Pod never comes back: the key's Pod is gone
   * from the apiserver and not tracked: a claim of the key in doubt is settled (its VM released, or
   * shown never made); fails while that cannot be done yet. Cheap when the key is not in doubt.
   */
  readonly settleGone: (key: PodKey) => Effect.Effect<SettleGoneOutcome, DeletePodError>
  /**
   * VER-7 (a lost sandbox's row outlives restarts until its Pod is settled): the Pod is terminal (the controller calls nothing else for it): the provider lets go of
   * what it kept only so that the Pod would never be claimed for again. Cheap when it kept nothing.
   */
  readonly settleTerminal: (pod: V1Pod) => Effect.Effect<void>
  /** Keys in doubt now (memory only): after a restart, some may name Pods that no longer exist. */
  readonly doubtKeys: Effect.Effect<ReadonlyArray<PodKey>>
  /** Keys with a Lost row (VER-7): a pass over the rows, for the first sync only. */
  readonly lostKeys: Effect.Effect<ReadonlyArray<PodKey>>
  /** UPD-2 — GetPod: a copy of the tracked Pod, None when absent. Memory only. */
  readonly getPod: (key: PodKey) => Effect.Effect<Option.Option<V1Pod>>
  /**
   * UPD-3 — GetPods: copies of every tracked Pod, each with the status it reports (UPD-4 —
   * GetPodStatus).
   */
  readonly getPods: Effect.Effect<ReadonlyArray<V1Pod>>
  /** UPD-4 (GetPodStatus): the status from memory only. */
  readonly getPodStatus: (key: PodKey) => Effect.Effect<Option.Option<V1PodStatus>>
  /**
   * UPD-6 — status pushes: pushed Pods (Running at create/adopt, Failed at lease expiry), each a
   * whole Pod whose status (and annotations) should be written. Pushes made while no stream runs
   * are dropped.
   */
  readonly statusPushes: Stream.Stream<V1Pod>
  /**
   * Keys to retry at once: a verification pass lifted their quarantine, or their sandbox is gone
   * (LEASE-9 — a row whose Pod is gone ends with its VM).
   */
  readonly retryNow: Stream.Stream<PodKey>
}>()("vk-sandbox/PodLifecycle") {}
