/**
 * The informer: list + watch of the Pods bound to this node, holding the slim projection of each
 * (`Schemas/Pod.ts`) in one map updated in place.
 *
 * - A list replaces the cache; a Pod the list lacks is reported removed (no DELETED was seen).
 * - Relists on 410 Expired, on a 504 "Too large resource version" (both arrive as KubeGone), when
 *   watches from one resourceVersion keep ending with nothing delivered, and after a watch the
 *   server kept open to its timeout without one event or bookmark.
 * - A server that went backwards (restored from a backup, restarted on an empty store) keeps a
 *   watch from a version it does not have open and silent: kube-apiserver delivers only events
 *   newer than the version asked for, bookmarks included. So a watch silent for
 *   `silentWatchCheck` asks the server for its current resourceVersion (a list of at most one
 *   Pod); one older than the newest the informer saw ends the watch and relists at once. A list
 *   whose resourceVersion is older than the newest seen is the same sign: it is logged and
 *   counted, and the list is the truth from then on.
 * - Re-watch after a clean close at once (after `rewatchDelay`); after a failure, or a close
 *   with nothing delivered within a second, it waits on the shared retry schedule.
 * - A Pod the slim Pod refuses (INF-1: a value the apiserver stores that this decoder does not
 *   read, written by another client or a newer server) fails neither the list nor the watch: one
 *   such Pod would otherwise freeze the cache of every Pod on the node, retried for good, and
 *   keep a restarted daemon from ever being ready. Its key is marked `unreadable`, and each of
 *   its versions is logged and counted once. Never seen readable, it is as if it were not on the
 *   node (no claim, no release, no status write). Tracked before, it keeps its last good Pod in
 *   the cache: nothing is released or rewritten because of a version this daemon cannot read.
 *   Its deletion still ends it: a DELETED event (whose metadata is still read) or a list that
 *   lacks the key.
 */
import { Clock, Duration, Effect, Metric, Option, Ref, Stream } from "effect"
import { type PodKey, podKeyOf, podKeyOfPod } from "../../Schemas/Ids.ts"
import type { Pod, UndecodablePod } from "../../Schemas/Pod.ts"
import { KubeApi, type KubeError, type PodList, type PodWatchEvent } from "../../Services/KubeApi.ts"
import * as Metrics from "../../Services/Metrics.ts"
import * as Backoff from "./Backoff.ts"
import { shouldReconcile, uidOf } from "./PodFacts.ts"

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

/** The warning an undecodable Pod's version is logged with (once per resourceVersion). */
export const undecodableWarning = "a pod the daemon cannot decode is left out"

const noneUnreadable = Effect.succeed(false)

/**
 * True when resourceVersion `a` is older than `b`. Versions are opaque to clients except that
 * the apiserver hands out increasing integers (etcd revisions); anything else compares as not older.
 */
export const resourceVersionOlder = (a: string, b: string): boolean =>
  /^\d+$/.test(a) && /^\d+$/.test(b) && (a.length !== b.length ? a.length < b.length : a < b)

