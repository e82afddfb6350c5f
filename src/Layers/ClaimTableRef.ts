/**
 * ClaimTable in one `Ref` (ST-1 — the in-memory tables), plus the ClaimsSnapshot the store writes
 * from. Every operation is a single `Ref.modify` with a pure function: nothing awaits inside, so no
 * other fiber can observe or change the state half-way through a check-and-set (CC-2 — ordering
 * under concurrency). The maps are `PersistentMap`s, so an event costs the same at 10,000 claims
 * as at 10 and every state handed out stays a consistent snapshot.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Context, Effect, Layer, Option, Ref } from "effect"
import { type ClaimRecord, type ClaimRow, claimStates, lostStateAt } from "../Schemas/Claims.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import { PersistentMap } from "../Schemas/PersistentMap.ts"
import { acceptedPodOf, copyPlain } from "../Schemas/Pod/Kept.ts"
import type { Pod } from "../Schemas/Pod/Schema.ts"
import { ClaimsSnapshot } from "../Services/ClaimsStore.ts"
import {
  type Adoption,
  ClaimTable,
  type ClaimTableState,
  type LostRow,
  podUidIsCurrent,
  type QuarantineJudgement,
  type StorePodOutcome
} from "../Services/ClaimTable.ts"
import { ClaimDoubts } from "../Services/ClaimDoubts.ts"
import { KnownSecrets } from "../Services/KnownSecrets.ts"
import { RowsView } from "../Store/RowsView.ts"
import { ClaimDoubtsRefLayer } from "./ClaimTableRef/ClaimDoubtsRef.ts"

/**
 * The table keeps the slim facts of a Pod it accepted (`acceptedPodOf`: what the provider reads
 * of it, a copy sharing only strings), never the Pod object it was handed, and hands out copies.
 */
const keptPod = (pod: V1Pod): Pod => acceptedPodOf(pod)
const handedOut = (pod: Pod): V1Pod => copyPlain(pod)

const withRow = (state: ClaimTableState, key: PodKey, row: ClaimRow): ClaimTableState => ({
  ...state,
  rows: state.rows.with(key, row)
})

const withoutRow = (state: ClaimTableState, key: PodKey): ClaimTableState => ({ ...state, rows: state.rows.without(key) })

const withPod = (state: ClaimTableState, key: PodKey, pod: Pod): ClaimTableState => ({
  ...state,
  pods: state.pods.with(key, pod)
})

const withoutPod = (state: ClaimTableState, key: PodKey): ClaimTableState => ({ ...state, pods: state.pods.without(key) })

const rowWithId = (state: ClaimTableState, key: PodKey, id: ClaimId): ClaimRow | undefined => {
  const row = state.rows.get(key)
  return row !== undefined && row.record.id === id ? row : undefined
}

export const emptyClaimTableState: ClaimTableState = { pods: PersistentMap.empty(), rows: PersistentMap.empty() }

