/**
 * The provider as the pod controller sees it: create, update, delete and
 * the memory-only reads, plus the channels the provider talks back on. The live layer is
 * `Programs/Provider/ProviderLive.ts`; the behaviour is in `Programs/Provider/`.
 */
import type { V1Pod, V1PodStatus } from "@kubernetes/client-node"
import { Context, type Effect, type Option, type PubSub, type Scope } from "effect"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import type { ClaimInDoubt, CreatePodError, DeleteOutcome, ReleaseFailed } from "./ProviderErrors.ts"

/** What a successful createPod did. */
export type CreatePodOutcome =
  | { readonly _tag: "Claimed"; readonly claimId: ClaimId }
  | { readonly _tag: "Adopted"; readonly claimId: ClaimId }

/**
 * What settling a gone Pod's key did: nothing (no doubt), or its stand-in delete's outcome
 * (`NoClaim`: the claim made no VM), or, for a key not in doubt, its Lost row dropped (VER-7).
 */
export type SettleGoneOutcome = "NotInDoubt" | DeleteOutcome["_tag"]

export class Provider extends Context.Service<Provider, {
  /** CRT-3. Succeeds once the Pod is Running and its claim is on disk (or it was adopted). */
  readonly createPod: (pod: V1Pod) => Effect.Effect<CreatePodOutcome, CreatePodError>
  /** UPD-1: record the newer Pod (stale generations ignored); never touches sandboxd. */
  readonly updatePod: (pod: V1Pod) => Effect.Effect<void>
  /** DEL-1 with the AUTH-* verdicts (`Programs/Provider/DeletePod.ts`); idempotent. */
  readonly deletePod: (pod: V1Pod) => Effect.Effect<DeleteOutcome, ReleaseFailed | ClaimInDoubt>
  /**
   * DEL-3: the Pod of `key` is gone from the apiserver and no Pod is tracked for it: a claim of
   * the key in doubt is settled (`Programs/Provider/SettleGone.ts`); fails while it cannot be yet.
   */
  readonly settleGone: (key: PodKey) => Effect.Effect<SettleGoneOutcome, ReleaseFailed | ClaimInDoubt>
  /** VER-7: the Pod is terminal; the Lost row of its generation goes. Memory only unless one does. */
  readonly settleTerminal: (pod: V1Pod) => Effect.Effect<void>
  /** The keys in doubt now (memory only). */
  readonly doubtKeys: Effect.Effect<ReadonlyArray<PodKey>>
  /** The keys whose rows are Lost (VER-7): a pass over the rows, for the first sync only. */
  readonly lostKeys: Effect.Effect<ReadonlyArray<PodKey>>
  /** UPD-2: a copy of the tracked Pod, None when absent. Memory only. */
  readonly getPod: (namespace: string, name: string) => Effect.Effect<Option.Option<V1Pod>>
  /** UPD-3: copies of every tracked Pod, each with the status UPD-4 reports for it. */
  readonly getPods: Effect.Effect<ReadonlyArray<V1Pod>>
  /** UPD-4: the status from memory only. */
  readonly getPodStatus: (namespace: string, name: string) => Effect.Effect<Option.Option<V1PodStatus>>
  /**
   * UPD-6: pushed Pods (Running at create/adopt, Failed at lease expiry), each a full Pod whose
   * status replaces the API's. Pushes made while nobody is subscribed are dropped.
   */
  readonly statusPushes: Effect.Effect<PubSub.Subscription<V1Pod>, never, Scope.Scope>
  /** Keys whose quarantine a verification pass lifted: the pod controller retries them at once. */
  readonly unquarantined: Effect.Effect<PubSub.Subscription<ReadonlyArray<PodKey>>, never, Scope.Scope>
}>()("vk-sandbox/Provider") {}

/**
 * The provider's outgoing channels, shared by CreatePod, the lease watch and the verifier.
 * Layer: `Layers/ProviderEventsPubSub.ts`.
 */
export class ProviderEvents extends Context.Service<ProviderEvents, {
  readonly pushStatus: (pod: V1Pod) => Effect.Effect<void>
  readonly statusPushes: Effect.Effect<PubSub.Subscription<V1Pod>, never, Scope.Scope>
  readonly publishUnquarantined: (keys: ReadonlyArray<PodKey>) => Effect.Effect<void>
  /**
   * Keys the pod controller should run now for another reason (on the same channel as the lifted
   * keys): rows with no tracked Pod whose sandbox is gone (LEASE-9).
   */
  readonly publishRetry: (keys: ReadonlyArray<PodKey>) => Effect.Effect<void>
  readonly unquarantined: Effect.Effect<PubSub.Subscription<ReadonlyArray<PodKey>>, never, Scope.Scope>
  /** True the first time it is asked about `id`: the "no usable Pod IP" warning is logged once per claim. */
  readonly firstIpWarning: (id: ClaimId) => Effect.Effect<boolean>
}>()("vk-sandbox/ProviderEvents") {}
