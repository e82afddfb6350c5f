/** ProviderEvents on unbounded PubSubs: a push never blocks the claim path on a slow reader. */
import type { V1Pod } from "@kubernetes/client-node"
import { Effect, Layer, PubSub, Ref } from "effect"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import { ProviderEvents } from "../Services/ProviderEvents.ts"

/** Claims remembered for the once-per-claim Pod IP warning. */
const MAX_WARNED = 4096

export const ProviderEventsPubSubLayer: Layer.Layer<ProviderEvents> = Layer.effect(
  ProviderEvents,
  Effect.gen(function*() {
    const statuses = yield* PubSub.unbounded<V1Pod>()
    const lifted = yield* PubSub.unbounded<ReadonlyArray<PodKey>>()
    const warned = yield* Ref.make<ReadonlySet<ClaimId>>(new Set())
    return ProviderEvents.of({
      pushStatus: (pod) => PubSub.publish(statuses, pod).pipe(Effect.asVoid),
      statusPushes: PubSub.subscribe(statuses),
      publishUnquarantined: (keys) => keys.length === 0 ? Effect.void : PubSub.publish(lifted, keys).pipe(Effect.asVoid),
      publishRetry: (keys) => keys.length === 0 ? Effect.void : PubSub.publish(lifted, keys).pipe(Effect.asVoid),
      unquarantined: PubSub.subscribe(lifted),
      firstIpWarning: (id) =>
        Ref.modify(warned, (set) => {
          if (set.has(id)) return [false, set]
          // Bounded: the oldest claims (long released, most likely) are forgotten first.
          const kept = set.size >= MAX_WARNED ? [...set].slice(set.size - MAX_WARNED + 1) : set
          return [true, new Set(kept).add(id)]
        })
    })
  })
)
