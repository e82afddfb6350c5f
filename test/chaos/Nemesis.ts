/**
 * The nemesis: the plan's faults, each at its time, several at once (never two on one resource:
 * a fault waits for the one before it on its resource to be undone). Each fault is recorded when
 * it begins and when its effect is undone. While the daemon is down or stopped, the Pods the
 * apiserver shows Running and the claims file's rows are recorded together (what S3 is judged on).
 */
import { Effect, Semaphore } from "effect"
import { SimFault, type SimRoute } from "../../testkit/Simulators/Sandboxd/Model.ts"
import type { DaemonSupervisor } from "./Daemon.ts"
import { NodeName } from "./Daemon.ts"
import type { History } from "./History.ts"
import { type FaultKind, type FaultStep, type Plan, resourceOf } from "./Plan.ts"
import { podState, readClaimsFile } from "./Recorders.ts"
import type { TcpFault } from "./TcpFaultProxy.ts"
import type { World } from "./World.ts"

const BackupName = "chaos"

/** What sandboxd answers instead of the model while a reply fault holds. */
const replyFaults = (kind: FaultKind, detail: string): ReadonlyArray<readonly [SimRoute | "*", SimFault]> | undefined => {
  switch (kind) {
    case "sandboxd-slow":
      return [["*", SimFault.latency(`${Number.parseInt(detail, 10)} millis`)]]
    case "sandboxd-5xx":
      return [["*", SimFault.status(503, "upstream unavailable")]]
    case "sandboxd-429":
      return [["claim", SimFault.status(429, "node claim quota reached: 64 live claims, cap 64")]]
    case "sandboxd-invalid":
      return [["*", SimFault.body(200, "<html><body>502 Bad Gateway</body></html>", "text/html")]]
    case "sandboxd-list-cut":
      return [["list", SimFault.truncate(200, `{"sandboxes":[{"id":"sb_0000","key":{"template":"python","net":"none","size":"sm`)]]
    case "sandboxd-list-undecodable":
      return [["list", SimFault.body(200, `{"sandboxes":[{"id":7,"key":null,"deadline":"soon"}]}`)]]
    case "sandboxd-list-fail":
      return [["list", SimFault.status(500, "listing failed")]]
    default:
      return undefined
  }
}

const tcpFault = (kind: FaultKind, detail: string): TcpFault | undefined => {
  if (kind.endsWith("-blackhole")) return { _tag: "Blackhole" }
  if (kind.endsWith("-delay")) return { _tag: "Delay", millis: Number.parseInt(detail, 10) }
  if (kind.endsWith("-reset")) return { _tag: "Reset" }
  if (kind.endsWith("-halfclose")) return { _tag: "HalfClose" }
  return undefined
}

