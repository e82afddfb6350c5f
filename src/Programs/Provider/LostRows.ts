/**
 * When a Lost row goes (VER-7). A row becomes Lost when sandboxd confirms its VM gone
 * (`SandboxLost.ts`, the verification at startup, the lease watch); it is kept, and written as it
 * was, only so that the Pod generation it names is never claimed for again, and a restart before
 * that Pod's Failed/SandboxLost status landed finds the VM gone again and keeps refusing. It goes,
 * and the file is written without it, once that generation can never be claimed for:
 *
 * - its Pod is terminal (`settleTerminal`: the pod controller never creates for a terminal Pod,
 *   and never writes its status again), whichever writer made it so;
 * - its Pod is deleted or gone from the apiserver (`DeletePod.ts`, `SettleGone.ts`);
 * - a Pod of another generation takes the name (`CreatePod.ts`: the old one is gone then, and
 *   the new one gets a fresh claim, never the dead VM).
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
 * LEASE-11: the pod controller sees terminal a Pod whose row is still Durable (its lease ended and
 * its Failed/SandboxLeaseExpired status is now stored, or another writer ended it). The provider's
 * copy takes the terminal phase, memory only: that is how the lease watch learns that the status
 * it kept pushing is stored, and that the row of a VM sandboxd reaped can go.
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
