/**
 * The gauges sampled at the scrape: Pods by phase, why sandboxd cannot serve (one series per
 * reason), and the claims in doubt whose settle window (CRT-22 — the settle window counts from when
 * a claim was abandoned) has passed, on the TestClock.
 *
 * Rules: MON-4 — a gauge over state kept elsewhere is counted at the scrape; CRT-22.
 */
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Metric } from "effect"
import { TestClock } from "effect/testing"
import { makeClaimTable } from "../../../src/Layers/ClaimTableRef.ts"
import { makeClaimDoubts } from "../../../src/Layers/ClaimTableRef/ClaimDoubtsRef.ts"
import { sample, type SampledSources } from "../../../src/Programs/Observability/Sampled.ts"
import { testConfig } from "../../../testkit/Config.ts"
import { type PodKey, podKeyOf } from "../../../src/Schemas/Ids.ts"
import type { Pod } from "../../../src/Schemas/Pod/Schema.ts"
import {
  claimsInDoubtPastSettle,
  labelled,
  podPhases,
  podsByPhase,
  sandboxdUnavailable,
  sandboxdUnavailableReasons
} from "../../../src/Services/Metrics.ts"
import type { SandboxdReachability } from "../../../src/Services/NodeController.ts"

const START = Date.parse("2026-07-27T02:15:00.000Z")

const pod = (name: string, phase?: string): Pod => ({
  metadata: { namespace: "team-a", name, uid: `uid-${name}` },
  spec: { nodeName: "vk", containers: [] },
  ...(phase === undefined ? {} : { status: { phase } })
}) as Pod

const gauge = (metric: Metric.Metric<number, Metric.GaugeState<number>>, attributes: Record<string, string>) =>
  Effect.map(Metric.value(labelled(metric, attributes)), (state) => state.value)

const world = (pods: ReadonlyArray<Pod>, reachability: SandboxdReachability) =>
  Effect.gen(function*() {
    const sources: SampledSources = {
      table: (yield* makeClaimTable).table,
      doubts: yield* makeClaimDoubts,
      sandboxd: Effect.sync(() => reachability),
      pods: Effect.succeed(pods),
      config: testConfig({ sandboxdTimeout: Duration.seconds(10), claimSettleTime: Duration.seconds(20) })
    }
    return sources
  })

describe("sampled gauges", () => {
  it.effect("Pods by phase: no phase yet is Pending, a phase the daemon does not know is Unknown", () =>
    Effect.gen(function*() {
      const sources = yield* world([
        pod("a"),
        pod("b", "Pending"),
        pod("c", "Running"),
        pod("d", "Running"),
        pod("e", "Failed"),
        pod("f", "Succeeded"),
        pod("g", "Sideways")
      ], { _tag: "Reachable" })
      yield* sample(sources)
      const byPhase: Record<string, number> = {}
      for (const phase of podPhases) byPhase[phase] = yield* gauge(podsByPhase, { phase })
      assert.deepStrictEqual(byPhase, { Pending: 2, Running: 2, Succeeded: 1, Failed: 1, Unknown: 1 })
    }))

  it.effect("sandboxd unavailable: 1 for the probe's reason only, all 0 when it answers", () =>
    Effect.gen(function*() {
      const reasons = Effect.gen(function*() {
        const now: Record<string, number> = {}
        for (const reason of sandboxdUnavailableReasons) now[reason] = yield* gauge(sandboxdUnavailable, { reason })
        return now
      })
      yield* sample(yield* world([], { _tag: "Unavailable", reason: "Unauthorized", message: "refused" }))
      assert.deepStrictEqual(yield* reasons, { Unreachable: 0, Unauthorized: 1, Failing: 0, Draining: 0 })
      yield* sample(yield* world([], { _tag: "Unavailable", reason: "Unreachable", message: "refused" }))
      assert.deepStrictEqual(yield* reasons, { Unreachable: 1, Unauthorized: 0, Failing: 0, Draining: 0 })
      yield* sample(yield* world([], { _tag: "Reachable" }))
      assert.deepStrictEqual(yield* reasons, { Unreachable: 0, Unauthorized: 0, Failing: 0, Draining: 0 })
    }))

  it.effect("claims in doubt past settle: counted from the later of send + timeout and abandonment, plus the settle time", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const sources = yield* world([], { _tag: "Reachable" })
      const at = (ms: number) => DateTime.makeUnsafe(START + ms)
      // Sent at START, abandoned at once: settles at START + 10 s timeout + 20 s settle = 30 s.
      yield* sources.doubts.add({ key: podKeyOf("team-a", "early") as PodKey, podUid: "u1", startedAt: at(0), abandonedAt: at(0) })
      // Sent at START, abandoned at 25 s (it waited for a permit): settles at 45 s.
      yield* sources.doubts.add({ key: podKeyOf("team-a", "late") as PodKey, podUid: "u2", startedAt: at(0), abandonedAt: at(25_000) })
      const pastSettle = Effect.andThen(sample(sources), gauge(claimsInDoubtPastSettle, {}))

      yield* TestClock.setTime(START + 29_999)
      assert.strictEqual(yield* pastSettle, 0, "both windows still open")
      yield* TestClock.setTime(START + 30_000)
      assert.strictEqual(yield* pastSettle, 1, "the first window has passed")
      yield* TestClock.setTime(START + 45_000)
      assert.strictEqual(yield* pastSettle, 2, "both windows have passed")
      yield* sources.doubts.clear(podKeyOf("team-a", "early") as PodKey)
      assert.strictEqual(yield* pastSettle, 1, "a settled doubt no longer counts")
    }))
})
