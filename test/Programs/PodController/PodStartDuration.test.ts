/**
 * `vk_sandbox_pod_start_duration_seconds` (MON-5) on TestClock: the pod controller on the
 * apiserver model (its watch included), a provider whose claim takes a set time and then pushes
 * Running, and status writes that take a set time. One observation per Pod started, from the
 * informer handing it to the queue to the Running write acknowledged; none for a re-push, a resync
 * or a Running Pod a restarted daemon re-adopts.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Metric, Option, Queue, Schedule, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as PodController from "../../../src/Programs/PodController/PodController.ts"
import { type PodKey, podKeyOfPod } from "../../../src/Schemas/Ids.ts"
import { ClaimId } from "../../../src/Schemas/Ids.ts"
import { AppConfig } from "../../../src/Services/Config.ts"
import { EventRecorder } from "../../../src/Services/EventRecorder.ts"
import { KubeApi } from "../../../src/Services/KubeApi.ts"
import * as Metrics from "../../../src/Services/Metrics.ts"
import { PodLifecycle } from "../../../src/Services/PodLifecycle.ts"
import { ClaimFailed } from "../../../src/Services/ProviderErrors.ts"
import { SandboxdUnreachable } from "../../../src/Services/SandboxdClient.ts"
import { testConfig } from "../../../testkit/Config.ts"
import * as KubeApiMemory from "../../../testkit/Layers/KubeApiMemory.ts"
import { Pods } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import { CountingModel, createPod, NODE, podBody, quiet } from "./harness.ts"

const CLAIM = 200
const WRITE = 50

interface Provider {
  /** Creates that fail (retryable) before one succeeds. */
  failFirst: number
  /** How a create that succeeds reports itself. */
  readonly outcome: "Claimed" | "Adopted"
}

/** Claims in `CLAIM` ms, then pushes Running as the real provider does; the test may push too. */
const provider = (behaviour: Provider) =>
  Effect.gen(function*() {
    const held = new Map<PodKey, V1Pod>()
    const pushes = yield* Queue.unbounded<V1Pod>()
    const lifecycle = PodLifecycle.of({
      createPod: (pod) =>
        Effect.gen(function*() {
          yield* Effect.sleep(Duration.millis(CLAIM))
          held.set(podKeyOfPod(pod), pod)
          if (behaviour.failFirst > 0) {
            behaviour.failFirst--
            const cause = new SandboxdUnreachable({ operation: "claim", message: "connection refused" })
            return yield* new ClaimFailed({ pod: podKeyOfPod(pod), template: "python", cause, message: "sandboxd unreachable" })
          }
          yield* Queue.offer(pushes, { ...pod, status: { phase: "Running", podIP: "10.0.0.1" } })
          return { _tag: behaviour.outcome, claimId: ClaimId.make("sb_1") }
        }),
      updatePod: () => Effect.void,
      deletePod: (pod) => Effect.sync(() => held.delete(podKeyOfPod(pod))).pipe(Effect.as({ _tag: "NoClaim" } as const)),
      settleGone: () => Effect.succeed("NotInDoubt" as const),
      settleTerminal: () => Effect.void,
      doubtKeys: Effect.succeed([]),
      lostKeys: Effect.succeed([]),
      getPod: (key) => Effect.sync(() => Option.fromNullishOr(held.get(key))),
      getPods: Effect.sync(() => [...held.values()]),
      getPodStatus: (key) => Effect.sync(() => Option.fromNullishOr(held.get(key)?.status)),
      statusPushes: Stream.fromQueue(pushes),
      retryNow: Stream.never
    })
    return { lifecycle, pushes }
  })

/** A controller in a scope of its own on `model`; status writes take `WRITE` ms. */
const startController = (model: CountingModel, behaviour: Provider, options: Partial<PodController.PodControllerOptions> = {}) =>
  Effect.gen(function*() {
    const api = KubeApiMemory.make(model)
    const kube = KubeApi.of({
      ...api,
      replacePodStatus: (body) => Effect.sleep(Duration.millis(WRITE)).pipe(Effect.andThen(api.replacePodStatus(body)))
    })
    const { lifecycle, pushes } = yield* provider(behaviour)
    const scope = yield* Scope.make()
    const handle = yield* PodController.make({ ...PodController.defaultOptions, retry: Schedule.spaced("300 millis"), ...options }).pipe(
      Effect.provide(
        Layer.mergeAll(
          AppConfig.layer(testConfig({ nodeName: NODE })),
          Layer.succeed(KubeApi, kube),
          Layer.succeed(PodLifecycle, lifecycle),
          Layer.succeed(EventRecorder, EventRecorder.of({ record: () => Effect.void, forget: () => Effect.void }))
        )
      ),
      Scope.provide(scope)
    )
    return { handle, pushes, stop: Scope.close(scope, Exit.void), kube: api }
  })

/** Moves the clock `millis` in `step` ms steps, letting every fiber run to its next wait at each. */
const advance = (millis: number, step = 10) =>
  Effect.gen(function*() {
    for (let t = 0; t < millis; t += step) {
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      yield* TestClock.adjust(Duration.millis(step))
    }
    for (let i = 0; i < 50; i++) yield* Effect.yieldNow
  })

const starts = Metric.value(Metrics.podStartDuration)
const stage = (name: Metrics.PodStartStage) => Metric.value(Metrics.labelled(Metrics.podStartStage, { stage: name }))

