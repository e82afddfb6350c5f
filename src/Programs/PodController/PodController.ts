/**
 * The pod half of what the Go virtual-kubelet library gives a provider (virtual-kubelet §2,
 * ARCHITECTURE.md §6.7, §6.8, §6.14, §6.15): list + watch the Pods bound to this node, reconcile
 * each key level-triggered and serialized, write the provider's status pushes, and send the
 * final grace-0 delete.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Clock, Duration, Effect, Metric, Option, Ref, Schedule, type Scope, Stream } from "effect"
import { AppConfig } from "../../Services/Config.ts"
import { type PodKey, podKeyOfPod, splitPodKey } from "../../Schemas/Ids.ts"
import { EventRecorder, involvedPod } from "../../Services/EventRecorder.ts"
import type { Pod } from "../../Schemas/Pod.ts"
import { KubeApi, type KubeError, type PodWatchEvent } from "../../Services/KubeApi.ts"
import { PodLifecycle, type ProviderFailure } from "../../Services/PodLifecycle.ts"
import * as Metrics from "../../Services/Metrics.ts"
import * as KeyedQueue from "./KeyedQueue.ts"
import {
  isDeleting,
  isRunning,
  isTerminal,
  podsEqual,
  shouldReconcile,
  statusWriteBody,
  statusWriteIsNoop,
  uidOf
} from "./PodFacts.ts"

export interface PodControllerOptions {
  readonly resyncInterval: Duration.Duration
  readonly backoff: KeyedQueue.BackoffPolicy
  /** Delay before re-watching after a clean close (guards against a server that closes at once). */
  readonly rewatchDelay: Duration.Duration
  /** Watches in a row from one resourceVersion that deliver nothing (fail or close) before a relist. */
  readonly fruitlessWatchesBeforeRelist: number
}

/**
 * True when resourceVersion `a` is older than `b`. Versions are opaque to clients except that
 * the apiserver hands out increasing integers (etcd revisions); anything else compares as not older.
 */
export const resourceVersionOlder = (a: string, b: string): boolean =>
  /^\d+$/.test(a) && /^\d+$/.test(b) && (a.length !== b.length ? a.length < b.length : a < b)

export const defaultOptions: PodControllerOptions = {
  resyncInterval: Duration.seconds(60),
  backoff: KeyedQueue.defaultBackoff,
  rewatchDelay: Duration.millis(100),
  fruitlessWatchesBeforeRelist: 3
}

export interface PodControllerHandle {
  /** True once the first complete list succeeded and every Pod was handed to the workers. */
  readonly synced: Effect.Effect<boolean>
  /** The Pods this controller currently knows from the apiserver. */
  readonly cachedPods: Effect.Effect<ReadonlyArray<Pod>>
  /** Stop admitting reconciles and wait, at most `timeout`, for those in flight. */
  readonly drain: (timeout: Duration.Duration) => Effect.Effect<void>
  /** Keys holding per-pod state besides the cache (pushes, handed Pods, queues): a leak check. */
  readonly retainedKeys: Effect.Effect<number>
}



const failureCause = (failure: ProviderFailure): unknown => ("cause" in failure ? (failure as { cause: unknown }).cause : undefined)

/** A NoWarmCapacity anywhere in the failure is an event of its own (issue 10). */
const isNoWarmCapacity = (failure: ProviderFailure): boolean => {
  const cause = failureCause(failure)
  return failure._tag === "NoWarmCapacity" ||
    (typeof cause === "object" && cause !== null && "_tag" in cause && cause._tag === "NoWarmCapacity")
}

