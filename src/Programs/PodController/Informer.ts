/**
 * The informer: list + watch of the Pods bound to this node into a `PodCache` (the slim projection
 * of each, `Schemas/Pod/Schema.ts`). A list replaces the cache (a Pod it lacks is reported removed, and a
 * list older than the newest version seen, a server gone backwards, is logged and counted); one
 * watch is `PodWatch.ts`, what follows its end `WatchRestart.ts`, and how each list or event
 * changes the cache, a Pod the decoder refuses included (INF-1 — a Pod the daemon cannot decode is
 * left out), `CacheUpdates.ts`.
 */
import { type Duration, Effect, Option, Schedule } from "effect"
import { type PodKey, podKeyOfPod } from "../../Schemas/Ids.ts"
import type { Pod } from "../../Schemas/Pod/Schema.ts"
import { KubeApi, type KubeError, type PodList } from "../../Services/KubeApi.ts"
import * as Metrics from "../../Services/Metrics.ts"
import type * as Backoff from "./Backoff.ts"
import { cacheUpdates, type InformerHooks } from "./CacheUpdates.ts"
import { PodCache, resourceVersionOlder } from "./PodCache.ts"
import { watchOnce } from "./PodWatch.ts"
import { restartSchedule, type WatchEnd } from "./WatchRestart.ts"

export { type InformerHooks, undecodableWarning } from "./CacheUpdates.ts"
export { resourceVersionOlder } from "./PodCache.ts"

export interface InformerOptions {
  /** Delay before re-watching after a clean close (guards against a server that closes at once). */
  readonly rewatchDelay: Duration.Duration
  /** Watches in a row from one resourceVersion that deliver nothing (fail or close) before a relist. */
  readonly fruitlessWatchesBeforeRelist: number
  /** A watch silent this long asks whether the server's resourceVersion went backwards. */
  readonly silentWatchCheck: Duration.Duration
  /**
   * The first list, when it was asked for before the informer started (the daemon lists while it
   * loads its claims). Taken once; if it failed, the informer lists again as after any failure.
   */
  readonly firstList?: Effect.Effect<PodList, KubeError> | undefined
}

export interface Informer {
  readonly get: (key: PodKey) => Effect.Effect<Option.Option<Pod>>
  readonly pods: Effect.Effect<ReadonlyArray<Pod>>
  readonly size: Effect.Effect<number>
  readonly synced: Effect.Effect<boolean>
  /**
   * The newest version of the key's Pod the informer heard of cannot be decoded (INF-1): the Pod
   * is there, whether or not `get` holds a last good version of it. Nothing may treat it as gone.
   */
  readonly unreadable: (key: PodKey) => Effect.Effect<boolean>
  /**
   * A Pod read outside the watch (a 409 re-read) enters the cache as a watch event would; true
   * when the provider must see the change (the later watch event then compares equal).
   */
  readonly observe: (pod: Pod) => Effect.Effect<boolean>
  /** A write's reply replaces `before` in the cache, unless the watch already brought something else. */
  readonly written: (before: Pod, after: Pod) => Effect.Effect<void>
  /** The list + watch loop; runs until interrupted. */
  readonly run: (hooks: InformerHooks) => Effect.Effect<never>
}

