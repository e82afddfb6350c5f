/**
 * The provider's in-memory state (ST-1 — the in-memory tables): the last accepted Pod per
 * key and the claim row per key, each row tagged Durable | Tentative | Quarantined.
 *
 * Every operation here is one atomic update with no await inside (CC-2 — ordering under
 * concurrency, e): a check-and-set reads and writes the state in a single step, so nothing read can
 * be stale when written back. Steps that wait on sandboxd snapshot (key, id) first and call the
 * id-guarded operations afterwards. The live layer is `Layers/ClaimTableRef.ts`, which also
 * provides ClaimsSnapshot.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Context, type DateTime, type Effect, type Option } from "effect"
import type { ClaimRecord, ClaimRow } from "../Schemas/Claims.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import type { PersistentMap } from "../Schemas/PersistentMap.ts"
import type { Pod } from "../Schemas/Pod/Schema.ts"

export interface ClaimTableState {
  /** The last accepted Pod per key: its slim facts only (`acceptedPodOf`), a private copy. */
  readonly pods: PersistentMap<PodKey, Pod>
  readonly rows: PersistentMap<PodKey, ClaimRow>
}

/**
 * What one verification pass did to the quarantined rows it judged (VER-2 — a verification pass,
 * step 5).
 */
export interface QuarantineJudgement {
  /** Listed: now Durable. */
  readonly lifted: ReadonlyArray<PodKey>
  /**
   * Not listed (the caller passes only pairs whose absence is confirmed): now Lost (VER-7 — a lost
   * sandbox's row outlives restarts until its Pod is settled).
   */
  readonly lost: ReadonlyArray<{ readonly key: PodKey; readonly id: ClaimId }>
}

export type StorePodOutcome = "Stored" | "StaleUid"

/**
 * A Lost row (VER-7): its record, and whether its lease had run out when its VM was found gone
 * (LEASE-10 — a lease that ran out while the daemon was down ends the Pod as lease-expired).
 */
export interface LostRow {
  readonly record: ClaimRecord
  readonly leaseEnded: boolean
}

/** What one adoption did (CRT-4 — atomic adoption). */
export interface Adoption {
  /** The claim as the row now holds it. */
  readonly record: ClaimRecord
  /**
   * The row's Pod UID before: the Pod's own when the same Pod is re-attached (its row loaded
   * again after a restart, or a create repeated), another Pod's when a replacement takes over.
   */
  readonly previousPodUID: string
  /**
   * False when nothing in the record changed (the same Pod UID, claimedAt already set): the row
   * keeps its very record object, and there is nothing for a write to carry.
   */
  readonly changed: boolean
}

export class ClaimTable extends Context.Service<ClaimTable, {
  /** An immutable snapshot of the whole state. */
  readonly state: Effect.Effect<ClaimTableState>
  /** A copy of the tracked Pod. */
  readonly pod: (key: PodKey) => Effect.Effect<Option.Option<V1Pod>>
  /**
   * The durable lookup (ST-2 — settled vs held lookups: `claimFor`): the claim only when its row is
   * settled (Durable).
   */
  readonly durable: (key: PodKey) => Effect.Effect<Option.Option<ClaimRecord>>
  /** The held lookup (ST-2 `heldClaimFor`): the row whatever its state; release paths use it. */
  readonly held: (key: PodKey) => Effect.Effect<Option.Option<ClaimRow>>
  /** Keys whose rows are still Quarantined. */
  readonly quarantinedKeys: Effect.Effect<ReadonlyArray<PodKey>>

