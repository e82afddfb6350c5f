/**
 * Why a CreatePod did not produce a Running Pod (CRT-10 — CreatePod's errors).
 *
 * `isRetryable` says whether retrying the same Pod can help (sandboxd was unavailable, had no
 * warm capacity, or could not vouch for a held claim) or only a change to the Pod can (wrong
 * runtime, missing template, bad TTL, a lost sandbox). The pod controller reads it to choose
 * between backoff and waiting for a change; the provider itself never retries into sandboxd.
 */
import { Schema } from "effect"
import type { DeleteVerdict } from "../Schemas/DeleteVerdict.ts"
import { ClaimsWriteError } from "./ClaimsStore.ts"
import { SandboxdClaimError, SandboxdListError, SandboxdTransportError } from "./SandboxdClient.ts"

// ---- only a Pod change helps ---------------------------------------------------------------

/**
 * The runtime annotation names a runtime this daemon does not serve (CRT-3 — CreatePod's decision
 * order, step 1).
 */
export class RuntimeMismatch extends Schema.TaggedError<RuntimeMismatch>()("RuntimeMismatch", {
  pod: Schema.String,
  requested: Schema.String,
  served: Schema.String,
  message: Schema.String
}) {}

/** A fresh claim needs the template annotation (CRT-3 step 7). */
export class MissingTemplate extends Schema.TaggedError<MissingTemplate>()("MissingTemplate", {
  pod: Schema.String,
  annotation: Schema.String,
  message: Schema.String
}) {}

/** The TTL annotation is not a non-negative base-10 integer (CRT-6 — TTL annotation). */
export class InvalidTtl extends Schema.TaggedError<InvalidTtl>()("InvalidTtl", {
  pod: Schema.String,
  annotation: Schema.String,
  value: Schema.String,
  message: Schema.String
}) {}

// ---- a retry can help ----------------------------------------------------------------------

/** sandboxd refused or failed the claim; `cause` keeps NoWarmCapacity reachable (CRT-10). */
export class ClaimFailed extends Schema.TaggedError<ClaimFailed>()("ClaimFailed", {
  pod: Schema.String,
  template: Schema.String,
  cause: SandboxdClaimError,
  message: Schema.String
}) {}

/**
 * The fresh claim could not be written durably (CRT-15 — undo when the commit fails). Without
 * `releaseError` the sandbox was returned and the row withdrawn. With it, the release failed too:
 * the credential stays in memory as a tentative row, and the next CreatePod for the key returns it
 * first (CRT-9 — stranded claims first).
 */
export class ClaimNotPersisted extends Schema.TaggedError<ClaimNotPersisted>()("ClaimNotPersisted", {
  pod: Schema.String,
  claimId: Schema.String,
  cause: ClaimsWriteError,
  releaseError: Schema.optionalKey(SandboxdTransportError),
  message: Schema.String
}) {}

/** The claim's intent could not be written durably, so the claim was not sent (nothing to undo). */
export class IntentNotPersisted extends Schema.TaggedError<IntentNotPersisted>()("IntentNotPersisted", {
  pod: Schema.String,
  cause: ClaimsWriteError,
  message: Schema.String
}) {}

/** A claim loaded from disk could not be checked against sandboxd; nothing is claimed over it (CRT-3 step 2). */
export class ClaimUnverifiable extends Schema.TaggedError<ClaimUnverifiable>()("ClaimUnverifiable", {
  pod: Schema.String,
  claimId: Schema.String,
  /** Absent when sandboxd answered but has not confirmed the claim either way yet. */
  cause: Schema.optionalKey(SandboxdListError),
  message: Schema.String
}) {}

/**
 * The held claim is past its cached deadline and sandboxd cannot say whether it still lives
 * (LEASE-5 — settling an expired claim before reuse).
 */
export class ExpiredClaimUnlistable extends Schema.TaggedError<ExpiredClaimUnlistable>()("ExpiredClaimUnlistable", {
  pod: Schema.String,
  claimId: Schema.String,
  deadline: Schema.String,
  /** Absent when sandboxd's listing left the claim out but its absence is not confirmed yet. */
  cause: Schema.optionalKey(SandboxdListError),
  message: Schema.String
}) {}

