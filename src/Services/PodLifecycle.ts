/**
 * What the pod controller needs from the provider: the virtual-kubelet provider contract in
 * Effect form. Every method is keyed by the Pod it is given; `deletePod` may be called more than
 * once for the same Pod and must be idempotent (virtual-kubelet DEL-04).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Context, type Effect, type Option, type Stream } from "effect"
import type { PodKey } from "../Schemas/Ids.ts"

/**
 * A provider failure as the controller sees it: a tagged error with a message, and whether a
 * retry of the same Pod can help (else only a Pod change can, or the periodic resync).
 */
export interface ProviderFailure {
  readonly _tag: string
  readonly message: string
  readonly retryable: boolean
}

/** What a successful createPod did, for events and metrics. */
export type CreateOutcome =
  | { readonly _tag: "Claimed"; readonly claimId: string }
  | { readonly _tag: "Adopted"; readonly claimId: string }

export class PodLifecycle extends Context.Service<PodLifecycle, {
  readonly createPod: (pod: V1Pod) => Effect.Effect<CreateOutcome, ProviderFailure>
  readonly updatePod: (pod: V1Pod) => Effect.Effect<void, ProviderFailure>
  readonly deletePod: (pod: V1Pod) => Effect.Effect<void, ProviderFailure>
  readonly getPod: (key: PodKey) => Effect.Effect<Option.Option<V1Pod>>
  readonly getPods: Effect.Effect<ReadonlyArray<V1Pod>>
  /** Status pushes (NotifyPods): each is a whole Pod whose status (and annotations) should be written. */
  readonly statusPushes: Stream.Stream<V1Pod>
  /** Keys to retry at once, e.g. when a verification pass lifted their quarantine. */
  readonly retryNow: Stream.Stream<PodKey>
}>()("vk-sandbox/PodLifecycle") {}
