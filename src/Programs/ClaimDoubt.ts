/**
 * Settling claims whose outcome is unknown. sandboxd's listing, filtered locally by `claim_ref`, is
 * the only witness: a listed sandbox with the key's `claim_ref`, recorded under no key and made at
 * or after the attempt began (CRT-24 — a VM made in the attempt's first second is the attempt's)
 * is the attempt's. The first whose token the root by-id read gives is adopted; every other is
 * released by id and kept as a stray until a listing shows it gone (a 404 proves nothing). With
 * none found, the doubt ends only with a listing taken `--claim-settle-time` after the attempt was
 * abandoned (CRT-22 — the settle window counts from when a claim was abandoned).
 */
import { Cause, DateTime, Effect, Exit, Metric, Option } from "effect"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import { claimStates } from "../Schemas/Claims.ts"
import { type AppConfigShape, effectiveSettleTime } from "../Schemas/Config.ts"
import { AppConfig } from "../Services/Config.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import { ClaimDoubts, type Doubt } from "../Services/ClaimDoubts.ts"
import { ClaimsStore, ClaimsWriteError } from "../Services/ClaimsStore.ts"
import { ClaimTable } from "../Services/ClaimTable.ts"
import { type ListedSandbox, SandboxdClient } from "../Services/SandboxdClient.ts"
import { claimsInDoubt } from "../Services/Metrics.ts"

export type DoubtResolution =
  /** The key was not in doubt. */
  | { readonly _tag: "NotInDoubt" }
  /** The attempt's sandbox is now recorded durably under the key; extras were released or reported. */
  | { readonly _tag: "Adopted"; readonly record: ClaimRecord; readonly strays: ReadonlyArray<ClaimId> }
  /** A listing after the settle time shows no sandbox of the attempt: the key may claim again. */
  | { readonly _tag: "Absent" }
  /** Still in doubt; `strays` are the attempt's sandboxes that could be neither adopted nor released. */
  | { readonly _tag: "Pending"; readonly reason: string; readonly strays: ReadonlyArray<ClaimId> }

/**
 * Puts `key` in doubt: a claim for it was (or may have been) sent at `startedAt` for Pod generation
 * `podUid`, and no token came back by `abandonedAt`. Call it before the key can take new work;
 * CreatePod then refuses to claim for the key until `resolveDoubt` settles it.
 */
export const markInDoubt = (doubt: {
  readonly key: PodKey
  readonly podUid: string
  readonly startedAt: DateTime.Utc
  readonly abandonedAt: DateTime.Utc
}) =>
  ClaimDoubts.use((doubts) => Effect.andThen(doubts.add(doubt), publishDoubtCount))

/** The `vk_sandbox_claims_in_doubt` gauge follows the doubt set. */
const publishDoubtCount = ClaimDoubts.use((doubts) =>
  Effect.flatMap(doubts.all, (all) => Metric.update(claimsInDoubt, all.size))
)

const madeAt = (row: ListedSandbox, seen: ReadonlyMap<ClaimId, DateTime.Utc>): DateTime.Utc | undefined =>
  row.claimedAt ?? seen.get(row.id)

/**
 * CRT-24: whether a sandbox made at `made` may be the attempt begun at `startedAt`. sandboxd may
 * write `claimed_at` without fractions (Go's RFC 3339 layout drops them), so one at a whole second
 * is compared with the second the attempt began in: compared with the instant, a VM made within
 * the attempt's first second read as older than the attempt, the doubt settled Absent, and the key
 * claimed a second VM while the first was left with no row.
 */
export const madeSinceAttempt = (made: DateTime.Utc, startedAt: DateTime.Utc): boolean => {
  const madeMillis = DateTime.toEpochMillis(made)
  const startedMillis = DateTime.toEpochMillis(startedAt)
  return madeMillis >= (madeMillis % 1000 === 0 ? startedMillis - (((startedMillis % 1000) + 1000) % 1000) : startedMillis)
}

/** Records `record` under `key` and waits for the write; withdraws it when the write fails. */
const recordDurably = (key: PodKey, record: ClaimRecord) =>
  Effect.gen(function*() {
    const table = yield* ClaimTable
    const store = yield* ClaimsStore
    const inserted = yield* table.modify((s) => {
      if (s.rows.has(key)) return [false, s] as const
      return [true, { ...s, rows: s.rows.with(key, { record, state: claimStates.Tentative }) }] as const
    })
    if (!inserted) return false
    const committed = yield* Effect.exit(store.commit(Option.some(key)))
    if (Exit.isSuccess(committed)) return true
    yield* table.dropClaim(key, record.id)
    return yield* Effect.fail(
      Option.getOrElse(Cause.findErrorOption(committed.cause), () =>
        new ClaimsWriteError({
          path: store.path,
          operation: "commit",
          message: "the commit of an adopted sandbox did not land"
        }))
    )
  }).pipe(Effect.uninterruptible)

/**
 * The first instant a listing may prove that the attempt made no VM, counted from when the attempt
 * was abandoned, not from when it was sent (CRT-22). A claim may wait for a connection permit
 * before its request (and its timeout) even starts, so `startedAt + timeout` can pass while
 * sandboxd is still making the VM.
 */
export const settlesAt = (
  doubt: Pick<Doubt, "startedAt" | "abandonedAt">,
  config: Pick<AppConfigShape, "sandboxdTimeout" | "claimSettleTime">
): DateTime.Utc =>
  DateTime.addDuration(
    DateTime.max(DateTime.addDuration(doubt.startedAt, config.sandboxdTimeout), doubt.abandonedAt),
    effectiveSettleTime(config)
  )

