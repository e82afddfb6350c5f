/**
 * The status writer: the provider's status pushes written to pods/status, coalesced per key (the
 * newest push wins, one write in flight per key). Each write is built on the Pod the informer holds
 * and skipped when the server would store what it has (ST-13 — an unchanged status is not
 * written); never for another UID, a terminal Pod or a Pod that is gone. Another writer's
 * conditions survive every write (ST-12 — other writers' Pod conditions survive status writes), and
 * a stored status that differs from the last push is written again (the status repair). The
 * per-key state is one `StatusBook`; an unreadable Pod's ending patch is `StatusPatch.ts`.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Clock, type Duration, Effect, Metric, Option, type Scope } from "effect"
import { type PodKey, podKeyOfPod, splitPodKey } from "../../Schemas/Ids.ts"
import type { Pod } from "../../Schemas/Pod/Schema.ts"
import { KubeApi, type KubeError } from "../../Services/KubeApi.ts"
import * as Metrics from "../../Services/Metrics.ts"
import type * as Backoff from "./Backoff.ts"
import type { Informer } from "./Informer.ts"
import * as KeyedQueue from "./KeyedQueue.ts"
import { isTerminal, uidOf } from "./PodFacts.ts"
import { type Pushed, pushedBody, pushedOf, statusWriteIsNoop } from "./StatusBody.ts"
import { StatusBook } from "./StatusBook.ts"
import { writeUnreadable, type WriteResult } from "./StatusPatch.ts"

export type { WriteResult } from "./StatusPatch.ts"

export interface StatusWriter {
  /** A provider push: the newest per key is written. */
  readonly push: (pod: V1Pod) => Effect.Effect<void>
  /** A Pod as the apiserver has it now: repair it if it lost what was last pushed. */
  readonly repair: (pod: Pod) => Effect.Effect<void>
  /** The Pod handed to createPod/updatePod (a later push is a copy of it). */
  readonly handed: (key: PodKey, pod: Pod) => Effect.Effect<void>
  /**
   * One write built from the current Pod by `body` (undefined: nothing to write), with the
   * 404/409/UID rules; for the controller's own statuses (a create failure). `now` is the
   * clock's time (epoch millis), for a condition whose status the write changes (CRT-21 — the
   * Running status).
   */
  readonly write: (
    key: PodKey,
    uid: string,
    body: (current: Pod, now: number) => Pod | undefined
  ) => Effect.Effect<WriteResult, KubeError>
  /** The Pod is gone: drop all state for it; a write waiting for a retry ends now. */
  readonly forget: (key: PodKey) => Effect.Effect<void>
  /** Waits until no write is in flight (one waiting out a retry holds none). */
  readonly idle: Effect.Effect<void>
  /** How many writes are in flight now. */
  readonly inFlight: Effect.Effect<number>
  readonly drain: (timeout: Duration.Duration) => Effect.Effect<void>
  /** What is kept of the last push written for `key` (the status repair's reference). */
  readonly lastPush: (key: PodKey) => Effect.Effect<Option.Option<Pushed>>
  /** Keys holding state (pending and last pushes, handed Pods, the queue): a leak check. */
  readonly retainedKeys: Effect.Effect<ReadonlySet<PodKey>>
  readonly queued: Effect.Effect<number>
}

