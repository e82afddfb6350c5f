import { assert, describe, it } from "@effect/vitest"
import { podKeyOf } from "../../src/Schemas/Ids.ts"
import { isRetryable } from "../../src/Services/ProviderErrors.ts"
import { Clock, DateTime, Deferred, Effect, Fiber, Option, PubSub } from "effect"
import { TestClock } from "effect/testing"
import { type ClaimRecord, ClaimState } from "../../src/Schemas/Claims.ts"
import type { ClaimId } from "../../src/Schemas/Ids.ts"
import { ClaimTable } from "../../src/Services/ClaimTable.ts"
import { PodLifecycle } from "../../src/Services/PodLifecycle.ts"
import { ProviderEvents } from "../../src/Services/ProviderEvents.ts"
import { SandboxdSim, SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { publishExpiredLeases, runLeaseWatch } from "../../src/Programs/LeaseWatcher.ts"
import { ClaimsStoreMemoryControl } from "../../testkit/Layers/ClaimsStoreMemory.ts"
import { sleepReceipts } from "../support/Receipts.ts"
import {
  advanceUntil,
  claimCount,
  drain,
  eventually,
  forgetPod,
  keyOf,
  ListGate,
  pod,
  subscribePushes,
  world
} from "./Provider/harness.ts"

const ttl60 = { annotations: { "sandbox.cocoonstack.io/ttl-seconds": "60" } }

const listCount = Effect.map(
  SandboxdSim.use((sim) => sim.audit),
  (audit) => audit.filter((entry) => entry.route === "list").length
)
const simIds = Effect.map(SandboxdSim.use((sim) => sim.claims), (claims) => claims.map((claim) => claim.id))
const claimOf = (name: string) => ClaimTable.use((table) => Effect.map(table.held(keyOf(name)), Option.getOrThrow))

/** Creates "web" with a 60 s lease that sandboxd then archives (still listed, no deadline), and moves past the old deadline. */
const createThenArchive = Effect.gen(function*() {
  yield* (yield* PodLifecycle).createPod(pod("web", ttl60))
  const { record } = yield* claimOf("web")
  yield* (yield* SandboxdSim).archive(record.id)
  yield* TestClock.adjust("61 seconds")
  return record
})

/** Another claim takes the key's row meanwhile, as an adoption racing a listing does. */
const replaceRow = (name: string, patch: Partial<ClaimRecord>) =>
  ClaimTable.use((table) =>
    table.modify((state) => {
      const row = state.rows.get(keyOf(name))!
      const rows = state.rows.with(keyOf(name), {
        record: { ...row.record, ...patch },
        state: ClaimState.Durable()
      })
      return [undefined, { ...state, rows }] as const
    })
  )

/** Creates "web" with a 60 s lease, then moves past it until sandboxd's reaper took the VM. */
const createThenExpire = Effect.gen(function*() {
  yield* (yield* PodLifecycle).createPod(pod("web", ttl60))
  const row = yield* claimOf("web")
  yield* TestClock.adjust("65 seconds")
  yield* eventually(Effect.map(simIds, (ids) => ids.length === 0))
  return row.record
})

/**
 * "web" expires; a lease-watch tick takes its listing, `meanwhile` runs while the tick is held
 * there, and the tick must then publish nothing and push nothing (its identity re-check).
 */
const expiresWhileListing = <E, R>(meanwhile: Effect.Effect<unknown, E, R>) =>
  Effect.gen(function*() {
    yield* createThenExpire
    const pushes = yield* subscribePushes
    const gate = yield* (yield* ListGate).arm
    const tick = yield* Effect.forkChild(publishExpiredLeases)
    yield* Deferred.await(gate.reached)
    yield* meanwhile
    yield* Deferred.succeed(gate.open, undefined)
    assert.deepStrictEqual((yield* Fiber.join(tick)).published, [])
    assert.deepStrictEqual(yield* drain(pushes), [])
  })

describe("lease watch (LEASE-3, LEASE-4, LEASE-6, LEASE-7)", () => {
  it.effect("the claim's deadline comes from sandboxd's answer (LEASE-2)", () =>
    Effect.gen(function*() {
      yield* (yield* PodLifecycle).createPod(pod("web", ttl60))
      const row = yield* claimOf("web")
      assert.deepStrictEqual(row.record.deadline, Option.some(DateTime.makeUnsafe(60_000)))
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("before the deadline a listed sandbox is left alone: one listing, nothing pushed", () =>
    Effect.gen(function*() {
      yield* (yield* PodLifecycle).createPod(pod("web", ttl60))
      const pushes = yield* subscribePushes
      yield* TestClock.adjust("59 seconds")
      const outcome = yield* publishExpiredLeases
      assert.deepStrictEqual(outcome, { published: [], refreshed: [], deferred: false, lost: [], podless: [], ended: [] })
      // Listed every tick, so a sandbox that vanishes early is noticed (SandboxLost).
      assert.strictEqual(yield* listCount, 1)
      assert.deepStrictEqual(yield* drain(pushes), [])
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("expiry confirmed by the listing: Failed/SandboxLeaseExpired pushed, every tick, claim kept", () =>
    Effect.gen(function*() {
      const claim = yield* createThenExpire
      const pushes = yield* subscribePushes
      const outcome = yield* publishExpiredLeases
      assert.deepStrictEqual(outcome.published, [keyOf("web")])
      const [failed] = yield* drain(pushes)
      const status = failed.status!
      assert.strictEqual(status.phase, "Failed")
      assert.strictEqual(status.reason, "SandboxLeaseExpired")
      assert.include(status.message, "1970-01-01T00:01:00Z")
      assert.isUndefined(status.conditions)
      assert.isUndefined(status.podIP)
      assert.isUndefined(status.podIPs)
      assert.isUndefined(status.hostIP)
      assert.deepStrictEqual(status.startTime, new Date(0))
      assert.deepStrictEqual(status.containerStatuses?.map((c) => ({
        name: c.name,
        ready: c.ready,
        imageID: c.imageID,
        terminated: c.state?.terminated
      })), ["main", "sidecar"].map((name) => ({
        name,
        ready: false,
        imageID: `sandboxd://${claim.id}`,
        terminated: { exitCode: 1, reason: "SandboxLeaseExpired", finishedAt: new Date(60_000) }
      })))
      assert.isUndefined(failed.metadata?.annotations?.["sandbox.cocoonstack.io/claim-id"], "the tracked Pod as is")
      // Not dropped, not released: a later authorized delete converges on sandboxd's 404.
      assert.strictEqual((yield* claimOf("web")).record.id, claim.id)
      const releases = (yield* (yield* SandboxdSim).audit).filter((entry) => entry.route === "release")
      assert.strictEqual(releases.length, 0)
      // LEASE-7 — expired pushes repeat: the same deterministic push again on the next tick.
      yield* publishExpiredLeases
      const [again] = yield* drain(pushes)
      assert.deepStrictEqual(again, failed)
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("a failed listing defers publication; the next good tick publishes", () =>
    Effect.gen(function*() {
      yield* createThenExpire
      const pushes = yield* subscribePushes
      const sim = yield* SandboxdSim
      yield* sim.injectFault("list", SimFault.status(500, "down"))
      assert.deepStrictEqual(yield* publishExpiredLeases, { published: [], refreshed: [], deferred: true, lost: [], podless: [], ended: [] })
      yield* sim.clearFaults
      yield* sim.injectFault("list", SimFault.body(200, "{}"))
      assert.isTrue((yield* publishExpiredLeases).deferred, "a {} body is a failed listing too")
      assert.deepStrictEqual(yield* drain(pushes), [])
      yield* sim.clearFaults
      assert.deepStrictEqual((yield* publishExpiredLeases).published, [keyOf("web")])
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("a still-listed candidate takes the listing's deadline instead (archive: none = keep forever)", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const record = yield* createThenArchive
      const pushes = yield* subscribePushes
      const outcome = yield* publishExpiredLeases
      assert.deepStrictEqual(outcome, { published: [], refreshed: [keyOf("web")], deferred: false, lost: [], podless: [], ended: [] })
      assert.deepStrictEqual((yield* claimOf("web")).record.deadline, Option.none())
      assert.deepStrictEqual(yield* drain(pushes), [])
      assert.strictEqual(Option.getOrThrow(yield* provider.getPodStatus(podKeyOf("default", "web"))).phase, "Running")
    }).pipe(Effect.provide(world({ sim: { archiveRetention: 0 } }), { local: true })))

  it.effect("identity re-check: a key that changed hands during the listing is not published", () =>
    Effect.gen(function*() {
      yield* expiresWhileListing(replaceRow("web", { id: "sb_newowner00000000" as ClaimId }))
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("identity re-check: a Pod gone during the listing is not published", () =>
    Effect.gen(function*() {
      yield* expiresWhileListing(forgetPod("web"))
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("LEASE-9: a row with no tracked Pod (preserved) is kept while its VM lives; once sandboxd reaped it at its deadline the row is Lost, its key handed on, and its run drops it", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const sim = yield* SandboxdSim
      const retried = yield* ProviderEvents.use((events) => events.unquarantined)
      yield* provider.createPod(pod("web", ttl60))
      const { record } = yield* claimOf("web")
      yield* forgetPod("web")
      // Alive and listed: kept for a replacement Pod to adopt.
      assert.deepStrictEqual((yield* publishExpiredLeases).podless, [])
      // One listing that misses it proves nothing: the by-id read finds it.
      yield* sim.omitFromListings(record.id, 1)
      assert.deepStrictEqual((yield* publishExpiredLeases).podless, [])
      assert.strictEqual((yield* claimOf("web")).state._tag, "Durable")
      // The daemon's listings and reads renewed nothing: sandboxd reaps the VM at its own deadline.
      yield* TestClock.adjust("65 seconds")
      yield* eventually(Effect.map(simIds, (ids) => ids.length === 0))
      assert.isFalse((yield* sim.audit).some((entry) => entry.route === "wake"))
      const outcome = yield* publishExpiredLeases
      assert.deepStrictEqual(outcome.podless, [keyOf("web")])
      assert.deepStrictEqual(outcome.published, [], "no Pod, no status")
      assert.strictEqual((yield* claimOf("web")).state._tag, "Lost")
      assert.deepStrictEqual(Array.from(yield* PubSub.takeAll(retried)), [[keyOf("web")]])
      // The key's run (its Pod is gone from the apiserver) drops the row and writes the file.
      assert.strictEqual(yield* provider.settleGone(keyOf("web")), "LostDropped")
      assert.isTrue(Option.isNone(yield* ClaimTable.use((table) => table.held(keyOf("web")))))
      assert.deepStrictEqual(Array.from((yield* ClaimsStoreMemoryControl.use((c) => c.disk)).keys()), [])
      assert.strictEqual(yield* claimCount, 1, "nothing claimed, nothing released")
      assert.isFalse((yield* sim.audit).some((entry) => entry.route === "release"))
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("LEASE-9 without a by-id read: a Pod-less row's VM is confirmed gone only by two listings a verify interval apart", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const sim = yield* SandboxdSim
      yield* provider.createPod(pod("web"))
      const { record } = yield* claimOf("web")
      yield* forgetPod("web")
      yield* sim.setRevision({ byIdRead: false })
      yield* sim.forget(record.id)
      assert.deepStrictEqual((yield* publishExpiredLeases).podless, [])
      yield* TestClock.adjust("14 seconds")
      assert.deepStrictEqual((yield* publishExpiredLeases).podless, [], "14 s < the 15 s verify interval")
      assert.strictEqual((yield* claimOf("web")).state._tag, "Durable")
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual((yield* publishExpiredLeases).podless, [keyOf("web")])
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("LEASE-9: the Pod of a Pod-less row whose VM went, not tracked yet (a restart's adoption still to come), is ended, not given a new VM", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const sim = yield* SandboxdSim
      yield* provider.createPod(pod("web"))
      const { record } = yield* claimOf("web")
      yield* forgetPod("web")
      yield* sim.forget(record.id)
      assert.deepStrictEqual((yield* publishExpiredLeases).podless, [keyOf("web")])
      const running = { ...pod("web"), status: { phase: "Running" } }
      assert.strictEqual((yield* Effect.flip(provider.createPod(running)))._tag, "SandboxLost")
      assert.strictEqual(yield* claimCount, 1)
      // A new Pod of the name (another generation) gets a fresh claim.
      assert.strictEqual((yield* provider.createPod(pod("web", { uid: "uid-web-2" })))._tag, "Claimed")
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("the loop: first tick one interval after start, Failed pushed once the VM is gone", () =>
    Effect.gen(function*() {
      yield* (yield* PodLifecycle).createPod(pod("web", ttl60))
      const pushes = yield* subscribePushes
      const loop = yield* Effect.forkChild(runLeaseWatch)
      const received: Array<unknown> = []
      yield* advanceUntil(Effect.gen(function*() {
        received.push(...(yield* drain(pushes)))
        return received.length > 0
      }))
      const now = DateTime.toEpochMillis(yield* DateTime.now)
      assert.isAtLeast(now, 60_000)
      assert.strictEqual(now % 30_000, 0, "pushed on a 30 s tick")
      yield* Fiber.interrupt(loop)
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("LEASE-4: the loop ticks every interval, not every two (a tick is one listing)", () =>
    Effect.gen(function*() {
      yield* (yield* PodLifecycle).createPod(pod("web"))
      const atStart = yield* listCount
      // The loop's Clock notes each 30 s sleep it begins: a tick has ended once the next one began.
      const sleeps = yield* sleepReceipts
      const loop = yield* Effect.forkChild(runLeaseWatch.pipe(Effect.provideService(Clock.Clock, sleeps.clock)))
      yield* sleeps.asleep("30 seconds", 1)
      for (const n of [1, 2, 3]) {
        yield* TestClock.adjust("29 seconds")
        assert.strictEqual(yield* listCount, atStart + n - 1, `tick ${n} not before 30 s`)
        yield* TestClock.adjust("1 second")
        yield* sleeps.asleep("30 seconds", n + 1)
        assert.strictEqual(yield* listCount, atStart + n, `tick ${n} at ${30 * n} s, one listing`)
      }
      yield* Fiber.interrupt(loop)
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("LEASE-11: once the provider has seen the Pod terminal, the row of a reaped VM goes (file rewritten, nothing released); a VM still there keeps its row", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      // Archived: past its old deadline but still listed. Seen terminal (written by someone else).
      yield* createThenArchive
      const failed = { ...pod("web", ttl60), status: { phase: "Failed", reason: "Evicted" } }
      yield* provider.settleTerminal(failed)
      const archived = yield* publishExpiredLeases
      assert.deepStrictEqual([archived.ended, archived.published], [[], []], "a VM that is there keeps its row")
      assert.strictEqual((yield* claimOf("web")).state._tag, "Durable")
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("LEASE-11: the expired status repeats while the Pod is not seen terminal; once it is, the next tick drops the row of the reaped VM", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const sim = yield* SandboxdSim
      yield* createThenExpire
      const pushes = yield* subscribePushes
      for (let i = 0; i < 2; i++) assert.deepStrictEqual((yield* publishExpiredLeases).published, [keyOf("web")])
      assert.strictEqual((yield* drain(pushes)).length, 2)
      // The pod controller sees the Pod terminal: the status pushed is stored.
      yield* provider.settleTerminal({ ...pod("web", ttl60), status: { phase: "Failed", reason: "SandboxLeaseExpired" } })
      assert.isTrue(Option.isSome(yield* ClaimTable.use((table) => table.held(keyOf("web")))), "memory only until the watch confirms")
      const outcome = yield* publishExpiredLeases
      assert.deepStrictEqual([outcome.ended, outcome.published], [[keyOf("web")], []])
      assert.deepStrictEqual(yield* drain(pushes), [])
      assert.isTrue(Option.isNone(yield* ClaimTable.use((table) => table.held(keyOf("web")))))
      assert.deepStrictEqual(Array.from((yield* ClaimsStoreMemoryControl.use((c) => c.disk)).keys()), [])
      assert.isFalse((yield* sim.audit).some((entry) => entry.route === "release"), "nothing released")
      // Nothing left to look at: the next tick lists nothing.
      const listed = yield* listCount
      assert.deepStrictEqual((yield* publishExpiredLeases).ended, [])
      assert.strictEqual(yield* listCount, listed)
      assert.isTrue(Option.isSome(yield* provider.getPod(podKeyOf("default", "web"))), "the Pod itself is still tracked")
    }).pipe(Effect.provide(world(), { local: true })))
})

describe("expiry settlement in CreatePod (LEASE-5) and GetPodStatus (LEASE-8)", () => {
  it.effect("expired and no longer listed: dropped, then a fresh claim", () =>
    Effect.gen(function*() {
      const old = yield* createThenExpire
      yield* forgetPod("web")
      yield* (yield* PodLifecycle).createPod(pod("web", { uid: "uid-2" }))
      const row = yield* claimOf("web")
      assert.notStrictEqual(row.record.id, old.id)
      assert.strictEqual(row.state._tag, "Durable")
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("settlement re-checks the id after its listing: a row replaced meanwhile is not dropped (CC-2 d)", () =>
    Effect.gen(function*() {
      yield* createThenExpire
      yield* forgetPod("web")
      const gate = yield* (yield* ListGate).arm
      const create = yield* Effect.forkChild((yield* PodLifecycle).createPod(pod("web", { uid: "uid-2" })))
      yield* Deferred.await(gate.reached)
      // The listing was taken for the expired claim; the key now holds another one.
      const newId = "sb_newowner00000000" as ClaimId
      yield* replaceRow("web", { id: newId, deadline: Option.none() })
      yield* Deferred.succeed(gate.open, undefined)
      assert.deepStrictEqual(yield* Fiber.join(create), { _tag: "Adopted", claimId: newId })
      assert.strictEqual((yield* claimOf("web")).record.id, newId)
      assert.strictEqual(yield* claimCount, 1, "no fresh claim over the row that replaced the expired one")
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("expired but still listed: the listing's deadline is taken and the claim adopted", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const record = yield* createThenArchive
      yield* forgetPod("web")
      const pushes = yield* subscribePushes
      yield* provider.createPod(pod("web", { uid: "uid-2" }))
      const row = yield* claimOf("web")
      assert.strictEqual(row.record.id, record.id)
      assert.deepStrictEqual(row.record.deadline, Option.none())
      const [pushed] = yield* drain(pushes)
      assert.strictEqual(pushed.status?.phase, "Running")
    }).pipe(Effect.provide(world({ sim: { archiveRetention: 0 } }), { local: true })))

  it.effect("expired, still live, one listing misses it: the by-id read finds it and it is adopted, no second VM (LEASE-5)", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      const record = yield* createThenArchive
      yield* forgetPod("web")
      // One well-formed listing that leaves the live VM out.
      yield* sim.injectFault("list", SimFault.body(200, `{"sandboxes":[]}`), { times: 1 })
      const outcome = yield* (yield* PodLifecycle).createPod(pod("web", { uid: "uid-2" }))
      assert.deepStrictEqual(outcome, { _tag: "Adopted", claimId: record.id })
      assert.strictEqual((yield* claimOf("web")).record.id, record.id, "the live VM's token is still held")
      assert.strictEqual(yield* claimCount, 1, "no second claim for the key")
      assert.deepStrictEqual(yield* simIds, [record.id])
    }).pipe(Effect.provide(world({ sim: { archiveRetention: 0 } }), { local: true })))

  it.effect("expired, one listing misses it and sandboxd has no by-id read: CreatePod refuses, nothing dropped (LEASE-5)", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      yield* sim.setRevision({ byIdRead: false })
      const record = yield* createThenArchive
      yield* forgetPod("web")
      yield* sim.injectFault("list", SimFault.body(200, `{"sandboxes":[]}`), { times: 1 })
      const error = yield* Effect.flip((yield* PodLifecycle).createPod(pod("web", { uid: "uid-2" })))
      assert.strictEqual(error._tag, "ExpiredClaimUnlistable")
      assert.isTrue(isRetryable(error))
      assert.strictEqual((yield* claimOf("web")).record.id, record.id)
      assert.strictEqual(yield* claimCount, 1)
      // The next listing shows it: the retry adopts the same VM.
      assert.deepStrictEqual(yield* (yield* PodLifecycle).createPod(pod("web", { uid: "uid-2" })), {
        _tag: "Adopted",
        claimId: record.id
      })
      assert.strictEqual(yield* claimCount, 1)
    }).pipe(Effect.provide(world({ sim: { archiveRetention: 0 } }), { local: true })))

  it.effect("expired and sandboxd cannot be listed: CreatePod refuses, the credential kept", () =>
    Effect.gen(function*() {
      const old = yield* createThenExpire
      yield* forgetPod("web")
      yield* (yield* SandboxdSim).injectFault("list", SimFault.status(502))
      const error = yield* Effect.flip((yield* PodLifecycle).createPod(pod("web", { uid: "uid-2" })))
      assert.strictEqual(error._tag, "ExpiredClaimUnlistable")
      assert.isTrue(isRetryable(error))
      assert.strictEqual((yield* claimOf("web")).record.id, old.id)
      assert.strictEqual(yield* claimCount, 1)
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("GetPodStatus: Running at the deadline instant, lease-expired strictly after it", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      yield* provider.createPod(pod("web", ttl60))
      yield* TestClock.adjust("60 seconds")
      assert.strictEqual(Option.getOrThrow(yield* provider.getPodStatus(podKeyOf("default", "web"))).phase, "Running")
      yield* TestClock.adjust("1 millis")
      const status = Option.getOrThrow(yield* provider.getPodStatus(podKeyOf("default", "web")))
      assert.strictEqual(status.phase, "Failed")
      assert.strictEqual(status.reason, "SandboxLeaseExpired")
    }).pipe(Effect.provide(world(), { local: true })))
})
