/**
 * The audit-only orphan scan (ORPH-1, ORPH-4). It compares sandboxd's
 * listing with the claims table and only reports: background reconciliation cannot prove user
 * intent, so it never releases, drops or changes anything. A failed listing skips the cycle:
 * a failed query is not an empty list.
 */
import { Duration, Effect, Ref, Schedule } from "effect"
import { AppConfig } from "../Services/Config.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import { ClaimTable, type ClaimTableState } from "../Services/ClaimTable.ts"
import { type ListedSandbox, SandboxdClient } from "../Services/SandboxdClient.ts"

export type OrphanVerdict =
  | { readonly _tag: "Orphan"; readonly id: ClaimId } // listed, no claim of ours, no claim_ref
  | { readonly _tag: "Stray"; readonly id: ClaimId; readonly pod: PodKey } // claim_ref is our pod key, id is not its claim
  | { readonly _tag: "External"; readonly id: ClaimId; readonly claimRef: string } // claimed outside this daemon
  | { readonly _tag: "Stale"; readonly id: ClaimId; readonly pod: PodKey } // our claim, no longer listed

const verdictKey = (v: OrphanVerdict) => `${v._tag}:${v.id}`

/** One comparison; pure. */
export const judge = (state: ClaimTableState, listed: ReadonlyArray<ListedSandbox>): ReadonlyArray<OrphanVerdict> => {
  const claimed = new Map<ClaimId, PodKey>()
  for (const [key, row] of state.rows) claimed.set(row.record.id, key)
  const localKeys = new Set<string>([...state.rows.keys(), ...state.pods.keys()])
  const listedIds = new Set<ClaimId>()
  const verdicts: Array<OrphanVerdict> = []
  for (const row of listed) {
    listedIds.add(row.id)
    if (claimed.has(row.id)) continue
    if (row.claimRef === "") verdicts.push({ _tag: "Orphan", id: row.id })
    else if (localKeys.has(row.claimRef)) verdicts.push({ _tag: "Stray", id: row.id, pod: row.claimRef as PodKey })
    else verdicts.push({ _tag: "External", id: row.id, claimRef: row.claimRef })
  }
  for (const [id, key] of claimed) if (!listedIds.has(id)) verdicts.push({ _tag: "Stale", id, pod: key })
  return verdicts
}

const report = (v: OrphanVerdict) => {
  switch (v._tag) {
    case "Orphan":
      return Effect.logInfo("possible orphan; audit-only, retaining").pipe(Effect.annotateLogs({ sandbox: v.id }))
    case "Stray":
      return Effect.logInfo("possible orphan: a stray claim for a pod of this node (lost claim response?); audit-only, retaining")
        .pipe(Effect.annotateLogs({ sandbox: v.id, pod: v.pod }))
    case "External":
      return Effect.logInfo("claimed outside this provider; not an orphan candidate").pipe(
        Effect.annotateLogs({ sandbox: v.id, claimRef: v.claimRef })
      )
    case "Stale":
      return Effect.logInfo("claim references a sandbox no longer on the node").pipe(
        Effect.annotateLogs({ sandbox: v.id, pod: v.pod })
      )
  }
}

export interface OrphanScanner {
  /** One cycle: the verdicts it found, or None when the listing failed and the cycle was skipped. */
  readonly scanOnce: Effect.Effect<ReadonlyArray<OrphanVerdict> | undefined>
}

export const make = Effect.gen(function*() {
  const table = yield* ClaimTable
  const sandboxd = yield* SandboxdClient
  /** The previous successful cycle's verdicts: a verdict is logged only when it is new (ORPH-4). */
  const previous = yield* Ref.make(new Set<string>())

  const scanOnce = Effect.gen(function*() {
    const listed = yield* sandboxd.listSandboxes.pipe(
      Effect.tapError((error) =>
        Effect.logWarning("sandboxd list failed; skipping orphan scan this cycle (failed query is not an empty list)").pipe(
          Effect.annotateLogs({ error })
        )
      ),
      Effect.option
    )
    if (listed._tag === "None") return undefined
    const verdicts = judge(yield* table.state, listed.value)
    const seen = yield* Ref.get(previous)
    yield* Effect.forEach(verdicts.filter((v) => !seen.has(verdictKey(v))), report, { discard: true })
    yield* Ref.set(previous, new Set(verdicts.map(verdictKey)))
    return verdicts
  }).pipe(Effect.withSpan("OrphanScanner.scanOnce"))

  return { scanOnce } satisfies OrphanScanner
})

/** Every `--orphan-scan-interval`, the first one interval after start; zero disables (ORPH-1). */
export const run = Effect.gen(function*() {
  const config = yield* AppConfig
  if (Duration.toMillis(config.orphanScanInterval) <= 0) return
  const scanner = yield* make
  yield* scanner.scanOnce.pipe(
    Effect.delay(config.orphanScanInterval),
    Effect.repeat(Schedule.forever),
    Effect.asVoid
  )
})
