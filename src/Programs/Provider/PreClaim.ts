/**
 * What CreatePod settles for a key before it claims (CRT-3 — CreatePod's decision order): the
 * quarantine judged, an expired claim refreshed or dropped (LEASE-5 — settling an expired claim
 * before reuse), a stranded claim returned (CRT-9 — stranded claims first), a claim in doubt
 * settled, and a Pod generation whose sandbox is lost refused.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { DateTime, Effect, Option } from "effect"
import type { PodKey } from "../../Schemas/Ids.ts"
import { ClaimTable } from "../../Services/ClaimTable.ts"
import {
  ClaimInDoubt,
  ClaimUnverifiable,
  ExpiredClaimUnlistable,
  SandboxLost,
  StrandedClaimNotReturned
} from "../../Services/ProviderErrors.ts"
import { ProviderEvents } from "../../Services/ProviderEvents.ts"
import { SandboxdClient } from "../../Services/SandboxdClient.ts"
import { confirmAbsence } from "../Absence.ts"
import { resolveDoubt } from "../ClaimDoubt.ts"
import { verifyQuarantinedClaims } from "../ClaimVerifier.ts"
import { countPodEnded } from "../SandboxLost.ts"
import { detachedRelease } from "./DetachedRelease.ts"
import { dropLostRow } from "./LostRows.ts"
import { formatSeconds, LeaseExpiredReason, leaseExpiredMessage, lostRowPod, sandboxLostMessage, SandboxLostReason } from "./Status.ts"

/** CRT-3 step 2: a quarantined key is judged by a full pass before anything else happens to it. */
export const resolveQuarantined = Effect.fnUntraced(function*(key: PodKey) {
  const table = yield* ClaimTable
  const held = yield* table.held(key)
  if (Option.isNone(held) || held.value.state._tag !== "Quarantined") return
  const claimId = held.value.record.id
  yield* verifyQuarantinedClaims.pipe(
    Effect.mapError((cause) =>
      new ClaimUnverifiable({
        pod: key,
        claimId,
        cause,
        message:
          `pod ${key} holds claim ${claimId} that sandboxd has not confirmed, and sandboxd cannot be listed: not claiming over a possibly live sandbox`
      })
    )
  )
  // The listing left it out but its absence is not confirmed yet: still nothing claimed over it.
  const after = yield* table.held(key)
  if (Option.isSome(after) && after.value.state._tag === "Quarantined" && after.value.record.id === claimId) {
    return yield* new ClaimUnverifiable({
      pod: key,
      claimId,
      message:
        `pod ${key} holds claim ${claimId} that sandboxd's listing left out but has not confirmed gone: not claiming over a possibly live sandbox`
    })
  }
})

/** LEASE-5: a settled claim past its cached deadline is refreshed (still there) or dropped (confirmed gone). */
export const settleExpiredClaim = Effect.fnUntraced(function*(key: PodKey) {
  const table = yield* ClaimTable
  const sandboxd = yield* SandboxdClient
  const claim = yield* table.durable(key)
  if (Option.isNone(claim) || Option.isNone(claim.value.deadline)) return
  const { deadline, id } = claim.value
  const now = yield* DateTime.now
  if (DateTime.isLessThan(now, deadline.value)) return
  const listing = yield* sandboxd.listSandboxes.pipe(
    Effect.mapError((cause) =>
      new ExpiredClaimUnlistable({
        pod: key,
        claimId: id,
        deadline: formatSeconds(deadline.value),
        cause,
        message:
          `pod ${key} holds claim ${id} past its cached deadline ${formatSeconds(deadline.value)}, and sandboxd cannot be listed: not overwriting what may be a live sandbox's only credential`
      })
    )
  )
  const listed = listing.find((row) => row.id === id)
  if (listed !== undefined) {
    // Archiving rewrites leases: the listing's deadline wins, whatever it is (LEASE-6 — refreshing
    // a deadline).
    yield* table.refreshDeadline(key, id, listed.deadline)
  } else {
    // LEASE-5: a listing can miss a live claim, and this row holds the VM's only token, so it is
    // dropped only when sandboxd confirms the absence, as the lease watch requires.
    const verdict = yield* confirmAbsence(id, now)
    if (verdict._tag === "Present") {
      yield* table.refreshDeadline(key, id, verdict.sandbox.deadline)
      return
    }
    if (verdict._tag === "Unconfirmed") {
      return yield* new ExpiredClaimUnlistable({
        pod: key,
        claimId: id,
        deadline: formatSeconds(deadline.value),
        message:
          `pod ${key} holds claim ${id} past its cached deadline ${formatSeconds(deadline.value)}, which sandboxd's listing left out but has not confirmed gone (${verdict.reason}): not overwriting what may be a live sandbox's only credential`
      })
    }
    yield* table.dropClaim(key, id)
    yield* Effect.logInfo("dropped an expired claim the node no longer holds").pipe(
      Effect.annotateLogs({ pod: key, claim: id })
    )
  }
})

