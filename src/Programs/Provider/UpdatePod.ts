/**
 * UpdatePod and the memory-only reads (UPD-1 — UpdatePod, to UPD-4 — GetPodStatus). None of them
 * calls sandboxd or the apiserver.
 */
import type { V1Pod, V1PodStatus } from "@kubernetes/client-node"
import { DateTime, Effect, Option } from "effect"
import type { PodKey } from "../../Schemas/Ids.ts"
import { copyPlain } from "../../Schemas/Pod/Kept.ts"
import { ClaimTable, type ClaimTableState } from "../../Services/ClaimTable.ts"
import { podKeyOfPod } from "./CreatePod.ts"
import { podIpFor } from "./Push.ts"
import { leaseExpiredStatus, lostRowStatus, pendingStatus, runningStatus } from "./Status.ts"

/**
 * UPD-1: store the newer Pod unless it belongs to an older generation (ST-4 — stale-UID guard).
 * Always succeeds.
 */
export const updatePod = Effect.fn("Provider.updatePod")(function*(pod: V1Pod) {
  const table = yield* ClaimTable
  const key = podKeyOfPod(pod)
  const outcome = yield* table.storePod(key, pod)
  if (outcome === "StaleUid") {
    yield* Effect.logInfo("ignoring stale UpdatePod for previous pod generation").pipe(
      Effect.annotateLogs({ pod: key, uid: pod.metadata?.uid ?? "" })
    )
  }
})

/** The tracked Pod, a copy, or nothing; never asks sandboxd or the apiserver (UPD-2 — GetPod). */
export const getPod = (key: PodKey) => ClaimTable.use((table) => table.pod(key))

/**
 * UPD-4 for a tracked Pod: a Lost row of its generation → SandboxLost (VER-7 — a lost sandbox's row
 * outlives restarts until its Pod is settled); no settled claim → the Pod's own status as Pending;
 * a settled claim strictly past its deadline → lease expired (LEASE-8 — the deadline boundary: at
 * the instant itself still Running); otherwise Running.
 */
const reportedStatus = Effect.fnUntraced(function*(state: ClaimTableState, key: PodKey, pod: V1Pod) {
  const row = state.rows.get(key)
  // VER-7: the sandbox of this generation is gone for good (lease-expired, the same status its push
  // carried, if its lease had run out: LEASE-10 — a lease that ran out while the daemon was down
  // ends the Pod as lease-expired).
  if (row !== undefined && row.state._tag === "Lost" && row.record.podUID === (pod.metadata?.uid ?? "")) {
    return lostRowStatus(pod, { record: row.record, leaseEnded: row.state.leaseEnded })
  }
  if (row === undefined || row.state._tag !== "Durable") return pendingStatus(pod)
  const claim = row.record
  const now = yield* DateTime.now
  if (Option.isSome(claim.deadline) && DateTime.isGreaterThan(now, claim.deadline.value)) {
    return leaseExpiredStatus(pod, claim)
  }
  return runningStatus(pod, claim, yield* podIpFor(claim))
})

/**
 * Copies of every tracked Pod (UPD-3 — GetPods), each with the status the provider reports for it
 * (UPD-4): the table keeps only a little of the status a Pod was handed with (`keptStatusOf`), and
 * what the kubelet `/pods` route shows is the provider's own view, as every other status it
 * reports.
 */
export const getPods = Effect.gen(function*() {
  const table = yield* ClaimTable
  const state = yield* table.state
  const out: Array<V1Pod> = []
  for (const [key, pod] of state.pods) {
    out.push({ ...copyPlain(pod), status: yield* reportedStatus(state, key, pod) })
  }
  return out as ReadonlyArray<V1Pod>
})

/** UPD-4 from memory only: None when no Pod is tracked. */
export const getPodStatus = Effect.fn("Provider.getPodStatus")(function*(key: PodKey) {
  const table = yield* ClaimTable
  const state = yield* table.state
  const pod = state.pods.get(key)
  if (pod === undefined) return Option.none<V1PodStatus>()
  return Option.some(yield* reportedStatus(state, key, pod))
})
