/**
 * The informer's parts on their own: reads of its cache happen when they run, and the restart
 * policy after a watch ends (a pure function, and the Schedule that waits what it says).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Result, Schedule } from "effect"
import * as Backoff from "../../../src/Programs/PodController/Backoff.ts"
import * as Informer from "../../../src/Programs/PodController/Informer.ts"
import * as PodController from "../../../src/Programs/PodController/PodController.ts"
import { decide, restartSchedule, type WatchEnd } from "../../../src/Programs/PodController/WatchRestart.ts"
import { podKeyOf } from "../../../src/Schemas/Ids.ts"
import { KubeGone, KubeUnavailable } from "../../../src/Services/KubeApi.ts"
import * as KubeApiMemory from "../../../testkit/Layers/KubeApiMemory.ts"
import { ClusterModel } from "../../../testkit/Simulators/Apiserver/Model.ts"
import { Pods } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../testkit/Simulators/Apiserver/Status.ts"

const failed = new KubeUnavailable({ operation: "watchPods", status: 503, message: "unavailable" })

const end = (outcome: WatchEnd["outcome"], options: Partial<Omit<WatchEnd, "outcome">> = {}): WatchEnd => ({
  outcome,
  from: "10",
  rv: "10",
  delivered: 0,
  veryShort: false,
  ...options
})

describe("Informer", () => {
  it.effect("INF-1: unreadable is read when it runs, not when it is built", () => {
    const model = new ClusterModel()
    return Effect.gen(function*() {
      const created = model.create(Pods, "default", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "web" },
        spec: { nodeName: "n1", containers: [{ name: "main", image: "python" }] }
      })
      assert.isTrue(Result.isSuccess(created))
      const informer = yield* Informer.make("n1", PodController.defaultOptions, Backoff.schedule(Backoff.defaultBackoff))
      const key = podKeyOf("default", "web")
      // Built while every Pod reads (a caller may hold it and run it later).
      const check = informer.unreadable(key)
      const noted = yield* Deferred.make<void>()
      yield* Effect.forkScoped(informer.run({
        changed: () => Effect.void,
        observed: () => Effect.void,
        removed: () => Effect.void,
        firstSync: Effect.void,
        undecodable: () => Deferred.succeed(noted, undefined)
      }))
      while (!(yield* informer.synced)) yield* Effect.yieldNow
      assert.isFalse(yield* check)
      // A label value of a type the slim Pod refuses: the apiserver model stores it as is.
      const stored = model.peek(Pods, "default", "web")!
      model.put(Pods, { ...stored, metadata: { ...(stored["metadata"] as JsonObject), labels: { team: 7 } } } as JsonObject)
      yield* Deferred.await(noted)
      assert.isTrue(yield* check, "the effect built before reads the cache as it is now")
      assert.isTrue(yield* informer.unreadable(key))
    }).pipe(Effect.scoped, Effect.provide(KubeApiMemory.layer(model)))
  })
})

describe("WatchRestart.decide", () => {
  it("Gone and Backwards relist at once, keeping the backoff", () => {
    for (const outcome of [{ _tag: "Gone" as const, error: new KubeGone({ operation: "watchPods", message: "expired" }) }, { _tag: "Backwards" as const, server: "3" }]) {
      assert.deepStrictEqual(decide(2, end(outcome), 3), { relist: true, wait: "none", freshBackoff: false, fruitless: 0, fruitlessRelist: false })
    }
  })

  it("a clean close after events re-watches after the delay from where it got, the backoff afresh", () => {
    assert.deepStrictEqual(decide(2, end({ _tag: "Closed" }, { rv: "12", delivered: 2 }), 3), {
      relist: false,
      wait: "rewatch",
      freshBackoff: true,
      fruitless: 0,
      fruitlessRelist: false
    })
  })

  it("a watch kept open to its timeout with nothing, not even a bookmark, relists at once", () => {
    assert.deepStrictEqual(decide(0, end({ _tag: "Closed" }), 3), { relist: true, wait: "none", freshBackoff: true, fruitless: 0, fruitlessRelist: true })
  })

  it("a close at once or a failure backs off; the third in a row from one version with nothing relists after its wait", () => {
    const atOnce = end({ _tag: "Closed" }, { veryShort: true })
    assert.deepStrictEqual(decide(0, atOnce, 3), { relist: false, wait: "backoff", freshBackoff: false, fruitless: 1, fruitlessRelist: false })
    assert.deepStrictEqual(decide(1, end({ _tag: "Failed", error: failed }, { veryShort: true }), 3), {
      relist: false,
      wait: "backoff",
      freshBackoff: false,
      fruitless: 2,
      fruitlessRelist: false
    })
    assert.deepStrictEqual(decide(2, atOnce, 3), { relist: true, wait: "backoff", freshBackoff: false, fruitless: 0, fruitlessRelist: true })
    // A failure after a watch that worked a while starts the backoff afresh.
    assert.deepStrictEqual(decide(0, end({ _tag: "Failed", error: failed }, { rv: "15", delivered: 5 }), 3), {
      relist: false,
      wait: "backoff",
      freshBackoff: true,
      fruitless: 0,
      fruitlessRelist: false
    })
  })
})

describe("WatchRestart.restartSchedule", () => {
  it.effect("waits the rewatch delay or the next step of the retry schedule, kept across relists and started afresh by a watch that worked", () =>
    Effect.gen(function*() {
      const retry = Schedule.exponential(Duration.seconds(1), 2)
      const step = yield* Schedule.toStep(restartSchedule(retry, Duration.millis(100), 3))
      const delay = (watchEnd: WatchEnd) => Effect.map(step(0, watchEnd), ([, d]) => Duration.toMillis(d))
      const failure = end({ _tag: "Failed", error: failed }, { veryShort: true })
      assert.strictEqual(yield* delay(failure), 1000)
      assert.strictEqual(yield* delay(failure), 2000)
      assert.strictEqual(yield* delay(end({ _tag: "Gone", error: new KubeGone({ operation: "watchPods", message: "expired" }) })), 0)
      assert.strictEqual(yield* delay(failure), 4000, "the backoff is kept across a relist")
      assert.strictEqual(yield* delay(end({ _tag: "Closed" }, { rv: "11", delivered: 1 })), 100)
      assert.strictEqual(yield* delay(failure), 1000, "a watch that worked started it afresh")
    }))
})
