/**
 * The daemon as a product: the real executable as a child process against both simulators (in
 * this process, on loopback). Readiness before and after the first pod list, a few Pods Running,
 * the metric families, then SIGTERM in the middle of a burst of creates: exit 0,
 * every claim sandboxd holds for a Running Pod in the claims file, no token in the output.
 *
 * Real time throughout (`it.live`): the daemon is another process with its own clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Option } from "effect"
import * as fs from "node:fs"
import { SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import {
  createPod,
  deletePod,
  getPod,
  httpGet,
  readClaimsFile,
  spawnDaemon,
  startCluster,
  waitFor
} from "../../testkit/Demo/Harness.ts"
import { runBinary } from "../support/Process.ts"

const SHUTDOWN_TIMEOUT_SECONDS = 3

describe("daemon end to end", () => {
  it.live("readyz, metrics, and SIGTERM during a burst of creates", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* startCluster({ warmPerPool: 8 })
      // Every pod list fails until the rule is removed: the daemon cannot sync its watch.
      const listFault = { method: "GET", path: /^\/api\/v1\/pods$/, code: 500, times: 1_000_000 }
      cluster.model.faults.failures.push(listFault)
      const daemon = yield* spawnDaemon(cluster, { shutdownTimeout: `${SHUTDOWN_TIMEOUT_SECONDS}s` })

      // ---- readiness: 503 before the first successful pod list, 200 after.
      const notReady = yield* waitFor(
        "readyz before the first list",
        "/readyz to answer",
        httpGet(`${daemon.metricsUrl}/readyz`),
        { timeout: "20 seconds", describe: daemon.output }
      )
      assert.strictEqual(notReady.status, 503, notReady.body)
      assert.include(notReady.body, "pod watch not synced")
      // Still 503 after another list failed: the failing lists keep it out, not a start-up race.
      const failedSoFar = listFault.times
      yield* waitFor(
        "readyz before the first list",
        "another failed pod list",
        Effect.sync(() => (listFault.times < failedSoFar ? Option.some(true) : Option.none())),
        { timeout: "20 seconds", describe: daemon.output }
      )
      const stillNotReady = yield* httpGet(`${daemon.metricsUrl}/readyz`)
      assert.isTrue(Option.isSome(stillNotReady) && stillNotReady.value.status === 503)
      cluster.model.faults.failures.splice(cluster.model.faults.failures.indexOf(listFault), 1)
      yield* waitFor(
        "readyz after the first list",
        "/readyz 200",
        httpGet(`${daemon.metricsUrl}/readyz`).pipe(Effect.map(Option.filter((r) => r.status === 200))),
        { timeout: "20 seconds", describe: daemon.output }
      )

      // ---- a few Pods Running.
      const tokens = new Set<string>()
      const collectTokens = Effect.gen(function*() {
        for (const claim of yield* cluster.sandboxd.claims) tokens.add(claim.token)
        for (const row of Object.values(readClaimsFile(cluster))) {
          if (typeof row["token"] === "string") tokens.add(row["token"])
        }
      })
      for (const name of ["warm-1", "warm-2", "warm-3"]) yield* createPod(cluster, "scenario", name)
      for (const name of ["warm-1", "warm-2", "warm-3"]) {
        yield* waitFor(
          "scenario",
          `${name} Running`,
          Effect.sync(() => Option.filter(getPod(cluster, name), (p) => p.phase === "Running" && p.claimId !== "")),
          { describe: daemon.output }
        )
      }
      yield* collectTokens

      // ---- `vk-sandbox claims` beside the running daemon (no lock taken, tokens redacted).
      const listing = yield* runBinary(["claims", "--state-path", cluster.statePath])
      assert.strictEqual(listing.code, 0, listing.output)
      for (const name of ["warm-1", "warm-2", "warm-3"]) {
        const claimId = Option.getOrThrow(getPod(cluster, name)).claimId
        assert.match(listing.output, new RegExp(`^team-a/${name}\\s+${claimId}\\s`, "m"), listing.output)
      }
      for (const token of tokens) assert.notInclude(listing.output, token)

      // ---- a bare Pod deleted: its claim is released (a delete verdict and a release to count).
      const releasedId = Option.getOrThrow(getPod(cluster, "warm-3")).claimId
      yield* deletePod(cluster, "scenario", "warm-3")
      yield* waitFor(
        "scenario",
        "warm-3 gone and its claim released",
        Effect.gen(function*() {
          const held = (yield* cluster.sandboxd.claims).some((c) => c.id === releasedId)
          return Option.isNone(getPod(cluster, "warm-3")) && !held ? Option.some(true) : Option.none()
        }),
        { describe: daemon.output }
      )

      // ---- the metric families after the scenario.
      const metrics = yield* httpGet(`${daemon.metricsUrl}/metrics`)
      assert.isTrue(Option.isSome(metrics))
      const body = Option.getOrThrow(metrics).body
      for (
        const family of [
          "vk_sandbox_claims_total",
          "vk_sandbox_claim_duration_seconds",
          "vk_sandbox_claims_held",
          "vk_sandbox_quarantined_claims",
          "vk_sandbox_releases_total",
          "vk_sandbox_delete_verdicts_total",
          "vk_sandbox_commit_duration_seconds",
          "vk_sandbox_apiserver_requests_total",
          "vk_sandbox_sandboxd_request_duration_seconds"
        ]
      ) {
        assert.match(body, new RegExp(`^# TYPE ${family} `, "m"), `family ${family} in /metrics`)
      }
      // every stage of a Pod's start was timed (the Pods above were claimed and went Running)
      for (const stage of ["queue", "intent", "claim", "commit", "status_write"]) {
        assert.match(body, new RegExp(`^vk_sandbox_pod_start_stage_seconds_count\\{[^}]*stage="${stage}"[^}]*\\} [1-9]`, "m"), `stage ${stage} timed`)
      }
      // MON-5: each Pod that went Running above is one start, timed once
      assert.match(body, /^vk_sandbox_pod_start_duration_seconds_count(\{[^}]*\})? [1-9]/m, "pod starts timed")
      // Every family served is documented in docs/operations.md with its type, and every
      // documented family is served, except those the table says appear with their first event.
      const served = new Map([...body.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]))
      const rows = [...fs.readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8")
        .matchAll(/^\| `([a-z0-9_]+)` \| (counter|gauge|histogram) \|(.*)$/gm)]
      const documented = new Map(rows.map((m) => [m[1]!, m[2]!]))
      const onFirstEvent = new Set(rows.filter((m) => m[3]!.includes("appears with the first")).map((m) => m[1]!))
      for (const [family, type] of served) assert.strictEqual(documented.get(family), type, `${family} documented as a ${type}`)
      for (const family of documented.keys()) {
        if (!onFirstEvent.has(family)) assert.isTrue(served.has(family), `${family} served`)
      }
      assert.match(body, /^vk_sandbox_build_info\{version="[^"]+",revision="[^"]+"\} 1$/m)
      assert.match(body, /^process_resident_memory_bytes [1-9]\d*$/m)
      assert.match(body, /^vk_sandbox_claims\{state="durable"\} 2$/m)
      // one gauge per fact: claims in doubt are vk_sandbox_claims_in_doubt, not a state of the rows
      assert.deepStrictEqual([...body.matchAll(/^vk_sandbox_claims\{state="([a-z_]+)"\}/gm)].map((m) => m[1]).sort(), ["durable", "lost", "quarantined", "tentative"])
      assert.match(body, /^vk_sandbox_claims_in_doubt 0$/m)
      assert.notMatch(body, /pod="/, "no per-Pod label")
      assert.match(body, /^vk_sandbox_claims_held(\{[^}]*\})? 2$/m, "two claims held")
      // the process's memory, sampled at the scrape: tens of megabytes, not zero
      for (const gauge of ["process_resident_memory_bytes", "nodejs_heap_size_used_bytes"]) {
        const sampled = Number(new RegExp(`^${gauge}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(body)?.[1] ?? "0")
        assert.isAbove(sampled, 10 * 1024 * 1024, gauge)
      }
      assert.match(body, /^vk_sandbox_releases_total\{[^}]*result="released"[^}]*\} 1$/m)
      // The failed lists are counted by verb and code.
      assert.match(body, /^vk_sandbox_apiserver_requests_total\{verb="GET",resource="pods",code="500"\} [1-9]/m)
      assert.match(body, /^vk_sandbox_apiserver_request_duration_seconds_count\{verb="PUT",resource="pods\/status",code="200"\} [1-9]/m)

      // ---- SIGTERM in the middle of a burst of creates: each claim takes 400 ms in sandboxd, so
      // the signal lands while claims are in flight.
      yield* cluster.sandboxd.injectFault("claim", SimFault.latency("400 millis"))
      const requestsBefore = (yield* cluster.sandboxd.audit).filter((e) => e.route === "claim").length
      for (let i = 0; i < 20; i++) yield* createPod(cluster, "burst", `burst-${i}`)
      yield* waitFor(
        "burst",
        "claims in flight in sandboxd",
        Effect.map(cluster.sandboxd.audit, (audit) =>
          audit.filter((e) => e.route === "claim").length > requestsBefore ? Option.some(true) : Option.none())
      )
      // The drain's bound is kept on the TestClock (PodControllerStubbed: "drain keeps to its
      // bound"); here the process ends, and cleanly, with claims in flight.
      yield* daemon.signal("SIGTERM")
      const code = yield* Deferred.await(daemon.exited).pipe(Effect.timeout("30 seconds"))
      assert.strictEqual(code, 0, daemon.output())
      yield* collectTokens

      // Every claim sandboxd holds for a Running Pod is in the claims file.
      const file = readClaimsFile(cluster)
      let runningChecked = 0
      for (const claim of yield* cluster.sandboxd.claims) {
        const name = claim.claimRef.split("/")[1] ?? ""
        const pod = getPod(cluster, name)
        if (Option.isNone(pod) || pod.value.phase !== "Running") continue
        runningChecked++
        assert.strictEqual(file[claim.claimRef]?.["id"], claim.id, `${claim.claimRef} (${claim.id}) in the claims file`)
      }
      assert.isAtLeast(runningChecked, 2, "the Running pods were checked")
      // The file holds no claim sandboxd does not know (nothing undone was left behind).
      const held = new Set((yield* cluster.sandboxd.claims).map((c) => c.id))
      for (const [key, row] of Object.entries(file)) assert.isTrue(held.has(String(row["id"])), `${key} held in sandboxd`)

      // No token in anything the daemon printed.
      const output = daemon.output()
      assert.isAbove(output.length, 0)
      assert.isAtLeast(tokens.size, 3)
      for (const token of tokens) assert.notInclude(output, token, "a claim token in the daemon's output")
      assert.notInclude(output, fs.readFileSync(cluster.tokenFile, "utf8").trim(), "the root token in the daemon's output")
    })), { timeout: 90_000 })
})
