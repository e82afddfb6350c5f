/**
 * The reconciler: for one key, the decision is a pure function of the Pod the informer holds and
 * what the provider tracks (`decide`), and a small executor carries it out (`make`). Gone: the
 * provider lets go, and still settles a claim in doubt (DEL-3 — a claim in doubt is settled even
 * when its Pod never comes back). Never readable: left alone (INF-1 — a Pod the daemon cannot
 * decode is left out). Being deleted: the provider decides, then the final grace-0 delete.
 * Terminal: left alone but for its Lost row. Tracked, same UID, last create not failed: updatePod
 * if it changed. Otherwise createPod.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Duration, Effect, Metric, Option } from "effect"
import { type PodKey, splitPodKey } from "../../Schemas/Ids.ts"
import type { Pod } from "../../Schemas/Pod/Schema.ts"
import { type CreatePodError, isRetryable } from "../../Services/ProviderErrors.ts"
import { EventRecorder, involvedPod } from "../../Services/EventRecorder.ts"
import { KubeApi, type KubeError } from "../../Services/KubeApi.ts"
import { type DeletePodError, PodLifecycle } from "../../Services/PodLifecycle.ts"
import * as Metrics from "../../Services/Metrics.ts"
import type { Informer } from "./Informer.ts"
import type { RunOutcome } from "./KeyedQueue.ts"
import { withoutReadiness } from "./Conditions.ts"
import { isDeleting, isRunning, isTerminal, podsEqual, uidOf } from "./PodFacts.ts"
import type { StatusWriter } from "./StatusWriter.ts"
import { LeaseExpiredReason, lostVmEvent } from "../Provider/Status.ts"

export type Action =
  /**
   * Gone from the apiserver and not tracked: the controller's own state goes, and a claim of the
   * key in doubt is settled (DEL-3): after a lost claim reply nothing is tracked, yet a VM may live.
   */
  | { readonly _tag: "Forget" }
  /** Gone from the apiserver: the provider lets go of the Pod it tracks. */
  | { readonly _tag: "Release"; readonly held: V1Pod }
  /** Being deleted: the provider decides (and settles anything in doubt), then the object is removed. */
  | { readonly _tag: "DeleteThenRemove"; readonly pod: Pod }
  | { readonly _tag: "LeaveAlone" }
  /**
   * Terminal and not being deleted: no create, update or status write (SY-07 — terminal Pods are
   * left alone); the provider only drops the row it kept so that this Pod would never be claimed
   * for again (VER-7 — a lost sandbox's row outlives restarts until its Pod is settled).
   */
  | { readonly _tag: "Terminal"; readonly pod: Pod }
  | { readonly _tag: "Update"; readonly pod: Pod }
  | { readonly _tag: "Create"; readonly pod: Pod }

export const decide = (
  cached: Option.Option<Pod>,
  held: Option.Option<V1Pod>,
  lastCreateFailed: boolean,
  /** The apiserver has the key's Pod, in a version the informer cannot decode (INF-1). */
  unreadable = false
): Action => {
  if (Option.isNone(cached)) {
    if (unreadable) return { _tag: "LeaveAlone" }
    return Option.isNone(held) ? { _tag: "Forget" } : { _tag: "Release", held: held.value }
  }
  const pod = cached.value
  // Even a Pod that never ran goes through the provider: its key may hold a claim whose outcome
  // is unknown (a crash or a lost reply before Running), which must be settled and released
  // before the object goes. The provider's delete is idempotent and cheap when it holds nothing.
  if (isDeleting(pod)) return { _tag: "DeleteThenRemove", pod }
  if (isTerminal(pod)) return { _tag: "Terminal", pod }
  if (Option.isSome(held) && uidOf(held.value) === uidOf(pod) && !lastCreateFailed) {
    return podsEqual(held.value, pod) ? { _tag: "LeaveAlone" } : { _tag: "Update", pod }
  }
  // INF-1: the newest version may have changed in ways the last good one cannot show (a new
  // deletion, another template): no VM is claimed from it until a readable version comes.
  if (unreadable) return { _tag: "LeaveAlone" }
  return { _tag: "Create", pod }
}

/** A NoWarmCapacity from sandboxd is an event reason of its own. */
export const isNoWarmCapacity = (failure: CreatePodError): boolean =>
  failure._tag === "ClaimFailed" && failure.cause._tag === "NoWarmCapacity"

/**
 * sandboxd refused the node token, on the claim itself or on the listing a check needed: only a
 * new token helps, so the key is retried on the slow schedule.
 */
export const isRefusedToken = (failure: CreatePodError): boolean =>
  (failure._tag === "ClaimFailed" && failure.cause._tag === "SandboxdUnauthorized") ||
  (failure._tag === "ClaimUnverifiable" && failure.cause?.reason._tag === "SandboxdUnauthorized")

/**
 * The Pod status reason of a create failure: the doubt and the loss have their own (a loss whose
 * lease had run out is lease-expired: LEASE-10 — a lease that ran out while the daemon was down
 * ends the Pod as lease-expired).
 */
