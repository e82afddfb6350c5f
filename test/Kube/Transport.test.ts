/**
 * The live KubeApi client's transport on a recording server: the path prefix, token, Accept,
 * gzip and User-Agent of every request, a server URL with a password refused, a refused
 * connection, the call timeouts on the Effect clock (NODE-6 — a heartbeat call gives up within one
 * renew interval: 10 s on the liveness lane), and the limiter's burst.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"
import type { Lease } from "../../src/Schemas/Lease.ts"
import { json, kubeConfigFor, recorder, setup } from "../support/KubeRecorder.ts"
import { sleepReceipts } from "../support/Receipts.ts"
import { eventually } from "../support/Wait.ts"

describe("Kube transport on the wire", () => {
  it.effect("a refused connection is KubeUnavailable with status 0", () =>
    Effect.gen(function*() {
      const kube = yield* KubeApiClientNode.make(kubeConfigFor(1), { ...KubeApiClientNode.defaultOptions, qps: 10, burst: 10 })
      const error = yield* Effect.flip(kube.getNode("vk"))
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.strictEqual(error._tag === "KubeUnavailable" ? error.status : -1, 0)
    }))

  it.effect("a request built here goes under the server's path prefix, with the kubeconfig's token and Accept: application/json", () =>
    Effect.gen(function*() {
      const rec = yield* recorder
      const kubeConfig = kubeConfigFor(rec.port)
      kubeConfig.clusters[0] = { ...kubeConfig.clusters[0]!, server: `http://127.0.0.1:${rec.port}/k8s/clusters/c-1/` }
      const kube = yield* KubeApiClientNode.make(kubeConfig, { ...KubeApiClientNode.defaultOptions, qps: 1000, burst: 1000 })
      const pod = { kind: "Pod", metadata: { name: "p", namespace: "ns", resourceVersion: "7" } }
      rec.setHandler(() => json(200, pod))
      assert.strictEqual((yield* kube.getPod("ns", "p")).metadata?.resourceVersion, "7")
      rec.setHandler(() => ({ status: 200, hold: true, body: `${JSON.stringify({ type: "ADDED", object: pod })}\n` }))
      yield* Stream.runCollect(kube.watchPods("vk", "7").pipe(Stream.take(1)))
      const [get, watch] = rec.requests
      assert.strictEqual(get?.url.pathname, "/k8s/clusters/c-1/api/v1/namespaces/ns/pods/p")
      assert.strictEqual(get?.headers["authorization"], "Bearer recorder-token")
      assert.strictEqual(get?.headers["accept"], "application/json")
      assert.strictEqual(watch?.url.pathname, "/k8s/clusters/c-1/api/v1/pods")
      assert.strictEqual(watch?.url.searchParams.get("fieldSelector"), "spec.nodeName=vk")
    }))

  it.effect("replies are asked for gzip and read unzipped (a watch is not asked); every request names the daemon as User-Agent", () =>
    Effect.gen(function*() {
      const rec = yield* recorder
      const kube = yield* KubeApiClientNode.make(kubeConfigFor(rec.port), {
        ...KubeApiClientNode.defaultOptions,
        qps: 1000,
        burst: 1000,
        userAgent: "vk-sandbox/9.9.9"
      })
      const pod = (name: string) => ({ kind: "Pod", metadata: { name, namespace: "ns", uid: `u-${name}`, resourceVersion: "7" } })
      rec.setHandler(() => ({ status: 200, gzip: true, body: JSON.stringify({ kind: "PodList", metadata: { resourceVersion: "42" }, items: [pod("a"), pod("b")] }) }))
      const list = yield* kube.listPods("vk")
      assert.deepStrictEqual(list.items.map((item) => item.metadata?.name), ["a", "b"])
      assert.strictEqual(list.resourceVersion, "42")
      // an error reply gzipped still maps to its typed error, with the Status body's details
      rec.setHandler(() => ({
        status: 404,
        gzip: true,
        body: JSON.stringify({ kind: "Status", reason: "NotFound", message: "pods \"p\" not found", details: { name: "p", kind: "pods" } })
      }))
      const missing = yield* Effect.flip(kube.getPod("ns", "p"))
      assert.strictEqual(missing._tag, "KubeNotFound")
      assert.strictEqual(missing.message, "pods \"p\" not found")
      rec.setHandler(() => ({ status: 200, hold: true, body: `${JSON.stringify({ type: "ADDED", object: pod("a") })}\n` }))
      yield* Stream.runCollect(kube.watchPods("vk", "7").pipe(Stream.take(1)))
      const [listed, read, watch] = rec.requests
      assert.strictEqual(listed?.headers["accept-encoding"], "gzip")
      assert.strictEqual(read?.headers["accept-encoding"], "gzip")
      assert.strictEqual(watch?.headers["accept-encoding"], undefined)
      for (const request of rec.requests) assert.strictEqual(request.headers["user-agent"], "vk-sandbox/9.9.9")
    }))

  it.effect("a server URL with a password: nothing is sent, and the error shows the URL without it", () =>
    Effect.gen(function*() {
      const rec = yield* recorder
      const kubeConfig = kubeConfigFor(rec.port)
      kubeConfig.clusters[0] = { ...kubeConfig.clusters[0]!, server: `http://admin:pa55word@127.0.0.1:${rec.port}` }
      const kube = yield* KubeApiClientNode.make(kubeConfig, { ...KubeApiClientNode.defaultOptions, qps: 1000, burst: 1000 })
      const error = yield* Effect.flip(kube.getPod("ns", "p"))
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.include(error.message, `http://redacted@127.0.0.1:${rec.port}/api/v1/namespaces/ns/pods/p`)
      assert.notInclude(error.message, "pa55word")
      const watch = yield* Effect.flip(Stream.runCollect(kube.watchPods("vk", "1")))
      assert.include(watch.message, `http://redacted@127.0.0.1:${rec.port}/api/v1/pods`)
      assert.notInclude(watch.message, "pa55word")
      assert.strictEqual(rec.requests.length, 0)
    }))

  it.effect("a request built here with no answer times out on the Effect clock as KubeUnavailable(0) and is aborted", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => "never")
      const fiber = yield* Effect.forkChild(kube.getPod("ns", "p"))
      yield* eventually("the request at the server", () => rec.requests.length > 0)
      yield* TestClock.adjust("30 seconds")
      const error = yield* Effect.flip(Fiber.join(fiber))
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.strictEqual(error._tag === "KubeUnavailable" ? error.status : -1, 0)
      yield* eventually("the connection closed at the server", () => rec.closed.length > 0)
      assert.deepStrictEqual(rec.closed, ["/api/v1/namespaces/ns/pods/p"])
    }))

  it.effect("NODE-6: a Node or Lease call with no answer times out after 10 s and is aborted; a Pod call waits its 30 s", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => "never")
      const lease: Lease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "vk", namespace: "kube-node-lease", resourceVersion: "5" },
        spec: { holderIdentity: "vk", leaseDurationSeconds: 40, renewTime: "2026-11-29T09:00:10.250Z" }
      }
      const node = yield* Effect.forkChild(Effect.asVoid(kube.getNode("vk")))
      const renewal = yield* Effect.forkChild(Effect.asVoid(kube.replaceLease(lease)))
      const pod = yield* Effect.forkChild(kube.getPod("ns", "p"))
      yield* eventually("three requests at the server", () => rec.requests.length >= 3)
      yield* TestClock.adjust("9999 millis")
      assert.isUndefined(node.pollUnsafe())
      assert.isUndefined(renewal.pollUnsafe())
      yield* TestClock.adjust("1 millis")
      // The clock stays at 10 s from here: the Node call ends only if it was given up at 10 s.
      yield* eventually("the Node call given up at 10 s", () => node.pollUnsafe() !== undefined)
      for (const fiber of [node, renewal]) {
        const error = yield* Effect.flip(Fiber.join(fiber))
        assert.strictEqual(error._tag, "KubeUnavailable")
        assert.strictEqual(error._tag === "KubeUnavailable" ? error.status : -1, 0)
        assert.strictEqual(error.message, "no response within 10s")
      }
      yield* eventually("two connections closed at the server", () => rec.closed.length >= 2)
      assert.sameMembers([...rec.closed], ["/api/v1/nodes/vk", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vk"])
      assert.isUndefined(pod.pollUnsafe(), "a Pod call keeps the 30 s timeout")
      yield* TestClock.adjust("20 seconds")
      const exit = yield* Fiber.await(pod)
      assert.isTrue(Exit.isFailure(exit))
    }))

  it.effect("the limiter holds calls beyond the burst until the clock moves", () =>
    Effect.gen(function*() {
      const rec = yield* recorder
      const kube = yield* KubeApiClientNode.make(kubeConfigFor(rec.port), { ...KubeApiClientNode.defaultOptions, qps: 1, burst: 2 })
      rec.setHandler(() => json(200, { kind: "Pod", metadata: { name: "p", namespace: "ns", resourceVersion: "7" } }))
      // Pod calls: the Node's and Lease's take no token (NODE-5 — heartbeats do not wait behind Pod
      // work, shown in KubeApiClientNode.test.ts). The calls' Clock notes each sleep they begin: the
      // third asleep for one token period (1 s) is the receipt that it is held, not merely slow.
      const sleeps = yield* sleepReceipts
      const getPod = kube.getPod("ns", "p").pipe(Effect.provideService(Clock.Clock, sleeps.clock))
      const fibers = yield* Effect.forEach([1, 2, 3], () => Effect.forkChild(getPod))
      yield* eventually("the third call held by the limiter, or sent", () => sleeps.sleeps("1 second") === 1 || rec.requests.length === 3)
      yield* eventually("the burst's two requests", () => rec.requests.length >= 2)
      assert.strictEqual(rec.requests.length, 2, "the burst went out, and only the burst")
      yield* TestClock.adjust("1 second")
      yield* Effect.forEach(fibers, Fiber.join)
      assert.strictEqual(rec.requests.length, 3, "the third after one token period")
    }))
})
