/**
 * Bringing the claims table up (PER-8 — loading the file; VER-1 — quarantine at startup; PER-9 —
 * the mandatory startup write): load, back-fill claimedAt, quarantine every loaded row, put the
 * keys of leftover claim intents in doubt, one verification pass, then the mandatory write. A load
 * or that write failing is a startup error: a daemon that cannot persist would leak a VM per claim.
 * The pass's sandboxd listing is asked for before the load (CFG-11 — start order), so it arrives
 * while the file is decoded; `startClaims` asks for it itself, the daemon hands it to
 * `startClaimsWith`.
 */
import { DateTime, Effect, Fiber, Option } from "effect"
import type { ClaimRecord } from "../../Schemas/Claims.ts"
import type { PodKey } from "../../Schemas/Ids.ts"
import { ClaimsStore } from "../../Services/ClaimsStore.ts"
import { ClaimTable } from "../../Services/ClaimTable.ts"
import { markInDoubt } from "../ClaimDoubt.ts"
import type { StartupSummary } from "../../Services/Daemon.ts"
import { listSandboxesNow, type SandboxListing, verifyQuarantinedWith } from "../ClaimVerifier.ts"
import type { SandboxdListError } from "../../Services/SandboxdClient.ts"

export type { StartupSummary }

/**
 * The startup with `listing`, a sandboxd listing already asked for (with the state lock held):
 * only the pass below reads it (a later pass lists afresh), and only if a row is quarantined. Its
 * failure is the pass's failed listing. The caller lets go of it once this is done.
 */
export const startClaimsWith = (listing: Effect.Effect<SandboxListing, SandboxdListError>) => Effect.gen(function*() {
  const store = yield* ClaimsStore
  const table = yield* ClaimTable
  const loaded = yield* store.load
  // Held by the store (and written again below) until each one's claim is settled. Each names a
  // claim that may have made a VM no row records: its key is in doubt before any Pod is seen, so
  // the key takes no new work (no claim, no release) until the doubt is resolved.
  const intents = yield* store.intents
  // CRT-22 — the settle window counts from when a claim was abandoned: the previous process may
  // have sent its claim at any time before it stopped, after waiting for a permit, so the settle
  // window counts from this load.
  const loadedAt = yield* DateTime.now
  for (const intent of intents.values()) {
    yield* markInDoubt({ key: intent.key, podUid: intent.podUID, startedAt: intent.sentAt, abandonedAt: loadedAt })
  }
  // One shared "now" for every back-filled row; the write below makes it the stable start time.
  const now = yield* DateTime.now
  let backfilled = 0
  for (const record of loaded.values()) if (Option.isNone(record.claimedAt)) backfilled++
  // Copied only when a row changes: a file this daemon wrote has claimedAt on every row.
  const rows = backfilled === 0 ? loaded : new Map<PodKey, ClaimRecord>(
    Array.from(loaded, ([key, record]) => [key, Option.isNone(record.claimedAt) ? { ...record, claimedAt: Option.some(now) } : record])
  )
  yield* table.loadQuarantined(rows)
  const verified = yield* verifyQuarantinedWith(listing).pipe(
    Effect.as(true),
    Effect.catchTag("SandboxdListError", () => Effect.succeed(false))
  )
  yield* store.commit(Option.none())
  const quarantined = (yield* table.quarantinedKeys).length
  yield* Effect.logInfo("claims table loaded").pipe(
    Effect.annotateLogs({ path: store.path, loaded: loaded.size, backfilled, verified, quarantined, intents: intents.size })
  )
  const summary: StartupSummary = { loaded: loaded.size, backfilled, verified, quarantined, intents: intents.size }
  return summary
}).pipe(Effect.withSpan("Provider.startClaims"))

/**
 * The startup asking for its own listing first, and letting go of it when startup ends
 * (interrupted if no row needed it).
 */
export const startClaims = Effect.gen(function*() {
  const listing = yield* Effect.forkScoped(listSandboxesNow)
  return yield* startClaimsWith(Fiber.join(listing))
}).pipe(Effect.scoped)
