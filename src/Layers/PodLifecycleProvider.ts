/**
 * The pod controller's view (`PodLifecycle`) of the claim-path Provider: the same calls, the
 * pushes and lifted-quarantine keys as Streams. The typed provider errors pass through unchanged.
 */
import { Effect, Layer, Stream } from "effect"
import { splitPodKey } from "../Schemas/Ids.ts"
import { PodLifecycle } from "../Services/PodLifecycle.ts"
import { Provider } from "../Services/Provider.ts"


export const PodLifecycleProviderLayer: Layer.Layer<PodLifecycle, never, Provider> = Layer.effect(
  PodLifecycle,
  Effect.gen(function*() {
    const provider = yield* Provider
    return PodLifecycle.of({
      createPod: provider.createPod,
      updatePod: provider.updatePod,
      deletePod: (pod) => Effect.asVoid(provider.deletePod(pod)),
      settleGone: (key) => Effect.asVoid(provider.settleGone(key)),
      settleTerminal: provider.settleTerminal,
      doubtKeys: provider.doubtKeys,
      lostKeys: provider.lostKeys,
      getPod: (key) => {
        const [namespace, name] = splitPodKey(key)
        return provider.getPod(namespace, name)
      },
      getPods: provider.getPods,
      statusPushes: Stream.unwrap(Effect.map(provider.statusPushes, Stream.fromSubscription)),
      retryNow: Stream.unwrap(Effect.map(provider.unquarantined, Stream.fromSubscription)).pipe(
        Stream.flattenIterable
      )
    })
  })
)
