import { assert, describe, it } from "@effect/vitest"
import { podKeyOf } from "../../../src/Schemas/Ids.ts"
import { Effect, Logger, Option } from "effect"
import { PodLifecycle } from "../../../src/Services/PodLifecycle.ts"
import { SandboxdSim } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { claimCount, drain, forgetPod, pod, subscribePushes, world } from "./harness.ts"

describe("UpdatePod, GetPod, GetPods, GetPodStatus (UPD-1…UPD-4)", () => {
  it.effect("UpdatePod stores the newer Pod, ignores an older generation, never pushes or claims", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const pushes = yield* subscribePushes
      // No tracked Pod: the guard says current, so it is stored even without a claim.
      yield* provider.updatePod(pod("web", { uid: "u1" }))
      assert.strictEqual(Option.getOrThrow(yield* provider.getPod(podKeyOf("default", "web"))).metadata?.uid, "u1")
      yield* provider.createPod(pod("web", { uid: "u1" }))
      yield* drain(pushes)
      const changed = pod("web", { uid: "u1", annotations: { note: "v2" } })
      yield* provider.updatePod(changed)
      assert.strictEqual(Option.getOrThrow(yield* provider.getPod(podKeyOf("default", "web"))).metadata?.annotations?.note, "v2")
      yield* provider.updatePod(pod("web", { uid: "u0", annotations: { note: "stale" } }))
      assert.strictEqual(Option.getOrThrow(yield* provider.getPod(podKeyOf("default", "web"))).metadata?.annotations?.note, "v2")
      assert.deepStrictEqual(yield* drain(pushes), [])
      assert.strictEqual(yield* claimCount, 1)
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("GetPod/GetPods hand out copies; absent is None, not an error", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      assert.isTrue(Option.isNone(yield* provider.getPod(podKeyOf("default", "web"))))
      assert.isTrue(Option.isNone(yield* provider.getPodStatus(podKeyOf("default", "web"))))
      yield* provider.createPod(pod("web"))
      yield* provider.createPod(pod("api"))
      const copy = Option.getOrThrow(yield* provider.getPod(podKeyOf("default", "web")))
      copy.metadata!.name = "mutated"
      assert.strictEqual(Option.getOrThrow(yield* provider.getPod(podKeyOf("default", "web"))).metadata?.name, "web")
      const all = yield* provider.getPods
      assert.deepStrictEqual(all.map((p) => p.metadata?.name).sort(), ["api", "web"])
      yield* forgetPod("api")
      assert.strictEqual((yield* provider.getPods).length, 1)
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("GetPods reports each Pod with the provider's status, not the one it was handed (UPD-3)", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      yield* provider.createPod(pod("web"))
      // the table keeps only the phase of a handed Running status: what GetPods shows is rebuilt
      const handed = { ...pod("web"), status: { phase: "Running", podIP: "10.9.9.9", qosClass: "BestEffort" } }
      yield* provider.updatePod(handed)
      yield* provider.updatePod(pod("other"))
      const byName = new Map((yield* provider.getPods).map((p) => [p.metadata?.name, p.status]))
      assert.deepStrictEqual(byName.get("web"), Option.getOrThrow(yield* provider.getPodStatus(podKeyOf("default", "web"))))
      assert.strictEqual(byName.get("web")?.podIP, "127.0.0.1")
      assert.strictEqual(byName.get("web")?.containerStatuses?.[0]?.ready, true)
      assert.deepStrictEqual(byName.get("other"), { phase: "Pending", message: "waiting" })
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("GetPodStatus: Running for a durable claim, Pending for a Pod without one", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      yield* provider.createPod(pod("web"))
      const running = Option.getOrThrow(yield* provider.getPodStatus(podKeyOf("default", "web")))
      assert.strictEqual(running.phase, "Running")
      assert.strictEqual(running.podIP, "127.0.0.1")
      yield* provider.updatePod(pod("other"))
      assert.strictEqual(Option.getOrThrow(yield* provider.getPodStatus(podKeyOf("default", "other"))).phase, "Pending")
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("deletePod of a Pod the provider never claimed for only forgets it", () =>
    Effect.gen(function*() {
      const outcome = yield* (yield* PodLifecycle).deletePod(pod("web"))
      assert.strictEqual(outcome._tag, "NoClaim")
    }).pipe(Effect.provide(world(), { local: true })))
})

describe("Pod IP from a non-IP owner_addr", () => {
  it.effect("a hostname owner_addr falls back to --node-ip", () =>
    Effect.gen(function*() {
      yield* (yield* SandboxdSim).setOwnerAddr("sandboxd-7.internal:7777")
      const provider = yield* PodLifecycle
      const pushes = yield* subscribePushes
      yield* provider.createPod(pod("web"))
      const [pushed] = yield* drain(pushes)
      assert.strictEqual(pushed.status?.podIP, "192.168.7.9")
      assert.strictEqual(pushed.status?.hostIP, "192.168.7.9")
    }).pipe(Effect.provide(world({ config: { nodeIp: "192.168.7.9" } }), { local: true })))

  const warnings: Array<string> = []
  const capture = Logger.make((options) => {
    if (options.logLevel === "Warn") warnings.push(String(options.message))
  })
  it.effect("without --node-ip the IP is left empty, with one warning per claim", () =>
    Effect.gen(function*() {
      warnings.length = 0
      yield* (yield* SandboxdSim).setOwnerAddr(":7777")
      const provider = yield* PodLifecycle
      const pushes = yield* subscribePushes
      yield* provider.createPod(pod("web"))
      yield* provider.getPodStatus(podKeyOf("default", "web"))
      yield* provider.getPodStatus(podKeyOf("default", "web"))
      yield* provider.createPod(pod("api"))
      const pushed = yield* drain(pushes)
      assert.strictEqual(pushed.length, 2)
      for (const p of pushed) {
        assert.isUndefined(p.status?.podIP)
        assert.isUndefined(p.status?.hostIP)
      }
      const ipWarnings = warnings.filter((w) => w.includes("no IP"))
      assert.strictEqual(ipWarnings.length, 2, "one per claim, not one per status")
    }).pipe(Effect.provide(world(), { local: true }), Effect.provide(Logger.layer([capture]))))
})
