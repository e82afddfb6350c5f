/**
 * The liveness properties L1-L4 of the chaos run, judged on the state at the end (once the run
 * settled, or its bound passed) with the history behind it; each property's function says what
 * it holds to.
 */
import type { FinalState } from "./History.ts"
import type { HistoryIndex } from "./HistoryIndex.ts"
import type { Bounds, PropertyResult, Violation } from "./Safety.ts"

const endedReasons = new Set(["SandboxLeaseExpired", "SandboxLost"])

/**
 * L1 every Pod that should run is Running on a VM sandboxd has: it exists, is not being deleted,
 * is bound to the node, and was not ended by the daemon with a reason the history justifies
 * (SandboxLeaseExpired with its VM reaped at sandboxd, SandboxLost with its VM's end recorded
 * there); and no Pod of the node is still being deleted.
 */
export const podsRun = (index: HistoryIndex, final: FinalState, node: string): PropertyResult => {
  const live = new Set(final.vms.map((vm) => vm.id))
  const violations: Array<Violation> = []
  let checked = 0
  for (const pod of final.pods) {
    if (pod.node !== node) continue
    checked++
    const say = (text: string) => violations.push({ at: final.at, text: `${pod.key} (${pod.uid}) ${text}` })
    if (pod.deleting) {
      say("is still being deleted")
      continue
    }
    if (pod.phase === "Running") {
      if (!live.has(pod.claimId)) say(`is Running on ${pod.claimId || "no claim id"}, which sandboxd does not have`)
      continue
    }
    if (pod.phase === "Failed" && endedReasons.has(pod.reason)) {
      // Its VM is the one it names, or (a Pod a restore took back to before its claim-id) the
      // key's last one: either must have ended at sandboxd, reaped for a lease that ran out.
      const vm = index.vms.get(pod.claimId) ?? [...index.vms.values()].filter((v) => v.claimRef === pod.key).at(-1)
      const justified = vm?.endedAt !== undefined && (pod.reason === "SandboxLost" || vm.how === "reaped")
      if (!justified) say(`ended ${pod.reason} but its VM ${vm?.id ?? "(none)"} ${vm === undefined ? "is unknown" : vm.endedAt === undefined ? "is alive" : `was ${vm.how}`}`)
      continue
    }
    say(`is ${pod.phase}${pod.reason === "" ? "" : `/${pod.reason}`}, not Running`)
  }
  return { id: "L1", kind: "liveness", title: "every Pod that should run is Running (and no deletion is left unfinished)", checked, violations }
}

/**
 * L2 every VM whose owner the daemon may read (a Sandbox, or the Pod itself when bare) and that is
 * gone or being deleted is released; but a daemon started after the Pod had left knows only its
 * claims file: a row there that names no owner is a row with no Pod, which L3 judges, if no
 * daemon removed that Pod after preserving its VM (a restore took it, or a force delete): AUTH-9
 * — a preserved VM is released once its owner goes — writes the owner before the Pod goes.
 */
