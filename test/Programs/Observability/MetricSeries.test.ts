/**
 * `Metrics.labelled`: the series of a metric for one attribute set, made once. It must be the very
 * series `Metric.withAttributes` names (same registry key, same exported labels), so swapping one
 * for the other changes nothing a dashboard reads.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Metric } from "effect"
import * as Metrics from "../../../src/Services/Metrics.ts"

const inFreshRegistry = <A, E>(effect: Effect.Effect<A, E>) => Effect.provideService(effect, Metric.MetricRegistry, new Map())

describe("Metrics.labelled", () => {
  it.effect("updates the same series as withAttributes, for counters, histograms and gauges", () =>
    inFreshRegistry(Effect.gen(function*() {
      const labels = { verb: "PUT", resource: "pods/status", code: "200" }
      yield* Metrics.count(Metrics.apiserverRequests, labels)
      yield* Metric.update(Metric.withAttributes(Metrics.apiserverRequests, labels), 1)
      yield* Metric.update(Metrics.labelled(Metrics.apiserverRequests, { ...labels }), 1)
      const counted = yield* Metric.value(Metric.withAttributes(Metrics.apiserverRequests, labels))
      assert.strictEqual(counted.count, 3)

      yield* Metrics.observeStage("claim", 0.25)
      yield* Metric.update(Metric.withAttributes(Metrics.podStartStage, { stage: "claim" }), 0.75)
      const stage = yield* Metric.value(Metric.withAttributes(Metrics.podStartStage, { stage: "claim" }))
      assert.strictEqual(stage.count, 2)
      assert.strictEqual(stage.sum, 1)

      yield* Metric.update(Metrics.labelled(Metrics.claimsByState, { state: "durable" }), 7)
      const gauge = yield* Metric.value(Metric.withAttributes(Metrics.claimsByState, { state: "durable" }))
      assert.strictEqual(gauge.value, 7)

      // one series per metric and attribute set in the registry (what /metrics prints)
      const snapshot = yield* Metric.snapshot
      const series = (id: string) => snapshot.filter((s) => s.id === id).map((s) => s.attributes)
      assert.deepStrictEqual(series("vk_sandbox_apiserver_requests_total"), [labels])
      assert.deepStrictEqual(series("vk_sandbox_pod_start_stage_seconds"), [{ stage: "claim" }])
      assert.deepStrictEqual(series("vk_sandbox_claims"), [{ state: "durable" }])
    })))

  it("is made once per attribute set", () => {
    const a = Metrics.labelled(Metrics.podStartStage, { stage: "intent" })
    assert.strictEqual(Metrics.labelled(Metrics.podStartStage, { stage: "intent" }), a)
    assert.notStrictEqual(Metrics.labelled(Metrics.podStartStage, { stage: "commit" }), a)
  })
})