/**
 * One attempt to settle the doubt of `key`, safe to call at any time and repeatedly. createPod and
 * deletePod call it for a Pod the controller sees, and `Provider/SettleGone.ts` for a key whose Pod
 * is gone (DEL-3 — a claim in doubt is settled even when its Pod never comes back), each in the
 * key's own serialized runs. A failed listing or by-id read (`SandboxdListError`) or an adoption
 * that could not be recorded (`ClaimsWriteError`) leaves the key in doubt.
 */
export const resolveDoubt = Effect.fn("ClaimDoubt.resolve")(function*(key: PodKey) {
  const doubts = yield* ClaimDoubts
  const table = yield* ClaimTable
  const sandboxd = yield* SandboxdClient
  const config = yield* AppConfig
  const store = yield* ClaimsStore
  const found = yield* doubts.get(key)
  if (Option.isNone(found)) return { _tag: "NotInDoubt" } as DoubtResolution
  const doubt = found.value
  // The listing shows sandboxd's state at some moment after this one.
  const listedAt = yield* DateTime.now
  const rows = yield* sandboxd.listByClaimRef(key)
  const seen = yield* doubts.noteSeen(rows.map((row) => row.id), listedAt)
  const listed = new Set(rows.map((row) => row.id))
  const releasing = doubt.releasing.filter((id) => listed.has(id))
  const state = yield* table.state
  const recorded = new Set<ClaimId>(Array.from(state.rows.values(), (row) => row.record.id))
  const candidates = rows
    .filter((row) => {
      if (recorded.has(row.id) || releasing.includes(row.id)) return false
      const made = madeAt(row, seen)
      return made !== undefined && madeSinceAttempt(made, doubt.startedAt)
    })
    .sort((a, b) => DateTime.toEpochMillis(madeAt(a, seen)!) - DateTime.toEpochMillis(madeAt(b, seen)!))

  let adopted: ClaimRecord | undefined
  let keyHeld = state.rows.has(key)
  const stuck: Array<ClaimId> = []
  for (const row of candidates) {
    if (!keyHeld) {
      const lookup = yield* sandboxd.getSandbox(row.id)
      if (lookup._tag === "Gone") continue
      if (lookup._tag === "Found" && Option.isSome(lookup.token)) {
        const record: ClaimRecord = {
          id: row.id,
          token: lookup.token.value,
          // The listing carries no owner address; the claim reply's is the node's advertised one.
          address: config.sandboxdAdvertiseAddr,
          podUID: doubt.podUid,
          claimedAt: Option.some(row.claimedAt ?? listedAt),
          deadline: lookup.sandbox.deadline
        }
        if (yield* recordDurably(key, record)) {
          adopted = record
          keyHeld = true
          yield* Effect.logInfo("adopted the sandbox of a claim whose reply was lost").pipe(
            Effect.annotateLogs({ pod: key, claim: row.id })
          )
          continue
        }
        keyHeld = true
      }
    }
    const released = yield* Effect.result(sandboxd.releaseAsRoot(row.id))
    if (released._tag === "Success" && released.success === "Released") {
      releasing.push(row.id)
      yield* Effect.logInfo("released an extra sandbox of a claim whose outcome was unknown").pipe(
        Effect.annotateLogs({ pod: key, claim: row.id })
      )
    } else {
      stuck.push(row.id)
      yield* Effect.logWarning("a sandbox of a claim whose outcome was unknown can be neither adopted nor released").pipe(
        Effect.annotateLogs({
          pod: key,
          claim: row.id,
          ...(released._tag === "Success" ? { reason: "root release answered 404 (not proof of release)" } : { error: released.failure })
        })
      )
    }
  }

  if (adopted !== undefined) {
    // The key holds a VM again and will not claim: extras are released or left to the orphan scan.
    // (The adoption's own write already left the claim's intent out of the file.)
    yield* doubts.clear(key)
    yield* store.settleIntent(key)
    yield* publishDoubtCount
    return { _tag: "Adopted", record: adopted, strays: stuck } as DoubtResolution
  }
  yield* doubts.update(key, (d) => ({ ...d, releasing, stuck }))
  if (stuck.length > 0) {
    return {
      _tag: "Pending",
      reason: `sandbox ${stuck.join(", ")} carries this pod's claim_ref, and sandboxd gives neither its token nor a release by id`,
      strays: stuck
    } as DoubtResolution
  }
  if (releasing.length > 0) {
    return {
      _tag: "Pending",
      reason: `waiting for a listing to confirm the release of ${releasing.join(", ")}`,
      strays: []
    } as DoubtResolution
  }
  const settledAt = settlesAt(doubt, config)
  if (DateTime.isLessThan(listedAt, settledAt)) {
    return {
      _tag: "Pending",
      reason: `sandboxd may still be making the VM of the attempt sent at ${
        DateTime.formatIso(doubt.startedAt)
      } and abandoned at ${DateTime.formatIso(doubt.abandonedAt)}; no listing before ${
        DateTime.formatIso(settledAt)
      } can prove it made none`,
      strays: []
    } as DoubtResolution
  }
  yield* doubts.clear(key)
  // The claim's intent leaves the file with the next write: nothing is left for it to guard.
  yield* store.settleIntent(key)
  yield* publishDoubtCount
  yield* Effect.logInfo("a claim whose outcome was unknown made no sandbox").pipe(Effect.annotateLogs({ pod: key }))
  return { _tag: "Absent" } as DoubtResolution
})

