/**
 * The lease watch (LEASE-4 — the lease watch): every `--lease-watch-interval`, Pods whose settled
 * claim is past its deadline are pushed Failed/SandboxLeaseExpired once sandboxd confirms the VM
 * gone (a failed listing defers everything; a listed one gets the listing's deadline, LEASE-6 —
 * refreshing a deadline). The push repeats each tick (LEASE-7 — expired pushes repeat) until the
 * Pod is seen terminal, then the row goes (LEASE-11 — the row of an ended lease goes once its Pod
 * is seen terminal). Rows with no tracked Pod are watched too (LEASE-9 — a row whose Pod is gone
 * ends with its VM).
 */
import { EventRecorder, involvedPod } from "../Services/EventRecorder.ts"
import { leaseExpiries } from "../Services/Metrics.ts"
import type { V1Pod } from "@kubernetes/client-node"
import { DateTime, Effect, Metric, Option } from "effect"
import { type ClaimRecord, leaseEndedBy } from "../Schemas/Claims.ts"
import { AppConfig } from "../Services/Config.ts"
import type { PodKey } from "../Schemas/Ids.ts"
import { ClaimTable } from "../Services/ClaimTable.ts"
import { every } from "../Services/Loops.ts"
import { ProviderEvents } from "../Services/ProviderEvents.ts"
import { SandboxdClient } from "../Services/SandboxdClient.ts"
import { confirmAbsence, notePresent } from "./Absence.ts"
import { dropEndedLease, isTerminalPhase } from "./Provider/LostRows.ts"
import { leaseExpiredPod, lostVmEvent } from "./Provider/Status.ts"
import { declareSandboxLost } from "./SandboxLost.ts"

export interface LeaseWatchOutcome {
  readonly published: ReadonlyArray<PodKey>
  readonly refreshed: ReadonlyArray<PodKey>
  readonly deferred: boolean
  /** Pods declared SandboxLost: their sandbox confirmed gone before the lease ended. */
  readonly lost: ReadonlyArray<PodKey>
  /** LEASE-9: rows with no tracked Pod whose sandbox is confirmed gone: now Lost, their keys handed on. */
  readonly podless: ReadonlyArray<PodKey>
  /** LEASE-11: rows of ended leases (VM reaped) whose Pod is seen terminal: dropped. */
  readonly ended: ReadonlyArray<PodKey>
}

