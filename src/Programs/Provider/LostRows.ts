/**
 * When a Lost row goes (VER-7 — a lost sandbox's row outlives restarts until its Pod is settled).
 * A Lost row is kept, as it was, only so that its Pod generation is never claimed for again; it
 * goes, and the file is written without it, once that generation can never be claimed for: its Pod
 * is terminal (`settleTerminal`), deleted or gone (`DeletePod.ts`, `SettleGone.ts`), or a Pod of
 * another generation takes the name (`CreatePod.ts`: the new one gets a fresh claim).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Effect, Option } from "effect"
import { type ClaimId, type PodKey, podKeyOfPod } from "../../Schemas/Ids.ts"
import { ClaimTable } from "../../Services/ClaimTable.ts"
import { saveState } from "./SaveState.ts"

/**
 * Drops the Lost row of `key` (of generation `podUID` when given) and writes the file without it;
 * a write that fails is only logged (the row then reloads, is found gone again and dropped again).
 */
export const dropLostRow = Effect.fnUntraced(function*(key: PodKey, podUID?: string) {
  const table = yield* ClaimTable
  const row = yield* table.lost(key)
  if (Option.isNone(row) || !(yield* table.dropLost(key, podUID))) return false
  yield* Effect.logInfo("dropped the row of a lost sandbox: its pod can no longer be claimed for").pipe(
    Effect.annotateLogs({ pod: key, claim: row.value.record.id })
  )
  yield* saveState
  return true
})

/** The Pod is terminal: the Lost row of its generation has nothing left to guard. Memory only otherwise. */
export const settleTerminal = Effect.fn("Provider.settleTerminal")(function*(pod: V1Pod) {
  yield* dropLostRow(podKeyOfPod(pod), pod.metadata?.uid ?? "")
})

/** Failed or Succeeded: the phases no Pod leaves. */
export const isTerminalPhase = (pod: V1Pod): boolean => pod.status?.phase === "Failed" || pod.status?.phase === "Succeeded"

/**
 * LEASE-11 — the row of an ended lease goes once its Pod is seen terminal: the pod controller sees
 * terminal a Pod whose row is still Durable (its lease ended and its Failed/SandboxLeaseExpired
 * status is now stored, or another writer ended it). The provider's copy takes the terminal phase,
 * memory only: that is how the lease watch learns that the status it kept pushing is stored, and
 * that the row of a VM sandboxd reaped can go.
 */
export const noteTerminal = Effect.fn("Provider.noteTerminal")(function*(pod: V1Pod) {
  yield* (yield* ClaimTable).storePod(podKeyOfPod(pod), pod)
})

/**
 * LEASE-11: drops the row of `key` when it still carries `id` (its VM confirmed gone after its
 * deadline, its Pod seen terminal) and writes the file without it; nothing is released, sandboxd
 * already reaped the VM. A write that fails is only logged (the next write carries the change).
 */
export const dropEndedLease = Effect.fnUntraced(function*(key: PodKey, id: ClaimId) {
  if (!(yield* (yield* ClaimTable).dropClaim(key, id))) return false
  yield* Effect.logInfo("dropped the row of an ended lease: its pod is terminal and sandboxd reaped the VM").pipe(
    Effect.annotateLogs({ pod: key, claim: id })
  )
  yield* saveState
  return true
})