export const makeClaimTable = Effect.gen(function*() {
  const ref = yield* Ref.make<ClaimTableState>(emptyClaimTableState)
  const modify = <A>(f: (state: ClaimTableState) => readonly [A, ClaimTableState]): Effect.Effect<A> =>
    Ref.modify(ref, (state) => {
      const [a, next] = f(state)
      return [a, next]
    })
  const read = <A>(f: (state: ClaimTableState) => A): Effect.Effect<A> => Effect.map(Ref.get(ref), f)

  const table = ClaimTable.of({
    state: Ref.get(ref),
    pod: (key) => read((s) => Option.map(Option.fromUndefinedOr(s.pods.get(key)), handedOut)),
    durable: (key) =>
      read((s) => {
        const row = s.rows.get(key)
        return row !== undefined && row.state._tag === "Durable" ? Option.some(row.record) : Option.none()
      }),
    held: (key) => read((s) => Option.fromUndefinedOr(s.rows.get(key))),
    quarantinedKeys: read((s) => {
      const keys: Array<PodKey> = []
      s.rows.forEach((row, key) => {
        if (row.state._tag === "Quarantined") keys.push(key)
      })
      return keys
    }),

    loadQuarantined: (loaded) =>
      Ref.update(ref, (s) => {
        // Built whole as a built-in Map (the startup's one bulk load): no trie is made of it
        // unless a single row changes later (see `PersistentMap.fromMap`).
        const rows = new Map<PodKey, ClaimRow>()
        loaded.forEach((record, key) => rows.set(key, { record, state: claimStates.Quarantined }))
        return { ...s, rows: PersistentMap.fromMap(rows) }
      }),

    recordTentative: (key, record, pod) =>
      Ref.update(ref, (s) => withPod(withRow(s, key, { record, state: claimStates.Tentative }), key, keptPod(pod))),

    adopt: (key, pod, now) =>
      modify((s) => {
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
      }),

    withdraw: (key, id) =>
      modify((s) => rowWithId(s, key, id) === undefined ? [false, s] : [true, withoutPod(withoutRow(s, key), key)]),

    refreshDeadline: (key, id, deadline) =>
      modify((s) => {
        const row = rowWithId(s, key, id)
        if (row === undefined) return [false, s]
        return [true, withRow(s, key, { record: { ...row.record, deadline }, state: row.state })]
      }),

    dropClaim: (key, id) => modify((s) => rowWithId(s, key, id) === undefined ? [false, s] : [true, withoutRow(s, key)]),

    markLost: (key, id, podUID, at) =>
      modify((s): readonly [Option.Option<LostRow>, ClaimTableState] => {
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
      }),

    lost: (key) =>
      read((s): Option.Option<LostRow> => {
        const row = s.rows.get(key)
        return row !== undefined && row.state._tag === "Lost"
          ? Option.some({ record: row.record, leaseEnded: row.state.leaseEnded })
          : Option.none()
      }),

    dropLost: (key, podUID) =>
      modify((s) => {
        const row = s.rows.get(key)
        if (row === undefined || row.state._tag !== "Lost" || (podUID !== undefined && row.record.podUID !== podUID)) {
          return [false, s]
        }
        return [true, withoutRow(s, key)]
      }),

    lostKeys: read((s) => {
      const keys: Array<PodKey> = []
      s.rows.forEach((row, key) => {
        if (row.state._tag === "Lost") keys.push(key)
      })
      return keys
    }),

    judgeQuarantined: (snapshot, listed, listedAt) =>
      modify((s): readonly [QuarantineJudgement, ClaimTableState] => {
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
      }),

    storePod: (key, pod) =>
      modify((s): readonly [StorePodOutcome, ClaimTableState] =>
        podUidIsCurrent(s, key, pod.metadata?.uid ?? "") ? ["Stored", withPod(s, key, keptPod(pod))] : ["StaleUid", s]
      ),

    modify
  })

  const snapshot = ClaimsSnapshot.of({
    // The state's maps are persistent (never changed in place), so a view of this state's rows is
    // a consistent snapshot for the whole write without copying every row per write.
    rowsForWrite: (committing) =>
      read((s) =>
        new RowsView<ClaimRow>(
          s.rows,
          (key, row) => row.state._tag !== "Tentative" || committing.has(key),
          (row) => row.record
        )
      ),
    landed: (written) =>
      Ref.update(ref, (s) => {
        const rows = s.rows.withChanges((rows) => {
          for (const [key, id] of written) {
            const row = rows.get(key)
            if (row !== undefined && row.state._tag === "Tentative" && row.record.id === id) {
              rows.set(key, { record: row.record, state: claimStates.Durable })
            }
          }
        })
        return rows === s.rows ? s : { ...s, rows }
      })
  })

  const secrets = KnownSecrets.of({
    // Read only when a sandboxd reply is an error: one pass over the rows, whatever their state.
    current: read((s) => Array.from(s.rows.values(), (row) => row.record.token))
  })

  return { table, snapshot, secrets }
})

/**
 * ClaimTable, the ClaimsSnapshot view of the same state and the claim tokens it holds (for the
 * sandboxd client's scrubbing), with the claims in doubt beside them (every user of the table
 * needs to know which keys must not be claimed for).
 */
export const ClaimTableRefLayer: Layer.Layer<ClaimTable | ClaimsSnapshot | ClaimDoubts | KnownSecrets> = Layer.merge(
  Layer.effectContext(
    Effect.map(makeClaimTable, ({ secrets, snapshot, table }) =>
      Context.make(ClaimTable, table).pipe(Context.add(ClaimsSnapshot, snapshot), Context.add(KnownSecrets, secrets))
    )
  ),
  ClaimDoubtsRefLayer
)
