/**
 * DEL-3 — a claim in doubt is settled even when its Pod never comes back: run by the pod
 * controller, serialized with the key's other runs, when its cache holds no Pod for the key. It
 * goes through `deletePod` for a stand-in Pod of the doubt's generation with no owner: the doubt
 * is resolved there, and an adopted VM is released with its own token under the bare-Pod verdict.
 * Not in doubt, a key whose row was preserved for its owner is asked about again (AUTH-9 — a
 * preserved VM is released once its owner goes).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Effect, Option } from "effect"
import { type PodKey, splitPodKey } from "../../Schemas/Ids.ts"
import { ClaimDoubts } from "../../Services/ClaimDoubts.ts"
import { ClaimTable } from "../../Services/ClaimTable.ts"
import type { SettleGoneOutcome } from "../../Services/PodLifecycle.ts"
import { deletePod } from "./DeletePod.ts"
import { dropLostRow } from "./LostRows.ts"
import { saveState } from "./SaveState.ts"

export const settleGone = Effect.fn("Provider.settleGone")(function*(key: PodKey) {
  const doubts = yield* ClaimDoubts
  const found = yield* doubts.get(key)
  if (Option.isNone(found)) {
    // VER-7 — a lost sandbox's row outlives restarts until its Pod is settled: a Lost row whose Pod
    // is gone has nothing left to guard (a restart finds it for a Pod deleted while the daemon was
    // down, the lease watch for a preserved row's VM gone).
    if (yield* dropLostRow(key)) return "LostDropped" as SettleGoneOutcome
    return yield* askPreservedOwner(key)
  }
  const [namespace, name] = splitPodKey(key)
  const standIn: V1Pod = { apiVersion: "v1", kind: "Pod", metadata: { namespace, name, uid: found.value.podUid } }
  // Tracked before the delete, as any Pod the provider handles is: should the release fail after
  // the doubt was resolved (adopted), the adopted row stays with its token and the key is no
  // longer in doubt, so the key's next run must find a tracked Pod gone from the cache (SY-02 — a
  // Pod gone from the cache) and run DeletePod for it again, or nothing would ever release the VM.
  // A delete that succeeds drops it with the row.
  yield* (yield* ClaimTable).storePod(key, standIn)
  // Fails with ClaimInDoubt while the doubt is pending (the caller retries on its backoff), or
  // ReleaseFailed (the row and the stand-in stay, for the retry).
  const outcome = yield* deletePod(standIn)
  if (outcome._tag !== "NoClaim") return outcome._tag as SettleGoneOutcome
  // No VM: the intent leaves the file now. Nothing else may write for a long time, and a restart
  // would otherwise load the intent and put the key in doubt again.
  yield* saveState
  return "NoClaim" as SettleGoneOutcome
}, (effect, key) => Effect.annotateLogs(effect, { pod: key }))

/**
 * AUTH-9: a row preserved for its owner (its Pod deleted while the owner lived) that no Pod holds
 * now: the owner is asked again, through `deletePod` for a stand-in Pod of the row's generation
 * carrying that controller reference, so the verdict and what follows are exactly a deletion's:
 * released with the row's own token once the owner is gone, terminating or recreated, kept
 * otherwise (and on any doubt). The lease watch hands such keys to the pod controller each tick.
 */
const askPreservedOwner = Effect.fnUntraced(function*(key: PodKey) {
  const table = yield* ClaimTable
  const state = yield* table.state
  const row = state.rows.get(key)
  const owner = row?.record.owner
  if (row === undefined || row.state._tag !== "Durable" || owner === undefined || state.pods.has(key)) return "NotInDoubt" as SettleGoneOutcome
  const [namespace, name] = splitPodKey(key)
  const standIn: V1Pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace, name, uid: row.record.podUID, ownerReferences: [{ ...owner, controller: true }] }
  }
  // Tracked first, as above: a release that fails keeps it, and the key's next run tries again.
  yield* table.storePod(key, standIn)
  return (yield* deletePod(standIn))._tag as SettleGoneOutcome
})
