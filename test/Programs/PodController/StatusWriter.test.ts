/**
 * The status writer's per-key state, over the in-memory apiserver model: what it keeps of a push
 * once the push is written.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Result } from "effect"
import * as Backoff from "../../../src/Programs/PodController/Backoff.ts"
import * as Informer from "../../../src/Programs/PodController/Informer.ts"
import * as PodController from "../../../src/Programs/PodController/PodController.ts"
import * as StatusWriter from "../../../src/Programs/PodController/StatusWriter.ts"
import { type PodKey, podKeyOfPod } from "../../../src/Schemas/Ids.ts"
import { KubeApi } from "../../../src/Services/KubeApi.ts"
import * as KubeApiMemory from "../../../testkit/Layers/KubeApiMemory.ts"
import { ClusterModel } from "../../../testkit/Simulators/Apiserver/Model.ts"
import { Pods } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import { makeLogCapture } from "../../support/Logs.ts"

/** Lets forked fibers run to their next suspension point. */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))

describe("StatusWriter", () => {
  it.effect("once the watch brings back what a push's write stored, the key keeps the informer's status, not a copy of its own", () => {
    const model = new ClusterModel()
    return Effect.gen(function*() {
      assert.isTrue(Result.isSuccess(model.create(Pods, "default", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "web" },
        spec: { nodeName: "n1", containers: [{ name: "main", image: "python" }] }
      })))
      const kube = yield* KubeApi
      const informer = yield* Informer.make("n1", PodController.defaultOptions, Backoff.schedule(Backoff.defaultBackoff))
      const status = yield* StatusWriter.make(informer, Backoff.schedule(Backoff.defaultBackoff), () => Effect.void)
      const created = yield* kube.getPod("default", "web")
      yield* informer.observe(created)
      const key: PodKey = podKeyOfPod(created)
      yield* status.handed(key, created)
      const push: V1Pod = {
        ...created,
        metadata: { ...created.metadata, annotations: { "claim-id": "sb_1" } },
        status: { phase: "Running", podIP: "10.0.0.1", startTime: new Date("2026-11-29T09:00:01Z") }
      }
      yield* status.push(push)
      yield* settle
      const written = yield* status.lastPush(key)
      assert.isTrue(Option.isSome(written))
      assert.strictEqual(Option.getOrThrow(written).status.phase, "Running")

      // the watch delivers the written Pod, decoded afresh: the informer keeps it, and so does the key
      const stored = yield* kube.getPod("default", "web")
      yield* informer.observe(stored)
      yield* status.repair(stored)
      const kept = Option.getOrThrow(yield* status.lastPush(key))
      assert.strictEqual(kept.status, stored.status)
      assert.strictEqual(kept.uid, Option.getOrThrow(written).uid)
      assert.deepStrictEqual(kept.annotations, { "claim-id": "sb_1" })
      // nothing to repair: the stored status is the pushed one
      assert.strictEqual(yield* status.queued, 0)
    }).pipe(Effect.scoped, Effect.provide(KubeApiMemory.layer(model)))
  })

  it.effect("once a push is written, the key keeps the status the informer holds at the write's version, whether the reply or the watch event came first", () =>
    Effect.forEach(["reply first", "watch first"] as const, (order) => {
      const model = new ClusterModel()
      return Effect.gen(function*() {
        assert.isTrue(Result.isSuccess(model.create(Pods, "default", {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "web" },
          spec: { nodeName: "n1", containers: [{ name: "main", image: "python" }] }
        })))
        const kube = yield* KubeApi
        const informer = yield* Informer.make("n1", PodController.defaultOptions, Backoff.schedule(Backoff.defaultBackoff))
        // "watch first": the watch delivers the written Pod before the write's reply is handled
        const racing = KubeApi.of({
          ...kube,
          replacePodStatus: (pod) =>
            kube.replacePodStatus(pod).pipe(
              Effect.tap(() =>
                order === "watch first"
                  ? Effect.flatMap(kube.getPod("default", "web"), (fresh) => informer.observe(fresh))
                  : Effect.void
              )
            )
        })
        const status = yield* StatusWriter.make(informer, Backoff.schedule(Backoff.defaultBackoff), () => Effect.void).pipe(
          Effect.provideService(KubeApi, racing)
        )
        const created = yield* kube.getPod("default", "web")
        yield* informer.observe(created)
        const key: PodKey = podKeyOfPod(created)
        yield* status.handed(key, created)
        yield* status.push({
          ...created,
          metadata: { ...created.metadata, annotations: { "claim-id": "sb_1" } },
          status: { phase: "Running", podIP: "10.0.0.1", startTime: new Date("2026-11-29T09:00:01Z") }
        })
        yield* settle
        const cached = Option.getOrThrow(yield* informer.get(key))
        const kept = Option.getOrThrow(yield* status.lastPush(key))
        assert.strictEqual(kept.status.phase, "Running", order)
        assert.strictEqual(kept.status, cached.status, order)
        assert.deepStrictEqual(kept.annotations, { "claim-id": "sb_1" }, order)
        // equal labels and annotations are the informer's objects too
        assert.strictEqual(kept.annotations, cached.metadata?.annotations, order)
        // nothing to repair: the stored status is the pushed one
        yield* status.repair(cached)
        assert.strictEqual(yield* status.queued, 0, order)
      }).pipe(Effect.scoped, Effect.provide(KubeApiMemory.layer(model)))
    }, { discard: true }))

  it.effect("INF-1: an ending status patched for a Pod replaced meanwhile under its name writes nothing, and reads as a Pod gone, not a refused write", () => {
    const model = new ClusterModel()
    const logs = makeLogCapture()
    const body = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web" },
      spec: { nodeName: "n1", containers: [{ name: "main", image: "python" }] }
    }
    return Effect.gen(function*() {
      assert.isTrue(Result.isSuccess(model.create(Pods, "default", body)))
      const kube = yield* KubeApi
      const informer = yield* Informer.make("n1", PodController.defaultOptions, Backoff.schedule(Backoff.defaultBackoff))
      const created = yield* kube.getPod("default", "web")
      yield* informer.observe(created)
      const key: PodKey = podKeyOfPod(created)
      // The informer's newest version of the key cannot be read (INF-1 — a Pod the daemon cannot
      // decode is left out), and before it learns of the deletion, another Pod of the name is made.
      const writer = yield* StatusWriter.make(
        { ...informer, unreadable: () => Effect.succeed(true) },
        Backoff.schedule(Backoff.defaultBackoff),
        () => Effect.void
      )
      assert.isTrue(Result.isSuccess(model.delete(Pods, "default", "web", { gracePeriodSeconds: 0 })))
      assert.isTrue(Result.isSuccess(model.create(Pods, "default", body)))
      const replacement = yield* kube.getPod("default", "web")
      assert.notStrictEqual(replacement.metadata?.uid, created.metadata?.uid)
      yield* writer.handed(key, created)
      yield* writer.push({ ...created, status: { phase: "Failed", reason: "SandboxLost", message: "sandbox sb_1 is gone" } })
      yield* settle
      const stored = yield* kube.getPod("default", "web")
      assert.strictEqual(stored.metadata?.resourceVersion, replacement.metadata?.resourceVersion, "the new Pod is not written")
      const messages = logs.lines.map((line) => line.message)
      assert.include(messages, "ending status not written: the pod was replaced by another of the same name")
      assert.notInclude(messages, "status write refused by the apiserver")
      assert.strictEqual(yield* writer.queued, 0, "not retried")
    }).pipe(Effect.scoped, Effect.provide(KubeApiMemory.layer(model)), Effect.provide(logs.layer))
  })
})
