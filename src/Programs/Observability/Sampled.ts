/**
 * The gauges that are sampled at the scrape rather than updated where things happen: the claims
 * table by row state, the Pods of the node by phase, why sandboxd cannot serve, and the claims in
 * doubt whose settle window has passed. Each is a count over state kept elsewhere (the table, the
 * informer's cache, the probe's last answer, the doubt set), read once per scrape, so the paths
 * that change that state pay nothing for it.
 *
 * Rules: MON-4 — a gauge over state kept elsewhere is counted at the scrape.
 */
import { DateTime, Effect, Metric } from "effect"
import type { AppConfigShape } from "../../Schemas/Config.ts"
import type { ClaimDoubts } from "../../Services/ClaimDoubts.ts"
import type { ClaimTable } from "../../Services/ClaimTable.ts"
import type { PodControllerHandle } from "../../Services/Daemon.ts"
import {
  claimsByState,
  claimsHeld,
  claimsInDoubtPastSettle,
  claimStateLabel,
  labelled,
  podPhases,
  podsByPhase,
  quarantinedClaims,
  sandboxdUnavailable,
  sandboxdUnavailableReasons
} from "../../Services/Metrics.ts"
import type { SandboxdReachability } from "../../Services/NodeController.ts"
import { settlesAt } from "../ClaimDoubt.ts"

export interface SampledSources {
  readonly table: ClaimTable["Service"]
  readonly doubts: ClaimDoubts["Service"]
  readonly sandboxd: Effect.Effect<SandboxdReachability>
  readonly pods: PodControllerHandle["cachedPods"]
  readonly config: Pick<AppConfigShape, "sandboxdTimeout" | "claimSettleTime">
}

type Phase = typeof podPhases[number]
const isPhase = (phase: string): phase is Phase => (podPhases as ReadonlyArray<string>).includes(phase)

/** Refreshes every sampled gauge; run before each scrape. */
export const sample = (sources: SampledSources): Effect.Effect<void> =>
  Effect.gen(function*() {
    const state = yield* sources.table.state
    yield* Metric.update(claimsHeld, state.rows.size)
    // Every row state has its label; a Lost row (VER-7 — a lost sandbox's row outlives restarts
    // until its Pod is settled) holds no VM, but an operator sees how many rows wait for their Pod
    // to be settled under state="lost".
    const byState = { Durable: 0, Tentative: 0, Quarantined: 0, Lost: 0 }
    for (const row of state.rows.values()) byState[row.state._tag] += 1
    yield* Metric.update(quarantinedClaims, byState.Quarantined)
    // Claims in doubt are not rows (no token is known): vk_sandbox_claims_in_doubt counts them.
    for (const [tag, label] of Object.entries(claimStateLabel)) {
      yield* Metric.update(labelled(claimsByState, { state: label }), byState[tag as keyof typeof claimStateLabel])
    }

    // A Pod the apiserver has not given a phase yet is Pending, as the apiserver itself defaults it.
    const byPhase: Record<Phase, number> = { Pending: 0, Running: 0, Succeeded: 0, Failed: 0, Unknown: 0 }
    for (const pod of yield* sources.pods) {
      const phase = pod.status?.phase ?? "Pending"
      byPhase[isPhase(phase) ? phase : "Unknown"] += 1
    }
    for (const phase of podPhases) yield* Metric.update(labelled(podsByPhase, { phase }), byPhase[phase])

    const reachability = yield* sources.sandboxd
    for (const reason of sandboxdUnavailableReasons) {
      const now = reachability._tag === "Unavailable" && reachability.reason === reason ? 1 : 0
      yield* Metric.update(labelled(sandboxdUnavailable, { reason }), now)
    }

    // The settle window (CRT-22 — the settle window counts from when a claim was abandoned), the
    // same instant the settling itself waits for: past it, the next listing that answers settles
    // the key, so a doubt that outlives it means sandboxd cannot be listed or holds a VM of the
    // attempt the daemon can neither adopt nor release.
    const now = yield* DateTime.now
    let pastSettle = 0
    for (const doubt of (yield* sources.doubts.all).values()) {
      if (!DateTime.isLessThan(now, settlesAt(doubt, sources.config))) pastSettle += 1
    }
    yield* Metric.update(claimsInDoubtPastSettle, pastSettle)
  })
