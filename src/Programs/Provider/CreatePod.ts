/**
 * CreatePod: the ordered procedure of CRT-3 — CreatePod's decision order, with the undo rule
 * (CRT-15 — undo when the commit fails), the stranded-claim rule (CRT-9 — stranded claims first)
 * and the expiry settlement (LEASE-5 — settling an expired claim before reuse). Nothing here
 * retries into sandboxd: every failure is a tagged error that says whether a retry can help. From
 * the claim to the Running push the work is uninterruptible: a claimed VM is always either
 * recorded durably and reported, or returned, or kept in memory as a tentative row.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Cause, DateTime, Effect, Exit, Option, Result } from "effect"
import type { ClaimRecord } from "../../Schemas/Claims.ts"
import { type PodKey, podKeyOfPod } from "../../Schemas/Ids.ts"
import {
  ClaimFailed,
  ClaimInDoubt,
  ClaimNotPersisted,
  IntentNotPersisted,
  InvalidTtl,
  MissingTemplate,
  RuntimeMismatch
} from "../../Services/ProviderErrors.ts"
import { markInDoubt } from "../ClaimDoubt.ts"
import { ClaimsStore, ClaimsWriteError } from "../../Services/ClaimsStore.ts"
import { ClaimTable } from "../../Services/ClaimTable.ts"
import type { CreatePodOutcome } from "../../Services/PodLifecycle.ts"
import { claimOutcomeOf, SandboxdClient, type SandboxdClaimError } from "../../Services/SandboxdClient.ts"
import {
  annotationValue,
  PodAnnotation,
  parseTtlSeconds,
  requestedRuntime,
  SERVED_RUNTIME
} from "../../Schemas/PodAnnotations.ts"
import { timeStage } from "../../Services/Metrics.ts"
import { detachedRelease } from "./DetachedRelease.ts"
import { pushRunning } from "./Push.ts"
import { clearStrandedClaim, refuseLost, resolveQuarantined, settleDoubt, settleExpiredClaim } from "./PreClaim.ts"
import { saveState } from "./SaveState.ts"

/** The pod key used everywhere: `namespace/name` (CRT-8 — the pod key). */
export { podKeyOfPod }

/**
 * The error as a Pod message shows it: an HTTP answer names its status (the body may say nothing).
 * sandboxd's only 5xx is a 500 (CRT-23 — what a failed claim says about its VM): any other came
 * from something in front of it, and says so.
 */
const describeClaimError = (cause: SandboxdClaimError): string => {
  if (cause._tag !== "SandboxdHttpError" || cause.status === 0) return `${cause._tag}: ${cause.message}`
  const detail = cause.message === "" ? "" : `: ${cause.message}`
  return cause.status > 500
    ? `${cause._tag}: sandboxd's address answered ${cause.status}, a status sandboxd never sends (a proxy in front of it)${detail}`
    : `${cause._tag}: sandboxd answered ${cause.status}${detail}`
}

/**
 * What a store write that did not land ended in: its own error, or one made for an interruption
 * (the store closing at shutdown interrupts queued writes) or a defect.
 */
const writeErrorOf = (path: string, cause: Cause.Cause<ClaimsWriteError>): ClaimsWriteError =>
  Option.getOrElse(Cause.findErrorOption(cause), () =>
    new ClaimsWriteError({
      path,
      operation: "commit",
      message: Cause.hasInterruptsOnly(cause)
        ? "the commit was interrupted before its write landed"
        : `the commit failed unexpectedly: ${Cause.pretty(cause)}`
    }))

/**
 * CRT-3 steps 8–11: intent, claim, record tentatively, commit, push. Uninterruptible as one piece so a
 * shutdown cannot leave a claimed VM neither recorded nor returned.
 */
