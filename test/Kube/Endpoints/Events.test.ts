/**
 * The Event endpoints on the wire: a create in the Event's namespace with its times in the
 * apiserver's forms, and a repeat as a strategic-merge patch.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { json, setup } from "../../support/KubeRecorder.ts"

describe("Kube Event endpoints on the wire", () => {
  it.effect("patchEvent sends a strategic merge patch to core/v1 events", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { apiVersion: "v1", kind: "Event", metadata: { name: "e" } }))
      yield* kube.patchEvent("ns", "e", { count: 2 })
      const sent = rec.requests[0]!
      assert.strictEqual(sent.url.pathname, "/api/v1/namespaces/ns/events/e")
      assert.strictEqual(sent.headers["content-type"], "application/strategic-merge-patch+json")
    }))

  it.effect("createEvent writes eventTime with six digits, timestamps at whole seconds, into the event's namespace", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler((request) => ({ status: 201, body: request.body }))
      const created = yield* kube.createEvent({
        metadata: { name: "p.1", namespace: "team" },
        involvedObject: { kind: "Pod", name: "p", namespace: "team" },
        reason: "Claimed",
        firstTimestamp: new Date("2026-11-29T09:00:00.5Z"),
        eventTime: "2026-11-29T09:00:00.5Z",
        series: { count: 2, lastObservedTime: "2026-11-29T09:00:01Z" }
      })
      const sent = rec.requests[0]!
      assert.strictEqual(sent.method, "POST")
      assert.strictEqual(sent.url.pathname, "/api/v1/namespaces/team/events")
      const body = JSON.parse(sent.body)
      assert.deepStrictEqual([body.apiVersion, body.kind], ["v1", "Event"])
      assert.strictEqual(body.eventTime, "2026-11-29T09:00:00.500000Z")
      assert.strictEqual(body.series.lastObservedTime, "2026-11-29T09:00:01.000000Z")
      assert.strictEqual(body.firstTimestamp, "2026-11-29T09:00:00Z")
      assert.strictEqual(created.firstTimestamp?.getTime(), Date.parse("2026-11-29T09:00:00Z"))
    }))
})
