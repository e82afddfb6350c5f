/**
 * ClaimTable in one `Ref` (ST-1 — the in-memory tables), plus the ClaimsSnapshot the store writes
 * from. Every operation is a single `Ref.modify` with a pure function: nothing awaits inside, so no
 * other fiber can observe or change the state half-way through a check-and-set (CC-2 — ordering
 * under concurrency). The maps are `PersistentMap`s, so an event costs the same at 10,000 claims
 * as at 10 and every state handed out stays a consistent snapshot.
 */
import { Context, Effect, Layer, Option, Ref } from "effect"
import { type ClaimRow, claimStates } from "../Schemas/Claims.ts"
import type { PodKey } from "../Schemas/Ids.ts"
import { PersistentMap } from "../Schemas/PersistentMap.ts"
import { ClaimsSnapshot } from "../Services/ClaimsStore.ts"
import { ClaimTable, type ClaimTableState, type LostRow, podUidIsCurrent, type StorePodOutcome } from "../Services/ClaimTable.ts"
import { ClaimDoubts } from "../Services/ClaimDoubts.ts"
import { KnownSecrets } from "../Services/KnownSecrets.ts"
import { RowsView } from "../Store/RowsView.ts"
import { ClaimDoubtsRefLayer } from "./ClaimTableRef/ClaimDoubtsRef.ts"
import {
  adopted,
  handedOut,
  judged,
  keptPod,
  landedIn,
  markedLost,
  rowWithId,
  withoutPod,
  withoutRow,
  withPod,
  withRow
} from "./ClaimTableRef/Transitions.ts"

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
      modify((s) => adopted(s, key, pod, now)),

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
      modify((s) => markedLost(s, key, id, podUID, at)),

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
      modify((s) => judged(s, snapshot, listed, listedAt)),

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
      Ref.update(ref, (s) => landedIn(s, written))
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
