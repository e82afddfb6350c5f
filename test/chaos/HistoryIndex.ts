/**
 * The history read once into the shapes the properties ask about: each VM's life at sandboxd,
 * each Pod generation (by UID) as the apiserver showed it, when each object was certainly alive
 * (from the workload's own requests: created and answered, and no request yet that could end it),
 * the daemon's decisions, the nemesis' windows.
 */
import type { FinalState, HistoryEvent, OwnerRef } from "./History.ts"

export interface VmLife {
  readonly id: string
  readonly token: string
  readonly claimRef: string
  readonly claimedAt: number
  readonly leaseSeconds: number
  endedAt: number | undefined
  how: string
}

export interface PodGeneration {
  readonly uid: string
  readonly key: string
  /** The controller owner it was first seen with (an orphaned Pod loses it later). */
  readonly owner: OwnerRef | undefined
  readonly claimIds: Set<string>
  readonly firstSeen: number
}

export interface Window {
  readonly fault: string
  readonly detail: string
  readonly start: number
  stop: number | undefined
}

export interface Decision {
  readonly at: number
  readonly msg: string
  readonly pod: string
  readonly claim: string
  readonly verdict: string
}

export interface HistoryIndex {
  readonly vms: ReadonlyMap<string, VmLife>
  readonly pods: ReadonlyMap<string, PodGeneration>
  /** claim id → the UIDs of the Pods seen with it, in the order seen. */
  readonly podsOfClaim: ReadonlyMap<string, ReadonlyArray<string>>
  /** uid → [from, to) spans in which the object was certainly alive and not being deleted. */
  readonly alive: ReadonlyMap<string, ReadonlyArray<readonly [number, number]>>
  readonly decisions: ReadonlyArray<Decision>
  readonly windows: ReadonlyArray<Window>
  readonly final: FinalState | undefined
  /** When each Pod generation left the apiserver (deleted, or gone at a relist: a restore). */
  readonly podEnded: ReadonlyMap<string, number>
  /** Pod generations gone at a relist (a restore took them): no daemon removed them. */
  readonly podVanished: ReadonlySet<string>
  /** The daemon's Preserve verdicts (its "preserving sandbox" lines). */
  readonly preserves: ReadonlyArray<Decision>
  /** When the daemon now running was started (its last incarnation). */
  readonly lastStart: number
  /**
   * From each restore's start until the daemon's first list of the Pods after it: the Pods the
   * restore brought back still show what the backup held (Running on a VM released since), and
   * only that list lets the daemon see it. The issue's "judge from the first relist after it".
   */
  readonly restoredUntilRelist: ReadonlyArray<readonly [number, number]>
  /**
   * Running statuses a restore brought back (a Pod listed Running on a claim in a restore's
   * window), from that list until the Pod next shows another phase or claim or goes: the
   * backup's, not written by any daemon, which can end them only once sandboxd answers.
   */
  readonly restoredRunning: ReadonlyArray<{ readonly key: string; readonly claimId: string; readonly from: number; readonly to: number }>
  readonly phases: ReadonlyArray<{ readonly at: number; readonly phase: string; readonly detail: string }>
}

/** The daemon's log lines that decide a release, or say it returned a VM of its own accord. */
export const releaseMessages = [
  "release authorized",
  "returned sandbox after its claim could not be persisted",
  "released an extra sandbox of a claim whose outcome was unknown",
  "returned a stranded sandbox before reusing its pod key"
]

/** The daemon's line for a Preserve verdict: the VM kept, the row to name the owner it waits on. */
export const preserveMessage = "preserving sandbox: pod deletion is not VM authority"

/** Workload requests that may end an object (as its owner, its namespace or its Pod). */
const ending = (op: string) => op.startsWith("delete")

/** Faults after whose start the node may be NotReady long enough for its Pods to be evicted. */
const evicting = (fault: string) => fault === "daemon-sigstop" || fault === "daemon-sigkill" || fault === "daemon-sigterm"

