import { assert, describe, it } from "@effect/vitest"
import { podKeyOf } from "../../src/Schemas/Ids.ts"
import { isRetryable } from "../../src/Services/ProviderErrors.ts"
import { Clock, Context, DateTime, Deferred, Effect, Fiber, Layer, Option, PubSub } from "effect"
import { TestClock } from "effect/testing"
import { ClaimsStoreMemoryControl } from "../../testkit/Layers/ClaimsStoreMemory.ts"
import * as KubeApiMemory from "../../testkit/Layers/KubeApiMemory.ts"
import { ClusterModel } from "../../testkit/Simulators/Apiserver/Model.ts"
import { startupLayer } from "../../src/Daemon.ts"
import { ClaimsStartup, EarlyPodList } from "../../src/Services/Daemon.ts"
import { KubeApi } from "../../src/Services/KubeApi.ts"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import type { PodKey } from "../../src/Schemas/Ids.ts"
import { ClaimTable } from "../../src/Services/ClaimTable.ts"
import { ClaimsStore } from "../../src/Services/ClaimsStore.ts"
import { PodLifecycle } from "../../src/Services/PodLifecycle.ts"
import { ProviderEvents } from "../../src/Services/ProviderEvents.ts"
import { SandboxdClient } from "../../src/Services/SandboxdClient.ts"
import { SandboxdSim, SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { runClaimVerification, verifyQuarantinedClaims } from "../../src/Programs/ClaimVerifier.ts"
import { startClaims } from "../../src/Programs/Provider/Startup.ts"
import { sleepReceipts } from "../support/Receipts.ts"
import { advanceUntil, claimCount, drain, eventually, keyOf, ListGate, pod, record, subscribePushes, Template, world } from "./Provider/harness.ts"

/** A "previous run" left two claims on disk: one sandboxd still holds, one it does not. */
const seed = (client: SandboxdClient["Service"]) =>
  Effect.gen(function*() {
    const alive = yield* client.claim({ template: Template, net: "", size: "", ttlSeconds: 3600, claimRef: "default/alive" })
    const rows = new Map<PodKey, ClaimRecord>([
      [keyOf("alive"), { ...record(alive.id), token: alive.token }],
      [keyOf("gone"), record("sb_00000000000dead0", { claimedAt: DateTime.makeUnsafe(0) })]
    ])
    return rows
  })

const states = ClaimTable.use((table) =>
  Effect.map(table.state, (state) => Object.fromEntries(Array.from(state.rows, ([key, row]) => [key, row.state._tag])))
)

const subscribeLifted = ProviderEvents.use((events) => events.unquarantined)

/** Startup's listing fails once, so both loaded rows stay quarantined. */
const startQuarantined = Effect.andThen(
  SandboxdSim.use((sim) => sim.injectFault("list", SimFault.status(503), { times: 1 })),
  startClaims
)

/** After `startQuarantined`: a verification pass that has taken its listing, held there until `open`. */
const passHeldAtListing = Effect.gen(function*() {
  yield* startQuarantined
  const gate = yield* (yield* ListGate).arm
  const pass = yield* Effect.forkChild(verifyQuarantinedClaims)
  yield* Deferred.await(gate.reached)
  return { pass, open: Deferred.succeed(gate.open, undefined) }
})

describe("startup and quarantine (PER-8, PER-9, VER-1…VER-5)", () => {
  it.effect("loaded rows start quarantined; the startup pass lifts the listed one, marks the other Lost; then the mandatory write", () =>
    Effect.gen(function*() {
      const lifted = yield* subscribeLifted
      const summary = yield* startClaims
      assert.deepStrictEqual(summary, { loaded: 2, backfilled: 1, verified: true, quarantined: 0, intents: 0 })
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Durable", [keyOf("gone")]: "Lost" })
      const table = yield* ClaimTable
      const alive = Option.getOrThrow(yield* table.durable(keyOf("alive")))
      const [simClaim] = yield* SandboxdSim.use((sim) => sim.claims)
      // Deadline back-filled from the listing; claimedAt back-filled with "now" (PER-8 — loading
      // the file).
      assert.isTrue(Option.isSome(alive.deadline))
      assert.strictEqual(DateTime.formatIso(Option.getOrThrow(alive.deadline)), new Date(simClaim.deadline).toISOString())
      assert.deepStrictEqual(alive.claimedAt, Option.some(DateTime.makeUnsafe(0)))
      const control = yield* ClaimsStoreMemoryControl
      const writes = yield* control.writes
      assert.strictEqual(writes.length, 1)
      // The gone row is written as it was (VER-7 — a lost sandbox's row outlives restarts until its
      // Pod is settled): a restart before its Pod is settled finds it gone again.
      assert.deepStrictEqual([...writes[0].rows.keys()], [keyOf("alive"), keyOf("gone")])
      // The lifted key is retried, and the Lost row no tracked Pod stands for gets a run (VER-7).
      assert.deepStrictEqual(Array.from(yield* PubSub.takeAll(lifted)), [[keyOf("alive")], [keyOf("gone")]])
    }).pipe(Effect.provide(world({ seed }), { local: true })))

  it.effect("a failed listing drops nothing: every row stays quarantined, still written, never Running (VER-4, VER-5)", () =>
    Effect.gen(function*() {
      yield* (yield* SandboxdSim).injectFault("list", SimFault.status(500, "down"))
      const summary = yield* startClaims
      assert.isFalse(summary.verified)
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Quarantined", [keyOf("gone")]: "Quarantined" })
      const [write] = yield* (yield* ClaimsStoreMemoryControl).writes
      assert.deepStrictEqual([...write.rows.keys()].sort(), [keyOf("alive"), keyOf("gone")])
      // CreatePod for a quarantined key re-verifies and refuses while sandboxd cannot be listed.
      const provider = yield* PodLifecycle
      const error = yield* Effect.flip(provider.createPod(pod("alive")))
      assert.strictEqual(error._tag, "ClaimUnverifiable")
      assert.isTrue(isRetryable(error))
      assert.strictEqual(yield* claimCount, 1, "only the seed's claim: nothing claimed over the held credential")
      // Even with a tracked Pod, a quarantined row reports Pending.
      yield* provider.updatePod(pod("alive"))
      assert.strictEqual(Option.getOrThrow(yield* provider.getPodStatus(podKeyOf("default", "alive"))).phase, "Pending")
    }).pipe(Effect.provide(world({ seed }), { local: true })))

  it.effect("a `{}` listing is a failed listing, not an empty one", () =>
    Effect.gen(function*() {
      yield* (yield* SandboxdSim).injectFault("list", SimFault.body(200, "{}"))
      const summary = yield* startClaims
      assert.isFalse(summary.verified)
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Quarantined", [keyOf("gone")]: "Quarantined" })
    }).pipe(Effect.provide(world({ seed }), { local: true })))

  it.effect("the mandatory write failing is a startup error (PER-9)", () =>
    Effect.gen(function*() {
      yield* (yield* ClaimsStoreMemoryControl).failNext(1, "fsync")
      const error = yield* Effect.flip(startClaims)
      assert.strictEqual(error._tag, "ClaimsWriteError")
    }).pipe(Effect.provide(world({ seed }), { local: true })))

  it.effect("an unreadable file is a startup error (PER-8)", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(startClaims)
      assert.strictEqual(error._tag, "ClaimsLoadError")
    }).pipe(Effect.provide(world({ store: { loadError: "truncated JSON" } }), { local: true })))

  it.effect("CreatePod for a quarantined, listed key verifies then adopts it: same claim, no new one", () =>
    Effect.gen(function*() {
      yield* startQuarantined
      const provider = yield* PodLifecycle
      const pushes = yield* subscribePushes
      yield* provider.createPod(pod("alive", { uid: "new-uid" }))
      const [simClaim] = yield* SandboxdSim.use((sim) => sim.claims)
      const [pushed] = yield* drain(pushes)
      assert.strictEqual(pushed.metadata?.annotations?.["sandbox.cocoonstack.io/claim-id"], simClaim.id)
      assert.strictEqual((yield* SandboxdSim.use((sim) => sim.claims)).length, 1)
      // The unlisted row was judged by the same pass: Lost, kept until its Pod is terminal or gone (VER-7).
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Durable", [keyOf("gone")]: "Lost" })
    }).pipe(Effect.provide(world({ seed }), { local: true })))

  it.effect("a claim made while a listing is in flight is never judged by it (VER-3)", () =>
    Effect.gen(function*() {
      const { open, pass } = yield* passHeldAtListing
      // The listing is taken; a new Pod is claimed before the pass applies it.
      yield* (yield* PodLifecycle).createPod(pod("fresh"))
      yield* open
      const judgement = yield* Fiber.join(pass)
      assert.deepStrictEqual(judgement.lost.map((d) => d.key), [keyOf("gone")])
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Durable", [keyOf("gone")]: "Lost", [keyOf("fresh")]: "Durable" })
    }).pipe(Effect.provide(world({ seed }), { local: true })))

  it.effect("adoption racing verification: a row replaced during the listing survives the pass (CC-2 d, CRT-4)", () =>
    Effect.gen(function*() {
      // The loop's pass holds a listing in which "gone" is absent...
      const { open, pass } = yield* passHeldAtListing
      // ...while CreatePod for "gone" runs its own pass (dropping the row) and claims afresh.
      yield* (yield* PodLifecycle).createPod(pod("gone"))
      const table = yield* ClaimTable
      const fresh = Option.getOrThrow(yield* table.durable(keyOf("gone")))
      assert.notStrictEqual(fresh.id, "sb_00000000000dead0")
      yield* open
      const judgement = yield* Fiber.join(pass)
      assert.deepStrictEqual(judgement.lost, [], "the stale pass skips the replaced row")
      assert.deepStrictEqual(Option.getOrThrow(yield* table.durable(keyOf("gone"))).id, fresh.id)
    }).pipe(Effect.provide(world({ seed }), { local: true })))
})