export const failureReason = (failure: CreatePodError): string =>
  failure._tag === "SandboxLost" ? failure.podReason : failure._tag === "ClaimInDoubt" ? failure._tag : "ProviderFailed"

/**
 * The Warning Event of a create failure: its reason, and a message that starts with the error's
 * tag. A lost VM's is the Event every other path records for it (LeaseExpired or SandboxLost, the
 * Pod's own reason, LEASE-10), never CreateFailed or a message naming another reason.
 */
export const failureEvent = (failure: CreatePodError): { readonly reason: string; readonly message: string } => {
  if (failure._tag === "SandboxLost") return lostVmEvent(failure.claimId, failure.podReason === LeaseExpiredReason)
  const reason = isNoWarmCapacity(failure) ? "NoWarmCapacity" : failure._tag === "ClaimInDoubt" ? "ClaimInDoubt" : "CreateFailed"
  return { reason, message: `${failure._tag}: ${failure.message}` }
}

export interface Reconciler {
  readonly reconcile: (key: PodKey) => Effect.Effect<RunOutcome>
  /** Keys whose last create failed (retried even while the provider tracks them). */
  readonly retainedKeys: Effect.Effect<ReadonlySet<PodKey>>
}

/**
 * The status a create failure leaves on the Pod, where it is visible (Pending, or Failed with
 * restartPolicy Never). A lost sandbox ends the Pod whatever its restart policy: it is never given
 * another. A claim in doubt ends no Pod (CU-05 — provider failure status): its VM may exist and is adopted once
 * the doubt is settled. Either way the Pod is not ready: a Ready=True the status held before is
 * turned False, or Services would keep sending traffic to a Pod with no sandbox.
 */
const providerFailedStatus = (failure: CreatePodError) => (current: Pod, time: number): Pod | undefined => {
  const phase = failure._tag === "SandboxLost" ||
      (current.spec?.restartPolicy === "Never" && failure._tag !== "ClaimInDoubt")
    ? "Failed"
    : "Pending"
  const reason = failureReason(failure)
  const now = current.status
  // Terminal is final; the same failure already shown needs no write (a resync retry).
  if (isTerminal(current)) return undefined
  const status = withoutReadiness({ ...now, phase, reason, message: failure.message }, reason, time)
  if (now?.phase === phase && now.reason === reason && now.message === failure.message && status.conditions === now.conditions) {
    return undefined
  }
  return { ...current, status }
}

/** The final delete; 404 and 409 (the UID precondition) mean done. */
const finalDelete = (kube: Pick<KubeApi["Service"], "deletePod">, key: PodKey, uid: string) =>
  kube.deletePod(...splitPodKey(key), uid).pipe(
    Effect.tap(() => Effect.logInfo("pod removed from the apiserver")),
    Effect.catchTag("KubeNotFound", () => Effect.void),
    Effect.catchTag("KubeConflict", () =>
      Effect.logWarning("final delete skipped: the pod was recreated under the same name").pipe(
        Effect.annotateLogs({ uid })
      )),
    Effect.as<RunOutcome>("Done"),
    Effect.catch((error: KubeError) =>
      Effect.logWarning("final pod delete failed; retrying").pipe(
        Effect.annotateLogs({ error }),
        Effect.as<RunOutcome>("Retry")
      )
    )
  )

const releaseFailed = (what: string) => (failure: DeletePodError) =>
  Effect.logWarning(what).pipe(Effect.annotateLogs({ error: failure }), Effect.as<RunOutcome>("Retry"))

