/**
 * A Pod whose sandbox sandboxd confirmed gone (`Absence.ts`) before its lease ended goes
 * Failed/SandboxLost naming the id, with a Warning Event (after its deadline, Failed/
 * SandboxLeaseExpired instead: LEASE-10 — a lease that ran out while the daemon was down ends the
 * Pod as lease-expired). Its row becomes Lost (VER-7 — a lost sandbox's row outlives restarts until
 * its Pod is settled): kept as it was so no create claims for that Pod generation again, nothing
 * adopts or releases it, and it goes once the Pod is terminal or gone (`Provider/LostRows.ts`).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { type DateTime, Effect, Metric, Option } from "effect"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import type { PodKey } from "../Schemas/Ids.ts"
import { ClaimTable } from "../Services/ClaimTable.ts"
import { EventRecorder, involvedPod } from "../Services/EventRecorder.ts"
import { ProviderEvents } from "../Services/ProviderEvents.ts"
import { leaseExpiries, sandboxesLost } from "../Services/Metrics.ts"
import { saveState } from "./Provider/SaveState.ts"
import { lostRowPod, lostVmEvent } from "./Provider/Status.ts"

/**
 * Counts a Pod ended for its lost VM under its reason's counter (LEASE-10): where its status is
 * pushed or its failure written, never where only a row is marked (its Pod may be gone).
 */
export const countPodEnded = (leaseEnded: boolean) => Metric.update(leaseEnded ? leaseExpiries : sandboxesLost, 1)

/**
 * Declares `claim` of `key` lost. `pod` is the tracked Pod when there is one; without it the
 * row's Pod UID is the generation marked lost (its next create fails with SandboxLost).
 */
export const declareSandboxLost = Effect.fnUntraced(function*(
  key: PodKey,
  claim: ClaimRecord,
  pod: Option.Option<V1Pod>,
  /** When sandboxd was found without the VM: whether the lease had run out is judged then (LEASE-10). */
  foundAt: DateTime.Utc
) {
  const table = yield* ClaimTable
  const events = yield* ProviderEvents
  const recorder = yield* Effect.serviceOption(EventRecorder)
  const podUid = Option.match(pod, { onNone: () => claim.podUID, onSome: (p) => p.metadata?.uid ?? "" })
  const marked = yield* table.markLost(key, claim.id, podUid, foundAt)
  if (Option.isNone(marked)) return
  // LEASE-10: a row whose lease had run out lost its VM to it; the Pod ends as the lease watch ends one.
  const leaseEnded = marked.value.leaseEnded
  if (Option.isSome(pod)) {
    yield* events.pushStatus(lostRowPod(pod.value, marked.value))
    yield* countPodEnded(leaseEnded)
    if (Option.isSome(recorder)) {
      const event = lostVmEvent(claim.id, leaseEnded)
      yield* recorder.value.record(involvedPod(pod.value), "Warning", event.reason, event.message)
    }
  }
  if (marked.value.record.podUID !== claim.podUID) {
    // The row now names the generation that lost it: the file must say so before a restart.
    yield* saveState
  }
  if (leaseEnded) {
    yield* Effect.logInfo("sandbox lease expired").pipe(
      Effect.annotateLogs({ pod: key, claim: claim.id })
    )
    return
  }
  // No Pod tracked yet (a restart's verification): nothing is declared now; the row's Lost mark ends
  // the Pod when its run comes (VER-7).
  yield* Effect.logWarning(
    Option.isSome(pod)
      ? "sandbox confirmed gone; pod declared SandboxLost"
      : "sandbox confirmed gone; its row is kept Lost until its pod is settled"
  ).pipe(Effect.annotateLogs({ pod: key, claim: claim.id }))
})