/** One tick (LEASE-4 steps 1–6, plus sandboxes confirmed gone before their lease ended). */
export const publishExpiredLeases = Effect.gen(function*() {
  const table = yield* ClaimTable
  const sandboxd = yield* SandboxdClient
  const events = yield* ProviderEvents
  const recorder = yield* Effect.serviceOption(EventRecorder)
  const now = yield* DateTime.now
  const state = yield* table.state
  const expired = (claim: ClaimRecord) => leaseEndedBy(claim, now)
  // Every settled row: with a tracked Pod, expired ones for the lease rule and the rest so a
  // sandbox that vanished early is noticed; without one, so a row whose VM is gone goes (LEASE-9).
  const candidates: Array<{ key: PodKey; claim: ClaimRecord }> = []
  /**
   * Rows preserved for an owner that no Pod holds (AUTH-9 — a preserved VM is released once its
   * owner goes): each gets a run that asks the owner again.
   */
  const preserved: Array<PodKey> = []
  for (const [key, row] of state.rows) {
    if (row.state._tag !== "Durable") continue
    candidates.push({ key, claim: row.record })
    if (row.record.owner !== undefined && !state.pods.has(key)) preserved.push(key)
  }
  if (preserved.length > 0) yield* events.publishRetry(preserved)
  const outcome = (
    published: Array<PodKey>,
    refreshed: Array<PodKey>,
    deferred: boolean,
    lost: Array<PodKey> = [],
    podless: Array<PodKey> = [],
    ended: Array<PodKey> = []
  ): LeaseWatchOutcome => ({ published, refreshed, deferred, lost, podless, ended })
  if (candidates.length === 0) return outcome([], [], false)
  const listing = yield* Effect.result(sandboxd.listSandboxes)
  if (listing._tag === "Failure") {
    yield* Effect.logWarning("sandboxd list failed; deferring lease-expiry publication").pipe(
      Effect.annotateLogs({ error: listing.failure })
    )
    return outcome([], [], true)
  }
  const listed = new Map(listing.success.map((row) => [row.id, row] as const))
  yield* notePresent(candidates.map(({ claim }) => claim.id).filter((id) => listed.has(id)))
  const published: Array<PodKey> = []
  const refreshed: Array<PodKey> = []
  const lost: Array<PodKey> = []
  const podless: Array<PodKey> = []
  const ended: Array<PodKey> = []
  for (const { claim, key } of candidates) {
    const row = listed.get(claim.id)
    if (row !== undefined) {
      if (expired(claim) && (yield* table.refreshDeadline(key, claim.id, row.deadline))) refreshed.push(key)
      continue
    }
    // A listing can miss a live claim: nothing is declared before sandboxd confirms the absence.
    const verdict = yield* confirmAbsence(claim.id, now)
    if (verdict._tag === "Present") {
      if (expired(claim) && (yield* table.refreshDeadline(key, claim.id, verdict.sandbox.deadline))) refreshed.push(key)
      continue
    }
    if (verdict._tag === "Unconfirmed") continue
    // Identity re-check after the listing: the key may have changed hands meanwhile.
    const current = yield* table.state
    const pod: V1Pod | undefined = current.pods.get(key)
    const currentRow = current.rows.get(key)
    if (currentRow === undefined || currentRow.record.id !== claim.id || currentRow.state._tag !== "Durable") continue
    if (pod === undefined) {
      // LEASE-9: no Pod tracked, so no status to push. Whether its Pod still exists only the pod
      // controller knows: the row is marked Lost (so that Pod, if it comes, is not given a new VM)
      // and the key gets a run, which drops the row when the key has no Pod (VER-7 — a lost
      // sandbox's row outlives restarts until its Pod is settled).
      if (Option.isNone(yield* table.markLost(key, claim.id, currentRow.record.podUID, now))) continue
      yield* Effect.logInfo("the sandbox of a row with no pod is gone; the row goes once its pod is known gone").pipe(
        Effect.annotateLogs({ pod: key, claim: claim.id })
      )
      podless.push(key)
      continue
    }
    if (!expired(claim)) {
      yield* declareSandboxLost(key, currentRow.record, Option.some(pod), now)
      lost.push(key)
      continue
    }
    if (isTerminalPhase(pod) && (pod.metadata?.uid ?? "") === currentRow.record.podUID) {
      // LEASE-11: the pod controller saw this Pod terminal (the status pushed below on earlier
      // ticks is stored): the row guards nothing now, and its VM is gone.
      if (yield* dropEndedLease(key, claim.id)) ended.push(key)
      continue
    }
    yield* events.pushStatus(leaseExpiredPod(pod, claim))
    yield* Effect.logInfo("sandbox lease expired").pipe(Effect.annotateLogs({ pod: key, claim: claim.id }))
    yield* Metric.update(leaseExpiries, 1)
    if (Option.isSome(recorder)) {
      // Repeats on later ticks aggregate into the same Event's count.
      const event = lostVmEvent(claim.id, true)
      yield* recorder.value.record(involvedPod(pod), "Warning", event.reason, event.message)
    }
    published.push(key)
  }
  // Published for a run each (the channel the pod controller retries keys from).
  yield* events.publishRetry(podless)
  return outcome(published, refreshed, false, lost, podless, ended)
}).pipe(Effect.withSpan("LeaseWatcher.tick"))

/** LEASE-4: forever, every interval, the first tick one interval after start. */
export const runLeaseWatch = Effect.gen(function*() {
  const config = yield* AppConfig
  yield* every(config.leaseWatchInterval, publishExpiredLeases)
}).pipe(Effect.annotateLogs({ component: "lease-watch" }))