export const make = (
  informer: Informer,
  status: StatusWriter
): Effect.Effect<Reconciler, never, KubeApi | PodLifecycle | EventRecorder> =>
  Effect.gen(function*() {
    const kube = yield* KubeApi
    const provider = yield* PodLifecycle
    const events = yield* EventRecorder
    /**
     * Keys whose last createPod failed. The provider may still track such a Pod (a claim whose
     * commit and undo both failed stays in memory), and an unchanged Pod it tracks is otherwise
     * "done": a failed create must be retried until it succeeds. The reconciler's only state; the
     * rule: a key's entry is read and written only by that key's run, and the pod queue runs one
     * at a time per key (Q-04 — one worker per key), so no two of them interleave; `retainedKeys`
     * reads a copy.
     */
    const createFailed = new Set<PodKey>()

    const writeProviderFailed = (key: PodKey, uid: string, failure: CreatePodError) =>
      status.write(key, uid, providerFailedStatus(failure)).pipe(
        Effect.catch((error: KubeError) =>
          Effect.logWarning("could not record the create failure on the pod").pipe(Effect.annotateLogs({ error }))
        ),
        Effect.asVoid
      )

    const onCreateFailure = (key: PodKey, pod: Pod, failure: CreatePodError) =>
      Effect.gen(function*() {
        yield* Effect.logWarning("create failed").pipe(Effect.annotateLogs({ error: failure, retryable: isRetryable(failure) }))
        const event = failureEvent(failure)
        yield* events.record(involvedPod(pod), "Warning", event.reason, event.message)
        // For a Pod that has not started. A running one (adopted after a restart while sandboxd
        // cannot confirm its claim) keeps its status: Pending would be a phase going backwards,
        // and with restartPolicy Never a transient failure would end it for good.
        if (!isRunning(pod)) yield* writeProviderFailed(key, uidOf(pod), failure)
        if (!isRetryable(failure)) return "Park" as const
        return isRefusedToken(failure) ? "RetrySlow" as const : "Retry" as const
      })

    const create = (key: PodKey, pod: Pod) =>
      provider.createPod(pod).pipe(
        Effect.trackDuration(Metrics.claimDuration, (d) => Duration.toMillis(d) / 1000),
        Effect.tap((outcome) =>
          Metrics.count(Metrics.claims, { outcome: outcome._tag === "Claimed" ? "claimed" : "adopted" }).pipe(
            Effect.andThen(outcome._tag === "Adopted" ? Metric.update(Metrics.adoptions, 1) : Effect.void)
          )
        ),
        Effect.tapError((failure) =>
          Metrics.count(Metrics.claims, { outcome: failure._tag }).pipe(Effect.andThen(Effect.sync(() => createFailed.add(key))))
        ),
        Effect.tap(() => Effect.sync(() => createFailed.delete(key))),
        Effect.matchEffect({
          onFailure: (failure) => onCreateFailure(key, pod, failure),
          onSuccess: (outcome) =>
            events.record(
              involvedPod(pod),
              "Normal",
              outcome._tag,
              outcome._tag === "Claimed" ? `claimed sandbox ${outcome.claimId}` : `adopted sandbox ${outcome.claimId}`
            ).pipe(Effect.as<RunOutcome>("Done"))
        })
      )

    /** Gone from the apiserver and nothing held for it: nothing will repeat its events either. */
    const forgetEvents = (key: PodKey) => {
      const [namespace, name] = splitPodKey(key)
      return events.forget({ kind: "Pod", namespace, name })
    }

    const execute = (key: PodKey, action: Action): Effect.Effect<RunOutcome> => {
      switch (action._tag) {
        case "Forget":
          return status.forget(key).pipe(
            Effect.andThen(provider.settleGone(key)),
            Effect.andThen(forgetEvents(key)),
            Effect.as<RunOutcome>("Done"),
            // Retried on the key's backoff until settled: the settle window not yet passed, a
            // listing or a release that failed.
            Effect.catch(releaseFailed("a claim in doubt of a gone pod is not settled yet; retrying"))
          )
        case "Release":
          return status.forget(key).pipe(
            Effect.andThen(provider.deletePod(action.held)),
            Effect.andThen(forgetEvents(key)),
            Effect.as<RunOutcome>("Done"),
            Effect.catch(releaseFailed("delete in provider failed; retrying"))
          )
        case "DeleteThenRemove":
          return provider.deletePod(action.pod).pipe(
            Effect.matchEffect({
              onFailure: releaseFailed("delete in provider failed; the pod object stays"),
              onSuccess: () => finalDelete(kube, key, uidOf(action.pod))
            })
          )
        case "LeaveAlone":
          return Effect.succeed("Done")
        case "Terminal":
          return provider.settleTerminal(action.pod).pipe(Effect.as<RunOutcome>("Done"))
        case "Update":
          return status.handed(key, action.pod).pipe(Effect.andThen(provider.updatePod(action.pod)), Effect.as("Done"))
        case "Create":
          return status.handed(key, action.pod).pipe(Effect.andThen(create(key, action.pod)))
      }
    }

    /** One run for `key`; its span and its logs' `pod` annotation are the controller's (`PodController.ts`). */
    const reconcile = (key: PodKey): Effect.Effect<RunOutcome> =>
      Effect.gen(function*() {
        const cached = yield* informer.get(key)
        // Before the first complete list an empty cache says nothing of the apiserver: a key run
        // then (a Lost or lifted key published by the lease watch or a verification pass while the
        // first list is slow or failing) must not take its Pod for gone and drop its row or settle
        // its doubt. The first sync queues every key that needs a run, these included (SY-02 — a
        // Pod gone from the cache).
        if (Option.isNone(cached) && !(yield* informer.synced)) return yield* execute(key, { _tag: "LeaveAlone" })
        // Asked only of a key the cache lacks, or of a create: the common run reads nothing more.
        const unreadable = Option.isNone(cached) && (yield* informer.unreadable(key))
        if (Option.isNone(cached) && !unreadable) createFailed.delete(key)
        const held = yield* provider.getPod(key)
        const action = decide(cached, held, createFailed.has(key), unreadable)
        if (action._tag === "Create" && (yield* informer.unreadable(key))) {
          return yield* execute(key, decide(cached, held, createFailed.has(key), true))
        }
        return yield* execute(key, action)
      })

    return { reconcile, retainedKeys: Effect.sync(() => new Set(createFailed)) }
  })