/** CRT-9: a tentative row left by a create whose commit and undo both failed is returned first. */
export const clearStrandedClaim = Effect.fnUntraced(function*(key: PodKey) {
  const table = yield* ClaimTable
  const held = yield* table.held(key)
  if (Option.isNone(held) || held.value.state._tag !== "Tentative") return
  const { id, token } = held.value.record
  yield* detachedRelease(id, token).pipe(
    Effect.mapError((cause) =>
      new StrandedClaimNotReturned({
        pod: key,
        claimId: id,
        cause,
        message: `pod ${key}: the previous sandbox ${id} could not be returned before reusing the key: ${cause.message}`
      })
    )
  )
  yield* table.withdraw(key, id)
  yield* Effect.logInfo("returned a stranded sandbox before reusing its pod key").pipe(
    Effect.annotateLogs({ pod: key, claim: id })
  )
})

/**
 * A key in doubt is settled before anything else is done for it (a claim, or a delete's
 * verdict). Adopted: the row is now Durable. Absent: the key may go on. Anything else keeps the
 * Pod waiting with reason ClaimInDoubt; `until` says what waits (it ends the error's message).
 */
export const settleDoubt = Effect.fnUntraced(function*(key: PodKey, until = "no new claim until it is") {
  const resolution = yield* resolveDoubt(key).pipe(
    Effect.mapError((cause) =>
      new ClaimInDoubt({
        pod: key,
        strays: [],
        cause,
        message: `pod ${key}: a claim whose outcome is unknown cannot be settled yet (${cause.message}); ${until}`
      })
    )
  )
  if (resolution._tag === "Pending") {
    return yield* new ClaimInDoubt({
      pod: key,
      strays: resolution.strays,
      message: `pod ${key}: a claim whose outcome is unknown is not settled: ${resolution.reason}`
    })
  }
})

/**
 * VER-7 — a lost sandbox's row outlives restarts until its Pod is settled: a Pod generation whose
 * sandbox was confirmed gone (its row is Lost) is never claimed for again. A Lost row of another
 * generation goes: that Pod is gone (the name is this Pod's now), and this one gets a fresh claim,
 * never the dead VM.
 */
export const refuseLost = Effect.fnUntraced(function*(key: PodKey, pod: V1Pod) {
  const lost = yield* (yield* ClaimTable).lost(key)
  if (Option.isNone(lost)) return
  const uid = pod.metadata?.uid ?? ""
  if (lost.value.record.podUID !== uid) {
    yield* dropLostRow(key)
    return
  }
  // A Pod still shown Running (its VM went while the daemon was down, or before its Failed status
  // landed) is ended here: lease-expired when the lease had run out (LEASE-10 — a lease that ran
  // out while the daemon was down ends the Pod as lease-expired), else SandboxLost.
  const { leaseEnded, record } = lost.value
  if (pod.status?.phase === "Running") yield* (yield* ProviderEvents).pushStatus(lostRowPod(pod, lost.value))
  // Ended either way: pushed here, or (not Running) by the failure status the pod controller writes.
  yield* countPodEnded(leaseEnded)
  return yield* new SandboxLost({
    pod: key,
    claimId: record.id,
    podReason: leaseEnded ? LeaseExpiredReason : SandboxLostReason,
    message: leaseEnded ? leaseExpiredMessage(record) : sandboxLostMessage(record.id)
  })
})