/** An earlier create's stranded sandbox could not be returned before reusing the key (CRT-9). */
export class StrandedClaimNotReturned extends Schema.TaggedError<StrandedClaimNotReturned>()(
  "StrandedClaimNotReturned",
  {
    pod: Schema.String,
    claimId: Schema.String,
    cause: SandboxdTransportError,
    message: Schema.String
  }
) {}

/**
 * A claim for this key may have made a VM we hold no token for, and sandboxd has not yet shown
 * what became of it: no new claim is made until it does (the Pod's reason is `ClaimInDoubt`).
 * `strays` are sandboxes of the attempt that could be neither adopted nor released.
 */
export class ClaimInDoubt extends Schema.TaggedError<ClaimInDoubt>()("ClaimInDoubt", {
  pod: Schema.String,
  strays: Schema.Array(Schema.String),
  cause: Schema.optionalKey(Schema.Union([SandboxdClaimError, SandboxdListError, ClaimsWriteError])),
  message: Schema.String
}) {}

/**
 * This Pod generation's sandbox is confirmed gone: the Pod is Failed and is never claimed for
 * again under the same UID. `podReason` is the Pod's reason: SandboxLost, or SandboxLeaseExpired
 * when the row's lease had run out (LEASE-10 — a lease that ran out while the daemon was down ends
 * the Pod as lease-expired).
 */
export class SandboxLost extends Schema.TaggedError<SandboxLost>()("SandboxLost", {
  pod: Schema.String,
  claimId: Schema.String,
  podReason: Schema.Literals(["SandboxLost", "SandboxLeaseExpired"]),
  message: Schema.String
}) {}

/** Errors that only a change to the Pod can fix: wait for a change or the periodic resync. */
export type PodChangeRequired = RuntimeMismatch | MissingTemplate | InvalidTtl | SandboxLost
/** Errors that a later attempt at the same Pod can get past: back off and retry. */
export type RetryableCreateError =
  | ClaimFailed
  | ClaimNotPersisted
  | IntentNotPersisted
  | ClaimUnverifiable
  | ExpiredClaimUnlistable
  | StrandedClaimNotReturned
  | ClaimInDoubt

export type CreatePodError = PodChangeRequired | RetryableCreateError

// ---- deletePod ------------------------------------------------------------------------------

/** An authorized release that sandboxd did not confirm: claim and Pod entry are kept for the retry. */
export class ReleaseFailed extends Schema.TaggedError<ReleaseFailed>()("ReleaseFailed", {
  pod: Schema.String,
  claim: Schema.String,
  cause: SandboxdTransportError,
  message: Schema.String
}) {}

/**
 * AUTH-9 — a preserved VM is released once its owner goes: here the owner a preserved row waits
 * on could not be written to the claims file. The delete fails, so the Pod object (the one other
 * record of that owner) stays until a retry's write lands: a restart in between still finds the
 * owner, on the Pod or in the file.
 */
export class PreserveNotPersisted extends Schema.TaggedError<PreserveNotPersisted>()("PreserveNotPersisted", {
  pod: Schema.String,
  claim: Schema.String,
  cause: ClaimsWriteError,
  message: Schema.String
}) {}

/** What a deletePod call ended in, for callers that report it (metrics, tests). */
export type DeleteOutcome =
  | { readonly _tag: "StaleUid" }
  | { readonly _tag: "NoClaim" }
  /**
   * VER-7 — a lost sandbox's row outlives restarts until its Pod is settled: the key's row was Lost
   * (its VM confirmed gone): the row went, nothing was asked or released.
   */
  | { readonly _tag: "LostDropped" }
  | { readonly _tag: "Preserved"; readonly verdict: DeleteVerdict }
  | { readonly _tag: "Released"; readonly verdict: DeleteVerdict; readonly alreadyGone: boolean }

/** Whether a later attempt at the same Pod can get past `error` (CRT-10); otherwise only a change to the Pod can. */
export const isRetryable = (error: CreatePodError | ReleaseFailed): boolean => {
  switch (error._tag) {
    case "RuntimeMismatch":
    case "MissingTemplate":
    case "InvalidTtl":
    case "SandboxLost":
      return false
    case "ClaimFailed":
    case "ClaimNotPersisted":
    case "IntentNotPersisted":
    case "ClaimUnverifiable":
    case "ExpiredClaimUnlistable":
    case "StrandedClaimNotReturned":
    case "ClaimInDoubt":
    case "ReleaseFailed":
      return true
  }
}