export const goneOwnersReleased = (index: HistoryIndex, final: FinalState): PropertyResult => {
  const ownersAlive = new Set(final.owners.filter((o) => !o.deleting).map((o) => o.uid))
  const podsAlive = new Map(final.pods.filter((p) => !p.deleting).map((p) => [p.uid, p]))
  const violations: Array<Violation> = []
  let checked = 0
  let spared = 0
  for (const vm of final.vms) {
    const current = final.pods.find((p) => p.key === vm.claimRef && !p.deleting && p.claimId === vm.id)
    if (current !== undefined) continue
    const uids = index.podsOfClaim.get(vm.id) ?? []
    const gen = index.pods.get(uids[uids.length - 1] ?? "")
    // Never shown on a Pod: a row without one (L3) or no holder at all (S1).
    if (gen === undefined) continue
    // The daemon now running started after the Pod left, and its file names no owner for the
    // row: a row with no Pod, held until a replacement adopts it or its lease ends (LEASE-9 — a row
    // whose Pod is gone ends with its VM). But a Pod the daemon removed after a Preserve verdict
    // must have left its owner in the file first.
    const ended = index.podEnded.get(gen.uid)
    const row = final.rows.find((r) => r.id === vm.id)
    const preservedThenRemoved = !index.podVanished.has(gen.uid) &&
      index.preserves.some((p) => p.pod === gen.key && p.claim === vm.id && p.at >= gen.firstSeen && ended !== undefined && p.at <= ended)
    if (ended !== undefined && ended < index.lastStart && (row?.owner ?? "") === "" && !preservedThenRemoved) {
      spared++
      continue
    }
    checked++
    const owner = gen.owner
    if (owner === undefined) {
      if (!podsAlive.has(gen.uid)) {
        violations.push({ at: final.at, text: `VM ${vm.id} of the bare Pod ${gen.key} (${gen.uid}) is still held, the Pod gone or being deleted` })
      }
    } else if (owner.kind === "Sandbox" && !ownersAlive.has(owner.uid)) {
      violations.push({ at: final.at, text: `VM ${vm.id} of ${gen.key} is still held, its owner Sandbox ${owner.name} (${owner.uid}) gone or being deleted` })
    }
  }
  const title = `every VM whose readable owner is gone or terminating is released${
    spared === 0 ? "" : ` (${spared} held as rows with no Pod or owner in the file: their Pods left before the daemon now running started, L3)`
  }`
  return { id: "L2", kind: "liveness", title, checked, violations }
}

/**
 * L3 a VM whose owner the daemon may not read (a ReplicaSet under the shipped RBAC), or whose row
 * has no Pod, stays held with its token and no longer than its lease plus one lease-watch
 * interval (and a reaper pass); no row outlives its VM by more than a lease-watch interval and a
 * resync past the bound (a Lost row goes at its terminal Pod's next run, VER-7 — a lost sandbox's
 * row outlives restarts until its Pod is settled).
 */
export const heldWithinLease = (index: HistoryIndex, final: FinalState, bounds: Bounds): PropertyResult => {
  const violations: Array<Violation> = []
  let checked = 0
  const slack = bounds.leaseWatchMs + bounds.reapMs + 1_000
  for (const vm of index.vms.values()) {
    checked++
    const held = (vm.endedAt ?? final.at) - vm.claimedAt
    if (held > vm.leaseSeconds * 1000 + slack) {
      violations.push({ at: vm.claimedAt, text: `VM ${vm.id} of ${vm.claimRef} held ${Math.round(held / 1000)} s, past its ${vm.leaseSeconds} s lease` })
    }
  }
  const liveTokens = new Map(final.vms.map((vm) => [vm.id, vm.token]))
  for (const row of final.rows) {
    checked++
    const token = liveTokens.get(row.id)
    if (token !== undefined) {
      if (token !== row.token) violations.push({ at: final.at, text: `the row of ${row.key} holds ${row.id} with another token` })
      continue
    }
    const vm = index.vms.get(row.id)
    const endedAgo = vm?.endedAt === undefined ? undefined : final.at - vm.endedAt
    if (endedAgo === undefined || endedAgo > bounds.leaseWatchMs + bounds.resyncMs + bounds.settleMs) {
      violations.push({
        at: final.at,
        text: `the row of ${row.key} still names ${row.id}, ${endedAgo === undefined ? "which sandboxd never made" : `whose VM was ${vm?.how} ${Math.round(endedAgo / 1000)} s before the end`}`
      })
    }
  }
  return { id: "L3", kind: "liveness", title: "a VM held without a readable owner or a Pod ends with its lease; no row outlives its VM", checked, violations }
}

/** L4 no key stays in doubt (no claim intent left in the file). */
export const noDoubtLeft = (final: FinalState): PropertyResult => ({
  id: "L4",
  kind: "liveness",
  title: "no key stays in doubt",
  checked: 1,
  violations: final.intents.map((key) => ({ at: final.at, text: `${key} still has a claim intent in the file` }))
})
