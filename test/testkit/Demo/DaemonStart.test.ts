/**
 * `spawnDaemonBound`: a daemon whose port was taken between `freePorts` letting it go and the
 * daemon binding it (another test's daemon, under load) is started again on fresh ports, and a
 * reply on the taken port is never mistaken for the daemon's own: the child must hold both ports.
 * A start that fails for any other reason is handed back as it ended, not retried.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { listensOn, spawnDaemonBound } from "../../../testkit/Demo/DaemonStart.ts"
import { freePorts, startCluster, StepFailed } from "../../../testkit/Demo/Harness.ts"

/** A loopback HTTP server that answers 200 to everything (a stranger that took the port). */
const stranger = Effect.acquireRelease(
  Effect.callback<http.Server>((resume) => {
    const server = http.createServer((_req, res) => res.end("ok"))
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
).pipe(Effect.map((server) => {
  const address = server.address()
  return typeof address === "object" && address !== null ? address.port : 0
}))

/** Ports for each start: `taken` as the metrics port for the first `times` starts, then fresh ones. */
const portsTaking = (taken: number, times: number) => {
  const starts = { count: 0 }
  const ports = Effect.suspend(() => {
    starts.count++
    return starts.count <= times ? Effect.map(freePorts(1), ([kubelet = 0]) => [kubelet, taken]) : freePorts(2)
  })
  return { starts, ports }
}

describe("spawnDaemonBound", () => {
  it.live("a metrics port taken before the daemon bound it: started again on fresh ports, and the port held is its own", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* startCluster()
      const taken = yield* stranger
      const { ports, starts } = portsTaking(taken, 1)
      const logFile = path.join(cluster.dir, "daemon.log")
      const daemon = yield* spawnDaemonBound(cluster, { ports, logFile })
      assert.strictEqual(starts.count, 2)
      assert.notStrictEqual(daemon.ports.metrics, taken)
      assert.isFalse(yield* Deferred.isDone(daemon.exited), daemon.output())
      assert.isTrue(listensOn(daemon.pid, [daemon.ports.kubelet, daemon.ports.metrics]))
      // The first start said why it ended.
      const log = fs.readFileSync(logFile, "utf8")
      assert.match(log, /MetricsListenError/)
      assert.include(log, "EADDRINUSE")
    })), { timeout: 90_000 })

  it.live("the port taken every time: a clear failure after the last start", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* startCluster()
      const taken = yield* stranger
      const { ports, starts } = portsTaking(taken, 99)
      const error = yield* Effect.flip(spawnDaemonBound(cluster, { ports }, { attempts: 2 }))
      assert.strictEqual(starts.count, 2)
      assert.instanceOf(error, StepFailed)
      assert.include(error.message, "2 starts in a row")
      assert.include(error.message, "EADDRINUSE")
    })), { timeout: 90_000 })

  it.live("a start that fails for another reason is handed back as it ended, once", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* startCluster()
      const { ports, starts } = portsTaking(0, 0)
      const daemon = yield* spawnDaemonBound(cluster, { ports, extraArgs: ["--kube-api-qps", "not-a-number"] })
      assert.strictEqual(starts.count, 1)
      assert.strictEqual(yield* Deferred.await(daemon.exited), 2, daemon.output())
    })), { timeout: 90_000 })
})
