/**
 * How a list or a watch event changes the informer's `PodCache`, and what the rest of the
 * controller is told of it (`InformerHooks`). A Pod the slim Pod refuses (INF-1 — a Pod the daemon
 * cannot decode is left out: a value the apiserver stores that this decoder does not read) fails
 * neither: its key is marked unreadable, each of its versions logged and counted once; never seen
 * readable it is as if it were not on the node, tracked before it keeps its last good Pod. Its
 * deletion still ends it.
 */
import { Effect, Metric } from "effect"
import { type PodKey, podKeyOf, podKeyOfPod } from "../../Schemas/Ids.ts"
import type { UndecodablePod } from "../../Schemas/Pod/Decode.ts"
import type { Pod } from "../../Schemas/Pod/Schema.ts"
import type { PodWatchEvent } from "../../Services/KubeApi.ts"
import * as Metrics from "../../Services/Metrics.ts"
import type { PodCache } from "./PodCache.ts"

/** What the informer tells the rest of the controller. */
export interface InformerHooks {
  /** The provider must look at this key: a Pod added, changed as `shouldReconcile` says, or gone. */
  readonly changed: (key: PodKey) => Effect.Effect<void>
  /** Every Pod an event or a list delivered (the status writer checks its last push against it). */
  readonly observed: (pod: Pod) => Effect.Effect<void>
  /** The Pod left the apiserver: a DELETED event, or absent from a list. */
  readonly removed: (key: PodKey) => Effect.Effect<void>
  /** After the first complete list, before `synced` turns true (the dangling sweep). */
  readonly firstSync: Effect.Effect<void>
  /**
   * A version of a named Pod the slim Pod refuses, once per resourceVersion (INF-1), with whether
   * the cache keeps a last good version of it.
   */
  readonly undecodable: (pod: UndecodablePod, lastGoodKept: boolean) => Effect.Effect<void>
}

/** The warning an undecodable Pod's version is logged with (once per resourceVersion). */
export const undecodableWarning = "a pod the daemon cannot decode is left out"

export const cacheUpdates = (cache: PodCache) => {
  /** Sets the gauge when the count of unreadable keys moved: a good event costs one comparison. */
  const reportUnreadable = Effect.suspend(() => {
    const count = cache.unreadableCountChanged()
    return count === undefined ? Effect.void : Metric.update(Metrics.unreadablePods, count)
  })

  /**
   * A version of a Pod the slim Pod refuses: its key is marked, the cache keeps what it holds,
   * and the version is logged and counted unless it was already (a relist meets it again).
   * A Pod without a name to key it by is only logged.
   */
  const noteUndecodable = (hooks: InformerHooks, pod: UndecodablePod): Effect.Effect<void> =>
    Effect.suspend(() => {
      const key = podKeyOf(pod.namespace, pod.name)
      if (pod.name !== "" && !cache.noteUndecodable(key, pod.resourceVersion)) return Effect.void
      const lastGoodKept = cache.has(key)
      return Metric.update(Metrics.undecodablePods, 1).pipe(
        Effect.andThen(Effect.logWarning(undecodableWarning)),
        Effect.annotateLogs({
          pod: key,
          uid: pod.uid,
          resourceVersion: pod.resourceVersion,
          // the slim Pod's Schema message, scrubbed where it was made (`undecodablePod`)
          error: pod.error,
          lastGoodKept
        }),
        Effect.andThen(pod.name === "" ? Effect.void : hooks.undecodable(pod, lastGoodKept)),
        Effect.andThen(reportUnreadable)
      )
    })

  /** The Pod left the apiserver (whatever the informer could read of it). */
  const gone = (hooks: InformerHooks, key: PodKey) =>
    Effect.suspend(() => {
      const wasUnreadable = cache.remove(key)
      return hooks.removed(key).pipe(Effect.andThen(hooks.changed(key)), Effect.andThen(wasUnreadable ? reportUnreadable : Effect.void))
    })

  const deliver = (hooks: InformerHooks, pod: Pod) =>
    Effect.suspend(() => {
      const delivered = (cache.store(pod) ? hooks.changed(podKeyOfPod(pod)) : Effect.void).pipe(Effect.andThen(hooks.observed(pod)))
      // readable again: one key fewer held
      return cache.unreadableMoved ? Effect.andThen(delivered, reportUnreadable) : delivered
    })

  const applyEvent = (hooks: InformerHooks, event: PodWatchEvent): Effect.Effect<void> => {
    switch (event.type) {
      case "BOOKMARK":
        return Effect.void
      case "UNDECODABLE":
        if (event.change !== "DELETED") return noteUndecodable(hooks, event.pod)
        // Gone, though unreadable: its metadata still names it. A Pod never tracked is reconciled
        // as gone too, so a claim the provider holds for its key (from before a restart) goes.
        return event.pod.name === "" ? Effect.void : gone(hooks, podKeyOf(event.pod.namespace, event.pod.name))
      case "DELETED":
        return gone(hooks, podKeyOfPod(event.object))
      default:
        return deliver(hooks, event.object)
    }
  }

  /**
   * A list replaces the cache: vanished keys and changed Pods are reconciled. An undecodable
   * Pod's key is listed (its last good Pod stays); one only known as unreadable that the list
   * lacks is gone.
   */
  const applyList = (hooks: InformerHooks, items: ReadonlyArray<Pod>, refused: ReadonlyArray<UndecodablePod>) =>
    Effect.gen(function*() {
      const listed = new Set<PodKey>()
      for (const pod of items) listed.add(podKeyOfPod(pod))
      for (const pod of refused) if (pod.name !== "") listed.add(podKeyOf(pod.namespace, pod.name))
      for (const key of cache.vanished(listed)) yield* gone(hooks, key)
      for (const pod of refused) yield* noteUndecodable(hooks, pod)
      for (const pod of items) yield* deliver(hooks, pod)
    })

  return { applyEvent, applyList, noteUndecodable }
}
