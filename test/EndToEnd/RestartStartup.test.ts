/**
 * A restart on a claims file (CFG-11 — start order): the first pod list is asked for while the
 * claims are still being verified, and readiness still waits for all of it. The verification's
 * listing is held unanswered (a five-minute request timeout), so the order is not a race.
 * Real time (`it.live`): the daemon is another process; the waits are long only for a loaded
 * machine, where starting the daemon from source takes tens of seconds.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Option } from "effect"
import { SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { createPod, getPod, httpGet, spawnDaemon, startCluster, waitFor } from "../../testkit/Demo/Harness.ts"

describe("daemon restart", () => {
  it.live("the first pod list is asked for while the claims are still being verified; readiness waits for both", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* startCluster({ warmPerPool: 2 })
      const first = yield* spawnDaemon(cluster)
      yield* createPod(cluster, "setup", "web")
      yield* waitFor(
        "setup",
        "web Running",
        Effect.sync(() => Option.filter(getPod(cluster, "web"), (p) => p.phase === "Running" && p.claimId !== "")),
        { timeout: "60 seconds", describe: first.output }
      )
      yield* first.signal("SIGTERM")
      yield* Deferred.await(first.exited)

      // The restart's verification listing never answers; its first pod list is answered 500 and counted.
      yield* cluster.sandboxd.clearAudit
      yield* cluster.sandboxd.injectFault("list", SimFault.hang, { times: 1 })
      const probe = { method: "GET", path: /^\/api\/v1\/pods$/, code: 500, times: 1 }
      cluster.model.faults.failures.push(probe)
      const second = yield* spawnDaemon(cluster, { extraArgs: ["--sandboxd-timeout", "5m"] })
      yield* waitFor(
        "restart",
        "a pod list asked for",
        Effect.sync(() => (probe.times === 0 ? Option.some(true) : Option.none())),
        { timeout: "90 seconds", describe: second.output }
      )
      // The only listing sent so far, if any, is the held one: the claims are not verified yet.
      const listings = (yield* cluster.sandboxd.audit).filter((entry) => entry.route === "list")
      assert.isAtMost(listings.length, 1, "the claims' verification listing has not been answered")
      const ready = yield* httpGet(`${second.metricsUrl}/readyz`)
      assert.isFalse(Option.isSome(ready) && ready.value.status === 200, "not ready before the claims are verified")
    })), { timeout: 240_000 })
})