export const make = (
  nodeName: string,
  options: InformerOptions,
  retry: Backoff.RetrySchedule
): Effect.Effect<Informer, never, KubeApi> =>
  Effect.gen(function*() {
    const kube = yield* KubeApi
    const cache = new PodCache()

    const updates = cacheUpdates(cache)

    /** The first list, taken once when it was asked for early; then a fresh list each time. */
    const early = { list: options.firstList }
    /** Lists until it works, on the retry schedule (started afresh should the schedule end). */
    const listOnce: Effect.Effect<PodList> = Effect.suspend(() => {
      const first = early.list
      early.list = undefined
      return first ?? kube.listPods(nodeName)
    }).pipe(
      Effect.tapError((error) => Effect.logWarning("pod list failed; retrying").pipe(Effect.annotateLogs({ error }))),
      Effect.retry(retry),
      Effect.catch(() => listOnce)
    )

    /**
     * Lists and applies the list; returns its resourceVersion. A function of its own so that the
     * list is let go once applied: held by the watch loop that follows, its items (every Pod of
     * the node, 10,000 after a restart) outlived the cache entries the watch replaced.
     */
    const listAndApply = (hooks: InformerHooks, backwardsCounted: boolean): Effect.Effect<string> =>
      Effect.gen(function*() {
        const list = yield* listOnce
        if (resourceVersionOlder(list.resourceVersion, cache.newestSeen)) {
          // Restored from a backup or restarted on an empty store: the list is the truth now, and
          // every Pod the cache had but the list lacks is removed (its status writes end).
          if (!backwardsCounted) yield* Metrics.count(Metrics.watchRestarts, { reason: "backwards" })
          yield* Effect.logWarning("the apiserver's resourceVersion went backwards; the list replaces the cache").pipe(
            Effect.annotateLogs({ list: list.resourceVersion, cache: cache.newestSeen })
          )
        }
        cache.newestSeen = list.resourceVersion
        if (cache.synced) {
          yield* updates.applyList(hooks, list.items, list.undecodable)
          return list.resourceVersion
        }
        // The first list fills the cache, and the dangling sweep runs on it, before any key is
        // reconciled: `synced` (readiness) then waits for the list, not for the work it starts
        // (a restart with 10,000 Pods adopts 10,000 claims). Only after a successful complete
        // list: never sweep on a failed or partial one (DG-03 — sweep only after a good list).
        const changed = list.items.map((pod) => cache.store(pod))
        // Before the sweep: a claim whose Pod is listed but unreadable is not dangling.
        for (const pod of list.undecodable) yield* updates.noteUndecodable(hooks, pod)
        yield* hooks.firstSync
        cache.synced = true
        yield* Effect.logInfo("pod controller synced").pipe(Effect.annotateLogs({ pods: list.items.length }))
        for (const [i, pod] of list.items.entries()) {
          if (changed[i] === true) yield* hooks.changed(podKeyOfPod(pod))
          yield* hooks.observed(pod)
        }
        return list.resourceVersion
      })

    /** Logs how the watch ended, before the wait that follows it. */
    const logEnd = (end: WatchEnd) => {
      switch (end.outcome._tag) {
        case "Backwards":
          return Effect.logWarning("the apiserver's resourceVersion is older than the pod watch's; relisting").pipe(
            Effect.annotateLogs({ server: end.outcome.server, cache: cache.newestSeen })
          )
        case "Gone":
          return Effect.logInfo("watch resourceVersion expired or not served; relisting").pipe(
            Effect.annotateLogs({ error: end.outcome.error })
          )
        case "Failed":
          return Effect.logWarning("pod watch failed; re-watching").pipe(Effect.annotateLogs({ error: end.outcome.error }))
        case "Closed":
          return end.veryShort ? Effect.logWarning("pod watch closed at once with no events; backing off") : Effect.void
      }
    }

    const run = (hooks: InformerHooks): Effect.Effect<never> =>
      Effect.gen(function*() {
        const restart = yield* Schedule.toStepWithSleep(
          restartSchedule(retry, options.rewatchDelay, options.fruitlessWatchesBeforeRelist)
        )
        let rv = yield* listAndApply(hooks, false)
        while (true) {
          const end = yield* watchOnce(nodeName, rv, options.silentWatchCheck, cache, (event) => updates.applyEvent(hooks, event)).pipe(
            Effect.provideService(KubeApi, kube)
          )
          cache.advance(end.rv)
          yield* Metrics.count(Metrics.watchRestarts, { reason: end.outcome._tag.toLowerCase() })
          yield* logEnd(end)
          // The policy's wait (`WatchRestart.ts`); its schedule never ends.
          const next = yield* restart(end).pipe(Effect.orDie)
          if (next.fruitlessRelist) {
            yield* Effect.logWarning("pod watch keeps ending with nothing from one resourceVersion; relisting").pipe(
              Effect.annotateLogs({ resourceVersion: end.rv })
            )
          }
          // The silent-watch check already counted the server going backwards.
          rv = next.relist ? yield* listAndApply(hooks, end.outcome._tag === "Backwards") : end.rv
        }
      })

    return {
      get: (key) => Effect.sync(() => Option.fromNullishOr(cache.get(key))),
      pods: Effect.sync(() => cache.values()),
      size: Effect.sync(() => cache.size),
      synced: Effect.sync(() => cache.synced),
      // Read when it runs, not when it is built: a caller may build it before a version turns unreadable.
      unreadable: (key) => Effect.sync(() => cache.unreadable(key)),
      observe: (pod) => Effect.sync(() => cache.store(pod)),
      written: (before, after) => Effect.sync(() => cache.written(before, after)),
      run
    }
  })
