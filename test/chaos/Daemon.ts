/**
 * The daemon of the chaos run, as the container image runs it: the bundle (`npm run build`) under
 * the image's node flags and malloc arena limit (read from the Dockerfile, as the bench does),
 * against the world's proxies. One process at a time ("incarnations"): the nemesis kills, stops,
 * terminates and restarts it; one that exits on its own (a start refused while the apiserver is
 * away) is started again after a pause, as the kubelet restarts a container. Each line it writes
 * reaches `onLine` with the incarnation that wrote it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Deferred, Effect, Fiber, Scope } from "effect"
import { imageNodeFlags, mallocArenaMax } from "../../bench/nodeFlags.ts"
import { type Daemon, spawnDaemon } from "../../testkit/Demo/Harness.ts"
import { recordForCleanup } from "../k8s/fixture/Processes.ts"
import type { History } from "./History.ts"
import type { World } from "./World.ts"

export const NodeName = "vk-chaos"
export const RuntimeLabel = "sandbox.cocoonstack.io/runtime"

/** Timings short enough for a run of minutes; the checker's bounds are built from the same numbers. */
export const daemonTimings = {
  sandboxdTimeoutMs: 3_000,
  claimSettleMs: 3_000,
  leaseWatchMs: 2_000
}

/** The checker's bounds for a daemon with these timings; `settleSeconds` is the run's own (`--settle`). */
export const boundsFor = (settleSeconds: number) => ({
  settleMs: settleSeconds * 1000,
  claimSettleMs: daemonTimings.claimSettleMs,
  leaseWatchMs: daemonTimings.leaseWatchMs,
  // the simulator's reaper period (World.ts) and the pod controller's resync
  reapMs: 1_000,
  resyncMs: 60_000
})

const flags = [
  "--node-labels", `${RuntimeLabel}=sandboxd`,
  "--sandboxd-timeout", `${daemonTimings.sandboxdTimeoutMs}ms`,
  "--claim-settle-time", `${daemonTimings.claimSettleMs}ms`,
  "--lease-watch-interval", `${daemonTimings.leaseWatchMs}ms`,
  "--claim-verify-interval", "2s",
  "--sandboxd-probe-interval", "2s",
  "--watch-check-interval", "5s",
  "--orphan-scan-interval", "10s",
  "--shutdown-timeout", "5s",
  "--log-format", "json"
]

export interface DaemonSupervisor {
  readonly statePath: string
  readonly logFile: string
  readonly current: () => Daemon | undefined
  /** SIGKILL or SIGTERM, and wait until it is gone and its last line read (no restart: the caller starts the next). */
  readonly end: (signal: "SIGKILL" | "SIGTERM") => Effect.Effect<void>
  readonly signal: (signal: "SIGSTOP" | "SIGCONT") => Effect.Effect<void>
  /** A new incarnation, with failpoints armed (`VK_SANDBOX_FAILPOINTS`) or none (""). */
  readonly start: (failpoints: string) => Effect.Effect<void>
  /** No more restarts of a daemon that exits on its own (the run is ending). */
  readonly stopSupervising: () => void
}

export const superviseDaemon = (
  world: World,
  repoRoot: string,
  history: History,
  onLine: (line: string, incarnation: number) => void
): Effect.Effect<DaemonSupervisor, never, Scope.Scope> =>
  Effect.gen(function*() {
    const entry = path.join(repoRoot, "dist", "main.js")
    if (!fs.existsSync(entry)) return yield* Effect.die(new Error(`${entry} is missing: run npm run build first (test/chaos/run.sh does)`))
    const command = [process.execPath, ...imageNodeFlags(repoRoot), entry] as const
    const arena = mallocArenaMax(fs.readFileSync(path.join(repoRoot, "Dockerfile"), "utf8"))
    const statePath = path.join(world.dir, "state", "claims.json")
    const logFile = path.join(world.dir, "daemon.log")
    const scope = yield* Effect.scope
    /** The current incarnation; `read` is done once it has ended and every line it wrote went to `onLine`. */
    let current: { readonly daemon: Daemon; readonly read: Deferred.Deferred<void> } | undefined
    let incarnation = 0
    /** An exit the nemesis asked for (not restarted by the supervisor). */
    let expected = false
    let supervising = true

    const start = (failpoints: string): Effect.Effect<void> =>
      Effect.gen(function*() {
        incarnation++
        const mine = incarnation
        const env: Record<string, string> = { ...(arena === undefined ? {} : { MALLOC_ARENA_MAX: arena }), ...(failpoints === "" ? {} : { VK_SANDBOX_FAILPOINTS: failpoints }) }
        const daemon = yield* spawnDaemon(
          { kubeconfigPath: world.daemonKubeconfig, sandboxdUrl: world.sandboxd.url, tokenFile: world.tokenFile, statePath, nodeName: NodeName },
          { command, flags, env, logFile, logHeader: `---- incarnation ${mine}${failpoints === "" ? "" : ` VK_SANDBOX_FAILPOINTS=${failpoints}`}` }
        ).pipe(Scope.provide(scope), Effect.orDie)
        const read = yield* Deferred.make<void>()
        current = { daemon, read }
        expected = false
        // run.sh kills what is left of every daemon if the run itself dies.
        recordForCleanup("pids", daemon.pid)
        history.record({ src: "daemon", kind: "process", at: Date.now(), incarnation: mine, what: "started", detail: failpoints })
        // Its lines, as they come; then its end, and a restart unless the nemesis ended it.
        let offset = 0
        const drain = () => {
          const output = daemon.output()
          const end = output.lastIndexOf("\n") + 1
          if (end <= offset) return
          for (const line of output.slice(offset, end).split("\n")) if (line !== "") onLine(line, mine)
          offset = end
        }
        const reader = yield* Effect.sync(drain).pipe(Effect.andThen(Effect.sleep("500 millis")), Effect.forever, Effect.forkIn(scope))
        yield* Deferred.await(daemon.exited).pipe(
          Effect.flatMap((code) =>
            Effect.gen(function*() {
              yield* Fiber.interrupt(reader)
              drain()
              yield* Deferred.succeed(read, undefined)
              history.record({ src: "daemon", kind: "process", at: Date.now(), incarnation: mine, what: "exited", detail: String(code) })
              if (expected || !supervising || current?.daemon !== daemon) return
              yield* Effect.sleep("2 seconds")
              if (current?.daemon === daemon && supervising) yield* start("")
            })
          ),
          Effect.forkIn(scope)
        )
      })

    yield* start("")
    return {
      statePath,
      logFile,
      current: () => current?.daemon,
      end: (signal) =>
        Effect.suspend(() => {
          const now = current
          if (now === undefined) return Effect.void
          expected = true
          return now.daemon.signal(signal).pipe(Effect.andThen(Deferred.await(now.read)))
        }),
      signal: (signal) => Effect.suspend(() => current?.daemon.signal(signal) ?? Effect.void),
      start,
      stopSupervising: () => {
        supervising = false
      }
    }
  })