export const indexHistory = (events: ReadonlyArray<HistoryEvent>): HistoryIndex => {
  const vms = new Map<string, VmLife>()
  const pods = new Map<string, PodGeneration>()
  const podsOfClaim = new Map<string, Array<string>>()
  const decisions: Array<Decision> = []
  const windows: Array<Window> = []
  const phases: Array<{ at: number; phase: string; detail: string }> = []
  /** Objects the workload created: uid → what it is and when the create was answered. */
  const created: Array<{ uid: string; answered: number; namespace: string; name: string; kind: string }> = []
  /** Requests that may end objects: namespace/name (or namespace alone) at the time sent. */
  const endings: Array<{ at: number; answered: number; namespace: string; name: string | undefined; kind: string }> = []
  const relists: Array<{ at: number; resource: string; uids: ReadonlySet<string> }> = []
  let final: FinalState | undefined
  const podEnded = new Map<string, number>()
  const podVanished = new Set<string>()
  const podEvents: Array<{ at: number; event: string; key: string; phase: string; claimId: string }> = []
  const preserves: Array<Decision> = []
  let lastStart = 0
  const relistLines: Array<number> = []
  for (const event of events) {
    switch (event.src) {
      case "sandboxd":
        if (event.kind === "claimed") {
          vms.set(event.id, { id: event.id, token: event.token, claimRef: event.claimRef, claimedAt: event.at, leaseSeconds: event.leaseSeconds, endedAt: undefined, how: "" })
        } else if (event.kind === "ended") {
          const vm = vms.get(event.id)
          if (vm !== undefined && vm.endedAt === undefined) {
            vm.endedAt = event.at
            vm.how = event.how
          }
        }
        break
      case "apiserver":
        if (event.kind === "pod") {
          if (event.event === "VANISHED" || event.event === "DELETED") podEnded.set(event.uid, event.at)
          if (event.event === "VANISHED") podVanished.add(event.uid)
          podEvents.push({ at: event.at, event: event.event, key: event.key, phase: event.phase, claimId: event.claimId })
          let gen = pods.get(event.uid)
          if (gen === undefined) {
            gen = { uid: event.uid, key: event.key, owner: event.owner, claimIds: new Set(), firstSeen: event.at }
            pods.set(event.uid, gen)
          }
          if (event.claimId !== "" && !gen.claimIds.has(event.claimId)) {
            gen.claimIds.add(event.claimId)
            const list = podsOfClaim.get(event.claimId) ?? []
            list.push(event.uid)
            podsOfClaim.set(event.claimId, list)
          }
        } else if (event.kind === "relist") {
          relists.push({ at: event.at, resource: event.resource, uids: new Set(event.uids) })
        }
        break
      case "daemon":
        if (event.kind === "process" && event.what === "started") lastStart = event.at
        if (event.kind === "log" && (event.msg === "pod controller synced" || event.msg.includes("went backwards") || event.msg.includes("relisting"))) {
          relistLines.push(event.at)
        }
        if (event.kind === "log" && releaseMessages.includes(event.msg)) {
          decisions.push({ at: event.at, msg: event.msg, pod: event.pod, claim: event.claim, verdict: event.verdict })
        }
        if (event.kind === "log" && event.msg === preserveMessage) {
          preserves.push({ at: event.at, msg: event.msg, pod: event.pod, claim: event.claim, verdict: event.verdict })
        }
        break
      case "workload": {
        const [namespace = "", name] = event.target.split("/")
        if (event.op.startsWith("create") && event.uid !== "" && event.status >= 200 && event.status < 300) {
          created.push({ uid: event.uid, answered: event.answered, namespace, name: name ?? "", kind: event.op.slice("create-".length) })
        } else if (ending(event.op)) {
          endings.push({ at: event.at, answered: event.answered, namespace, name: event.op === "delete-namespace" ? undefined : name, kind: event.op.slice("delete-".length) })
        }
        break
      }
      case "nemesis":
        if (event.kind === "start") windows.push({ fault: event.fault, detail: event.detail, start: event.at, stop: undefined })
        else {
          const open = windows.findLast((w) => w.fault === event.fault && w.stop === undefined)
          if (open !== undefined) open.stop = event.at
        }
        break
      case "snapshot":
        if (event.kind === "final") final = event
        break
      case "run":
        phases.push({ at: event.at, phase: event.phase, detail: event.detail })
        break
      default:
        break
    }
  }
  const restores = windows.filter((w) => w.fault === "etcd-restore")
  const backups = windows.filter((w) => w.fault === "etcd-backup")
  const evictions = windows.filter((w) => evicting(w.fault))
  const alive = new Map<string, Array<readonly [number, number]>>()
  for (const object of created) {
    // Whatever could end it: its own delete, its namespace's, a restore (the backup may predate
    // it), and for a Pod a stopped node's evictions or its owner's cascade (owners end their Pods).
    const causes: Array<{ readonly at: number; readonly until: number }> = [
      ...endings.filter((e) =>
        e.namespace === object.namespace &&
        (e.name === undefined || (e.name === object.name && (e.kind === object.kind || (object.kind === "pod" && e.kind !== "namespace"))))
      ).map((e) => ({ at: e.at, until: e.answered })),
      ...restores.map((w) => ({ at: w.start, until: w.stop ?? Infinity })),
      ...(object.kind === "pod" ? evictions.map((w) => ({ at: w.start, until: w.stop ?? Infinity })) : [])
    ]
    const spans: Array<readonly [number, number]> = []
    // A cause still under way at `from` (sent before, answered after) may have ended it at once.
    const endAfter = (from: number) => Math.min(Infinity, ...causes.filter((c) => c.until >= from).map((c) => Math.max(c.at, from)))
    spans.push([object.answered, endAfter(object.answered)])
    // After a restore the object is alive again if the apiserver's first full list shows it, and
    // nothing had asked to end it by the time the backup was taken (a namespace being deleted
    // then is being deleted again after the restore).
    for (const restore of restores) {
      const backup = backups.findLast((w) => w.start <= restore.start)
      const backupEnd = backup?.stop ?? backup?.start ?? restore.start
      if (causes.some((c) => c.at <= backupEnd && !restores.some((r) => r.start === c.at))) continue
      const resource = object.kind === "pod" ? "pods" : object.kind === "sandbox" ? "Sandbox" : "ReplicaSet"
      const relist = relists.find((r) => r.resource === resource && r.at >= (restore.stop ?? restore.start))
      if (relist !== undefined && relist.uids.has(object.uid)) spans.push([relist.at, endAfter(relist.at)])
    }
    alive.set(object.uid, spans)
  }
  const restoredUntilRelist = restores.map((w) => {
    const after = w.stop ?? w.start
    return [w.start, relistLines.find((at) => at > after) ?? Number.POSITIVE_INFINITY] as const
  })
  const restoredRunning = podEvents.flatMap((listed, i) => {
    if (listed.event !== "LISTED" || listed.phase !== "Running" || listed.claimId === "") return []
    if (!restoredUntilRelist.some(([from, to]) => listed.at >= from && listed.at <= to)) return []
    const next = podEvents.slice(i + 1).find((e) =>
      e.key === listed.key && (e.event === "DELETED" || e.event === "VANISHED" || e.phase !== "Running" || e.claimId !== listed.claimId)
    )
    return [{ key: listed.key, claimId: listed.claimId, from: listed.at, to: next?.at ?? Number.POSITIVE_INFINITY }]
  })
  return { vms, pods, podsOfClaim, alive, decisions, windows, final, podEnded, podVanished, preserves, lastStart, restoredUntilRelist, restoredRunning, phases }
}

/** The faults active in the `lookbackMs` before `at`: what a violation is printed with. */
export const faultsBefore = (index: HistoryIndex, at: number, lookbackMs = 30_000): ReadonlyArray<string> =>
  index.windows
    .filter((w) => w.start <= at && (w.stop === undefined || w.stop >= at - lookbackMs))
    .map((w) => `${w.fault}${w.detail === "" ? "" : ` (${w.detail})`} from ${new Date(w.start).toISOString().slice(11, 23)}${
      w.stop === undefined ? "" : ` to ${new Date(w.stop).toISOString().slice(11, 23)}`
    }`)
