/**
 * The crash suite (`npm run test:crash`): the real daemon against both simulators, killed at every
 * failpoint and at random moments of 300-Pod bursts, restarted, and judged by three invariants
 * (no Running Pod without a durable row, right after every kill and at the end; no live sandbox
 * without a token holder once settled; no Pod key with two live sandboxes). Sizes are
 * VK_CRASH_BURSTS, VK_CRASH_KILLS_PER_BURST, VK_CRASH_PODS, VK_CRASH_SEED; defaults are CI's.
 */
import { assert, describe, it } from "@effect/vitest"
import * as path from "node:path"
import { Deferred, Duration, Effect, Option } from "effect"
import { type Cluster, startCluster } from "../../testkit/Demo/Harness.ts"
import { poll } from "../../testkit/Poll.ts"
import { failpointNames } from "../../src/Services/Failpoints.ts"
import {
  createPods,
  deletePods,
  describeViolations,
  envNumber,
  runningWithoutRow,
  seededRandom,
  settle,
  startDaemon,
  type Violations,
  violationCount
} from "./harness.ts"

const bursts = envNumber("VK_CRASH_BURSTS", 4)
const killsPerBurst = envNumber("VK_CRASH_KILLS_PER_BURST", 5)
const podsPerBurst = envNumber("VK_CRASH_PODS", 300)
const seed = envNumber("VK_CRASH_SEED", Date.now() % 1_000_000)
const random = seededRandom(seed)
const between = (lo: number, hi: number) => Math.floor(lo + random() * (hi - lo))

const totals = { kills: 0, failpointCrashes: 0, runningWithoutRowAfterKill: 0, violations: 0, unsettled: 0 }

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(3, "0")}`)

const cluster = (label: string) =>
  Effect.map(startCluster({ warmPerPool: 32, keepDir: process.env["VK_CRASH_KEEP"] === "1", nodeName: `vk-crash-${label}`.slice(0, 60) }), (c) => ({
    cluster: c,
    logFile: path.join(c.dir, "daemon.log")
  }))

/** Waits (at most 30 s) until sandboxd has had a request (of `route`) since the audit log held `mark` entries. */
const sandboxdActivity = (c: Cluster, mark: number, route: "claim" | undefined) =>
  poll(
    Effect.map(c.sandboxd.audit, (audit) => audit.slice(mark).some((entry) => route === undefined || entry.route === route)),
    30_000,
    100,
    () => Effect.fail("quiet" as const)
  ).pipe(Effect.ignore)

/** The daemon's log tail, for a failure message. */
const tail = (output: string) => output.split("\n").slice(-15).join("\n")

const record = (label: string, result: { readonly settled: boolean; readonly violations: Violations; readonly pending: ReadonlyArray<string> }) => {
  totals.violations += violationCount(result.violations)
  if (!result.settled) totals.unsettled++
  return result.settled
    ? ""
    : `${label}: not settled (${result.pending.length} Pods pending, e.g. ${result.pending.slice(0, 3).join(", ")}); ${describeViolations(result.violations)}`
}

/** Kills happen while the daemon is down: the Pods it had pushed must all have rows. */
const checkAfterKill = (c: Cluster, pods: ReadonlyArray<string>) => {
  const bad = runningWithoutRow(c, pods)
  totals.runningWithoutRowAfterKill += bad.length
  return bad
}

// Which Pods a failpoint scenario needs: creates for the claim and push points, deletes for the rest.
const deletePoints = new Set(["release-before-send", "release-after-send", "delete-before-commit"])

// Each failpoint has its own cluster and daemon, so a few run at once (maxConcurrency in the config).
describe.concurrent("crash suite: failpoints", () => {
  for (const point of failpointNames) {
    it.live(`failpoint ${point}=crash: restarted, the invariants hold`, () =>
      Effect.scoped(Effect.gen(function*() {
        const { cluster: c, logFile } = yield* cluster(point)
        const pods = names("fp", 12)
        const deleting = deletePoints.has(point)
        const keep = deleting ? pods.slice(6) : pods
        const gone = deleting ? pods.slice(0, 6) : []
        const armed = yield* startDaemon(c, { failpoints: `${point}=crash`, logFile })
        yield* createPods(c, pods)
        if (deleting) {
          const up = yield* settle(c, pods, [], "60 seconds")
          assert.isTrue(up.settled, `${point}: Pods never ran before the deletes: ${describeViolations(up.violations)}`)
          yield* deletePods(c, gone)
        }
        const exit = yield* Deferred.await(armed.exited).pipe(Effect.timeout("60 seconds"), Effect.option)
        assert.deepStrictEqual(exit, Option.some("SIGKILL"), `${point}: the failpoint crashed the daemon\n${tail(armed.output())}`)
        totals.failpointCrashes++
        const bad = checkAfterKill(c, pods)
        assert.deepStrictEqual(bad, [], `${point}: Running Pods without a row right after the crash`)
        yield* startDaemon(c, { logFile })
        const result = yield* settle(c, keep, gone, "60 seconds")
        const problem = record(point, result)
        assert.strictEqual(problem, "", `${problem}\n(log: ${logFile})`)
      })), { timeout: 150_000 })
  }

})

describe("crash suite: random kills", () => {
  it.live(`${bursts} bursts of ${podsPerBurst} Pods, ${killsPerBurst} random kill -9 each`, () =>
    Effect.gen(function*() {
      const problems: Array<string> = []
      for (let burst = 0; burst < bursts; burst++) {
        yield* Effect.scoped(Effect.gen(function*() {
          const { cluster: c, logFile } = yield* cluster(`burst-${burst}`)
          const pods = names(`b${burst}`, podsPerBurst)
          // Every other burst also deletes a third of its Pods after the second kill (releases under kills).
          const deletes = burst % 2 === 1 ? pods.slice(0, Math.floor(podsPerBurst / 3)) : []
          let auditMark = 0
          let daemon = yield* startDaemon(c, { logFile })
          yield* createPods(c, pods)
          for (let kill = 0; kill < killsPerBurst; kill++) {
            // Killed while it works: once this daemon has sent sandboxd its first claim (the
            // first kill) or any request (later ones, which may land in the recovery itself).
            const route = kill === 0 ? "claim" : undefined
            yield* sandboxdActivity(c, auditMark, route)
            yield* Effect.sleep(Duration.millis(between(0, kill === 0 ? 1_000 : 1_500)))
            yield* daemon.kill
            totals.kills++
            const bad = checkAfterKill(c, pods)
            if (bad.length > 0) problems.push(`burst ${burst} kill ${kill}: Running without a row: ${bad.slice(0, 5).join(", ")}`)
            auditMark = (yield* c.sandboxd.audit).length
            daemon = yield* startDaemon(c, { logFile })
            if (kill === 1 && deletes.length > 0) yield* deletePods(c, deletes)
          }
          const keep = pods.filter((name) => !deletes.includes(name))
          const problem = record(`burst ${burst}`, yield* settle(c, keep, deletes, "120 seconds"))
          if (problem !== "") problems.push(`${problem} (log: ${logFile})`)
        }))
      }
      assert.deepStrictEqual(problems, [])
    }), { timeout: 600_000 })

  it("summary", () => {
    // One line with the figures the suite is judged by (read by people and by CI logs).
    console.log(
      `crash suite: seed=${seed} failpoints=${totals.failpointCrashes}/${failpointNames.length} bursts=${bursts}x${podsPerBurst} kills=${totals.kills} ` +
        `running-without-row-after-kill=${totals.runningWithoutRowAfterKill} violations-after-settle=${totals.violations} unsettled=${totals.unsettled}`
    )
  })
})