  /**
   * Startup: replace the table with the loaded rows, every one Quarantined (VER-1 — quarantine at
   * startup).
   */
  readonly loadQuarantined: (rows: ReadonlyMap<PodKey, ClaimRecord>) => Effect.Effect<void>
  /**
   * CRT-3 — CreatePod's decision order, step 9: the fresh claim and its Pod, the row Tentative
   * until its own commit lands.
   */
  readonly recordTentative: (key: PodKey, record: ClaimRecord, pod: V1Pod) => Effect.Effect<void>
  /**
   * CRT-4 adoption: only a Durable row is adopted. Rebinds podUID, fills a missing claimedAt
   * with `now`, and tracks `pod`. Returns what it did, or None when not adoptable.
   */
  readonly adopt: (key: PodKey, pod: V1Pod, now: DateTime.Utc) => Effect.Effect<Option.Option<Adoption>>
  /**
   * CRT-13 — ID-guarded withdraw: when the row still carries `id`, remove it and the
   * tracked Pod. A row that changed hands is left alone (its tentative marker belongs to the newer
   * claim).
   */
  readonly withdraw: (key: PodKey, id: ClaimId) => Effect.Effect<boolean>
  /**
   * LEASE-6 — refreshing a deadline: when the row still carries `id`, set its deadline to the
   * listing's (None = keep forever).
   */
  readonly refreshDeadline: (key: PodKey, id: ClaimId, deadline: Option.Option<DateTime.Utc>) => Effect.Effect<boolean>
  /**
   * LEASE-5 — settling an expired claim before reuse, the drop: when the row still carries `id`,
   * remove the claim (the tracked Pod stays).
   */
  readonly dropClaim: (key: PodKey, id: ClaimId) => Effect.Effect<boolean>
  /**
   * VER-7: when the row still carries `id` and is not Tentative, it becomes Lost, naming
   * `podUID` as the generation that lost it; `at` is when its VM was found gone, which decides
   * `leaseEnded` (LEASE-10) unless the row was Lost already. Returns the row as it now is, or None.
   */
  readonly markLost: (key: PodKey, id: ClaimId, podUID: string, at: DateTime.Utc) => Effect.Effect<Option.Option<LostRow>>
  /** The Lost row of `key`, if it has one. */
  readonly lost: (key: PodKey) => Effect.Effect<Option.Option<LostRow>>
  /**
   * VER-7: removes the row of `key` when it is Lost (and, with `podUID`, names that generation);
   * the tracked Pod stays. Returns whether a row went.
   */
  readonly dropLost: (key: PodKey, podUID?: string) => Effect.Effect<boolean>
  /** Keys whose rows are Lost (a pass over the rows: for the first sync only). */
  readonly lostKeys: Effect.Effect<ReadonlyArray<PodKey>>
  /**
   * VER-2 step 5, for the (key → id) pairs snapshotted before the listing. A pair whose row is
   * gone, carries another id, or is no longer Quarantined is skipped. Listed → Durable, with the
   * listed deadline filling a missing one; not listed → Lost (VER-7), its lease judged ended or
   * not at `listedAt` (LEASE-10).
   */
  readonly judgeQuarantined: (
    snapshot: ReadonlyMap<PodKey, ClaimId>,
    listed: ReadonlyMap<ClaimId, Option.Option<DateTime.Utc>>,
    listedAt: DateTime.Utc
  ) => Effect.Effect<QuarantineJudgement>
  /**
   * UPD-1 — UpdatePod: store a copy of `pod` unless it is an older generation (ST-4 — stale-UID
   * guard).
   */
  readonly storePod: (key: PodKey, pod: V1Pod) => Effect.Effect<StorePodOutcome>
  /** Any other atomic check-and-set (DeletePod's converge). `f` must be pure. */
  readonly modify: <A>(f: (state: ClaimTableState) => readonly [A, ClaimTableState]) => Effect.Effect<A>
}>()("vk-sandbox/ClaimTable") {}

/** ST-4: a request is current when no Pod is tracked for its key or the tracked Pod has its UID. */
export const podUidIsCurrent = (state: ClaimTableState, key: PodKey, uid: string): boolean => {
  const tracked = state.pods.get(key)
  return tracked === undefined || (tracked.metadata?.uid ?? "") === uid
}
