/**
 * The aggregating event recorder against the in-memory API server over HTTP, through the live
 * KubeApi layer, on TestClock: the flush interval is TestClock time, the writes are real I/O.
 * After moving time a test waits for the apiserver to show the write; what was NOT written is
 * read from the TestClock times of the writes sent, or after a later round that must follow.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Result, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as EventRecorderKube from "../../src/Layers/EventRecorderKube.ts"
import { testConfig } from "../../testkit/Config.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import type { InvolvedObject } from "../../src/Services/EventRecorder.ts"
import { KubeApi } from "../../src/Services/KubeApi.ts"
import { ClusterModel, type FailureRule } from "../../testkit/Simulators/Apiserver/Model.ts"
import { CoreEvents } from "../../testkit/Simulators/Apiserver/Resources.ts"
import { recording } from "../support/Receipts.ts"
import { eventually } from "../support/Wait.ts"
import { kubeApiFromFile } from "../support/Kube.ts"
import { serveModel } from "../support/Apiserver.ts"

const NODE = "vk-sandboxd"
const START = Date.parse("2026-11-29T10:00:00.000Z")
const FLUSH = Duration.seconds(1)
/** The namespace of the Events that mark a later flush round (see `nextRound`). */
const RECEIPTS = "receipts"

const pod: InvolvedObject = { kind: "Pod", namespace: "team-a", name: "review-bot", uid: "pod-uid-1" }
const node: InvolvedObject = { kind: "Node", namespace: "", name: NODE, uid: NODE }

interface StoredEvent {
  readonly metadata: { readonly name: string; readonly namespace: string; readonly uid: string; readonly resourceVersion: string }
  readonly involvedObject: Record<string, string>
  readonly reason: string
  readonly message: string
  readonly type: string
  readonly count: number
  readonly firstTimestamp: string
  readonly lastTimestamp: string
  readonly source: { readonly component: string; readonly host?: string }
  readonly reportingComponent?: string
  readonly [key: string]: unknown
}


const setupWith = (normalPodEvents?: EventRecorderKube.EventBudget) => Effect.gen(function*() {
  yield* TestClock.setTime(START)
  const model = new ClusterModel({ namespaces: ["default", "team-a", "kube-node-lease", RECEIPTS] })
  const { kubeconfigPath } = yield* serveModel(model)
  const kube = recording(yield* kubeApiFromFile(kubeconfigPath))
  const config = testConfig({ nodeName: NODE })
  // The recorder in its own scope, so a test can close it (shutdown) before the test ends.
  const scope = yield* Scope.make()
  yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
  const recorder = yield* EventRecorderKube.make({ flushInterval: FLUSH, ...(normalPodEvents === undefined ? {} : { normalPodEvents }) }).pipe(
    Effect.provideService(KubeApi, kube.service),
    Effect.provideService(AppConfig, config),
    Scope.provide(scope)
  )
  /** The stored core/v1 Events of a namespace (undefined: all namespaces but the receipts'). */
  const events = (namespace: string | undefined): ReadonlyArray<StoredEvent> => {
    const list = model.list(CoreEvents, namespace)
    const items = Result.isSuccess(list) ? (list.success["items"] as unknown as ReadonlyArray<StoredEvent>) : []
    return namespace === undefined ? items.filter((e) => e.metadata.namespace !== RECEIPTS) : items
  }
  const allEvents = () => events(undefined)
  /** Moves TestClock past one flush interval; the flush itself is real I/O. */
  const flush = TestClock.adjust(FLUSH)
  /** The TestClock times of the Event writes sent, oldest first (receipts' included). */
  const writeTimes = () => kube.calls.filter((c) => c.name === "createEvent" || c.name === "patchEvent").map((c) => c.at)
  /**
   * One more flush round, with an Event of its own (a Warning: outside the Normal events' budget):
   * once that Event is stored, the rounds before it have ended (one flush at a time), so whatever
   * they did not write was not written.
   */
  let round = 0
  const nextRound = Effect.gen(function*() {
    round++
    yield* recorder.record({ kind: "Pod", namespace: RECEIPTS, name: `round-${round}`, uid: `round-${round}` }, "Warning", "Round", "a later round")
    yield* flush
    yield* eventually(`round ${round}'s event`, () => events(RECEIPTS).length === round)
  })
  return { model, recorder, events, allEvents, flush, writeTimes, nextRound, close: Scope.close(scope, Exit.void) }
})
const setup = setupWith()

const iso = (millis: number) => new Date(millis).toISOString()
const seconds = (text: string) => Date.parse(text)

