/**
 * The audit-only orphan scan (ORPH-1 — orphan scan cadence; ORPH-4 — orphan scan logs changes
 * only): sandboxd's listing against the claims table, reported and never acted on, since background
 * reconciliation cannot prove user intent. A failed listing skips the cycle. Strays (listed
 * sandboxes with one of this node's pod keys as claim_ref that no row holds; ORPH-5 — keys in
 * doubt are this node's) are counted every cycle and each new one is a Warning Event on the Node.
 */
import { Duration, Effect, Metric, Ref } from "effect"
import { AppConfig } from "../Services/Config.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import { ClaimDoubts } from "../Services/ClaimDoubts.ts"
import { ClaimTable, type ClaimTableState } from "../Services/ClaimTable.ts"
import { every } from "../Services/Loops.ts"
import { EventRecorder } from "../Services/EventRecorder.ts"
import { type ListedSandbox, SandboxdClient } from "../Services/SandboxdClient.ts"
import { straySandboxes } from "../Services/Metrics.ts"

export type OrphanVerdict =
  | { readonly _tag: "Orphan"; readonly id: ClaimId } // listed, no claim of ours, no claim_ref
  | { readonly _tag: "Stray"; readonly id: ClaimId; readonly pod: PodKey } // claim_ref is our pod key, id is not its claim
  | { readonly _tag: "External"; readonly id: ClaimId; readonly claimRef: string } // claimed outside this daemon
  | { readonly _tag: "Stale"; readonly id: ClaimId; readonly pod: PodKey } // our claim, no longer listed

const verdictKey = (v: OrphanVerdict) => `${v._tag}:${v.id}`

/** One comparison; pure. `inDoubt`: the keys whose claim outcome is unknown (`ClaimDoubts`). */
export const judge = (
  state: ClaimTableState,
  listed: ReadonlyArray<ListedSandbox>,
  inDoubt: Iterable<PodKey>
): ReadonlyArray<OrphanVerdict> => {
  const claimed = new Map<ClaimId, PodKey>()
  for (const [key, row] of state.rows) claimed.set(row.record.id, key)
  // ORPH-5: a key in doubt is this node's too, though it may have neither a row nor a tracked Pod
  // (a lost claim reply leaves no row, and the pod controller tracks a Pod only once it runs): a
  // VM carrying it is exactly the stray a lost reply leaves, never someone else's.
  // By their text, so a listing's claim_ref finds the key itself (no brand made from wire text).
  const localKeys = new Map<string, PodKey>()
  for (const key of [...state.rows.keys(), ...state.pods.keys(), ...inDoubt]) localKeys.set(key, key)
  const listedIds = new Set<ClaimId>()
  const verdicts: Array<OrphanVerdict> = []
  for (const row of listed) {
    listedIds.add(row.id)
    if (claimed.has(row.id)) continue
    if (row.claimRef === "") verdicts.push({ _tag: "Orphan", id: row.id })
    else {
      const local = localKeys.get(row.claimRef)
      verdicts.push(local === undefined ? { _tag: "External", id: row.id, claimRef: row.claimRef } : { _tag: "Stray", id: row.id, pod: local })
    }
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
  /** One cycle: the verdicts it found, or undefined when the listing failed and the cycle was skipped. */
  readonly scanOnce: Effect.Effect<ReadonlyArray<OrphanVerdict> | undefined>
}

/** At most this many ids are named in one stray Event (the gauge has the full count). */
const STRAYS_NAMED = 10

export const make = Effect.gen(function*() {
  const table = yield* ClaimTable
  const doubts = yield* ClaimDoubts
  const sandboxd = yield* SandboxdClient
  const config = yield* AppConfig
  const recorder = yield* Effect.serviceOption(EventRecorder)
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
    // Doubts before the table: one settled in between has already made its row when the table is read.
    const inDoubt = yield* doubts.all
    const verdicts = judge(yield* table.state, listed.value, inDoubt.keys())
    const seen = yield* Ref.get(previous)
    const fresh = verdicts.filter((v) => !seen.has(verdictKey(v)))
    yield* Effect.forEach(fresh, report, { discard: true })
    yield* Ref.set(previous, new Set(verdicts.map(verdictKey)))
    yield* Metric.update(straySandboxes, verdicts.filter((v) => v._tag === "Stray").length)
    const newStrays = fresh.flatMap((v) => v._tag === "Stray" ? [`${v.id} (${v.pod})`] : [])
    if (newStrays.length > 0 && recorder._tag === "Some") {
      const named = newStrays.slice(0, STRAYS_NAMED).join(", ")
      const more = newStrays.length > STRAYS_NAMED ? ` and ${newStrays.length - STRAYS_NAMED} more` : ""
      yield* recorder.value.record(
        { kind: "Node", namespace: "", name: config.nodeName, uid: "" },
        "Warning",
        "StraySandboxes",
        `sandboxd holds ${newStrays.length} sandbox(es) carrying this node's pod claim_refs that no claim holds: ${named}${more}; audit-only, not released`
      )
    }
    return verdicts
  }).pipe(Effect.withSpan("OrphanScanner.scanOnce"))

  return { scanOnce } satisfies OrphanScanner
})

/** Every `--orphan-scan-interval`, the first one interval after start; zero disables (ORPH-1). */
export const run = Effect.gen(function*() {
  const config = yield* AppConfig
  if (Duration.toMillis(config.orphanScanInterval) <= 0) return
  const scanner = yield* make
  yield* every(config.orphanScanInterval, scanner.scanOnce)
})