export const make = (
  options: PodControllerOptions = defaultOptions
): Effect.Effect<PodControllerHandle, never, AppConfig | KubeApi | PodLifecycle | EventRecorder | Scope.Scope> =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const kube = yield* KubeApi
    const provider = yield* PodLifecycle
    const events = yield* EventRecorder
    const nodeName = config.nodeName

    /** The apiserver's view of this node's Pods (the informer cache). */
    const cache = yield* Ref.make(new Map<PodKey, Pod>())
    const synced = yield* Ref.make(false)
    /** The newest provider push per key not yet written (coalescing: the newest wins). */
    const pendingPush = yield* Ref.make(new Map<PodKey, V1Pod>())
    /** The last push written or found already in place, per key (status repair, PC-05). */
    const lastPushed = yield* Ref.make(new Map<PodKey, V1Pod>())
    /**
     * The last few Pods handed to createPod/updatePod per key. A push is a copy of one of them
     * (same UID and resourceVersion): that one is the base of the three-way merge that keeps a
     * status write from reverting label/annotation edits made since (PIT-06).
     */
    const handed = yield* Ref.make(new Map<PodKey, ReadonlyArray<Pod>>())
    const recordHanded = (key: PodKey, pod: Pod) =>
      Ref.update(handed, (m) => new Map(m).set(key, [...(m.get(key) ?? []).slice(-7), pod]))
    const baseFor = (key: PodKey, push: V1Pod) =>
      Effect.map(Ref.get(handed), (m) =>
        (m.get(key) ?? []).find((pod) =>
          uidOf(pod) === uidOf(push) && pod.metadata?.resourceVersion === push.metadata?.resourceVersion
        ))

    const dropKey = <V>(ref: Ref.Ref<Map<PodKey, V>>, key: PodKey) =>
      Ref.update(ref, (m) => {
        if (!m.has(key)) return m
        const next = new Map(m)
        next.delete(key)
        return next
      })
    /**
     * Keys whose last createPod failed. The provider may still track such a Pod (a claim whose
     * commit and undo both failed stays in memory, CRT-16), and an unchanged Pod it tracks is
     * otherwise "done": a failed create must be retried until it succeeds (ARCHITECTURE.md §6.8).
     */
    const createFailed = yield* Ref.make(new Set<PodKey>())
    const setCreateFailed = (key: PodKey, failed: boolean) =>
      Ref.update(createFailed, (set) => {
        if (set.has(key) === failed) return set
        const next = new Set(set)
        if (failed) next.add(key)
        else next.delete(key)
        return next
      })
    /** The Pod is gone from the apiserver: nothing kept for it may outlive it. */
    const forgetPod = (key: PodKey) =>
      Effect.andThen(dropKey(lastPushed, key), dropKey(handed, key)).pipe(Effect.andThen(setCreateFailed(key, false)))

    const cached = (key: PodKey) => Ref.get(cache).pipe(Effect.map((m) => Option.fromNullishOr(m.get(key))))
    const setCached = (pod: Pod) =>
      Ref.update(cache, (m) => new Map(m).set(podKeyOfPod(pod), pod))

    const logFor = (key: PodKey) => Effect.annotateLogs({ pod: key, node: nodeName })

    // ---- writes to the apiserver -----------------------------------------------------------

    /**
     * A Pod read outside the watch (a 409 re-read) enters the cache as a watch event would, so a
     * change it carries still reaches the provider (the later watch event will compare equal).
     */
    const cacheReread = (fresh: Pod) =>
      Effect.gen(function*() {
        const key = podKeyOfPod(fresh)
        const previous = (yield* Ref.get(cache)).get(key)
        yield* setCached(fresh)
        if (previous === undefined || shouldReconcile(previous, fresh)) yield* podQueue.enqueue(key, "change")
      })

    /**
     * PUT pods/status of `body` (built from the Pod the controller holds, with its
     * resourceVersion); on 409 re-read and try again (a few times, then the caller retries with
     * backoff). The body is rebuilt from the re-read Pod, so the write rules (UID, terminal, no-op)
     * are checked again each time: `body` returns undefined when nothing may be written.
     * "Gone" when the Pod of `uid` is no longer there.
     */
    const putStatus = (key: PodKey, uid: string, body: (apiPod: Pod) => Pod | undefined) =>
      Effect.gen(function*() {
        for (let attempt = 0; attempt < 3; attempt++) {
          const apiPod = yield* cached(key)
          if (Option.isNone(apiPod) || uidOf(apiPod.value) !== uid) return "Gone" as const
          const wanted = body(apiPod.value)
          if (wanted === undefined) return "Skipped" as const
          const written = yield* kube.replacePodStatus(wanted).pipe(
            Effect.map((pod) => ({ _tag: "Written" as const, pod })),
            Effect.catchTag("KubeConflict", () =>
              Metric.update(Metrics.statusWriteConflicts, 1).pipe(Effect.andThen(kube.getPod(...splitPodKey(key)))).pipe(
                Effect.tap((fresh) => (uidOf(fresh) === uid ? cacheReread(fresh) : Effect.void)),
                Effect.as({ _tag: "Conflict" as const }),
                Effect.catchTag("KubeNotFound", () => Effect.succeed({ _tag: "NotFound" as const }))
              )),
            // The Pod is gone from the apiserver (a delete, or a server that went backwards): a
            // status for it can never be written; the watch or the next list removes it.
            Effect.catchTag("KubeNotFound", () => Effect.succeed({ _tag: "NotFound" as const }))
          )
          if (written._tag === "NotFound") return "Gone" as const
          if (written._tag === "Written") {
            // Keep the newer resourceVersion unless the watch already brought something newer.
            yield* Ref.update(cache, (m) => {
              const current = m.get(key)
              if (current === undefined || current.metadata?.resourceVersion !== apiPod.value.metadata?.resourceVersion) return m
              return new Map(m).set(key, written.pod)
            })
            return "Written" as const
          }
        }
        return "Conflicted" as const
      })

    /** CU-05: the create failure is visible on the Pod (Pending, or Failed with restartPolicy Never). */
    const writeProviderFailed = (key: PodKey, uid: string, failure: ProviderFailure) =>
      putStatus(key, uid, (apiPod) => {
        const phase = apiPod.spec?.restartPolicy === "Never" ? "Failed" : "Pending"
        const status = apiPod.status
        // Terminal is final; the same failure already shown needs no write (a resync retry).
        if (isTerminal(apiPod)) return undefined
        if (status?.phase === phase && status.reason === "ProviderFailed" && status.message === failure.message) return undefined
        return { ...apiPod, status: { ...status, phase, reason: "ProviderFailed", message: failure.message } }
      }).pipe(
        Effect.catch((error: KubeError) =>
          Effect.logWarning("could not record the create failure on the pod").pipe(Effect.annotateLogs({ error }))
        ),
        Effect.asVoid
      )

    /** DEL-01/DEL-02: the final delete; 404 and 409 (the UID precondition) mean done. */
    const finalDelete = (key: PodKey, uid: string) =>
      kube.deletePod(...splitPodKey(key), uid).pipe(
        Effect.tap(() => Effect.logInfo("pod removed from the apiserver")),
        Effect.catchTag("KubeNotFound", () => Effect.void),
        Effect.catchTag("KubeConflict", () =>
          Effect.logWarning("final delete skipped: the pod was recreated under the same name").pipe(
            Effect.annotateLogs({ uid })
          )),
        Effect.as<KeyedQueue.RunOutcome>("Done"),
        Effect.catch((error: KubeError) =>
          Effect.logWarning("final pod delete failed; retrying").pipe(
            Effect.annotateLogs({ error }),
            Effect.as<KeyedQueue.RunOutcome>("Retry")
          )
        )
      )

    // ---- reconcile one key -----------------------------------------------------------------

    const onCreateFailure = (key: PodKey, pod: V1Pod, failure: ProviderFailure) =>
      Effect.gen(function*() {
        yield* Effect.logWarning("create failed").pipe(
          Effect.annotateLogs({ error: failure, retryable: failure.retryable })
        )
        yield* events.record(
          involvedPod(pod),
          "Warning",
          isNoWarmCapacity(failure) ? "NoWarmCapacity" : "CreateFailed",
          `${failure._tag}: ${failure.message}`
        )
        // CU-05 is for a Pod that has not started. A running one (adopted after a restart while
        // sandboxd cannot confirm its claim) keeps its status: Pending would be a phase going
        // backwards, and with restartPolicy Never a transient failure would end it for good.
        if (!isRunning(pod)) yield* writeProviderFailed(key, uidOf(pod), failure)
        return failure.retryable ? "Retry" as const : "Park" as const
      })

    const reconcile = (key: PodKey): Effect.Effect<KeyedQueue.RunOutcome> =>
      Effect.gen(function*() {
        const apiPod = yield* cached(key)
        // SY-02: gone from the apiserver → the provider lets go of it (deletePod is idempotent).
        if (Option.isNone(apiPod)) {
          // Also reached when a relist no longer has the Pod (no DELETED event was seen).
          yield* forgetPod(key)
          const held = yield* provider.getPod(key)
          if (Option.isNone(held)) return "Done" as const
          return yield* provider.deletePod(held.value).pipe(
            Effect.as<KeyedQueue.RunOutcome>("Done"),
            Effect.catch((failure: ProviderFailure) =>
              Effect.logWarning("delete in provider failed; retrying").pipe(
                Effect.annotateLogs({ error: failure }),
                Effect.as<KeyedQueue.RunOutcome>(failure.retryable ? "Retry" : "Park")
              )
            )
          )
        }
        const pod = apiPod.value
        if (isDeleting(pod)) {
          // SY-03: nothing runs: remove the object now; the provider lets go when it is gone.
          if (!isRunning(pod)) return yield* finalDelete(key, uidOf(pod))
          // SY-06 with §6.14: the provider decides (release or preserve), then the final delete at once.
          return yield* provider.deletePod(pod).pipe(
            Effect.matchEffect({
              onFailure: (failure: ProviderFailure) =>
                Effect.gen(function*() {
                  yield* Effect.logWarning("delete in provider failed; the pod object stays").pipe(
                    Effect.annotateLogs({ error: failure })
                  )
                  return failure.retryable ? "Retry" as const : "Park" as const
                }),
              onSuccess: () => finalDelete(key, uidOf(pod))
            })
          )
        }
        // SY-07: terminal Pods are left alone.
        if (isTerminal(pod)) return "Done" as const
        const held = yield* provider.getPod(key)
        const lastCreateFailed = (yield* Ref.get(createFailed)).has(key)
        if (Option.isSome(held) && uidOf(held.value) === uidOf(pod) && !lastCreateFailed) {
          if (podsEqual(held.value, pod)) return "Done" as const
          yield* recordHanded(key, pod)
          return yield* provider.updatePod(pod).pipe(
            Effect.as<KeyedQueue.RunOutcome>("Done"),
            Effect.catch((failure: ProviderFailure) =>
              Effect.logWarning("update in provider failed").pipe(
                Effect.annotateLogs({ error: failure }),
                Effect.as<KeyedQueue.RunOutcome>(failure.retryable ? "Retry" : "Park")
              )
            )
          )
        }
        yield* recordHanded(key, pod)
        return yield* provider.createPod(pod).pipe(
          Effect.trackDuration(Metrics.claimDuration, (d) => Duration.toMillis(d) / 1000),
          Effect.tap((outcome) =>
            Metrics.count(Metrics.claims, { outcome: outcome._tag === "Claimed" ? "claimed" : "adopted" }).pipe(
              Effect.andThen(outcome._tag === "Adopted" ? Metric.update(Metrics.adoptions, 1) : Effect.void)
            )
          ),
          Effect.tapError((failure: ProviderFailure) =>
            Metrics.count(Metrics.claims, { outcome: failure._tag }).pipe(Effect.andThen(setCreateFailed(key, true)))
          ),
          Effect.tap(() => setCreateFailed(key, false)),
          Effect.matchEffect({
            onFailure: (failure: ProviderFailure) => onCreateFailure(key, pod, failure),
            onSuccess: (outcome) =>
              events.record(
                involvedPod(pod),
                "Normal",
                outcome._tag,
                outcome._tag === "Claimed" ? `claimed sandbox ${outcome.claimId}` : `adopted sandbox ${outcome.claimId}`
              ).pipe(Effect.as<KeyedQueue.RunOutcome>("Done"))
          })
        )
      }).pipe(logFor(key), Effect.withSpan("PodController.reconcile", { attributes: { pod: key } }))

    const podQueue = yield* KeyedQueue.make<PodKey>(reconcile, options.backoff)

    // ---- status writes (provider pushes) ---------------------------------------------------

    const writePush = (key: PodKey): Effect.Effect<KeyedQueue.RunOutcome> =>
      Effect.gen(function*() {
        const push = (yield* Ref.get(pendingPush)).get(key)
        if (push === undefined) return "Done" as const
        const apiPod = yield* cached(key)
        const forget = Ref.update(pendingPush, (m) => {
          if (m.get(key) !== push) return m
          const next = new Map(m)
          next.delete(key)
          return next
        })
        // ST-04 and ST-11: not for a Pod we do not know, another generation, or a terminal Pod.
        if (Option.isNone(apiPod) || uidOf(apiPod.value) !== uidOf(push) || isTerminal(apiPod.value)) {
          yield* forget
          return "Done" as const
        }
        const base = yield* baseFor(key, push)
        const result = yield* putStatus(key, uidOf(push), (current) => {
          if (isTerminal(current)) return undefined
          const body = Option.getOrUndefined(statusWriteBody(push, current, base))
          return body === undefined || statusWriteIsNoop(current, body) ? undefined : body
        }).pipe(
          Effect.catchTag("KubeInvalid", (error) =>
            Effect.logError("status write refused by the apiserver").pipe(
              Effect.annotateLogs({ error }),
              Effect.as("Refused" as const)
            )),
          Effect.catch((error: KubeError) =>
            Effect.logWarning("status write failed; retrying").pipe(Effect.annotateLogs({ error }), Effect.as("Failed" as const))
          )
        )
        if (result === "Failed" || result === "Conflicted") return "Retry" as const
        if (result === "Written" || result === "Skipped") {
          // Not for a Pod deleted meanwhile: its state was already forgotten.
          const still = yield* cached(key)
          if (Option.isSome(still) && uidOf(still.value) === uidOf(push)) {
            yield* Ref.update(lastPushed, (m) => new Map(m).set(key, push))
          }
        }
        yield* forget
        return "Done" as const
      }).pipe(logFor(key), Effect.withSpan("PodController.writeStatus", { attributes: { pod: key } }))

    const statusQueue = yield* KeyedQueue.make<PodKey>(writePush, options.backoff)

    yield* provider.statusPushes.pipe(
      Stream.runForEach((pod) =>
        Effect.gen(function*() {
          const key = podKeyOfPod(pod)
          const apiPod = yield* cached(key)
          const currentUid = Option.isSome(apiPod) ? uidOf(apiPod.value) : undefined
          yield* Ref.update(pendingPush, (m) => {
            const queued = m.get(key)
            // The newest push wins, but one for an older Pod of the same name (which could never
            // be written) must not displace a queued push for the Pod the apiserver has now.
            if (queued !== undefined && uidOf(queued) === currentUid && uidOf(pod) !== currentUid) return m
            return new Map(m).set(key, pod)
          })
          yield* statusQueue.enqueue(key, "change")
        })
      ),
      Effect.forkScoped
    )

    yield* provider.retryNow.pipe(
      Stream.runForEach((key) => podQueue.enqueue(key, "now")),
      Effect.forkScoped
    )

    /** PC-05 repair: someone else rewrote what we last pushed; write it again. */
    const repairStatus = (pod: Pod) =>
      Effect.gen(function*() {
        const key = podKeyOfPod(pod)
        const pushed = (yield* Ref.get(lastPushed)).get(key)
        if (pushed === undefined || uidOf(pushed) !== uidOf(pod) || isTerminal(pod)) return
        const body = statusWriteBody(pushed, pod, yield* baseFor(key, pushed))
        if (Option.isNone(body) || statusWriteIsNoop(pod, body.value)) return
        yield* Ref.update(pendingPush, (m) => (m.has(key) ? m : new Map(m).set(key, pushed)))
        yield* statusQueue.enqueue(key, "resync")
      })

    // ---- list + watch ----------------------------------------------------------------------

    const applyEvent = (event: PodWatchEvent) =>
      Effect.gen(function*() {
        if (event.type === "BOOKMARK") return
        const pod = event.object
        const key = podKeyOfPod(pod)
        if (event.type === "DELETED") {
          yield* Ref.update(cache, (m) => {
            const next = new Map(m)
            next.delete(key)
            return next
          })
          yield* forgetPod(key)
          yield* podQueue.enqueue(key, "change")
          return
        }
        const previous = (yield* Ref.get(cache)).get(key)
        yield* setCached(pod)
        if (previous === undefined || shouldReconcile(previous, pod)) yield* podQueue.enqueue(key, "change")
        yield* repairStatus(pod)
      })

    /** A list replaces the cache: vanished keys and changed Pods are reconciled. */
    const applyList = (items: ReadonlyArray<Pod>) =>
      Effect.gen(function*() {
        const previous = yield* Ref.get(cache)
        const next = new Map<PodKey, Pod>()
        for (const pod of items) next.set(podKeyOfPod(pod), pod)
        yield* Ref.set(cache, next)
        for (const key of previous.keys()) {
          if (next.has(key)) continue
          yield* podQueue.enqueue(key, "change")
          // a status write waiting out a backoff for a Pod the list no longer has ends now
          if ((yield* Ref.get(pendingPush)).has(key)) yield* statusQueue.enqueue(key, "change")
        }
        for (const [key, pod] of next) {
          const before = previous.get(key)
          if (before === undefined || shouldReconcile(before, pod)) yield* podQueue.enqueue(key, "change")
        }
      })

    /** DG-01..DG-03: provider Pods absent from a successful complete list are deleted (by ns/name). */
    const danglingSweep = Effect.gen(function*() {
      const known = yield* Ref.get(cache)
      const held = yield* provider.getPods
      const dangling = held.filter((pod) => !known.has(podKeyOfPod(pod)))
      if (dangling.length > 0) yield* Effect.logInfo("dangling pods at startup").pipe(Effect.annotateLogs({ count: dangling.length }))
      yield* Effect.forEach(dangling, (pod) =>
        provider.deletePod(pod).pipe(
          Effect.catch((failure: ProviderFailure) =>
            Effect.logWarning("dangling pod delete failed").pipe(Effect.annotateLogs({ pod: podKeyOfPod(pod), error: failure }))
          )
        ), { concurrency: 8, discard: true })
    })

    /** Jittered exponential from 1 s capped at 30 s, forever (ARCHITECTURE.md §6.8). */
    const watchBackoff = Schedule.exponential(options.backoff.initial, 2).pipe(
      Schedule.jittered,
      Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, options.backoff.max)))
    )

    /**
     * Watch from `rv` until the stream fails or the server closes it; returns the newest rv, and
     * whether the watch was "very short" (closed within a second having delivered nothing).
     */
    const watchFrom = (rv: string) =>
      Effect.gen(function*() {
        const latest = yield* Ref.make(rv)
        const delivered = yield* Ref.make(0)
        const startedAt = yield* Clock.currentTimeMillis
        const outcome = yield* kube.watchPods(nodeName, rv).pipe(
          Stream.runForEach((event) =>
            applyEvent(event).pipe(
              Effect.andThen(Ref.update(delivered, (n) => n + 1)),
              Effect.andThen(
                Ref.set(latest, event.type === "BOOKMARK" ? event.resourceVersion : (event.object.metadata?.resourceVersion ?? rv))
              )
            )
          ),
          Effect.as({ _tag: "Closed" as const }),
          Effect.catchTag("KubeGone", (error) => Effect.succeed({ _tag: "Gone" as const, error })),
          Effect.catch((error: KubeError) => Effect.succeed({ _tag: "Failed" as const, error }))
        )
        const lasted = (yield* Clock.currentTimeMillis) - startedAt
        const count = yield* Ref.get(delivered)
        return { outcome, rv: yield* Ref.get(latest), delivered: count, veryShort: lasted < 1000 && count === 0 }
      })

    const listOnce = kube.listPods(nodeName).pipe(
      Effect.tapError((error) => Effect.logWarning("pod list failed; retrying").pipe(Effect.annotateLogs({ error }))),
      Effect.retry(watchBackoff)
    )

    /** The newest resourceVersion the informer has seen (list, event or bookmark). */
    const newestSeen = yield* Ref.make("")

    const informer = Effect.gen(function*() {
      // Watches in a row that failed or closed at once; kept across relists, so a server that
      // keeps failing is asked with a growing backoff whether the informer re-watches or relists.
      let failures = 0
      while (true) {
        const list = yield* listOnce
        const seen = yield* Ref.get(newestSeen)
        if (resourceVersionOlder(list.resourceVersion, seen)) {
          // Restored from a backup or restarted on an empty store: the list is the truth now, and
          // every Pod the cache had but the list lacks is reconciled as gone (its writes stop).
          yield* Metrics.count(Metrics.watchRestarts, { reason: "backwards" })
          yield* Effect.logWarning("the apiserver's resourceVersion went backwards; the list replaces the cache").pipe(
            Effect.annotateLogs({ list: list.resourceVersion, cache: seen })
          )
        }
        yield* Ref.set(newestSeen, list.resourceVersion)
        yield* applyList(list.items)
        if (!(yield* Ref.get(synced))) {
          // Only after a successful complete list: never sweep on a failed or partial one (DG-03).
          yield* danglingSweep
          yield* Ref.set(synced, true)
          yield* Effect.logInfo("pod controller synced").pipe(Effect.annotateLogs({ pods: list.items.length }))
        }
        let rv = list.resourceVersion
        // Watches in a row from this same resourceVersion that delivered nothing: a server that
        // cannot serve it (it went backwards and keeps the watch silent, or keeps failing it).
        let fruitless = 0
        while (true) {
          const result = yield* watchFrom(rv)
          fruitless = result.rv === rv && result.delivered === 0 ? fruitless + 1 : 0
          rv = result.rv
          yield* Ref.set(newestSeen, rv)
          yield* Metrics.count(Metrics.watchRestarts, { reason: result.outcome._tag.toLowerCase() })
          if (result.outcome._tag === "Gone") {
            yield* Effect.logInfo("watch resourceVersion expired or not served; relisting").pipe(
              Effect.annotateLogs({ error: result.outcome.error })
            )
            break
          }
          const relist = fruitless >= options.fruitlessWatchesBeforeRelist
          const relistNow = relist
            ? Effect.logWarning("pod watch keeps ending with nothing from one resourceVersion; relisting").pipe(
              Effect.annotateLogs({ resourceVersion: rv, attempts: fruitless })
            )
            : Effect.void
          // A watch that worked for a while starts the backoff afresh.
          if (!result.veryShort) failures = 0
          if (result.outcome._tag === "Closed" && !result.veryShort) {
            yield* relistNow
            if (relist) break
            yield* Effect.sleep(options.rewatchDelay)
            continue
          }
          failures++
          // A server that closes every watch at once would otherwise be asked again ten times a second.
          if (result.outcome._tag === "Closed") yield* Effect.logWarning("pod watch closed at once with no events; backing off")
          else yield* Effect.logWarning("pod watch failed; re-watching").pipe(Effect.annotateLogs({ error: result.outcome.error }))
          const delay = yield* KeyedQueue.backoffDelay(options.backoff, failures)
          yield* Effect.sleep(delay)
          yield* relistNow
          if (relist) break
        }
      }
    })

    yield* Effect.forkScoped(informer)

    // PC-01 resync: re-examine every known Pod; also the status repair check.
    yield* Effect.gen(function*() {
      const pods = [...(yield* Ref.get(cache)).values()]
      yield* Effect.forEach(pods, (pod) => podQueue.enqueue(podKeyOfPod(pod), "resync").pipe(Effect.andThen(repairStatus(pod))), {
        discard: true
      })
    }).pipe(
      Effect.delay(options.resyncInterval),
      Effect.forever,
      Effect.forkScoped
    )

    const started = yield* Clock.currentTimeMillis
    yield* Effect.logDebug("pod controller started").pipe(Effect.annotateLogs({ node: nodeName, at: started }))

    return {
      synced: Ref.get(synced),
      cachedPods: Ref.get(cache).pipe(Effect.map((m) => [...m.values()])),
      drain: (timeout: Duration.Duration) =>
        Effect.gen(function*() {
          const startedAt = yield* Clock.currentTimeMillis
          yield* podQueue.drain(timeout)
          // Statuses of creates that just finished still get written, within what is left of the
          // same bound (one bound for the whole drain: the daemon's shutdown budget counts on it).
          const left = Duration.toMillis(timeout) - ((yield* Clock.currentTimeMillis) - startedAt)
          yield* statusQueue.drain(Duration.millis(Math.max(0, left)))
        }),
      retainedKeys: Effect.gen(function*() {
        const keys = new Set<PodKey>([
          ...(yield* Ref.get(lastPushed)).keys(),
          ...(yield* Ref.get(handed)).keys(),
          ...(yield* Ref.get(pendingPush)).keys(),
          ...(yield* Ref.get(createFailed))
        ])
        return keys.size + (yield* podQueue.size) + (yield* statusQueue.size)
      })
    }
  })