/**
 * `startClaims` with its store's load held until `release`; `loading` completes when the load
 * is asked for (before it reads anything).
 */
const startWithLoadHeld = Effect.gen(function*() {
  const store = yield* ClaimsStore
  const loading = yield* Deferred.make<void>()
  const release = yield* Deferred.make<void>()
  const load = Deferred.succeed(loading, undefined).pipe(Effect.andThen(Deferred.await(release)), Effect.andThen(store.load))
  const startup = yield* Effect.forkChild(startClaims.pipe(Effect.provideService(ClaimsStore, ClaimsStore.of({ ...store, load }))))
  return { startup, loading, release: Deferred.succeed(release, undefined) }
})

const listingsSent = SandboxdSim.use((sim) => Effect.map(sim.audit, (audit) => audit.filter((entry) => entry.route === "list").length))

describe("the startup pass's listing, asked for before the load (CFG-11)", () => {
  it.effect("is asked for and answered while the claims file is not read yet, and judges the loaded rows", () =>
    Effect.gen(function*() {
      const gate = yield* (yield* ListGate).arm
      const { loading, release, startup } = yield* startWithLoadHeld
      yield* Deferred.await(loading)
      // Answered while the load waits: a listing asked for after the load would never get here.
      yield* Deferred.await(gate.reached)
      assert.strictEqual(yield* listingsSent, 1)
      yield* Deferred.succeed(gate.open, undefined)
      yield* release
      const summary = yield* Fiber.join(startup)
      assert.deepStrictEqual(summary, { loaded: 2, backfilled: 1, verified: true, quarantined: 0, intents: 0 })
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Durable", [keyOf("gone")]: "Lost" })
      assert.strictEqual(yield* listingsSent, 1, "the pass took the early listing: it did not list again")
    }).pipe(Effect.provide(world({ seed }), { local: true })))

  it.effect("the daemon asks for it first, then the node's first pod list, then reads the claims file; each answer is used once", () =>
    Effect.gen(function*() {
      // Call order, recorded where each is asked for (the simulators answer them).
      const asked: Array<string> = []
      const client = yield* SandboxdClient
      const store = yield* ClaimsStore
      const kube = KubeApiMemory.make(new ClusterModel())
      const startup = yield* Layer.build(startupLayer).pipe(
        Effect.provideService(SandboxdClient, SandboxdClient.of({
          ...client,
          listSandboxes: Effect.suspend(() => {
            asked.push("sandboxd listing")
            return client.listSandboxes
          })
        })),
        Effect.provideService(KubeApi, KubeApi.of({
          ...kube,
          listPods: (node) =>
            Effect.suspend(() => {
              asked.push("pod list")
              return kube.listPods(node)
            })
        })),
        Effect.provideService(ClaimsStore, ClaimsStore.of({
          ...store,
          load: Effect.suspend(() => {
            asked.push("claims load")
            return store.load
          })
        }))
      )
      // The listing gates the verification, which gates everything else; the pod list is read last.
      assert.deepStrictEqual(asked, ["sandboxd listing", "pod list", "claims load"])
      assert.deepStrictEqual(Context.get(startup, ClaimsStartup), { loaded: 2, backfilled: 1, verified: true, quarantined: 0, intents: 0 })
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Durable", [keyOf("gone")]: "Lost" })
      assert.strictEqual(yield* listingsSent, 1, "the pass took the early listing")
      yield* Context.get(startup, EarlyPodList).list
      assert.deepStrictEqual(asked.filter((what) => what === "pod list"), ["pod list"], "the controller takes the early pod list")
    }).pipe(Effect.provide(world({ seed }), { local: true })))

  it.effect("failed, it is the startup pass's failed listing; the next pass lists afresh", () =>
    Effect.gen(function*() {
      yield* SandboxdSim.use((sim) => sim.injectFault("list", SimFault.status(503), { times: 1 }))
      const summary = yield* startClaims
      assert.isFalse(summary.verified)
      assert.strictEqual(summary.quarantined, 2)
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Quarantined", [keyOf("gone")]: "Quarantined" })
      // Not the early answer again: a new listing, which lifts and drops.
      yield* verifyQuarantinedClaims
      assert.strictEqual(yield* listingsSent, 2)
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Durable", [keyOf("gone")]: "Lost" })
    }).pipe(Effect.provide(world({ seed }), { local: true })))

  it.effect("an absence is dated from when it was asked for, not from when the pass used it", () =>
    Effect.gen(function*() {
      // No by-id read: an absence is confirmed by listings one --claim-verify-interval (15 s) apart.
      const gate = yield* (yield* ListGate).arm
      const { loading, release, startup } = yield* startWithLoadHeld
      yield* Deferred.await(loading)
      yield* Deferred.await(gate.reached)
      // The load takes 10 s after the listing was asked for (t = 0).
      yield* TestClock.adjust("10 seconds")
      yield* Deferred.succeed(gate.open, undefined)
      yield* release
      const summary = yield* Fiber.join(startup)
      assert.strictEqual(summary.quarantined, 1, "gone's absence is not confirmed by one listing")
      // At t = 15 s a listing confirms it: missing since t = 0, not t = 10 s.
      yield* TestClock.adjust("5 seconds")
      const judgement = yield* verifyQuarantinedClaims
      assert.strictEqual(yield* listingsSent, 2)
      assert.deepStrictEqual(judgement.lost.map((d) => d.key), [keyOf("gone")])
    }).pipe(Effect.provide(world({ seed, sim: { revision: { byIdRead: false } } }), { local: true })))
})