/** Each test counts only its own observations. */
const isolated = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.scoped(effect).pipe(Effect.provideService(Metric.MetricRegistry, new Map()), quiet)

describe("vk_sandbox_pod_start_duration_seconds (MON-5)", () => {
  it.effect("once per Pod started, from the informer's delivery to the Running write acknowledged: the queue wait and the status write included", () =>
    isolated(Effect.gen(function*() {
      const model = new CountingModel()
      createPod(model, podBody("a"))
      createPod(model, podBody("b"))
      // One reconcile at a time: the second Pod waits out the first one's claim in the queue.
      const { handle } = yield* startController(model, { failFirst: 0, outcome: "Claimed" }, { maxReconciles: 1 })
      yield* advance(1_000)
      const ended = yield* starts
      assert.strictEqual(ended.count, 2, "one observation per Pod")
      assert.strictEqual(ended.min, (CLAIM + WRITE) / 1000, "claim and status write")
      assert.strictEqual(ended.max, (CLAIM + CLAIM + WRITE) / 1000, "the queue wait, claim and status write")
      assert.strictEqual((yield* stage("queue")).max, CLAIM / 1000, "the queue stage starts at the same instant")
      assert.strictEqual((yield* stage("status_write")).count, 2)
      assert.strictEqual(yield* handle.retainedKeys, 2, "the status writer's last pushes only")
    })))

  it.effect("a Running Pod's later writes (a changed push, resyncs) observe nothing more", () =>
    isolated(Effect.gen(function*() {
      const model = new CountingModel()
      createPod(model, podBody("a"))
      const { pushes, kube } = yield* startController(model, { failFirst: 0, outcome: "Claimed" })
      yield* advance(500)
      assert.strictEqual((yield* starts).count, 1)
      const running = yield* kube.getPod("default", "a")
      yield* Queue.offer(pushes, { ...running, status: { ...running.status, podIP: "10.0.0.2" } })
      yield* advance(500)
      yield* advance(3 * 60_000, 1_000) // three resyncs
      assert.strictEqual((yield* kube.getPod("default", "a")).status?.podIP, "10.0.0.2", "the re-push was written")
      assert.strictEqual((yield* stage("status_write")).count, 2)
      assert.strictEqual((yield* starts).count, 1)
    })))

  it.effect("a failed create and its retry are in the one observation; a Pod deleted before Running observes none and keeps nothing", () =>
    isolated(Effect.gen(function*() {
      const model = new CountingModel()
      createPod(model, podBody("a"))
      const { handle, kube } = yield* startController(model, { failFirst: 1, outcome: "Claimed" })
      yield* advance(1_500)
      const ended = yield* starts
      assert.strictEqual(ended.count, 1)
      // the failed claim, the failure's Pending status write, the retry's wait, the claim, the Running write
      assert.strictEqual(ended.max, (CLAIM + WRITE + 300 + CLAIM + WRITE) / 1000)

      // Deleted while its claim runs, and held by another controller's finalizer: the Running
      // push that claim makes is still written, but a Pod being deleted is not a start.
      const held = podBody("b")
      createPod(model, { ...held, metadata: { ...(held["metadata"] as object), finalizers: ["example.com/hold"] } })
      yield* advance(20)
      assert.strictEqual(model.delete(Pods, "default", "b", { gracePeriodSeconds: 30 })._tag, "Success")
      yield* advance(1_000)
      assert.strictEqual((yield* kube.getPod("default", "b")).status?.phase, "Running", "the push was written")
      assert.strictEqual((yield* starts).count, 1, "nothing for the Pod being deleted")
      // the other controller lets go: the Pod is gone
      assert.isTrue(model.remove(Pods, "default", "b"))
      yield* advance(1_000)
      assert.isTrue(Option.isNone(yield* Effect.option(kube.getPod("default", "b"))))
      assert.strictEqual(yield* handle.retainedKeys, 1, "Pod a's last push only")
    })))

  it.effect("after a restart: a Running Pod re-adopted and written again is not a start; a Pod Pending at the restart is one, timed from the new daemon's list", () =>
    isolated(Effect.gen(function*() {
      const model = new CountingModel()
      createPod(model, podBody("a"))
      const before = yield* startController(model, { failFirst: 0, outcome: "Claimed" })
      yield* advance(500)
      assert.strictEqual((yield* starts).count, 1)
      yield* before.handle.drain(Duration.seconds(1))
      yield* before.stop

      // While no daemon runs: Pod b is created and a's stored status loses its IP (a write the
      // re-adoption's push repairs: a Running status written again).
      createPod(model, podBody("b"))
      const a = yield* before.kube.getPod("default", "a")
      yield* before.kube.replacePodStatus({ ...a, status: { ...a.status, podIP: "10.9.9.9" } })
      yield* advance(1_000)

      const writesBefore = (yield* stage("status_write")).count
      yield* startController(model, { failFirst: 0, outcome: "Adopted" })
      yield* advance(1_000)
      assert.strictEqual((yield* before.kube.getPod("default", "a")).status?.podIP, "10.0.0.1", "a's Running status was written again")
      assert.strictEqual((yield* stage("status_write")).count, writesBefore + 2, "a's write and b's")
      const ended = yield* starts
      assert.strictEqual(ended.count, 2, "b only")
      assert.strictEqual(ended.max, (CLAIM + WRITE) / 1000, "b from the new daemon's list")
    })))
})