export const makeNemesis = (world: World, daemon: DaemonSupervisor, history: History) =>
  Effect.gen(function*() {
    const resources = new Map<string, Semaphore.Semaphore>()
    for (const resource of ["daemon", "control-plane", "api-path", "sandboxd-path", "sandboxd-replies"]) resources.set(resource, yield* Semaphore.make(1))
    let backedUp = false
    const record = (kind: "start" | "stop", fault: string, detail: string) => history.record({ src: "nemesis", kind, at: Date.now(), fault, detail })

    /** The apiserver's Running Pods of the node and the claims file's rows, as of now (the daemon is down). */
    const snapshotDown = Effect.gen(function*() {
      const reply = yield* world.admin.request("GET", `/api/v1/pods?fieldSelector=spec.nodeName%3D${NodeName}`)
      if (reply.status !== 200) return
      const items = (reply.body as { items?: ReadonlyArray<unknown> }).items ?? []
      const running = items.map(podState).filter((p) => p.phase === "Running" && !p.deleting).map((p) => [p.key, p.claimId] as const)
      const rows = readClaimsFile(daemon.statePath).rows.map((r) => [r.key, r.id] as const)
      history.record({ src: "snapshot", kind: "daemon-down", at: Date.now(), running, rows })
    })

    const hold = (millis: number) => Effect.sleep(Math.max(0, millis))
    /** A control-plane action done: its end recorded, with why it failed (the run goes on). */
    const undone = (kind: string, action: Effect.Effect<void, { readonly message: string }>) =>
      Effect.map(Effect.exit(action), (exit) =>
        record("stop", kind, exit._tag === "Success" ? "" : `failed: ${exit.cause.toString().slice(0, 300)}`))

    /** One fault: begun, held, undone. */
    const apply = (fault: FaultStep): Effect.Effect<void> =>
      Effect.gen(function*() {
        const { kind, forMs, detail } = fault
        const processes = world.plane.processes
        switch (kind) {
          case "daemon-sigkill":
          case "daemon-sigterm":
            record("start", kind, `${detail} ${forMs} ms`)
            yield* daemon.end(kind === "daemon-sigkill" ? "SIGKILL" : "SIGTERM")
            yield* snapshotDown
            yield* hold(forMs)
            yield* daemon.start("")
            return record("stop", kind, "")
          case "daemon-sigstop":
            record("start", kind, `${detail} ${forMs} ms`)
            yield* daemon.signal("SIGSTOP")
            yield* snapshotDown
            yield* hold(forMs)
            yield* daemon.signal("SIGCONT")
            return record("stop", kind, "")
          case "daemon-disk-eio":
          case "daemon-disk-enospc":
            record("start", kind, detail)
            yield* daemon.end("SIGTERM")
            yield* daemon.start(detail)
            yield* hold(forMs)
            return record("stop", kind, "")
          case "apiserver-restart":
            record("start", kind, `${detail} ${forMs} ms`)
            return yield* undone(kind, processes.restartApiserver(forMs))
          case "etcd-restart":
            record("start", kind, `${detail} ${forMs} ms`)
            return yield* undone(kind, processes.restartEtcd(forMs))
          case "etcd-restore":
            if (!backedUp) return
            record("start", kind, detail)
            return yield* undone(kind, processes.restoreEtcd(BackupName))
          case "sandboxd-restart":
            record("start", kind, `${detail} ${forMs} ms`)
            yield* world.sandboxd.restart(forMs)
            return record("stop", kind, "")
          default: {
            const tcp = tcpFault(kind, detail)
            if (tcp !== undefined) {
              const proxy = kind.startsWith("api-") ? world.apiProxy : world.sandboxd.proxy
              const touched = proxy.setFault(tcp)
              record("start", kind, `${detail}${detail === "" ? "" : ", "}${touched} open connections`)
              yield* hold(forMs)
              proxy.setFault(undefined)
              return record("stop", kind, "")
            }
            const replies = replyFaults(kind, detail)
            if (replies === undefined) return
            record("start", kind, detail)
            yield* world.sandboxd.setFault(kind, replies)
            yield* hold(forMs)
            yield* world.sandboxd.setFault(kind, undefined)
            return record("stop", kind, "")
          }
        }
      })

    const onResource = (resource: string, effect: Effect.Effect<void>) => resources.get(resource)!.withPermits(1)(effect)

    const backup = onResource(
      "control-plane",
      Effect.gen(function*() {
        record("start", "etcd-backup", "etcd stopped for a copy of its data")
        const outcome = yield* Effect.exit(world.plane.processes.backupEtcd(BackupName))
        backedUp = outcome._tag === "Success"
        record("stop", "etcd-backup", backedUp ? "" : "failed")
      })
    )

    /** Every fault (and the backup) at its time after `startedAt`; none begins at or after `stopAt`. Waits for all to be undone. */
    const play = (plan: Plan, startedAt: number, stopAt: number) =>
      Effect.gen(function*() {
        const timed: Array<{ atMs: number; effect: Effect.Effect<void> }> = plan.faults.map((fault) => ({
          atMs: fault.atMs,
          effect: onResource(resourceOf(fault.kind), Effect.suspend(() => (Date.now() < stopAt ? apply(fault) : Effect.void)))
        }))
        if (plan.backup !== undefined) timed.push({ atMs: plan.backup.atMs, effect: backup })
        timed.sort((a, b) => a.atMs - b.atMs)
        yield* Effect.forEach(timed, ({ atMs, effect }) => {
          const wait = startedAt + atMs - Date.now()
          return wait > 0 ? Effect.sleep(wait).pipe(Effect.andThen(effect)) : effect
        }, { concurrency: "unbounded", discard: true })
      })

    return { play }
  })
