/**
 * The claim table's state transitions, each a pure function of the state (`ClaimTableRef.ts` runs
 * each inside one `Ref.modify`): a Pod adopting its row, a row found lost, the quarantine judged
 * against a listing, tentative rows made durable by a write that landed.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { type DateTime, Option } from "effect"
import { type ClaimRecord, type ClaimRow, claimStates, lostStateAt } from "../../Schemas/Claims.ts"
import type { ClaimId, PodKey } from "../../Schemas/Ids.ts"
import { acceptedPodOf, copyPlain } from "../../Schemas/Pod/Kept.ts"
import type { Pod } from "../../Schemas/Pod/Schema.ts"
import type { Adoption, ClaimTableState, LostRow, QuarantineJudgement } from "../../Services/ClaimTable.ts"

/**
 * The table keeps the slim facts of a Pod it accepted (`acceptedPodOf`: what the provider reads
 * of it, a copy sharing only strings), never the Pod object it was handed, and hands out copies.
 */
export const keptPod = (pod: V1Pod): Pod => acceptedPodOf(pod)
export const handedOut = (pod: Pod): V1Pod => copyPlain(pod)

export const withRow = (state: ClaimTableState, key: PodKey, row: ClaimRow): ClaimTableState => ({
  ...state,
  rows: state.rows.with(key, row)
})

export const withoutRow = (state: ClaimTableState, key: PodKey): ClaimTableState => ({ ...state, rows: state.rows.without(key) })

export const withPod = (state: ClaimTableState, key: PodKey, pod: Pod): ClaimTableState => ({
  ...state,
  pods: state.pods.with(key, pod)
})

export const withoutPod = (state: ClaimTableState, key: PodKey): ClaimTableState => ({ ...state, pods: state.pods.without(key) })

export const rowWithId = (state: ClaimTableState, key: PodKey, id: ClaimId): ClaimRow | undefined => {
  const row = state.rows.get(key)
  return row !== undefined && row.record.id === id ? row : undefined
}

/** The Durable row of `key` taken by `pod`: its record as the Pod now holds it, and whether that changed. */
export const adopted = (
  s: ClaimTableState,
  key: PodKey,
  pod: V1Pod,
  now: DateTime.Utc
): readonly [Option.Option<Adoption>, ClaimTableState] => {
  const row = s.rows.get(key)
  if (row === undefined || row.state._tag !== "Durable") return [Option.none<Adoption>(), s]
  const podUID = pod.metadata?.uid ?? ""
  const previousPodUID = row.record.podUID
  if (previousPodUID === podUID && Option.isSome(row.record.claimedAt) && row.record.owner === undefined) {
    // Nothing in the record changes: it is kept (the claims writer reuses its encoding).
    return [Option.some({ record: row.record, previousPodUID, changed: false }), withPod(s, key, keptPod(pod))]
  }
  // A Pod holds the row again: it no longer waits on the owner it was preserved for (AUTH-9 —
  // a preserved VM is released once its owner goes).
  const { owner: _preservedFor, ...held } = row.record
  const record: ClaimRecord = {
    ...held,
    podUID,
    claimedAt: Option.isSome(row.record.claimedAt) ? row.record.claimedAt : Option.some(now)
  }
  return [
    Option.some({ record, previousPodUID, changed: true }),
    withPod(withRow(s, key, { record, state: row.state }), key, keptPod(pod))
  ]
}

/** The row of `key` with claim `id`, found gone: Lost (when it was not already), for `podUID`. */
export const markedLost = (
  s: ClaimTableState,
  key: PodKey,
  id: ClaimId,
  podUID: string,
  at: DateTime.Utc
): readonly [Option.Option<LostRow>, ClaimTableState] => {
  const row = rowWithId(s, key, id)
  if (row === undefined || row.state._tag === "Tentative") return [Option.none(), s]
  if (row.state._tag === "Lost" && row.record.podUID === podUID) {
    return [Option.some({ record: row.record, leaseEnded: row.state.leaseEnded }), s]
  }
  const record = row.record.podUID === podUID ? row.record : { ...row.record, podUID }
  // LEASE-10 — a lease that ran out while the daemon was down ends the Pod as lease-expired:
  // decided when the VM was first found gone, and kept.
  const state = row.state._tag === "Lost" ? row.state : lostStateAt(row.record, at)
  return [
    Option.some({ record, leaseEnded: state._tag === "Lost" && state.leaseEnded }),
    withRow(s, key, { record, state })
  ]
}

/** The quarantined rows of `snapshot` judged by a listing taken at `listedAt`: lifted or lost. */
export const judged = (
  s: ClaimTableState,
  snapshot: ReadonlyMap<PodKey, ClaimId>,
  listed: ReadonlyMap<ClaimId, Option.Option<DateTime.Utc>>,
  listedAt: DateTime.Utc
): readonly [QuarantineJudgement, ClaimTableState] => {
  const lifted: Array<PodKey> = []
  const lost: Array<{ key: PodKey; id: ClaimId }> = []
  const rows = s.rows.withChanges((rows) => {
    // forEach, not for…of: no entry array per row (a startup pass judges every loaded row).
    snapshot.forEach((id, key) => {
      const row = rows.get(key)
      // Replaced, removed, or already judged by a concurrent pass: this listing cannot judge it.
      if (row === undefined || row.record.id !== id || row.state._tag !== "Quarantined") return
      const listedDeadline = listed.get(id)
      if (listedDeadline !== undefined) {
        // The record object is kept when nothing in it changes: the claims writer reuses the
        // encoding of an unchanged record (and the startup write the loaded file's own bytes).
        const record = Option.isNone(row.record.deadline) ? { ...row.record, deadline: listedDeadline } : row.record
        rows.set(key, { record, state: claimStates.Durable })
        lifted.push(key)
      } else {
        // VER-7 — a lost sandbox's row outlives restarts until its Pod is settled: kept,
        // written as it was, so its Pod generation is never claimed for again.
        rows.set(key, { record: row.record, state: lostStateAt(row.record, listedAt) })
        lost.push({ key, id })
      }
    })
  }, snapshot.size)
  return [{ lifted, lost }, { ...s, rows }]
}

/** The Tentative rows a landed write held (`written`: key → claim id) made Durable. */
export const landedIn = (s: ClaimTableState, written: ReadonlyMap<PodKey, ClaimId>): ClaimTableState => {
  const rows = s.rows.withChanges((rows) => {
    for (const [key, id] of written) {
      const row = rows.get(key)
      if (row !== undefined && row.state._tag === "Tentative" && row.record.id === id) {
        rows.set(key, { record: row.record, state: claimStates.Durable })
      }
    }
  })
  return rows === s.rows ? s : { ...s, rows }
}