export const make = (
  informer: Informer,
  retry: Backoff.RetrySchedule,
  /** The provider must look at this key again (a 409 re-read brought a change). */
  changed: (key: PodKey) => Effect.Effect<void>,
  /** Writes in flight at once (unbounded when absent). */
  maxInFlight?: number,
  /** The apiserver acknowledged a PUT of the key's status, which stored `written` (MON-5 — one observation per Pod start). */
  acknowledged: (key: PodKey, written: Pod) => Effect.Effect<void> = () => Effect.void
): Effect.Effect<StatusWriter, never, KubeApi | Scope.Scope> =>
  Effect.gen(function*() {
    const kube = yield* KubeApi
    // The per-key state, touched only through its synchronous methods (`StatusBook.ts`).
    const book = new StatusBook()
    const unreadable = writeUnreadable(informer, changed)

    /**
     * PUT pods/status of the body built from the informer's Pod. A 409 re-reads the Pod into the
     * informer and reports Conflicted (the queue retries on the schedule with the fresh Pod).
     */
    const write = (
      key: PodKey,
      uid: string,
      body: (current: Pod, now: number) => Pod | undefined,
      onWritten: (written: Pod) => void = () => {}
    ) =>
      Effect.gen(function*() {
        const current = yield* informer.get(key)
        if (Option.isNone(current) || uidOf(current.value) !== uid) return "Gone" as const
        // INF-1 — a Pod the daemon cannot decode is left out: the informer holds the last good Pod
        // of a key whose newest version it cannot read. A PUT built on it would meet a 409, and the
        // re-read the same undecodable Pod.
        if (yield* informer.unreadable(key)) return yield* unreadable(key, uid, current.value, body).pipe(Effect.provideService(KubeApi, kube))
        const wanted = body(current.value, yield* Clock.currentTimeMillis)
        if (wanted === undefined) return "Skipped" as const
        return yield* kube.replacePodStatus(wanted).pipe(
          Effect.tap((written) =>
            informer.written(current.value, written).pipe(
              Effect.andThen(Effect.sync(() => onWritten(written))),
              Effect.andThen(acknowledged(key, written))
            )
          ),
          Effect.as<WriteResult>("Written"),
          Effect.catchTag("KubeConflict", () =>
            Metric.update(Metrics.statusWriteConflicts, 1).pipe(
              Effect.andThen(kube.getPod(...splitPodKey(key))),
              Effect.flatMap((fresh) =>
                uidOf(fresh) === uid
                  ? informer.observe(fresh).pipe(Effect.flatMap((change) => (change ? changed(key) : Effect.void)))
                  : Effect.void
              ),
              Effect.as<WriteResult>("Conflicted"),
              Effect.catchTag("KubeNotFound", () => Effect.succeed<WriteResult>("Gone"))
            )),
          // The Pod is gone from the apiserver (a delete, or a server that went backwards): a
          // status for it can never be written; the watch or the next list removes it.
          Effect.catchTag("KubeNotFound", () => Effect.succeed<WriteResult>("Gone"))
        )
      })

    // Made once, not per write: `Effect.withSpan` captures a stack trace each time it is called.
    const writeStatusSpan = Effect.withSpan("PodController.writeStatus", (key: PodKey) => ({ attributes: { pod: key } }))

    const writePush = (key: PodKey): Effect.Effect<KeyedQueue.RunOutcome> =>
      writeStatusSpan(Effect.gen(function*() {
        const push = book.pendingOf(key)
        if (push === undefined) return "Done" as const
        const forget = Effect.sync(() => book.settle(key, push))
        const current = yield* informer.get(key)
        // ST-04 — when status is not written and ST-11 — status writes keep our annotations: not
        // for a Pod we do not know, another generation, or a terminal Pod.
        if (Option.isNone(current) || uidOf(current.value) !== push.uid || isTerminal(current.value)) {
          yield* forget
          return "Done" as const
        }
        const base = book.baseFor(key, push)
        let version: string | undefined
        const result = yield* write(key, push.uid, (pod, now) => {
          if (isTerminal(pod)) return undefined
          const body = pushedBody(push, pod, base, now)
          // ST-13: nothing the server would store differently, no write
          return statusWriteIsNoop(pod, body) ? undefined : body
        }, (written) => (version = written.metadata?.resourceVersion)).pipe(
          Effect.catchTag("KubeInvalid", (error) =>
            Effect.logError("status write refused by the apiserver").pipe(
              Effect.annotateLogs({ error }),
              Effect.as("Refused" as const)
            )),
          Effect.catch((error: KubeError) =>
            Effect.logWarning("status write failed; retrying").pipe(Effect.annotateLogs({ error }), Effect.as("Failed" as const))
          )
        )
        if (result === "Failed" || result === "Conflicted" || result === "Held") return "Retry" as const
        const since = book.pushedSince(key)
        if (result === "Written" && since !== undefined) {
          yield* Metrics.observeStage("status_write", ((yield* Clock.currentTimeMillis) - since) / 1000)
        }
        if (result === "Written" || result === "Skipped") {
          // Not for a Pod deleted meanwhile: its state was already forgotten.
          const still = yield* informer.get(key)
          if (Option.isSome(still) && uidOf(still.value) === push.uid) book.recordWritten(key, push, still.value, version)
        }
        yield* forget
        return "Done" as const
      }), key).pipe(Effect.annotateLogs({ pod: key }))

    const queue = yield* KeyedQueue.make<PodKey>(writePush, { retry, maxInFlight, name: "status_write" })

    const push = (pod: V1Pod) =>
      Effect.gen(function*() {
        const key = podKeyOfPod(pod)
        const pushed = pushedOf(pod)
        if (Option.isNone(pushed)) {
          return yield* Effect.logWarning("status push without a readable status; nothing to write").pipe(
            Effect.annotateLogs({ pod: key })
          )
        }
        const current = yield* informer.get(key)
        const currentUid = Option.isSome(current) ? uidOf(current.value) : undefined
        const now = yield* Clock.currentTimeMillis
        if (book.queuePush(key, pushed.value, currentUid, now)) yield* queue.enqueue(key, "change")
      })

    const repair = (pod: Pod) =>
      Effect.gen(function*() {
        const key = podKeyOfPod(pod)
        const pushed = book.lastPush(key)
        if (pushed === undefined || pushed.uid !== uidOf(pod) || isTerminal(pod)) return
        // Exactly what that write stored, and the Pod the informer now holds.
        if (book.storedByLastWrite(key, pushed, pod)) return
        // the clock's time lands only in a body that differs anyway (`withTransitionTimes`)
        const now = yield* Clock.currentTimeMillis
        if (statusWriteIsNoop(pod, pushedBody(pushed, pod, book.baseFor(key, pushed), now))) return
        if (book.queueRepair(key, pushed)) yield* queue.enqueue(key, "resync")
      })

    return {
      push,
      repair,
      handed: (key, pod) => Effect.sync(() => book.handed(key, pod)),
      write,
      forget: (key) =>
        Effect.suspend(() => {
          book.forget(key)
          // A pending write finds the Pod gone and ends; wake it if it waits for a retry.
          return book.hasPending(key) ? queue.enqueue(key, "change") : Effect.void
        }),
      idle: queue.idle,
      inFlight: queue.inFlight,
      drain: queue.drain,
      lastPush: (key) => Effect.sync(() => Option.fromNullishOr(book.lastPush(key))),
      retainedKeys: Effect.sync(() => book.retainedKeys()),
      queued: queue.size
    }
  })
