/**
 * The status writer: the provider's status pushes written to pods/status.
 *
 * - Coalesced per key: the newest push wins; one write in flight per key (a keyed queue).
 * - Each write is built on the Pod the informer holds (its resourceVersion, metadata and the QoS
 *   class the server keeps) and skipped when the server would store exactly what it has: an
 *   unchanged status is never written again.
 * - Never for another generation of the Pod (UID), a terminal Pod, or a Pod that is gone; a 404
 *   ends the write. On 409 the Pod is re-read into the informer and the write retried on the
 *   shared retry schedule, rebuilt from the fresh Pod.
 * - While the apiserver's version of the Pod cannot be decoded (INF-1), an ending status (the
 *   VM gone: Failed) is written as a strategic merge patch carrying the UID (another Pod of the
 *   name refuses it), which needs no read and sets only the node agent's conditions; any other
 *   write waits, on the retry schedule, for a readable version.
 * - Status repair: when a Pod arrives (an event or the resync) whose stored status differs from
 *   what was last pushed, someone else changed it: the last push is written again. Another
 *   writer's conditions (types neither the push nor a node agent sets) are no difference: every
 *   write keeps them (ST-12). Except through Ready: on a Pod with readiness gates the body's Ready
 *   follows the gates' conditions (ST-14), so a gate turning True is a difference, written once.
 * - The three-way merge of labels and annotations needs the Pod a push was made from: the last
 *   two Pods handed to the provider per key are kept, as their labels and annotations only.
 * - Of a push, only its slim facts are kept (`Pushed`: UID, resourceVersion, labels, annotations
 *   and the status as read from the wire), never the pushed Pod: the last push stays per key for
 *   the Pod's life.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Clock, type Duration, Effect, Metric, Option, type Scope } from "effect"
import { type PodKey, podKeyOfPod, splitPodKey } from "../../Schemas/Ids.ts"
import type { Pod } from "../../Schemas/Pod.ts"
import { KubeApi, type KubeError } from "../../Services/KubeApi.ts"
import * as Metrics from "../../Services/Metrics.ts"
import type * as Backoff from "./Backoff.ts"
import type { Informer } from "./Informer.ts"
import * as KeyedQueue from "./KeyedQueue.ts"
import {
  agentConditionsOf,
  hasForeignConditions,
  isTerminal,
  type Pushed,
  pushedBody,
  pushedOf,
  sameCanonical,
  statusWriteIsNoop,
  uidOf
} from "./PodFacts.ts"

/** What the merge needs of a Pod handed to the provider. */
interface Handed {
  readonly uid: string
  readonly resourceVersion: string | undefined
  readonly labels: Readonly<Record<string, string>> | undefined
  readonly annotations: Readonly<Record<string, string>> | undefined
}

const handedOf = (pod: Pod): Handed => ({
  uid: uidOf(pod),
  resourceVersion: pod.metadata?.resourceVersion,
  labels: pod.metadata?.labels,
  annotations: pod.metadata?.annotations
})

const asBase = (handed: Handed): Pod => ({
  metadata: {
    uid: handed.uid,
    ...(handed.resourceVersion === undefined ? {} : { resourceVersion: handed.resourceVersion }),
    ...(handed.labels === undefined ? {} : { labels: handed.labels }),
    ...(handed.annotations === undefined ? {} : { annotations: handed.annotations })
  }
})

/**
 * `push` as kept once `stored`, the Pod at the version its write got, is what the write stored:
 * that Pod's status stands for the push (the same status as the server keeps it), and so do its
 * labels and annotations where they equal the push's, so the key keeps no objects of its own
 * next to the informer's. Not a status holding another writer's conditions (ST-12): the push
 * would then seem to set them, and a later change of theirs would be repaired away.
 */
const keptAs = (push: Pushed, stored: Pod): Pushed => {
  const labels = stored.metadata?.labels
  const annotations = stored.metadata?.annotations
  const status = stored.status
  return {
    ...push,
    status: status === undefined || hasForeignConditions(push.status, status) ? push.status : status,
    labels: labels !== undefined && sameCanonical(labels, push.labels) ? labels : push.labels,
    annotations: annotations !== undefined && sameCanonical(annotations, push.annotations) ? annotations : push.annotations
  }
}

