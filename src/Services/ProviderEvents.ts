/**
 * The provider's outgoing channels, shared by CreatePod, the lease watch and the verifier: status
 * pushes and keys to retry, which `PodLifecycle` hands to the pod controller as Streams.
 * Layer: `Layers/ProviderEventsPubSub.ts`.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Context, type Effect, type PubSub, type Scope } from "effect"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"

export class ProviderEvents extends Context.Service<ProviderEvents, {
  readonly pushStatus: (pod: V1Pod) => Effect.Effect<void>
  readonly statusPushes: Effect.Effect<PubSub.Subscription<V1Pod>, never, Scope.Scope>
  readonly publishUnquarantined: (keys: ReadonlyArray<PodKey>) => Effect.Effect<void>
  /**
   * Keys the pod controller should run now for another reason (on the same channel as the lifted
   * keys): rows with no tracked Pod whose sandbox is gone (LEASE-9 — a row whose Pod is gone ends
   * with its VM).
   */
  readonly publishRetry: (keys: ReadonlyArray<PodKey>) => Effect.Effect<void>
  readonly unquarantined: Effect.Effect<PubSub.Subscription<ReadonlyArray<PodKey>>, never, Scope.Scope>
  /** True the first time it is asked about `id`: the "no usable Pod IP" warning is logged once per claim. */
  readonly firstIpWarning: (id: ClaimId) => Effect.Effect<boolean>
}>()("vk-sandbox/ProviderEvents") {}
