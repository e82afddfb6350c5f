/**
 * Starting the daemon on ports that stay its own. `freePorts` finds two free loopback ports and
 * lets them go for the daemon to bind; on a busy machine another process (another test's daemon)
 * can bind one in between, and the daemon ends at once with `MetricsListenError` or
 * `KubeletListenError` (EADDRINUSE). `spawnDaemonBound` waits until the child itself listens on
 * both ports, read from /proc (a reply on the port proves nothing: it may come from the process
 * that took it), and starts it again on fresh ports when it lost one.
 */
import * as fs from "node:fs"
import { Deferred, type Duration, Effect, Option, type Scope } from "effect"
import { type Daemon, type DaemonOptions, type DaemonTarget, spawnDaemon, StepFailed, waitFor } from "./Harness.ts"

/** The start failed only because a port it was given was taken first: a fresh pair may work. */
export const lostAPort = (output: string): boolean =>
  /\b(MetricsListenError|KubeletListenError)\b/.test(output) &&
  output.includes("EADDRINUSE")

/** Socket inodes listening on loopback `port` (IPv4 and IPv6), from /proc/net. */
const listeningInodes = (port: number): ReadonlySet<string> => {
  const inodes = new Set<string>()
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0")
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = ""
    try {
      text = fs.readFileSync(table, "utf8")
    } catch {
      continue
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/)
      // local_address is ADDR:PORT in hex; state 0A is LISTEN; the inode is the tenth field
      if (fields[1]?.endsWith(`:${hexPort}`) === true && fields[3] === "0A" && fields[9] !== undefined) inodes.add(fields[9])
    }
  }
  return inodes
}

/** True when process `pid` holds a socket listening on every one of `ports`. */
export const listensOn = (pid: number, ports: ReadonlyArray<number>): boolean => {
  let fds: Array<string>
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`)
  } catch {
    return false
  }
  const own = new Set<string>()
  for (const fd of fds) {
    try {
      const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`)
      if (target.startsWith("socket:[")) own.add(target.slice(8, -1))
    } catch {
      // closed meanwhile
    }
  }
  return ports.every((port) => [...listeningInodes(port)].some((inode) => own.has(inode)))
}

export interface BoundOptions {
  /** Starts in all, the first included (5). */
  readonly attempts?: number
  /** How long one start may take to bind both ports; only ends a hung wait (60 s). */
  readonly timeout?: Duration.Input
}

/**
 * `spawnDaemon`, returned once the child listens on both of its ports, or once it ended for any
 * other reason than a port taken first (the caller reads why from its output and exit). A start
 * that lost a port is started again on fresh ports, up to `attempts` starts.
 */
export const spawnDaemonBound = (
  target: DaemonTarget,
  options: DaemonOptions = {},
  bound: BoundOptions = {}
): Effect.Effect<Daemon, StepFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const attempts = bound.attempts ?? 5
    for (let attempt = 1; ; attempt++) {
      const daemon = yield* spawnDaemon(target, options)
      const ports = [daemon.ports.kubelet, daemon.ports.metrics]
      const ended = yield* waitFor(
        "daemon start",
        `the daemon listening on ${ports.join(" and ")}, or its end`,
        Effect.gen(function*() {
          if (yield* Deferred.isDone(daemon.exited)) return Option.some(true)
          return listensOn(daemon.pid, ports) ? Option.some(false) : Option.none()
        }),
        { timeout: bound.timeout ?? "60 seconds", describe: () => daemon.output().slice(-2000) }
      )
      if (!ended || !lostAPort(daemon.output())) return daemon
      if (attempt >= attempts) {
        return yield* new StepFailed({
          step: "daemon start",
          message: `a port was taken before the daemon bound it, ${attempts} starts in a row; last output:\n${daemon.output().slice(-2000)}`
        })
      }
    }
  })
