/**
 * The node's Pod list on the wire: the selector, the list read as it arrives (pieces cut
 * anywhere, gzipped or not), a Pod that is not one named and left out (INF-1 — a Pod the daemon
 * cannot decode is left out), a body that is not a list stopped early, a stalled body timed out;
 * and the resourceVersion read of at most one Pod, by the list's Schema.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { json, setup } from "../support/KubeRecorder.ts"
import { eventually } from "../support/Wait.ts"

describe("Kube Pod list on the wire", () => {
  it.effect("listPods selects the node across all namespaces and returns the list resourceVersion", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() =>
        json(200, {
          kind: "PodList",
          apiVersion: "v1",
          metadata: { resourceVersion: "42" },
          items: [{ metadata: { name: "a", namespace: "x", deletionTimestamp: "2026-11-29T09:00:00Z" } }]
        })
      )
      const list = yield* kube.listPods("vk node")
      const sent = rec.requests[0]!
      assert.strictEqual(sent.url.pathname, "/api/v1/pods")
      assert.strictEqual(sent.url.searchParams.get("fieldSelector"), "spec.nodeName=vk node")
      assert.strictEqual(list.resourceVersion, "42")
      assert.strictEqual(list.items[0]!.metadata?.name, "a")
      assert.instanceOf(list.items[0]!.metadata?.deletionTimestamp, Date)
    }))

  it.effect("listPods reads items that carry the apiserver's nulls; an item that is not a Pod is left out and named (INF-1)", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const item = (name: string) => ({
        metadata: { name, namespace: "x", deletionTimestamp: null, labels: null, managedFields: [{ manager: "m" }] },
        spec: { containers: [{ name: "main", image: "python", resources: {} }], tolerations: null },
        status: { phase: "Running", startTime: null, conditions: [{ type: "Ready", status: "True", lastProbeTime: null }] }
      })
      rec.setHandler(() => json(200, { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion: "42", continue: null }, items: [item("a"), item("b")] }))
      const list = yield* kube.listPods("vk")
      assert.deepStrictEqual(list.items.map((pod) => pod.metadata?.name), ["a", "b"])
      assert.deepStrictEqual(list.items[0], {
        metadata: { name: "a", namespace: "x" },
        spec: { containers: [{ name: "main", image: "python" }] },
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] }
      })
      const refused = { metadata: { name: "c", namespace: "x", uid: "u-c", resourceVersion: "40", labels: { team: 7 } }, spec: item("c").spec }
      rec.setHandler(() =>
        json(200, { kind: "PodList", metadata: { resourceVersion: "43" }, items: [item("a"), { metadata: { name: 7 } }, refused, item("b")] })
      )
      const partial = yield* kube.listPods("vk")
      assert.deepStrictEqual(partial.items.map((pod) => pod.metadata?.name), ["a", "b"])
      assert.strictEqual(partial.resourceVersion, "43")
      assert.deepStrictEqual(
        partial.undecodable.map(({ error: _, ...identity }) => identity),
        [{ namespace: "", name: "", uid: "", resourceVersion: "" }, { namespace: "x", name: "c", uid: "u-c", resourceVersion: "40" }]
      )
      assert.match(partial.undecodable[1]!.error, /labels/)
    }))

  it.effect("listPods reads a body laid out with whitespace; one cut short is not JSON, one without items says so", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const body = JSON.stringify({
        kind: "PodList",
        metadata: { resourceVersion: "42" },
        items: [
          { metadata: { name: "a", namespace: "x", managedFields: [{ manager: "m", fieldsV1: { "f:metadata": {} } }] } },
          { metadata: { managedFields: null, name: "b", namespace: "x" } }
        ]
      }, null, 2)
      rec.setHandler(() => ({ status: 200, body }))
      const list = yield* kube.listPods("vk")
      assert.deepStrictEqual(list.items, [{ metadata: { name: "a", namespace: "x" } }, { metadata: { name: "b", namespace: "x" } }])
      assert.strictEqual(list.resourceVersion, "42")
      rec.setHandler(() => ({ status: 200, body: body.slice(0, body.length - 2) }))
      const cut = yield* Effect.flip(kube.listPods("vk"))
      assert.strictEqual(cut._tag, "KubeUnavailable")
      assert.include(cut.message, "response is not JSON")
      rec.setHandler(() => ({ status: 200, body: `{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":` }))
      assert.include((yield* Effect.flip(kube.listPods("vk"))).message, "response is not JSON")
      rec.setHandler(() => json(200, { kind: "PodList", metadata: { resourceVersion: "42" } }))
      assert.include((yield* Effect.flip(kube.listPods("vk"))).message, "the pod list has no items")
    }))

  it.effect("listPods reads a list that arrives in pieces cut anywhere (inside strings, escapes, multi-byte characters), gzipped or not", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const names = ["a\\\"b", "雪-\u{1F600}-é", "c]}{[d"]
      const body = Buffer.from(JSON.stringify({
        kind: "PodList",
        metadata: { resourceVersion: "42" },
        items: names.map((name) => ({ metadata: { name, namespace: "x", managedFields: [{ manager: `m"${name}` }] } }))
      }))
      // every piece 3 bytes: every escape and every multi-byte character of the body is cut somewhere
      const pieces = Array.from({ length: Math.ceil(body.length / 3) }, (_, i) => body.subarray(i * 3, i * 3 + 3))
      for (const gzip of [false, true]) {
        rec.setHandler(() => ({ status: 200, pieces, gzip }))
        const list = yield* kube.listPods("vk")
        assert.deepStrictEqual(list.items, names.map((name) => ({ metadata: { name, namespace: "x" } })))
        assert.strictEqual(list.resourceVersion, "42")
      }
    }))

  it.effect("listPods stops at the first byte that is not a list, without waiting for the rest, and frees the connection", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const start = `{"kind":"PodList","metadata":{"resourceVersion":"42"},"items":[{"metadata":{"name":"a","namespace":"x"}},`
      // the rest of each body never comes: the outcome is known from what did
      for (const gzip of [false, true]) {
        rec.setHandler(() => ({ status: 200, hold: true, gzip, pieces: [Buffer.from(start), Buffer.from(`{"metadata":{}} x`)] }))
        const malformed = yield* Effect.flip(kube.listPods("vk"))
        assert.strictEqual(malformed._tag, "KubeUnavailable")
        assert.include(malformed.message, `response is not JSON: {"kind":"PodList"`)
      }
      yield* eventually("two connections closed at the server", () => rec.closed.length >= 2)
      assert.deepStrictEqual(rec.closed, ["/api/v1/pods", "/api/v1/pods"])
    }))

  it.effect("listPods: a body that stops coming times out on the Effect clock, and an interrupted read is aborted; both free the connection", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({ status: 200, hold: true, pieces: [Buffer.from(`{"kind":"PodList","items":[{"metadata":{"name":"a"}},{"meta`)] }))
      // The client has the headers and the start of the body (the receipt) before the clock moves
      // or the read is interrupted: what stops is the body, not the answer.
      const timed = yield* Effect.forkChild(kube.listPods("vk"))
      yield* eventually("the start of the body read", () => rec.bodyChunks.length > 0)
      yield* TestClock.adjust("30 seconds")
      const error = yield* Effect.flip(Fiber.join(timed))
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.strictEqual(error._tag === "KubeUnavailable" ? error.status : -1, 0)
      yield* eventually("the timed-out read's connection closed", () => rec.closed.length > 0)
      const readBefore = rec.bodyChunks.length
      const interrupted = yield* Effect.forkChild(kube.listPods("vk"))
      yield* eventually("the second read's body begun", () => rec.bodyChunks.length > readBefore)
      yield* Fiber.interrupt(interrupted)
      yield* eventually("the interrupted read's connection closed", () => rec.closed.length > 1)
      assert.deepStrictEqual(rec.closed, ["/api/v1/pods", "/api/v1/pods"])
    }))

  it.effect("podsResourceVersion asks for at most one of the node's Pods and returns the list resourceVersion", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion: "77", continue: "x" }, items: [{ metadata: { name: "a" } }] }))
      assert.strictEqual(yield* kube.podsResourceVersion("vk node"), "77")
      const sent = rec.requests[0]!
      assert.strictEqual(sent.url.pathname, "/api/v1/pods")
      assert.strictEqual(sent.url.searchParams.get("fieldSelector"), "spec.nodeName=vk node")
      assert.strictEqual(sent.url.searchParams.get("limit"), "1")
      assert.isNull(sent.url.searchParams.get("resourceVersion"), "a consistent read: the server's current version")
    }))

  it.effect("podsResourceVersion reads the list by its Schema: an undecodable Pod does not hide the version (INF-1); a reply without items, or not a list, says which", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { kind: "PodList", metadata: { resourceVersion: "78" }, items: [{ metadata: { name: 7 } }] }))
      assert.strictEqual(yield* kube.podsResourceVersion("vk"), "78")
      rec.setHandler(() => json(200, { kind: "Status", metadata: { resourceVersion: "78" } }))
      assert.include((yield* Effect.flip(kube.podsResourceVersion("vk"))).message, "the pod list has no items")
      for (const notAList of [{ metadata: { resourceVersion: 78 }, items: [] }, { items: [7] }, ["items"]]) {
        rec.setHandler(() => json(200, notAList))
        assert.include((yield* Effect.flip(kube.podsResourceVersion("vk"))).message, "the reply is not a pod list")
      }
    }))
})
