/**
 * The safety properties S1-S5 of the chaos run, judged from the history alone. Each holds at
 * every moment (or, where a doubt may be resolving, within the settle bound), not only at the
 * end; each property's function says what it holds to.
 */
import type { HistoryEvent } from "./History.ts"
import type { HistoryIndex } from "./HistoryIndex.ts"

export interface Violation {
  readonly at: number
  readonly text: string
}

export interface PropertyResult {
  readonly id: string
  readonly kind: "safety" | "liveness"
  readonly title: string
  /** How many things were judged (file reads, VMs, releases, …): a property that judged nothing proved nothing. */
  readonly checked: number
  readonly violations: ReadonlyArray<Violation>
}

export interface Bounds {
  /** How long after the faults stop the run must have settled (the one wall-clock judgement). */
  readonly settleMs: number
  /** The daemon's --claim-settle-time: how long a claim in doubt may still make its VM. */
  readonly claimSettleMs: number
  /** The daemon's --lease-watch-interval. */
  readonly leaseWatchMs: number
  /** sandboxd's reaper period. */
  readonly reapMs: number
  /**
   * The pod controller's resync: a Lost row of a Pod ended by its own status is dropped by the
   * next run of its key, and a status change enqueues none (PC-06 — what changes enqueue a Pod), so
   * at the latest by the resync.
   */
  readonly resyncMs: number
}

const time = (at: number) => new Date(at).toISOString().slice(11, 23)

/**
 * S1 no VM without a holder: at every read of the claims file, each VM sandboxd had made before
 * the read began and had not ended when it finished is in the file, as a row with its id and
 * token or as the intent of its key (a claim in doubt); at the end, as a row.
 */
export const noVmWithoutHolder = (events: ReadonlyArray<HistoryEvent>, index: HistoryIndex): PropertyResult => {
  const rows = new Map<string, { id: string; token: string }>()
  const tokenOf = new Map<string, string>()
  const intents = new Set<string>()
  const violations: Array<Violation> = []
  const reported = new Set<string>()
  const vms = [...index.vms.values()]
  let checked = 0
  const judge = (at: number, until: number, final: boolean) => {
    checked++
    for (const vm of vms) {
      if (reported.has(vm.id) || vm.claimedAt >= at || (vm.endedAt !== undefined && vm.endedAt <= until)) continue
      const token = tokenOf.get(vm.id)
      if (token === vm.token || (!final && token === undefined && intents.has(vm.claimRef))) continue
      reported.add(vm.id)
      violations.push({
        at,
        text: `VM ${vm.id} of ${vm.claimRef} (made ${time(vm.claimedAt)}) ${
          token === undefined ? "is in no row" : "is in a row with another token"
        }${final ? " at the end" : intents.has(vm.claimRef) ? "" : " and its key has no intent"} (file read ${time(at)})`
      })
    }
  }
  for (const event of events) {
    if (event.src !== "file") continue
    if (event.kind === "row") {
      const before = rows.get(event.key)
      if (before !== undefined) tokenOf.delete(before.id)
      if (event.present) {
        rows.set(event.key, { id: event.id, token: event.token })
        tokenOf.set(event.id, event.token)
      } else rows.delete(event.key)
    } else if (event.kind === "intent") {
      if (event.present) intents.add(event.key)
      else intents.delete(event.key)
    } else judge(event.at, event.until, false)
  }
  const final = index.final
  if (final !== undefined) {
    rows.clear()
    tokenOf.clear()
    for (const row of final.rows) tokenOf.set(row.id, row.token)
    judge(final.at, final.at, true)
  }
  return { id: "S1", kind: "safety", title: "no VM without a holder (a row with its token, or its key's intent while in doubt)", checked, violations }
}

/** S2 no key with two VMs for longer than the bound. */
export const noKeyWithTwoVms = (index: HistoryIndex, bounds: Bounds): PropertyResult => {
  const byKey = new Map<string, Array<{ id: string; from: number; to: number }>>()
  const end = index.final?.at ?? Number.POSITIVE_INFINITY
  for (const vm of index.vms.values()) {
    const list = byKey.get(vm.claimRef) ?? []
    list.push({ id: vm.id, from: vm.claimedAt, to: vm.endedAt ?? end })
    byKey.set(vm.claimRef, list)
  }
  const grace = bounds.claimSettleMs + bounds.settleMs
  const violations: Array<Violation> = []
  for (const [key, lives] of byKey) {
    lives.sort((a, b) => a.from - b.from)
    for (let i = 0; i < lives.length; i++) {
      for (let j = i + 1; j < lives.length && lives[j]!.from < lives[i]!.to; j++) {
        const a = lives[i]!
        const b = lives[j]!
        const overlap = Math.min(a.to, b.to) - b.from
        if (overlap > grace || (a.to >= end && b.to >= end)) {
          violations.push({ at: b.from, text: `${key} had two VMs, ${a.id} and ${b.id}, for ${Math.round(overlap / 1000)} s from ${time(b.from)}` })
        }
      }
    }
  }
  return { id: "S2", kind: "safety", title: `no key with two VMs (for longer than ${grace / 1000} s, or at the end)`, checked: byKey.size, violations }
}

/**
 * S3 no Pod Running without a durable row: whenever the daemon was down or stopped, and at the
 * end, each Pod the apiserver showed Running (not being deleted) had the row of its claim id; but
 * from a restore until the daemon's first list after it, the Pods show the backup's statuses,
 * which only that list lets the daemon see (judged from then on).
 */