/** `Held`: the server's version of the Pod cannot be decoded (INF-1); nothing was sent. */
export type WriteResult = "Written" | "Skipped" | "Gone" | "Conflicted" | "Held"

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
   * clock's time (epoch millis), for a condition whose status the write changes (CRT-21).
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
  maxInFlight?: number
): Effect.Effect<StatusWriter, never, KubeApi | Scope.Scope> =>
  Effect.gen(function*() {
    const kube = yield* KubeApi
    /** The newest push per key not yet written. */
    const pending = new Map<PodKey, Pushed>()
    /** When the oldest push of `pending` arrived, per key: the status_write stage ends when it is written. */
    const pushedAt = new Map<PodKey, number>()
    /** The last push written or found already in place, per key (status repair). */
    const lastPushed = new Map<PodKey, Pushed>()
    /**
     * The resourceVersion the apiserver gave the write of `lastPushed`, per key: a Pod observed
     * at that version is exactly what that write stored, so the repair check has nothing to do
     * (the watch delivers every Pod's own status write back once).
     */
    const lastPushedVersion = new Map<PodKey, string>()
    /** The last two Pods handed to the provider per key, newest last. */
    const handedPods = new Map<PodKey, ReadonlyArray<Handed>>()

    const baseFor = (key: PodKey, push: Pushed): Pod | undefined => {
      const found = (handedPods.get(key) ?? []).find((pod) =>
        pod.uid === push.uid && pod.resourceVersion === push.resourceVersion
      )
      return found === undefined ? undefined : asBase(found)
    }

    /**
     * INF-1: the key's newest version cannot be read; `lastGood` is what the informer keeps. Only
     * an ending status (Failed, Succeeded) is written: a Pod whose VM is gone must not stay
     * Running and Ready until a readable version comes. It goes as a strategic merge patch
     * carrying the UID, which needs no read of the Pod and sets only the node agent's conditions
     * (another writer's, maybe newer than the last good Pod, stay as stored). A Pod recreated under
     * the name refuses it (422 on metadata.uid): the Pod written for is gone, as after a 404, and
     * nothing is written. Any other status waits, on the retry schedule, for a readable version.
     */
    const writeUnreadable = (
      key: PodKey,
      uid: string,
      lastGood: Pod,
      body: (current: Pod, now: number) => Pod | undefined
    ): Effect.Effect<WriteResult, KubeError> =>
      Effect.gen(function*() {
        const wanted = body(lastGood, yield* Clock.currentTimeMillis)
        if (wanted === undefined || !isTerminal(wanted)) return "Held" as const
        const status = wanted.status ?? {}
        const [namespace, name] = splitPodKey(key)
        const own = agentConditionsOf(status)
        return yield* kube.patchPodStatus(namespace, name, uid, own.status, own.removed).pipe(
          Effect.tap(() =>
            Effect.logInfo("ending status written as a patch: the pod's newest version cannot be decoded").pipe(
              Effect.annotateLogs({ phase: status.phase, reason: status.reason })
            )
          ),
          // The cache holds the Pod as the patch left it (its newest version still unreadable), so a
          // repeat of the ending (the lease watch pushes every tick, LEASE-7) finds it terminal and
          // is not sent (ST-11); and the key gets a run: seen terminal, the provider lets go of the
          // row of the VM that is gone (VER-7, LEASE-11), as after a PUT.
          Effect.andThen(informer.written(lastGood, { ...lastGood, status })),
          Effect.andThen(changed(key)),
          Effect.as<WriteResult>("Written"),
          Effect.catchTag("KubeNotFound", () => Effect.succeed<WriteResult>("Gone")),
          // the uid the patch carries is not the stored Pod's: another Pod holds the name now
          Effect.catchTag("KubeInvalid", (error) =>
            error.fields?.includes("metadata.uid") === true
              ? Effect.logInfo("ending status not written: the pod was replaced by another of the same name").pipe(
                Effect.annotateLogs({ uid }),
                Effect.as<WriteResult>("Gone")
              )
              : Effect.fail(error))
        )
      })

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
        // INF-1: the informer holds the last good Pod of a key whose newest version it cannot
        // read. A PUT built on it would meet a 409, and the re-read the same undecodable Pod.
        if (yield* informer.unreadable(key)) return yield* writeUnreadable(key, uid, current.value, body)
        const wanted = body(current.value, yield* Clock.currentTimeMillis)
        if (wanted === undefined) return "Skipped" as const
        return yield* kube.replacePodStatus(wanted).pipe(
          Effect.tap((written) => informer.written(current.value, written).pipe(Effect.andThen(Effect.sync(() => onWritten(written))))),
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
        const push = pending.get(key)
        if (push === undefined) return "Done" as const
        const forget = Effect.sync(() => {
          if (pending.get(key) !== push) return
          pending.delete(key)
          pushedAt.delete(key)
        })
        const current = yield* informer.get(key)
        // ST-04 and ST-11: not for a Pod we do not know, another generation, or a terminal Pod.
        if (Option.isNone(current) || uidOf(current.value) !== push.uid || isTerminal(current.value)) {
          yield* forget
          return "Done" as const
        }
        const base = baseFor(key, push)
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
        const since = pushedAt.get(key)
        if (result === "Written" && since !== undefined) {
          yield* Metrics.observeStage("status_write", ((yield* Clock.currentTimeMillis) - since) / 1000)
        }
        if (result === "Written" || result === "Skipped") {
          // Not for a Pod deleted meanwhile: its state was already forgotten.
          const still = yield* informer.get(key)
          if (Option.isSome(still) && uidOf(still.value) === push.uid) {
            // The informer holding the Pod at the write's version holds what the write stored
            // (its reply, or its watch event when that came first and so skipped the repair
            // below): kept as in `repair`.
            const stored = still.value
            lastPushed.set(key, version !== undefined && stored.metadata?.resourceVersion === version ? keptAs(push, stored) : push)
            if (version === undefined) lastPushedVersion.delete(key)
            else lastPushedVersion.set(key, version)
          }
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
        const queued = pending.get(key)
        // The newest push wins, but one for an older Pod of the same name (which could never
        // be written) must not displace a queued push for the Pod the apiserver has now.
        if (queued !== undefined && queued.uid === currentUid && pushed.value.uid !== currentUid) return
        pending.set(key, pushed.value)
        if (!pushedAt.has(key)) pushedAt.set(key, yield* Clock.currentTimeMillis)
        yield* queue.enqueue(key, "change")
      })

    const repair = (pod: Pod) =>
      Effect.gen(function*() {
        const key = podKeyOfPod(pod)
        const pushed = lastPushed.get(key)
        if (pushed === undefined || pushed.uid !== uidOf(pod) || isTerminal(pod)) return
        const version = pod.metadata?.resourceVersion
        if (version !== undefined && lastPushedVersion.get(key) === version) {
          // Exactly what that write stored, and the Pod the informer now holds (`keptAs`).
          if (pod.status !== undefined && pod.status !== pushed.status) lastPushed.set(key, keptAs(pushed, pod))
          return
        }
        // the clock's time lands only in a body that differs anyway (`withTransitionTimes`)
        const now = yield* Clock.currentTimeMillis
        if (statusWriteIsNoop(pod, pushedBody(pushed, pod, baseFor(key, pushed), now))) return
        if (!pending.has(key)) pending.set(key, pushed)
        yield* queue.enqueue(key, "resync")
      })

    return {
      push,
      repair,
      handed: (key, pod) =>
        Effect.sync(() => {
          const previous = handedPods.get(key) ?? []
          handedPods.set(key, [...previous.slice(-1), handedOf(pod)])
        }),
      write,
      forget: (key) =>
        Effect.suspend(() => {
          lastPushed.delete(key)
          lastPushedVersion.delete(key)
          handedPods.delete(key)
          // A pending write finds the Pod gone and ends; wake it if it waits for a retry.
          return pending.has(key) ? queue.enqueue(key, "change") : Effect.void
        }),
      idle: queue.idle,
      inFlight: queue.inFlight,
      drain: queue.drain,
      lastPush: (key) => Effect.sync(() => Option.fromNullishOr(lastPushed.get(key))),
      retainedKeys: Effect.sync(() =>
        new Set([...pending.keys(), ...lastPushed.keys(), ...lastPushedVersion.keys(), ...handedPods.keys()])
      ),
      queued: queue.size
    }
  })
