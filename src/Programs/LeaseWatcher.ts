/**
 * The lease watch (reference LEASE-4, LEASE-6, LEASE-7): every `--lease-watch-interval`, Pods
 * whose settled claim is at or past its deadline are pushed Failed/SandboxLeaseExpired, but
 * only once sandboxd's listing confirms the VM is gone. A listed one gets the listing's
 * deadline instead (archive rewrites leases). A failed listing defers everything. Nothing is
 * dropped or released here; a later authorized delete does that.
 */
import { EventRecorder, involvedPod } from "../Services/EventRecorder.ts"
import { leaseExpiries } from "../Services/Metrics.ts"
import type { V1Pod } from "@kubernetes/client-node"
import { DateTime, Effect, Metric, Option, Schedule } from "effect"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import { AppConfig } from "../Services/Config.ts"
import type { PodKey } from "../Schemas/Ids.ts"
import { ClaimTable } from "../Services/ClaimTable.ts"
import { ProviderEvents } from "../Services/Provider.ts"
import { SandboxdClient } from "../Services/SandboxdClient.ts"
import { leaseExpiredPod } from "./Provider/Status.ts"

export interface LeaseWatchOutcome {
  readonly published: ReadonlyArray<PodKey>
  readonly refreshed: ReadonlyArray<PodKey>
  readonly deferred: boolean
}

/** One tick (LEASE-4 steps 1–6). */
export const publishExpiredLeases = Effect.gen(function*() {
  const table = yield* ClaimTable
  const sandboxd = yield* SandboxdClient
  const events = yield* ProviderEvents
  const recorder = yield* Effect.serviceOption(EventRecorder)
  const now = yield* DateTime.now
  const state = yield* table.state
  const candidates: Array<{ key: PodKey; claim: ClaimRecord }> = []
  for (const [key, row] of state.rows) {
    const deadline = row.record.deadline
    if (row.state._tag !== "Durable" || Option.isNone(deadline) || !state.pods.has(key)) continue
    if (DateTime.isGreaterThanOrEqualTo(now, deadline.value)) candidates.push({ key, claim: row.record })
  }
  const outcome = (published: Array<PodKey>, refreshed: Array<PodKey>, deferred: boolean): LeaseWatchOutcome => ({
    published,
    refreshed,
    deferred
  })
  if (candidates.length === 0) return outcome([], [], false)
  const listing = yield* Effect.result(sandboxd.listSandboxes)
  if (listing._tag === "Failure") {
    yield* Effect.logWarning("sandboxd list failed; deferring lease-expiry publication").pipe(
      Effect.annotateLogs({ err: listing.failure.message })
    )
    return outcome([], [], true)
  }
  const listed = new Map(listing.success.map((row) => [row.id, row] as const))
  const published: Array<PodKey> = []
  const refreshed: Array<PodKey> = []
  for (const { claim, key } of candidates) {
    const row = listed.get(claim.id)
    if (row !== undefined) {
      if (yield* table.refreshDeadline(key, claim.id, row.deadline)) refreshed.push(key)
      continue
    }
    // Identity re-check after the listing: the key may have changed hands meanwhile.
    const current = yield* table.state
    const pod: V1Pod | undefined = current.pods.get(key)
    const currentRow = current.rows.get(key)
    if (pod === undefined || currentRow === undefined || currentRow.record.id !== claim.id) continue
    yield* events.pushStatus(leaseExpiredPod(pod, claim))
    yield* Effect.logInfo("sandbox lease expired").pipe(Effect.annotateLogs({ pod: key, claim: claim.id }))
    yield* Metric.update(leaseExpiries, 1)
    if (Option.isSome(recorder)) {
      // Repeats on later ticks aggregate into the same Event's count.
      yield* recorder.value.record(
        involvedPod(pod),
        "Warning",
        "LeaseExpired",
        `sandbox ${claim.id} lease ended; the microVM is reaped at the deadline`
      )
    }
    published.push(key)
  }
  return outcome(published, refreshed, false)
}).pipe(Effect.withSpan("LeaseWatcher.tick"))

/** LEASE-4: forever, the first tick one interval after start. */
export const runLeaseWatch = Effect.gen(function*() {
  const config = yield* AppConfig
  yield* publishExpiredLeases.pipe(
    Effect.delay(config.leaseWatchInterval),
    Effect.repeat(Schedule.spaced(config.leaseWatchInterval))
  )
}).pipe(Effect.annotateLogs({ component: "lease-watch" }))
