import { assert, describe, it } from "@effect/vitest"
import { isRetryable } from "../../../src/Services/ProviderErrors.ts"
import { Effect, Fiber, Option, Stream } from "effect"
import { PodLifecycle } from "../../../src/Services/PodLifecycle.ts"
import { ProviderEvents } from "../../../src/Services/ProviderEvents.ts"
import { SandboxdSim } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { eventually, keyOf, pod, Template, world } from "./harness.ts"

describe("PodLifecycle over the provider programs", () => {
  it.effect("createPod, getPod by key, status pushes as a stream, failures with retryable", () =>
    Effect.gen(function*() {
      const lifecycle = yield* PodLifecycle
      const collected: Array<string> = []
      const reader = yield* Effect.forkChild(
        Stream.runForEach(lifecycle.statusPushes, (p) => Effect.sync(() => collected.push(p.status?.phase ?? "")))
      )
      // The stream has subscribed once a probe's push reaches it (a push before that reaches no one).
      const probe = { ...pod("probe"), status: { phase: "Probe" } }
      const events = yield* ProviderEvents
      yield* eventually(Effect.andThen(events.pushStatus(probe), Effect.sync(() => collected.includes("Probe"))))
      const outcome = yield* lifecycle.createPod(pod("web"))
      assert.strictEqual(outcome._tag, "Claimed")
      assert.strictEqual(Option.getOrThrow(yield* lifecycle.getPod(keyOf("web"))).metadata?.name, "web")
      const pushed = () => collected.filter((phase) => phase !== "Probe")
      yield* eventually(Effect.sync(() => pushed().length === 1))
      assert.deepStrictEqual(pushed(), ["Running"])
      yield* (yield* SandboxdSim).setDraining(true)
      const failure = yield* Effect.flip(lifecycle.createPod(pod("other")))
      assert.strictEqual(failure._tag, "ClaimFailed")
      assert.isTrue(isRetryable(failure))
      assert.include(failure.message, Template)
      const denied = yield* Effect.flip(lifecycle.createPod(pod("x", { annotations: { "sandbox.cocoonstack.io/runtime": "kata" } })))
      assert.isFalse(isRetryable(denied))
      yield* Fiber.interrupt(reader)
    }).pipe(Effect.provide(world(), { local: true })))
})