const claimAndCommit = (key: PodKey, pod: V1Pod, template: string, ttlSeconds: number) =>
  Effect.gen(function*() {
    const table = yield* ClaimTable
    const sandboxd = yield* SandboxdClient
    const store = yield* ClaimsStore
    const startedAt = yield* DateTime.now
    // The intent is durable before the claim leaves: after a crash at any later point, the file
    // still names this key as one whose claim may have made a VM that no row records.
    const intended = yield* Effect.exit(store.intend({ key, podUID: pod.metadata?.uid ?? "", sentAt: startedAt }).pipe(timeStage("intent")))
    if (Exit.isFailure(intended)) {
      yield* store.settleIntent(key)
      const writeError = writeErrorOf(store.path, intended.cause)
      return yield* new IntentNotPersisted({
        pod: key,
        cause: writeError,
        message: `pod ${key}: the claim's intent could not be persisted (${writeError.message}); nothing was claimed`
      })
    }
    const attempt = yield* Effect.result(sandboxd.claim({
      template,
      net: Option.getOrElse(annotationValue(pod.metadata?.annotations, PodAnnotation.net), () => ""),
      size: Option.getOrElse(annotationValue(pod.metadata?.annotations, PodAnnotation.size), () => ""),
      ttlSeconds,
      claimRef: key
    }).pipe(timeStage("claim")))
    const claimOutcome = claimOutcomeOf(attempt)
    if (claimOutcome._tag === "Failed") {
      // sandboxd said no, or the request never left: no VM, nothing left for the intent to guard.
      yield* store.settleIntent(key)
      const cause = claimOutcome.error
      return yield* new ClaimFailed({
        pod: key,
        template,
        cause,
        message: `claim for pod ${key} (template ${template}) failed: ${describeClaimError(cause)}`
      })
    }
    if (claimOutcome._tag === "Unknown") {
      // sandboxd may have made the VM: never claim over it before a listing says what became of it.
      // The intent stays on disk until then, so a restart keeps the doubt.
      const cause = claimOutcome.error
      // Abandoned now, which may be well after startedAt + timeout (the wait for a permit came first).
      yield* markInDoubt({ key, podUid: pod.metadata?.uid ?? "", startedAt, abandonedAt: yield* DateTime.now })
      yield* Effect.logWarning("claim outcome unknown; the pod key is in doubt until sandboxd's listing settles it").pipe(
        Effect.annotateLogs({ pod: key, error: cause })
      )
      return yield* new ClaimInDoubt({
        pod: key,
        strays: [],
        cause,
        message:
          `claim for pod ${key} (template ${template}) may have made a sandbox (${describeClaimError(cause)}); no new claim until sandboxd's listing shows what became of it`
      })
    }
    const claimed = claimOutcome.result
    const record: ClaimRecord = {
      id: claimed.id,
      token: claimed.token,
      address: claimed.ownerAddr,
      podUID: pod.metadata?.uid ?? "",
      claimedAt: Option.some(yield* DateTime.now),
      deadline: claimed.deadline
    }
    yield* table.recordTentative(key, record, pod)
    // Any end but success is a commit that did not land: one cut short (the store closing at
    // shutdown interrupts queued commits) or broken by a defect is undone like a failed write,
    // or the VM would be returned by no one and its token would go with the process.
    const committed = yield* Effect.exit(store.commit(Option.some(key)).pipe(timeStage("commit")))
    if (Exit.isFailure(committed)) {
      const writeError = writeErrorOf(store.path, committed.cause)
      const released = yield* Effect.result(detachedRelease(record.id, record.token))
      if (Result.isSuccess(released)) {
        yield* table.withdraw(key, record.id)
        yield* store.settleIntent(key)
        yield* Effect.logWarning("returned sandbox after its claim could not be persisted").pipe(
          Effect.annotateLogs({ pod: key, claim: record.id, error: writeError })
        )
        return yield* new ClaimNotPersisted({
          pod: key,
          claimId: record.id,
          cause: writeError,
          message: `claim ${record.id} for pod ${key} could not be persisted (${writeError.message}); the sandbox was returned`
        })
      }
      const releaseError = released.failure
      yield* Effect.logError("could not return a sandbox whose claim failed to persist; keeping the credential in memory")
        .pipe(Effect.annotateLogs({ pod: key, claim: record.id, error: writeError, releaseError }))
      return yield* new ClaimNotPersisted({
        pod: key,
        claimId: record.id,
        cause: writeError,
        releaseError,
        message:
          `claim ${record.id} for pod ${key} could not be persisted (${writeError.message}), and returning it failed too (${releaseError._tag}: ${releaseError.message})`
      })
    }
    yield* Effect.logInfo("claimed hot sandbox").pipe(
      Effect.annotateLogs({ pod: key, claim: record.id, addr: record.address })
    )
    yield* pushRunning(pod, record)
    const outcome: CreatePodOutcome = { _tag: "Claimed", claimId: record.id }
    return outcome
  }).pipe(Effect.uninterruptible)