describe("EventRecorderKube", () => {
  it.effect("a Pod event has the EV-05 shape, in the Pod's namespace, written on the next flush", () =>
    Effect.gen(function*() {
      const { recorder, events, allEvents, flush, writeTimes } = yield* setup
      yield* recorder.record(pod, "Normal", "Claimed", "claimed sb_4f9a0c2e7b1d3a65")
      yield* flush
      yield* eventually("the event", () => events("team-a").length === 1)
      assert.deepStrictEqual(writeTimes(), [START + 1000], "nothing is written before the flush interval")
      const [event] = events("team-a")
      assert.deepStrictEqual(event.involvedObject, {
        kind: "Pod",
        apiVersion: "v1",
        namespace: "team-a",
        name: "review-bot",
        uid: "pod-uid-1"
      })
      assert.strictEqual(event.metadata.namespace, "team-a")
      assert.match(event.metadata.name, /^review-bot\.[0-9a-f]+$/)
      assert.strictEqual(event.reason, "Claimed")
      assert.strictEqual(event.message, "claimed sb_4f9a0c2e7b1d3a65")
      assert.strictEqual(event.type, "Normal")
      assert.strictEqual(event.count, 1)
      assert.strictEqual(event.source.component, "vk-sandbox")
      assert.strictEqual(event.source.host, NODE)
      assert.strictEqual(event.reportingComponent, "vk-sandbox")
      // first and last are the time of the record() (TestClock START), not of the flush
      assert.strictEqual(seconds(event.firstTimestamp), START)
      assert.strictEqual(seconds(event.lastTimestamp), START)
      assert.strictEqual(allEvents().length, 1)
    }))

  it.effect("a Node event goes to namespace default, its involvedObject without a namespace", () =>
    Effect.gen(function*() {
      const { recorder, events, allEvents, flush } = yield* setup
      yield* recorder.record(node, "Warning", "SandboxdUnreachable", "GET /healthz: connection refused")
      yield* flush
      yield* eventually("the event", () => events("default").length === 1)
      const [event] = events("default")
      assert.deepStrictEqual(event.involvedObject, { kind: "Node", apiVersion: "v1", name: NODE, uid: NODE })
      assert.strictEqual(event.type, "Warning")
      assert.strictEqual(event.count, 1)
      assert.strictEqual(allEvents().length, 1)
    }))

  it.effect("a burst of N records is ONE Event with count N; a later repeat patches that same Event", () =>
    Effect.gen(function*() {
      const { recorder, events, allEvents, flush, writeTimes, nextRound } = yield* setup
      for (let i = 1; i <= 5; i++) {
        yield* recorder.record(pod, "Warning", "ProviderCreateFailed", `no warm capacity (attempt ${i})`)
        yield* TestClock.adjust("100 millis")
      }
      yield* flush
      yield* eventually("count 5", () => events("team-a")[0]?.count === 5)
      assert.deepStrictEqual(writeTimes(), [START + 1000], "the burst waits for the flush, and is one write")
      const first = events("team-a")[0]
      assert.strictEqual(first.message, "no warm capacity (attempt 5)", "the newest message")
      assert.strictEqual(seconds(first.firstTimestamp), START)

      // nothing new recorded: a flush writes nothing of it
      yield* nextRound
      assert.strictEqual(allEvents().length, 1)
      assert.strictEqual(events("team-a")[0].metadata.resourceVersion, first.metadata.resourceVersion)

      yield* TestClock.adjust("1 minute")
      const later = START + 500 + 1000 + 1000 + 60_000
      yield* recorder.record(pod, "Warning", "ProviderCreateFailed", "no warm capacity (attempt 6)")
      yield* recorder.record(pod, "Warning", "ProviderCreateFailed", "no warm capacity (attempt 7)")
      yield* flush
      yield* eventually("count 7", () => events("team-a")[0]?.count === 7)
      const second = events("team-a")[0]
      assert.strictEqual(allEvents().length, 1, "still one Event")
      assert.strictEqual(second.metadata.name, first.metadata.name, "the same Event, patched")
      assert.strictEqual(second.metadata.uid, first.metadata.uid, "not deleted and re-created")
      assert.strictEqual(second.message, "no warm capacity (attempt 7)")
      assert.strictEqual(seconds(second.firstTimestamp), START, "firstTimestamp stays")
      assert.strictEqual(second.lastTimestamp, iso(Math.floor(later / 1000) * 1000).replace(".000Z", "Z"))
    }))

  it.effect("EV-06: Normal Pod events over the budget are counted on one Node Event per reason; Warnings never", () =>
    Effect.gen(function*() {
      const { recorder, events, flush, nextRound } = yield* setupWith({ burst: 3, perSecond: 1 })
      const podN = (i: number): InvolvedObject => ({ kind: "Pod", namespace: "team-a", name: `bot-${i}`, uid: `uid-${i}` })
      for (let i = 1; i <= 10; i++) yield* recorder.record(podN(i), "Normal", "Claimed", `claimed sb_${i}`)
      yield* recorder.record(podN(11), "Warning", "CreateFailed", "no warm capacity")
      // a repeat of a Pod's own Event is not a new one: it takes no token
      yield* recorder.record(podN(1), "Normal", "Claimed", "claimed sb_1 again")
      yield* flush
      yield* eventually("the events", () => events("team-a").length === 4 && events("default").length === 1)
      yield* nextRound
      const perPod = events("team-a")
      assert.deepStrictEqual(
        perPod.map((e) => `${e.involvedObject["name"]} ${e.reason} ${e.count}`).sort(),
        ["bot-1 Claimed 2", "bot-11 CreateFailed 1", "bot-2 Claimed 1", "bot-3 Claimed 1"]
      )
      const [summary] = events("default")
      assert.strictEqual(summary.involvedObject["kind"], "Node")
      assert.strictEqual(summary.involvedObject["name"], NODE)
      assert.strictEqual(summary.reason, "Claimed")
      assert.strictEqual(summary.type, "Normal")
      assert.strictEqual(summary.count, 7, "the seven Pods over the budget")
      assert.match(summary.message, /^Pod team-a\/bot-10: claimed sb_10 \(Normal Pod events beyond 3 at once, then 1 per second/)

      // the bucket refills with time: two seconds (the two flushes above), two Pods with Events of their own again
      for (let i = 12; i <= 14; i++) yield* recorder.record(podN(i), "Normal", "Claimed", `claimed sb_${i}`)
      yield* flush
      yield* eventually("the summary patched", () => events("default")[0]?.count === 8)
      yield* nextRound
      assert.deepStrictEqual(
        events("team-a").map((e) => String(e.involvedObject["name"])).filter((n) => Number(n.slice(4)) >= 12).sort(),
        ["bot-12", "bot-13"]
      )
    }))

  it.effect("different reasons (and types) on the same object are separate Events", () =>
    Effect.gen(function*() {
      const { recorder, events, flush, nextRound } = yield* setup
      yield* recorder.record(pod, "Normal", "Claimed", "claimed")
      yield* recorder.record(pod, "Normal", "Released", "released")
      yield* recorder.record(pod, "Normal", "Released", "released again")
      yield* recorder.record(pod, "Warning", "Released", "release failed")
      yield* flush
      yield* eventually("three events", () => events("team-a").length === 3)
      yield* nextRound
      const byKey = new Map(events("team-a").map((e) => [`${e.type}/${e.reason}`, e.count]))
      assert.deepStrictEqual(byKey, new Map([["Normal/Claimed", 1], ["Normal/Released", 2], ["Warning/Released", 1]]))
      assert.strictEqual(new Set(events("team-a").map((e) => e.metadata.name)).size, 3)
    }))

  it.effect("a failing events endpoint never fails record; after it recovers a later record writes the whole count", () =>
    Effect.gen(function*() {
      const { model, recorder, events, allEvents, flush, nextRound } = yield* setup
      const rule: FailureRule = { path: "/api/v1/namespaces/team-a/events", code: 500, times: 1000 }
      model.faults.failures.push(rule)
      // record returns at once, with no real I/O turn, and succeeds
      for (let i = 0; i < 3; i++) yield* recorder.record(pod, "Warning", "ReleaseFailed", `attempt ${i + 1}`)
      yield* flush
      yield* eventually("the failed create", () => rule.times === 999)
      // no retry storm: with nothing new recorded, later flushes do not write
      yield* nextRound
      yield* nextRound
      assert.strictEqual(allEvents().length, 0)
      assert.strictEqual(rule.times, 999, "a dropped round is not retried until something new is recorded")

      // recovered: the next record brings the aggregated count
      model.faults.failures.splice(model.faults.failures.indexOf(rule), 1)
      yield* recorder.record(pod, "Warning", "ReleaseFailed", "attempt 4")
      yield* flush
      yield* eventually("the event", () => events("team-a").length === 1)
      const [created] = events("team-a")
      assert.strictEqual(created.count, 4)
      assert.strictEqual(created.message, "attempt 4")
      assert.strictEqual(seconds(created.firstTimestamp), START, "the first occurrence, from before the outage")

      // a failing repeat (PATCH) behaves the same
      const patchRule: FailureRule = { method: "PATCH", path: "/api/v1/namespaces/team-a/events", code: 503, times: 1000 }
      model.faults.failures.push(patchRule)
      yield* recorder.record(pod, "Warning", "ReleaseFailed", "attempt 5")
      yield* flush
      yield* eventually("the failed patch", () => patchRule.times === 999)
      yield* nextRound
      assert.strictEqual(events("team-a")[0].count, 4)
      model.faults.failures.splice(model.faults.failures.indexOf(patchRule), 1)
      yield* recorder.record(pod, "Warning", "ReleaseFailed", "attempt 6")
      yield* flush
      yield* eventually("count 6", () => events("team-a")[0]?.count === 6)
      assert.strictEqual(events("team-a")[0].metadata.name, created.metadata.name)
      assert.strictEqual(allEvents().length, 1)
    }))

  it.effect("a repeat whose Event was removed starts a fresh Event with the whole count", () =>
    Effect.gen(function*() {
      const { model, recorder, events, flush, nextRound } = yield* setup
      yield* recorder.record(pod, "Normal", "Adopted", "adopted sb_1")
      yield* flush
      yield* eventually("the event", () => events("team-a").length === 1)
      yield* nextRound
      const [gone] = events("team-a")
      assert.isTrue(Result.isSuccess(model.delete(CoreEvents, "team-a", gone.metadata.name)))
      yield* TestClock.adjust("5 seconds")
      yield* recorder.record(pod, "Normal", "Adopted", "adopted sb_1 again")
      yield* flush
      yield* eventually("the fresh event", () => events("team-a").length === 1)
      const [fresh] = events("team-a")
      assert.notStrictEqual(fresh.metadata.name, gone.metadata.name)
      assert.strictEqual(fresh.count, 2)
    }))

  it.effect("forget: a gone Pod's aggregates are dropped (a pending one is written first); other objects keep theirs", () =>
    Effect.gen(function*() {
      const { recorder, events, flush, nextRound } = yield* setup
      const other: InvolvedObject = { ...pod, name: "review-bot-2", uid: "pod-uid-2" }
      yield* recorder.record(pod, "Normal", "Claimed", "claimed sb_1")
      yield* recorder.record(other, "Normal", "Claimed", "claimed sb_2")
      // forgotten before its flush: still written
      yield* recorder.forget({ kind: "Pod", namespace: "team-a", name: "review-bot" })
      yield* flush
      yield* eventually("both events", () => events("team-a").length === 2)
      yield* nextRound
      // a prefix of another Pod's name names neither
      yield* recorder.forget({ kind: "Pod", namespace: "team-a", name: "review-bo" })
      // written and forgotten: the aggregate is gone, so a repeat is a fresh Event (count 1);
      // the other Pod's aggregate is kept, so its repeat patches its Event (count 2)
      yield* recorder.forget({ kind: "Pod", namespace: "team-a", name: "review-bot" })
      yield* TestClock.adjust("5 seconds")
      yield* recorder.record(pod, "Normal", "Claimed", "claimed sb_1 again")
      yield* recorder.record(other, "Normal", "Claimed", "claimed sb_2 again")
      yield* flush
      yield* eventually("three events", () => events("team-a").length === 3)
      yield* nextRound
      const counts = (name: string) => events("team-a").filter((e) => e.involvedObject["name"] === name).map((e) => e.count).sort()
      assert.deepStrictEqual(counts("review-bot"), [1, 1], "a fresh Event after forget")
      assert.deepStrictEqual(counts("review-bot-2"), [2], "patched: its aggregate was kept")
    }))

  it.effect("events still pending at shutdown are written by the final flush", () =>
    Effect.gen(function*() {
      const { recorder, events, close } = yield* setup
      yield* recorder.record(pod, "Normal", "Released", "released sb_1")
      yield* recorder.record(node, "Normal", "Registered", "node registered")
      yield* close
      assert.strictEqual(events("team-a").length, 1)
      assert.strictEqual(events("default").length, 1)
    }))

  it.effect("shutdown during a flush does not write the same Event twice", () =>
    Effect.gen(function*() {
      const { model, recorder, events, flush, close, writeTimes } = yield* setup
      model.faults.latencyMs = 200
      yield* recorder.record(pod, "Normal", "Released", "released sb_1")
      yield* flush
      assert.deepStrictEqual(writeTimes(), [START + 1000], "the periodic flush's create is in flight")
      // The final flush waits for it, and the close for the final flush.
      yield* close
      assert.deepStrictEqual(writeTimes(), [START + 1000], "not written twice")
      assert.strictEqual(events("team-a").length, 1)
    }))
})
