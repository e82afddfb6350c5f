/**
 * The live KubeApi layer's two reviews for the kubelet port, against the apiserver simulator over
 * HTTP: a TokenReview names the holder of a known token and rejects others, a SubjectAccessReview
 * answers per user, and the reviews wait on a limiter of their own, never on the Pods' (KAPI-5 —
 * reviews wait on their own limiter). What the real kube-apiserver answers is in
 * test/k8s/ScenariosKubeletAuth.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import * as KubeApiClientNode from "../../../src/Layers/KubeApiClientNode.ts"
import * as Transport from "../../../src/Kube/Transport.ts"
import { testConfig } from "../../../testkit/Config.ts"
import { AppConfig } from "../../../src/Services/Config.ts"
import { KubeApi } from "../../../src/Services/KubeApi.ts"
import { ClusterModel } from "../../../testkit/Simulators/Apiserver/Model.ts"
import { serveModel } from "../../support/Apiserver.ts"
import { user } from "../../support/KubeletReviews.ts"
import { sleepReceipts } from "../../support/Receipts.ts"
import { eventually } from "../../support/Wait.ts"

const liveKube = (limits: { readonly kubeApiQps: number; readonly kubeApiBurst: number } = { kubeApiQps: 200, kubeApiBurst: 400 }) =>
  Effect.gen(function*() {
    const { kubeconfigPath } = yield* serveModel(new ClusterModel(), { token: "sim-token" })
    return yield* KubeApi.use(Effect.succeed).pipe(
      Effect.provide(KubeApiClientNode.layer.pipe(Layer.provide(AppConfig.layer(testConfig({ kubeconfig: kubeconfigPath, ...limits })))))
    )
  })

const access = (name: string, groups: ReadonlyArray<string>) => ({ user: user(name, groups), verb: "get", node: "vk-a", subresource: "stats" })

describe("KubeApi reviews on the wire", () => {
  it.effect("a TokenReview names the token's holder or rejects it; a SubjectAccessReview answers per user", () =>
    Effect.gen(function*() {
      const kube = yield* liveKube()
      assert.deepStrictEqual(yield* kube.reviewToken(Redacted.make("sim-token")), {
        _tag: "Authenticated",
        user: { name: "vk-sandbox-sim", uid: "", groups: ["system:masters", "system:authenticated"], extra: {} }
      })
      assert.deepStrictEqual(yield* kube.reviewToken(Redacted.make("forged")), { _tag: "Rejected", reason: "invalid bearer token" })
      assert.deepStrictEqual(yield* kube.reviewAccess(access("root", ["system:masters"])), { allowed: true, reason: "" })
      assert.deepStrictEqual(yield* kube.reviewAccess(access("someone", [])), {
        allowed: false,
        reason: "the simulator allows system:masters only"
      })
    }))

  it.effect("KAPI-5: reviews take tokens of their own limiter, not the Pods'", () =>
    Effect.gen(function*() {
      const kube = yield* liveKube({ kubeApiQps: 1, kubeApiBurst: 1 })
      yield* Effect.ignore(kube.getPod("default", "absent")) // the Pods' only token
      const blockedPod = yield* Effect.forkChild(Effect.ignore(kube.getPod("default", "absent")))
      // The review limiter's burst goes out while the Pods' limiter waits for the clock.
      for (let i = 0; i < Transport.reviewBurst; i++) yield* kube.reviewToken(Redacted.make("sim-token"))
      // Its Clock notes each sleep it begins: asleep for one review token period is the receipt that
      // the review beyond the burst is held; were it not, it would be answered.
      const sleeps = yield* sleepReceipts
      const period = `${1000 / Transport.reviewQps} millis` as const
      const beyond = yield* Effect.forkChild(kube.reviewToken(Redacted.make("sim-token")).pipe(Effect.provideService(Clock.Clock, sleeps.clock)))
      yield* eventually("the review beyond the burst held, or answered", () => sleeps.sleeps(period) === 1 || beyond.pollUnsafe() !== undefined)
      assert.isUndefined(beyond.pollUnsafe(), "the review beyond the burst waits")
      yield* TestClock.adjust(period)
      assert.strictEqual((yield* Fiber.join(beyond))._tag, "Authenticated")
      assert.isUndefined(blockedPod.pollUnsafe(), "the Pods' limiter is still empty")
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(blockedPod)
    }))
})