export const createPod = Effect.fn("Provider.createPod")(function*(pod: V1Pod) {
  const table = yield* ClaimTable
  const key = podKeyOfPod(pod)

  // 1. runtime: absent or empty means ours; anything else is someone else's Pod.
  const runtime = requestedRuntime(pod.metadata?.annotations)
  if (runtime !== SERVED_RUNTIME) {
    return yield* new RuntimeMismatch({
      pod: key,
      requested: runtime,
      served: SERVED_RUNTIME,
      message: `pod ${key} asks for runtime ${JSON.stringify(runtime)}; this node serves ${JSON.stringify(SERVED_RUNTIME)}`
    })
  }
  // The row's record before steps 2-3, which may change it (a lifted row's back-filled deadline,
  // a refreshed one): an adoption writes when they or it changed something (step 4).
  const heldBefore = Option.map(yield* table.held(key), (row) => row.record)
  // 2. a claim loaded from disk is judged before it is adopted or replaced.
  yield* resolveQuarantined(key)
  // A Pod that lost its sandbox stays Failed: no silent replacement under the same UID (VER-7 — a
  // lost sandbox's row outlives restarts until its Pod is settled).
  // After step 2, whose pass may have just found the sandbox gone. Without a row before step 2
  // there is none to be Lost (a burst of new Pods skips the look).
  if (Option.isSome(heldBefore)) yield* refuseLost(key, pod)
  // 2b. a claim whose outcome is unknown is settled before the key claims again.
  yield* settleDoubt(key)
  // 3. a settled claim past its deadline: refreshed while it lives, dropped once confirmed gone.
  yield* settleExpiredClaim(key)
  // 4. adopt in place: the same VM for the replacement Pod (no template/TTL checks here), or the
  // same Pod re-attached to its own (every Pod whose row was loaded, on a restart).
  const adopted = yield* table.adopt(key, pod, yield* DateTime.now)
  if (Option.isSome(adopted)) {
    const { changed, previousPodUID, record } = adopted.value
    // PER-7 — log-only saves: the write carries what this create changed. A row it left as it was
    // needs none (on a restart, 10,000 re-attached Pods made as many writes of an unchanged table):
    // its record is the one written when it was made, adopted or loaded (the startup write). A
    // deadline a later verification pass back-filled waits for the next write; it is a copy of
    // sandboxd's, which a restart back-fills again.
    const unchanged = !changed && Option.isSome(heldBefore) && heldBefore.value === record
    if (!unchanged) yield* saveState
    if (previousPodUID === (pod.metadata?.uid ?? "")) {
      yield* Effect.logDebug("re-attached pod to the sandbox it holds (same pod UID)").pipe(
        Effect.annotateLogs({ pod: key, claim: record.id })
      )
    } else {
      yield* Effect.logInfo("adopted preserved sandbox for replacement pod").pipe(
        Effect.annotateLogs({ pod: key, claim: record.id, previousPodUid: previousPodUID })
      )
    }
    yield* pushRunning(pod, record)
    const outcome: CreatePodOutcome = { _tag: "Adopted", claimId: record.id }
    return outcome
  }
  // Again: the lease watch may have found the VM gone while steps 2b-3 waited on sandboxd, and
  // the row it made Lost is not adoptable. Nothing turns a row Lost after this: none is left to.
  yield* refuseLost(key, pod)
  // 5. an earlier create's in-memory-only claim is returned before the key is reused.
  yield* clearStrandedClaim(key)
  // 6. TTL before template (SUB-9 — TTL and template only for fresh claims).
  const ttl = parseTtlSeconds(pod.metadata?.annotations)
  if (Result.isFailure(ttl)) {
    return yield* new InvalidTtl({
      pod: key,
      annotation: PodAnnotation.ttlSeconds,
      value: ttl.failure.value,
      message: `pod ${key}: ${ttl.failure.message}; want a non-negative integer number of seconds`
    })
  }
  // 7. a fresh claim needs a template.
  const template = annotationValue(pod.metadata?.annotations, PodAnnotation.template)
  if (Option.isNone(template)) {
    return yield* new MissingTemplate({
      pod: key,
      annotation: PodAnnotation.template,
      message: `pod ${key} has no ${PodAnnotation.template} annotation; a fresh claim needs one`
    })
  }
  // 8–11. (parseTtlSeconds already caps a huge TTL at the largest exact JSON integer.)
  return yield* claimAndCommit(key, pod, template.value, ttl.success)
})
