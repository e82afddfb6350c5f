/**
 * The Pod watch on the wire: its query, the events a line decodes to (INF-1 — a Pod the daemon
 * cannot decode is left out for a Pod that is not one), KubeGone for a 410 at start or in an ERROR
 * event, a clean close, a cut connection, an idle one, and the request aborted whenever the stream
 * ends.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { json, served, setup, slim } from "../support/KubeRecorder.ts"
import { eventually } from "../support/Wait.ts"
import { sleepReceipts } from "../support/Receipts.ts"

describe("Kube Pod watch on the wire", () => {
  it.effect("a watch event carrying the apiserver's nulls reads them as absent; a Pod that is not one is named and the watch goes on (INF-1)", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({ status: 200, hold: true, body: `${JSON.stringify({ type: "MODIFIED", object: served })}\n` }))
      const [event] = yield* kube.watchPods("vk", "8").pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual(event, { type: "MODIFIED", object: slim })
      // INF-1: an event whose Pod is not one says what it can of it, and the watch goes on
      const refused = { ...served, metadata: { ...served.metadata, uid: "u-a", resourceVersion: "10", labels: { team: 7 } } }
      rec.setHandler(() => ({
        status: 200,
        hold: true,
        body: [{ type: "MODIFIED", object: refused }, { type: "DELETED", object: refused }, { type: "MODIFIED", object: served }]
          .map((line) => `${JSON.stringify(line)}\n`).join("")
      }))
      const events = yield* kube.watchPods("vk", "8").pipe(Stream.take(3), Stream.runCollect)
      assert.deepStrictEqual(
        events.map((e) => (e.type === "UNDECODABLE" ? [e.type, e.change, e.pod.namespace, e.pod.name, e.pod.uid, e.pod.resourceVersion] : [e.type])),
        [["UNDECODABLE", "MODIFIED", "x", "a", "u-a", "10"], ["UNDECODABLE", "DELETED", "x", "a", "u-a", "10"], ["MODIFIED"]]
      )
      // an ERROR event's Status with nulls in it is still read: 410 ends the watch as KubeGone
      const status = { kind: "Status", code: 410, reason: "Expired", message: "too old", details: null, metadata: {} }
      rec.setHandler(() => ({ status: 200, body: `${JSON.stringify({ type: "ERROR", object: status })}\n` }))
      const gone = yield* Effect.flip(Stream.runCollect(kube.watchPods("vk", "1")))
      assert.strictEqual(gone._tag, "KubeGone")
      assert.strictEqual(gone.message, "too old")
    }))

  it.effect("watch query parameters, event decoding, and the request is aborted when the consumer stops", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const lines = [
        { type: "ADDED", object: { kind: "Pod", metadata: { name: "a", namespace: "x", resourceVersion: "11", creationTimestamp: "2026-11-29T09:00:00Z" } } },
        { type: "BOOKMARK", object: { kind: "Pod", metadata: { resourceVersion: "12" } } },
        { type: "SOMETHING-NEW", object: {} },
        { type: "DELETED", object: { kind: "Pod", metadata: { name: "a", namespace: "x", resourceVersion: "13" } } }
      ]
      rec.setHandler(() => ({ status: 200, hold: true, body: lines.map((l) => JSON.stringify(l) + "\n").join("") }))
      const events = yield* kube.watchPods("vk", "10").pipe(Stream.take(3), Stream.runCollect)
      const sent = rec.requests[0]!
      assert.strictEqual(sent.url.pathname, "/api/v1/pods")
      assert.strictEqual(sent.url.searchParams.get("watch"), "true")
      assert.strictEqual(sent.url.searchParams.get("allowWatchBookmarks"), "true")
      assert.strictEqual(sent.url.searchParams.get("resourceVersion"), "10")
      assert.strictEqual(sent.url.searchParams.get("fieldSelector"), "spec.nodeName=vk")
      assert.deepStrictEqual(events.map((e) => e.type), ["ADDED", "BOOKMARK", "DELETED"])
      const added = events[0]!
      assert.instanceOf(added.type === "ADDED" ? added.object.metadata?.creationTimestamp : undefined, Date)
      assert.deepStrictEqual(events[1], { type: "BOOKMARK", resourceVersion: "12" })
      yield* eventually("the connection closed at the server", () => rec.closed.length > 0)
      assert.deepStrictEqual(rec.closed, ["/api/v1/pods"])
    }))

  it.effect("watch: 410 at start and an ERROR 410 event are KubeGone; other ERROR events KubeUnavailable", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(410, { kind: "Status", code: 410, reason: "Expired", message: "too old resource version" }))
      const atStart = yield* Effect.flip(Stream.runCollect(kube.watchPods("vk", "1")))
      assert.strictEqual(atStart._tag, "KubeGone")

      const errorLine = (code: number) =>
        JSON.stringify({ type: "ERROR", object: { kind: "Status", code, reason: "Expired", message: `code ${code}` } }) + "\n"
      rec.setHandler(() => ({ status: 200, body: errorLine(410) }))
      const midWatch = yield* Effect.flip(Stream.runCollect(kube.watchPods("vk", "1")))
      assert.strictEqual(midWatch._tag, "KubeGone")

      rec.setHandler(() => ({ status: 200, body: errorLine(500) }))
      const other = yield* Effect.flip(Stream.runCollect(kube.watchPods("vk", "1")))
      assert.strictEqual(other._tag, "KubeUnavailable")
      assert.strictEqual(other._tag === "KubeUnavailable" ? other.status : -1, 500)
    }))

  it.effect("watch: a clean server close ends the stream", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({
        status: 200,
        body: JSON.stringify({ type: "MODIFIED", object: { metadata: { name: "a", namespace: "x" } } }) + "\n"
      }))
      const events = yield* Stream.runCollect(kube.watchPods("vk", "5"))
      assert.deepStrictEqual(events.map((e) => e.type), ["MODIFIED"])
    }))

  it.effect("watch: a connection cut mid-stream is KubeUnavailable(0), not a clean end", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({
        status: 200,
        reset: true,
        body: JSON.stringify({ type: "ADDED", object: { metadata: { name: "a", namespace: "x" } } }) + "\n"
      }))
      const received: Array<string> = []
      const error = yield* kube.watchPods("vk", "5").pipe(
        Stream.runForEach((event) => Effect.sync(() => received.push(event.type))),
        Effect.flip
      )
      assert.deepStrictEqual(received, ["ADDED"])
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.strictEqual(error._tag === "KubeUnavailable" ? error.status : -1, 0)
    }))

  it.effect("watch: interrupting it before the response headers aborts the request", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => "never")
      const fiber = yield* Effect.forkChild(Stream.runCollect(kube.watchPods("vk", "5")))
      yield* eventually("the request at the server", () => rec.requests.length > 0)
      yield* Fiber.interrupt(fiber)
      yield* eventually("the aborted request's connection closed", () => rec.closed.length > 0)
      assert.deepStrictEqual(rec.closed, ["/api/v1/pods"])
    }))

  it.effect("watch: a silent connection fails after the idle timeout", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({ status: 200, hold: true, body: "" }))
      // The watch's Clock notes each sleep it begins: its idle timer (330 s) begun is the receipt
      // that the headers are in and the watch waits for a line, before the clock moves.
      const sleeps = yield* sleepReceipts
      const fiber = yield* Effect.forkChild(
        Stream.runCollect(kube.watchPods("vk", "5")).pipe(Effect.provideService(Clock.Clock, sleeps.clock))
      )
      yield* sleeps.asleep("330 seconds", 1)
      yield* TestClock.adjust("331 seconds")
      const error = yield* Effect.flip(Fiber.join(fiber))
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.strictEqual(error.message, "watch idle for 5m 30s")
      yield* eventually("the connection closed at the server", () => rec.closed.length > 0)
    }))
})