describe("verification loop (VER-6)", () => {
  it.effect("retries every interval while listing fails; stops for good once a pass succeeds with nothing quarantined", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      yield* sim.injectFault("list", SimFault.status(500, "down"))
      yield* startClaims
      const lifted = yield* subscribeLifted
      // The loop's Clock notes each 15 s sleep it begins: the receipt that a pass has ended.
      const sleeps = yield* sleepReceipts
      const loop = yield* Effect.forkChild(runClaimVerification.pipe(Effect.provideService(Clock.Clock, sleeps.clock)))
      const listings = Effect.map(sim.audit, (audit) => audit.filter((entry) => entry.route === "list").length)
      const atStart = yield* listings
      yield* TestClock.adjust("14 seconds")
      assert.strictEqual(yield* listings, atStart, "the first pass is one interval after start")
      yield* TestClock.adjust("1 second")
      yield* eventually(Effect.map(listings, (n) => n === atStart + 1))
      // The next pass comes about one interval later, not sooner.
      const before = yield* Clock.currentTimeMillis
      yield* advanceUntil(Effect.map(listings, (n) => n === atStart + 2))
      assert.strictEqual((yield* Clock.currentTimeMillis) - before, 15_000, "one interval, not two")
      yield* sleeps.asleep("15 seconds", 3) // the second pass has ended, and the loop waits again
      assert.isUndefined(loop.pollUnsafe(), "still running while rows are quarantined")
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Quarantined", [keyOf("gone")]: "Quarantined" })
      yield* sim.clearFaults
      yield* advanceUntil(Effect.sync(() => loop.pollUnsafe() !== undefined))
      yield* Fiber.join(loop)
      assert.deepStrictEqual(yield* states, { [keyOf("alive")]: "Durable", [keyOf("gone")]: "Lost" })
      // A row turned Lost by a later pass, with no Pod tracked for it: its key is queued for the run
      // that ends the row (VER-7). Without it nothing would: the first sync's look at the Lost rows
      // is long over, and the resync walks only the cached Pods.
      assert.deepStrictEqual(Array.from(yield* PubSub.takeAll(lifted)), [[keyOf("alive")], [keyOf("gone")]])
      // The loop has returned (joined above), so its last sleep was the last one it began.
      const settled = yield* listings
      const slept = sleeps.sleeps("15 seconds")
      yield* TestClock.adjust("5 minutes")
      assert.strictEqual(sleeps.sleeps("15 seconds"), slept, "no wait begun once settled")
      assert.strictEqual(yield* listings, settled, "no more passes once settled")
    }).pipe(Effect.provide(world({ seed }), { local: true })))

  it.effect("with nothing quarantined the loop stops at its first tick without listing", () =>
    Effect.gen(function*() {
      yield* startClaims
      const loop = yield* Effect.forkChild(runClaimVerification)
      yield* TestClock.adjust("15 seconds")
      yield* Fiber.join(loop)
      const listings = (yield* (yield* SandboxdSim).audit).filter((entry) => entry.route === "list")
      assert.strictEqual(listings.length, 0)
    }).pipe(Effect.provide(world(), { local: true })))
})
