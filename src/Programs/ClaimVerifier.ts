/**
 * Quarantine and verification (VER-1 — quarantine at startup; VER-6 — the verification loop): a
 * listing that does not decode, `{}` included, is a failure and drops nothing. Only rows loaded
 * from disk are Quarantined and judged (VER-3 — only quarantined rows are judged). A row the
 * listing leaves out is judged only once its absence is confirmed (`Absence.ts`); its Pod
 * generation is then declared SandboxLost and the row kept as Lost (VER-7 — a lost sandbox's row
 * outlives restarts until its Pod is settled), so it is never silently given a new claim.
 */
import { DateTime, Effect, Option } from "effect"
import { AppConfig } from "../Services/Config.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import { ClaimTable, type QuarantineJudgement } from "../Services/ClaimTable.ts"
import { every } from "../Services/Loops.ts"
import { ProviderEvents } from "../Services/ProviderEvents.ts"
import { type ListedSandbox, SandboxdClient, type SandboxdListError } from "../Services/SandboxdClient.ts"
import { confirmAbsence, notePresent } from "./Absence.ts"
import { dropLostRow } from "./Provider/LostRows.ts"
import { declareSandboxLost } from "./SandboxLost.ts"

const nothingJudged: QuarantineJudgement = { lifted: [], lost: [] }

/** A sandboxd listing and the time it was asked for, from which an absence is dated (`Absence.ts`). */
export interface SandboxListing {
  readonly listedAt: DateTime.Utc
  readonly sandboxes: ReadonlyArray<ListedSandbox>
}

/** Asks sandboxd for its listing now. */
export const listSandboxesNow: Effect.Effect<SandboxListing, SandboxdListError, SandboxdClient> = Effect.gen(function*() {
  const sandboxd = yield* SandboxdClient
  const listedAt = yield* DateTime.now
  const sandboxes = yield* sandboxd.listSandboxes
  return { listedAt, sandboxes }
})

/**
 * One pass (VER-2 — a verification pass) judged by `listing`, which the pass runs at most once and
 * only when a row is quarantined. Snapshots (key → id) of the quarantined rows, then judges only
 * the rows that still carry the snapshotted id. Fails with SandboxdListError when the listing
 * fails, having changed nothing. Lifted keys are published so their Pods are retried.
 *
 * Every pass but the startup one lists when it runs (`verifyQuarantinedClaims`). The startup one
 * is handed a listing asked for before the claims file was read (`startClaims`; CFG-11 — start
 * order). That listing can judge the loaded rows: each was written before it was asked for, by an
 * earlier holder of the state lock this process already holds then, and nothing in this process
 * claims or releases until startup is done.
 */
export const verifyQuarantinedWith = <R>(listing: Effect.Effect<SandboxListing, SandboxdListError, R>) =>
  Effect.gen(function*() {
    const table = yield* ClaimTable
    const events = yield* ProviderEvents
    const state = yield* table.state
    const snapshot = new Map<PodKey, ClaimId>()
    state.rows.forEach((row, key) => {
      if (row.state._tag === "Quarantined") snapshot.set(key, row.record.id)
    })
    if (snapshot.size === 0) return nothingJudged
    const { listedAt, sandboxes } = yield* listing.pipe(
      Effect.tapError((err) =>
        Effect.logWarning("sandboxd list failed; claims stay unverified").pipe(Effect.annotateLogs({ error: err }))
      )
    )
    const listed = new Map<ClaimId, Option.Option<DateTime.Utc>>()
    for (const row of sandboxes) listed.set(row.id, row.deadline)
    // Listed pairs are judged as listed; every other one only once its absence is confirmed.
    const present: Array<ClaimId> = []
    const unlisted: Array<readonly [PodKey, ClaimId]> = []
    snapshot.forEach((id, key) => {
      if (listed.has(id)) present.push(id)
      else unlisted.push([key, id])
    })
    yield* notePresent(present)
    // Every pair is judged but those whose absence is not confirmed yet: the snapshot itself when
    // every id is listed (a restart's usual case), else a copy without them.
    let judged: Map<PodKey, ClaimId> = snapshot
    // One listing that leaves an id out proves nothing: only a confirmed absence is judged.
    for (const [key, id] of unlisted) {
      const verdict = yield* confirmAbsence(id, listedAt)
      switch (verdict._tag) {
        case "Present":
          listed.set(id, verdict.sandbox.deadline)
          break
        case "Gone":
          break
        case "Unconfirmed":
          if (judged === snapshot) judged = new Map(snapshot)
          judged.delete(key)
          yield* Effect.logInfo("claim not listed; its absence is not confirmed yet, keeping it").pipe(
            Effect.annotateLogs({ pod: key, claim: id, reason: verdict.reason })
          )
          break
      }
    }
    const judgement = yield* table.judgeQuarantined(judged, listed, listedAt)
    // Lost rows no tracked Pod stands for: only a run of their key ends them (VER-7), and nothing
    // else would queue one (the resync walks the cache's Pods; the first sync's pass is over).
    const podless: Array<PodKey> = []
    for (const { id, key } of judgement.lost) {
      yield* Effect.logInfo("a claim's sandbox is gone from the node; its row is kept as lost").pipe(
        Effect.annotateLogs({ pod: key, claim: id })
      )
      // The generation that last held it ran on it: it has lost its sandbox, and is not silently
      // given another under the same UID. A Pod of another generation tracked meanwhile owns the
      // key now: the row has nothing left to guard.
      const record = state.rows.get(key)?.record
      const current = yield* table.state
      const pod = Option.fromUndefinedOr(current.pods.get(key))
      if (record !== undefined && Option.match(pod, { onNone: () => true, onSome: (p) => (p.metadata?.uid ?? "") === record.podUID })) {
        yield* declareSandboxLost(key, record, Option.filter(pod, (p) => p.status?.phase === "Running"), listedAt)
        if (Option.isNone(pod)) podless.push(key)
      } else {
        yield* dropLostRow(key)
      }
    }
    yield* events.publishUnquarantined(judgement.lifted)
    yield* events.publishRetry(podless)
    return judgement
  }).pipe(Effect.withSpan("ClaimVerifier.pass"))

/** One pass (VER-2) on a listing asked for now. */
export const verifyQuarantinedClaims = verifyQuarantinedWith(listSandboxesNow)

/**
 * VER-6: a pass every `--claim-verify-interval`, the first one interval after start (startup
 * already ran one). Keeps going while a pass fails or anything is still quarantined; stops for
 * good once a pass succeeds with nothing left quarantined. Independent of the orphan scan.
 */
export const runClaimVerification = Effect.gen(function*() {
  const config = yield* AppConfig
  const table = yield* ClaimTable
  const settled = Effect.gen(function*() {
    const passed = yield* verifyQuarantinedClaims.pipe(
      Effect.as(true),
      Effect.catchTag("SandboxdListError", () => Effect.succeed(false))
    )
    const remaining = yield* table.quarantinedKeys
    return passed && remaining.length === 0
  })
  yield* every(config.claimVerifyInterval, settled, { until: (done) => done })
  yield* Effect.logDebug("claim verification settled; loop stopped")
}).pipe(Effect.annotateLogs({ component: "claim-verifier" }))