export const noRunningWithoutRow = (events: ReadonlyArray<HistoryEvent>, index: HistoryIndex, node: string): PropertyResult => {
  const violations: Array<Violation> = []
  let checked = 0
  const judge = (at: number, running: ReadonlyArray<readonly [string, string]>, rows: ReadonlyArray<readonly [string, string]>, when: string) => {
    const held = new Map(rows)
    for (const [key, claimId] of running) {
      checked++
      if (held.get(key) !== claimId) {
        violations.push({ at, text: `${key} Running on ${claimId} ${when}, but the claims file ${held.has(key) ? `holds ${held.get(key)}` : "has no row"}` })
      }
    }
  }
  for (const event of events) {
    if (event.src !== "snapshot" || event.kind !== "daemon-down") continue
    // A restore's Pods show the backup's statuses until the daemon's first list after it, and a
    // Running status the restore brought back stays the backup's until the Pod changes: no daemon
    // wrote it, and none can end it before sandboxd confirms its VM gone (the end still judges it).
    if (index.restoredUntilRelist.some(([from, to]) => event.at >= from && event.at <= to)) continue
    const restored = (key: string, claimId: string) =>
      index.restoredRunning.some((r) => r.key === key && r.claimId === claimId && event.at >= r.from && event.at < r.to)
    judge(event.at, event.running.filter(([key, claimId]) => !restored(key, claimId)), event.rows, "while the daemon was down")
  }
  const final = index.final
  if (final !== undefined) {
    const running = final.pods.filter((p) => p.node === node && p.phase === "Running" && !p.deleting).map((p) => [p.key, p.claimId] as const)
    judge(final.at, running, final.rows.map((r) => [r.key, r.id] as const), "at the end")
  }
  return { id: "S3", kind: "safety", title: "no Pod Running without a durable row (whenever the daemon was down, and at the end)", checked, violations }
}

/** The Pod generation a decision was about: the last one seen with the claim, else the key's last before it. */
const podOfDecision = (index: HistoryIndex, claim: string, key: string, at: number) => {
  const uids = index.podsOfClaim.get(claim) ?? []
  const seen = uids.map((uid) => index.pods.get(uid)).filter((gen) => gen !== undefined && gen.firstSeen <= at)
  if (seen.length > 0) return seen[seen.length - 1]
  return [...index.pods.values()].filter((gen) => gen.key === key && gen.firstSeen <= at).sort((a, b) => a.firstSeen - b.firstSeen).at(-1)
}

/**
 * S4 no release while the owner lived: none the daemon decided while the owner of the Pod (the
 * controller reference's UID, or the Pod itself when bare) was certainly alive and not being
 * deleted (created, and nothing yet asked to delete it); and no VM released at sandboxd without a
 * decision of the daemon naming it.
 */
export const noReleaseWhileOwnerAlive = (index: HistoryIndex): PropertyResult => {
  const violations: Array<Violation> = []
  let checked = 0
  for (const decision of index.decisions) {
    if (decision.msg !== "release authorized") continue
    checked++
    const gen = podOfDecision(index, decision.claim, decision.pod, decision.at)
    if (gen === undefined) continue
    const owner = gen.owner ?? { kind: "Pod", name: gen.key, uid: gen.uid }
    const span = (index.alive.get(owner.uid) ?? []).find(([from, to]) => decision.at > from && decision.at < to)
    if (span !== undefined) {
      violations.push({
        at: decision.at,
        text: `${decision.pod}: release of ${decision.claim} decided ${time(decision.at)} (${decision.verdict}) while its owner ${owner.kind} ${owner.name} (${owner.uid}) ` +
          `was alive and not being deleted (created by ${time(span[0])}, nothing asked to end it before ${Number.isFinite(span[1]) ? time(span[1]) : "the end"})`
      })
    }
  }
  // Every release sandboxd saw was one the daemon decided (logged before it, or just after for
  // the ones it returns of its own accord), unless the daemon died right after it.
  const deaths = index.windows.filter((w) => w.fault === "daemon-sigkill" || w.fault === "daemon-disk-eio" || w.fault === "daemon-disk-enospc")
  for (const vm of index.vms.values()) {
    if (vm.how !== "released" || vm.endedAt === undefined) continue
    checked++
    const endedAt = vm.endedAt
    const decided = index.decisions.some((d) => d.claim === vm.id && d.at <= endedAt + 10_000)
    const diedRightAfter = deaths.some((w) => w.start >= endedAt && w.start <= endedAt + 10_000)
    if (!decided && !diedRightAfter) {
      violations.push({ at: endedAt, text: `VM ${vm.id} of ${vm.claimRef} was released at sandboxd ${time(endedAt)} with no decision of the daemon naming it` })
    }
  }
  return { id: "S4", kind: "safety", title: "no release of a VM whose owner (by controller UID) was alive and not terminating when it was decided", checked, violations }
}

/** S5 no token in any Pod, Event, log line or metric. */
export const noTokenShown = (events: ReadonlyArray<HistoryEvent>): PropertyResult => {
  const violations: Array<Violation> = []
  let checked = 0
  for (const event of events) {
    if (event.src === "scan" && event.kind === "token") violations.push({ at: event.at, text: `a sandboxd token in ${event.where}: ${event.what}` })
    if (event.src === "run" && event.phase === "scanned") checked += Number(event.detail)
  }
  return { id: "S5", kind: "safety", title: "no token in any Pod, Event, log line or metric", checked, violations }
}
