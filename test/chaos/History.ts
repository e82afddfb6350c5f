/**
 * The chaos run's recorded history: what each party did or was seen doing, with the time it
 * happened (epoch milliseconds on this machine's clock, which the daemon's log lines share).
 * Recorded as it happens, to memory (for the checker) and to a JSON-lines file (to read after a
 * failing run). The checker reads nothing else: not the daemon's counters, not its claims table.
 */
import * as fs from "node:fs"

/** The controller owner a Pod was created with (as the workload made it). */
export interface OwnerRef {
  readonly kind: string
  readonly name: string
  readonly uid: string
}

export interface PodState {
  readonly key: string
  readonly uid: string
  readonly node: string
  readonly phase: string
  readonly reason: string
  readonly deleting: boolean
  readonly claimId: string
  readonly owner: OwnerRef | undefined
}

/** Everything at one moment: the apiserver's Pods and owners, sandboxd's VMs, the claims file. */
export interface FinalState {
  readonly at: number
  readonly pods: ReadonlyArray<PodState>
  readonly owners: ReadonlyArray<{ readonly uid: string; readonly kind: string; readonly key: string; readonly deleting: boolean }>
  readonly vms: ReadonlyArray<{ readonly id: string; readonly token: string; readonly claimRef: string }>
  /**
   * `owner`: the UID of the owner a preserved row waits on (AUTH-9 — a preserved VM is released
   * once its owner goes), "" when it names none.
   */
  readonly rows: ReadonlyArray<{ readonly key: string; readonly id: string; readonly token: string; readonly owner?: string }>
  readonly intents: ReadonlyArray<string>
}

export type HistoryEvent =
  // sandboxd (the simulator's own account)
  | { readonly src: "sandboxd"; readonly kind: "claimed"; readonly at: number; readonly id: string; readonly token: string; readonly claimRef: string; readonly leaseSeconds: number; readonly deadline: number }
  | { readonly src: "sandboxd"; readonly kind: "ended"; readonly at: number; readonly id: string; readonly claimRef: string; readonly how: string }
  /** A request as the simulator answered it (listings, claims, releases): the route, the status (0: no reply). */
  | { readonly src: "sandboxd"; readonly kind: "request"; readonly at: number; readonly route: string; readonly status: number; readonly rows?: number }
  // the apiserver, as an admin watch saw it
  | ({ readonly src: "apiserver"; readonly kind: "pod"; readonly at: number; readonly event: string } & PodState)
  | { readonly src: "apiserver"; readonly kind: "owner"; readonly at: number; readonly event: string; readonly ownerKind: string; readonly key: string; readonly uid: string; readonly deleting: boolean }
  /** A full list after a (re)connect: which objects the apiserver holds now (a restore shows here). */
  | { readonly src: "apiserver"; readonly kind: "relist"; readonly at: number; readonly resource: string; readonly uids: ReadonlyArray<string> }
  // the daemon
  | {
    readonly src: "daemon"
    readonly kind: "log"
    readonly at: number
    readonly incarnation: number
    readonly level: string
    readonly msg: string
    readonly pod: string
    readonly claim: string
    readonly verdict: string
  }
  | { readonly src: "daemon"; readonly kind: "process"; readonly at: number; readonly incarnation: number; readonly what: string; readonly detail: string }
  // the claims file as read from disk: `at` just before the read, `until` just after
  | { readonly src: "file"; readonly kind: "sample"; readonly at: number; readonly until: number; readonly changed: boolean }
  | { readonly src: "file"; readonly kind: "row"; readonly at: number; readonly key: string; readonly id: string; readonly token: string; readonly present: boolean; readonly owner?: string }
  | { readonly src: "file"; readonly kind: "intent"; readonly at: number; readonly key: string; readonly present: boolean }
  // the workload's own requests: sent at `at`, answered at `answered`
  | {
    readonly src: "workload"
    readonly kind: "request"
    readonly at: number
    readonly answered: number
    readonly op: string
    readonly target: string
    readonly status: number
    readonly uid: string
    readonly owner: OwnerRef | undefined
  }
  // the nemesis: a fault begins, or ends (its effect undone)
  | { readonly src: "nemesis"; readonly kind: "start" | "stop"; readonly at: number; readonly fault: string; readonly detail: string }
  /**
   * While the daemon is down or stopped (a kill, a stop): the Pods the apiserver shows Running and
   * not being deleted, with their claim ids, and the claims file's rows at that moment.
   */
  | { readonly src: "snapshot"; readonly kind: "daemon-down"; readonly at: number; readonly running: ReadonlyArray<readonly [string, string]>; readonly rows: ReadonlyArray<readonly [string, string]> }
  /** The state at the end, once the run has settled (or its bound passed): what liveness is judged on. */
  | ({ readonly src: "snapshot"; readonly kind: "final" } & FinalState)
  /** The run's own milestones: faults stopped, settled (or not) within the bound. */
  | { readonly src: "run"; readonly kind: "phase"; readonly at: number; readonly phase: string; readonly detail: string }
  /** A token of sandboxd's found in text the daemon or the cluster shows. */
  | { readonly src: "scan"; readonly kind: "token"; readonly at: number; readonly where: string; readonly what: string }

export interface History {
  readonly events: ReadonlyArray<HistoryEvent>
  readonly record: (event: HistoryEvent) => void
  readonly path: string
  readonly close: () => void
}

/** A history held in memory and appended, one JSON object a line, to `path`. */
export const makeHistory = (path: string): History => {
  const events: Array<HistoryEvent> = []
  const fd = fs.openSync(path, "a")
  let open = true
  return {
    events,
    path,
    record: (event) => {
      events.push(event)
      if (open) fs.writeSync(fd, `${JSON.stringify(event)}\n`)
    },
    close: () => {
      if (!open) return
      open = false
      fs.closeSync(fd)
    }
  }
}

/** Reads a history file back (for the checker's own replay of a kept run). */
export const readHistory = (path: string): ReadonlyArray<HistoryEvent> =>
  fs.readFileSync(path, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as HistoryEvent)