export const make = (
  nodeName: string,
  options: InformerOptions,
  retry: Backoff.RetrySchedule
): Effect.Effect<Informer, never, KubeApi> =>
  Effect.gen(function*() {
    const kube = yield* KubeApi
    const cache = new Map<PodKey, Pod>()
    const synced = yield* Ref.make(false)
    /** The newest resourceVersion seen (list, event or bookmark). */
    let newestSeen = ""
    /**
     * Keys whose newest version cannot be decoded (INF-1), each with that version's
     * resourceVersion (the one logged). Empty but for such Pods: the good path only reads its size.
     */
    const undecodable = new Map<PodKey, string>()
    /** `undecodable.size` as last set on `vk_sandbox_pods_unreadable`. */
    let reportedUnreadable = 0
    /** Sets the gauge when the count moved: a good event costs one comparison. */
    const reportUnreadable = Effect.suspend(() => {
      if (undecodable.size === reportedUnreadable) return Effect.void
      reportedUnreadable = undecodable.size
      return Metric.update(Metrics.unreadablePods, reportedUnreadable)
    })

    /** Stores `pod`; true when the provider must see the change. */
    const store = (pod: Pod): boolean => {
      const key = podKeyOfPod(pod)
      const previous = cache.get(key)
      cache.set(key, pod)
      // Readable again: a create left alone while it was not (INF-1) runs now.
      if (undecodable.size !== 0 && undecodable.delete(key)) return true
      return previous === undefined || shouldReconcile(previous, pod)
    }

    /**
     * A version of a Pod the slim Pod refuses: its key is marked, the cache keeps what it holds,
     * and the version is logged and counted unless it was already (a relist meets it again).
     * A Pod without a name to key it by is only logged.
     */
    const noteUndecodable = (hooks: InformerHooks, pod: UndecodablePod): Effect.Effect<void> =>
      Effect.suspend(() => {
        const key = podKeyOf(pod.namespace, pod.name)
        if (pod.name !== "") {
          if (undecodable.get(key) === pod.resourceVersion) return Effect.void
          undecodable.set(key, pod.resourceVersion)
        }
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
        cache.delete(key)
        const wasUnreadable = undecodable.delete(key)
        return hooks.removed(key).pipe(Effect.andThen(hooks.changed(key)), Effect.andThen(wasUnreadable ? reportUnreadable : Effect.void))
      })

    const deliver = (hooks: InformerHooks, pod: Pod) =>
      Effect.suspend(() => {
        const changed = store(pod)
        const delivered = (changed ? hooks.changed(podKeyOfPod(pod)) : Effect.void).pipe(Effect.andThen(hooks.observed(pod)))
        // readable again: one key fewer held
        return undecodable.size === reportedUnreadable ? delivered : Effect.andThen(delivered, reportUnreadable)
      })

    const applyEvent = (hooks: InformerHooks, event: PodWatchEvent) =>
      Effect.suspend(() => {
        if (event.type === "BOOKMARK") return Effect.void
        if (event.type === "UNDECODABLE") {
          if (event.change !== "DELETED") return noteUndecodable(hooks, event.pod)
          // Gone, though unreadable: its metadata still names it. A Pod never tracked is reconciled
          // as gone too, so a claim the provider holds for its key (from before a restart) goes.
          return event.pod.name === "" ? Effect.void : gone(hooks, podKeyOf(event.pod.namespace, event.pod.name))
        }
        if (event.type !== "DELETED") return deliver(hooks, event.object)
        return gone(hooks, podKeyOfPod(event.object))
      })

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
        const vanished = [...cache.keys()].filter((key) => !listed.has(key))
        for (const key of undecodable.keys()) if (!listed.has(key) && !cache.has(key)) vanished.push(key)
        for (const key of vanished) yield* gone(hooks, key)
        for (const pod of refused) yield* noteUndecodable(hooks, pod)
        for (const pod of items) yield* deliver(hooks, pod)
      })

    /**
     * Watch from `rv` until the stream fails or the server closes it; returns the newest rv, how
     * many events arrived, and whether the watch was "very short" (closed within a second, empty).
     */
    const watchFrom = (hooks: InformerHooks, rv: string) =>
      Effect.gen(function*() {
        let latest = rv
        let delivered = 0
        const startedAt = yield* Clock.currentTimeMillis
        let lastHeard = startedAt
        /**
         * Returns the server's resourceVersion once one older than the newest seen is found; asks
         * only after `silentWatchCheck` without an event or bookmark. A failed ask proves nothing
         * (the watch itself reports an unreachable server) and is tried again an interval later.
         */
        const wentBackwards = Effect.gen(function*() {
          const interval = Duration.toMillis(options.silentWatchCheck)
          while (true) {
            const quiet = (yield* Clock.currentTimeMillis) - lastHeard
            if (quiet < interval) {
              yield* Effect.sleep(Duration.millis(interval - quiet))
              continue
            }
            const server = yield* Effect.option(kube.podsResourceVersion(nodeName))
            if (Option.isSome(server) && resourceVersionOlder(server.value, newestSeen)) return server.value
            lastHeard = yield* Clock.currentTimeMillis
          }
        })
        const watched = kube.watchPods(nodeName, rv).pipe(
          Stream.runForEach((event) =>
            applyEvent(hooks, event).pipe(
              Effect.andThen(Clock.currentTimeMillis),
              Effect.map((now) => {
                lastHeard = now
                delivered++
                latest = event.type === "BOOKMARK"
                  ? event.resourceVersion
                  : event.type === "UNDECODABLE"
                  ? (event.pod.resourceVersion === "" ? latest : event.pod.resourceVersion)
                  : (event.object.metadata?.resourceVersion ?? latest)
              })
            )
          ),
          Effect.as({ _tag: "Closed" as const }),
          Effect.catchTag("KubeGone", (error) => Effect.succeed({ _tag: "Gone" as const, error })),
          Effect.catch((error: KubeError) => Effect.succeed({ _tag: "Failed" as const, error }))
        )
        // Whichever ends first: the watch (its scope closes the request when the check wins). The
        // first to end, not the first to succeed: a defect in the watch (a hook's bug) then ends the
        // informer, which is logged and fails /healthz (HZ-1), instead of leaving it waiting on the
        // check for good with a frozen cache.
        const outcome = yield* Effect.raceFirst(
          watched,
          Effect.map(wentBackwards, (server) => ({ _tag: "Backwards" as const, server }))
        )
        const lasted = (yield* Clock.currentTimeMillis) - startedAt
        return { outcome, rv: latest, delivered, veryShort: lasted < 1000 && delivered === 0 }
      })

    let firstList = options.firstList
    /** Lists until it works, on the retry schedule (started afresh should the schedule end). */
    const listOnce: Effect.Effect<PodList> = Effect.suspend(() => {
      const early = firstList
      firstList = undefined
      return early ?? kube.listPods(nodeName)
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
        if (resourceVersionOlder(list.resourceVersion, newestSeen)) {
          // Restored from a backup or restarted on an empty store: the list is the truth now, and
          // every Pod the cache had but the list lacks is removed (its status writes end).
          if (!backwardsCounted) yield* Metrics.count(Metrics.watchRestarts, { reason: "backwards" })
          yield* Effect.logWarning("the apiserver's resourceVersion went backwards; the list replaces the cache").pipe(
            Effect.annotateLogs({ list: list.resourceVersion, cache: newestSeen })
          )
        }
        newestSeen = list.resourceVersion
        if (yield* Ref.get(synced)) {
          yield* applyList(hooks, list.items, list.undecodable)
        } else {
          // The first list fills the cache, and the dangling sweep runs on it, before any key is
          // reconciled: `synced` (readiness) then waits for the list, not for the work it starts
          // (a restart with 10,000 Pods adopts 10,000 claims). Only after a successful complete
          // list: never sweep on a failed or partial one (DG-03).
          const changed = list.items.map(store)
          // Before the sweep: a claim whose Pod is listed but unreadable is not dangling.
          for (const pod of list.undecodable) yield* noteUndecodable(hooks, pod)
          yield* hooks.firstSync
          yield* Ref.set(synced, true)
          yield* Effect.logInfo("pod controller synced").pipe(Effect.annotateLogs({ pods: list.items.length }))
          for (const [i, pod] of list.items.entries()) {
            if (changed[i] === true) yield* hooks.changed(podKeyOfPod(pod))
            yield* hooks.observed(pod)
          }
        }
        return list.resourceVersion
      })

    const run = (hooks: InformerHooks): Effect.Effect<never> =>
      Effect.gen(function*() {
        // The wait after watches that failed or closed at once; kept across relists, so a server
        // that keeps failing is asked ever more slowly whether the informer re-watches or relists.
        let backoff: Effect.Effect<void> | undefined
        // The silent-watch check already counted the server going backwards.
        let backwardsCounted = false
        while (true) {
          let rv = yield* listAndApply(hooks, backwardsCounted)
          backwardsCounted = false
          // Watches in a row from this same resourceVersion that delivered nothing.
          let fruitless = 0
          while (true) {
            const result = yield* watchFrom(hooks, rv)
            fruitless = result.rv === rv && result.delivered === 0 ? fruitless + 1 : 0
            rv = result.rv
            if (!resourceVersionOlder(rv, newestSeen)) newestSeen = rv
            yield* Metrics.count(Metrics.watchRestarts, { reason: result.outcome._tag.toLowerCase() })
            if (result.outcome._tag === "Backwards") {
              backwardsCounted = true
              yield* Effect.logWarning("the apiserver's resourceVersion is older than the pod watch's; relisting").pipe(
                Effect.annotateLogs({ server: result.outcome.server, cache: newestSeen })
              )
              break
            }
            if (result.outcome._tag === "Gone") {
              yield* Effect.logInfo("watch resourceVersion expired or not served; relisting").pipe(
                Effect.annotateLogs({ error: result.outcome.error })
              )
              break
            }
            // The real apiserver sends a bookmark about once a minute to a watch it can serve; one
            // it kept open to its timeout without a single event or bookmark is watching from a
            // resourceVersion the server does not have (it went backwards): relist at once.
            const silentToTheEnd = result.outcome._tag === "Closed" && !result.veryShort && result.delivered === 0
            const relist = silentToTheEnd || fruitless >= options.fruitlessWatchesBeforeRelist
            const relisting = relist
              ? Effect.logWarning("pod watch keeps ending with nothing from one resourceVersion; relisting").pipe(
                Effect.annotateLogs({ resourceVersion: rv, attempts: fruitless })
              )
              : Effect.void
            // A watch that worked for a while starts the backoff afresh.
            if (!result.veryShort) backoff = undefined
            if (result.outcome._tag === "Closed" && !result.veryShort) {
              yield* relisting
              if (relist) break
              yield* Effect.sleep(options.rewatchDelay)
              continue
            }
            // A server that closes every watch at once would otherwise be asked again ten times a second.
            if (result.outcome._tag === "Closed") yield* Effect.logWarning("pod watch closed at once with no events; backing off")
            else yield* Effect.logWarning("pod watch failed; re-watching").pipe(Effect.annotateLogs({ error: result.outcome.error }))
            if (backoff === undefined) backoff = yield* Backoff.stepper(retry)
            yield* backoff
            yield* relisting
            if (relist) break
          }
        }
      })

    return {
      get: (key) => Effect.sync(() => Option.fromNullishOr(cache.get(key))),
      pods: Effect.sync(() => [...cache.values()]),
      size: Effect.sync(() => cache.size),
      synced: Ref.get(synced),
      // A shared constant while no Pod is unreadable: a create asks it once (the burst path).
      unreadable: (key) => undecodable.size === 0 ? noneUnreadable : Effect.sync(() => undecodable.has(key)),
      observe: (pod) => Effect.sync(() => store(pod)),
      written: (before, after) =>
        Effect.sync(() => {
          const key = podKeyOfPod(before)
          const current = cache.get(key)
          if (current !== undefined && uidOf(current) === uidOf(after) && current.metadata?.resourceVersion === before.metadata?.resourceVersion) {
            cache.set(key, after)
          }
        }),
      run
    }
  })
