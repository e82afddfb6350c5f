/**
 * The delete-authorization verdict (AUTH-1 — delete authorization order). A Pod
 * deletion alone is never VM authority: only the owner's state can authorize a release.
 */
import { Data } from "effect"

/** Why a release is authorized. */
export type ReleaseReason =
  | "BarePod" // no controller ownerReference: deleting the Pod is the teardown intent
  | "OwnerGone" // object-level NotFound naming the owner
  | "OwnerTerminating" // the owner carries a deletionTimestamp
  | "OwnerUidRotated" // the owner was recreated: the referenced generation is gone

/** Why the VM is kept although its Pod is being deleted. */
export type PreserveReason =
  | "OwnerAlive"
  | "AmbiguousNotFound" // 404 without a Status naming the owner (endpoint shape unverified)
  | "OwnerQueryFailed" // 403, 5xx, timeout, transport
  | "NoOwnerClient"
  | "UnresolvableOwnerGvr"
  | "ConflictingControllers" // more than one controller reference: no single owner has authority
  | "OwnerNameMismatch" // the owner reply names another object than the one asked for

export type DeleteVerdict = Data.TaggedEnum<{
  Release: { readonly reason: ReleaseReason; readonly detail: string }
  Preserve: { readonly reason: PreserveReason; readonly detail: string }
}>
export const DeleteVerdict = Data.taggedEnum<DeleteVerdict>()
