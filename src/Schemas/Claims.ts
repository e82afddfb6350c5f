/**
 * The claims table as the daemon holds it in memory. The on-disk shape (PER-1 — claims file format;
 * PER-2 — timestamps at second precision) is `Schemas/ClaimsFile/`; this is the decoded, typed
 * form.
 */
import { Data, DateTime, Option, type Redacted } from "effect"
import type { ClaimId, PodKey } from "./Ids.ts"

/**
 * The controller owner a row was preserved for (AUTH-9 — a preserved VM is released once its owner
 * goes): kept with the row once its Pod is deleted while that owner lived, so the owner can be
 * asked again (and the VM released once it is gone) for as long as no Pod holds the row, across
 * restarts too.
 */
export interface PreservedOwner {
  readonly apiVersion: string
  readonly kind: string
  readonly name: string
  readonly uid: string
}

export interface ClaimRecord {
  readonly id: ClaimId
  /** The per-sandbox release credential: Redacted from the claim response to the file write. */
  readonly token: Redacted.Redacted<string>
  /** sandboxd's `owner_addr` ("" when unknown). */
  readonly address: string
  /** UID of the Pod generation that last held the claim (forensics; written even when ""). */
  readonly podUID: string
  /** None only before the load back-fill (PER-8 — loading the file). */
  readonly claimedAt: Option.Option<DateTime.Utc>
  /** The lease end; None = no known expiry. */
  readonly deadline: Option.Option<DateTime.Utc>
  /** Set while the row waits, preserved, with no Pod (AUTH-9); absent otherwise. */
  readonly owner?: PreservedOwner | undefined
  /**
   * Fields of the row on disk that this version does not know (written by a newer one), as the
   * compact JSON members `"name":value,…`; written back after the known fields, so a downgrade
   * after an upgrade loses nothing. Absent on rows this daemon made.
   */
  readonly unknownFields?: string
}

/**
 * The state of one row. Status and adoption read only `Durable`;
 * release reads the first three.
 * - Tentative: a fresh claim whose own commit has not landed yet; in no write but that one.
 * - Quarantined: loaded from disk, not yet vouched for by a sandboxd listing.
 * - Lost: sandboxd confirmed the VM gone (`Programs/Absence.ts`). The row is kept, and written
 *   as it was, only so that the Pod generation it names is never claimed for again, across
 *   restarts too (the next start confirms it gone again), until that Pod is terminal or gone
 *   (VER-7 — a lost sandbox's row outlives restarts until its Pod is settled). Nothing releases or
 *   adopts it: its token opens nothing. `leaseEnded`: its lease had run out when the VM was found
 *   gone, so its Pod ends lease-expired rather than SandboxLost (LEASE-10 — a lease that ran out
 *   while the daemon was down ends the Pod as lease-expired); decided once, when the row turns
 *   Lost, so the reason never changes while the process runs.
 */
export type ClaimState = Data.TaggedEnum<{
  Durable: {}
  Tentative: {}
  Quarantined: {}
  Lost: { readonly leaseEnded: boolean }
}>
export const ClaimState = Data.taggedEnum<ClaimState>()

/**
 * One value per state, shared by every row in it: a state has no fields of its own but Lost's one
 * flag, so a row need not own one (an object per row was ~56 bytes per Pod kept for the Pod's
 * life).
 */
export const claimStates = {
  Durable: ClaimState.Durable(),
  Tentative: ClaimState.Tentative(),
  Quarantined: ClaimState.Quarantined(),
  /** Found gone before its lease ran out: the VM went early. */
  Lost: ClaimState.Lost({ leaseEnded: false }),
  /** Found gone once its lease had run out (LEASE-10). */
  LostAfterLease: ClaimState.Lost({ leaseEnded: true })
} as const

/**
 * The lease watch's boundary (LEASE-8 — the deadline boundary): `claim`'s lease has run out at or
 * before `at`.
 */
export const leaseEndedBy = (claim: ClaimRecord, at: DateTime.Utc): boolean =>
  Option.isSome(claim.deadline) && DateTime.isGreaterThanOrEqualTo(at, claim.deadline.value)

/** The Lost state of `claim`'s row when its VM is found gone at `at` (LEASE-10). */
export const lostStateAt = (claim: ClaimRecord, at: DateTime.Utc): ClaimState =>
  leaseEndedBy(claim, at) ? claimStates.LostAfterLease : claimStates.Lost

export interface ClaimRow {
  readonly record: ClaimRecord
  readonly state: ClaimState
}

/**
 * A claim that may have been sent and whose row has not landed: written durably before the claim
 * request leaves, and dropped in the same write that lands the claim's row (or once the claim's
 * outcome is known without one). One left in the file after a crash names a key whose claim may
 * have made a VM that no row records.
 */
export interface ClaimIntent {
  readonly key: PodKey
  /** The Pod generation the claim was for: a sandbox of an earlier Pod of the same name is not this claim's. */
  readonly podUID: string
  /** Taken before the intent is written, so no sandbox of this claim was made before it. */
  readonly sentAt: DateTime.Utc
}
