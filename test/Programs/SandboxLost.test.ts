/**
 * Absence is confirmed before anything is dropped, over the wire (the sandboxd simulator on
 * loopback HTTP) on TestClock: a listing that omits a live claim changes nothing; a sandbox
 * sandboxd confirms gone (by-id 404, or two listings one verify interval apart where there is no
 * by-id read) ends its Pod Failed/SandboxLost, and that Pod generation is never claimed for again.
 */
import { podKeyOf } from "../../src/Schemas/Ids.ts"
import { assert, describe, it } from "@effect/vitest"
import { isRetryable } from "../../src/Services/ProviderErrors.ts"
import { DateTime, type Duration, Effect, Metric, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"
import type { V1Pod } from "@kubernetes/client-node"
import { publishExpiredLeases } from "../../src/Programs/LeaseWatcher.ts"
import { startClaims } from "../../src/Programs/Provider/Startup.ts"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import type { PodKey } from "../../src/Schemas/Ids.ts"
import { leaseExpiries, sandboxesLost } from "../../src/Services/Metrics.ts"
import { PodLifecycle } from "../../src/Services/PodLifecycle.ts"
import type { SandboxdClient } from "../../src/Services/SandboxdClient.ts"
import { SandboxdSim } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { claimCount, drain, keyOf, pod, record, releasePaths, rowState, subscribePushes, Template, world } from "./Provider/harness.ts"
import { ClaimsStoreMemoryControl } from "../../testkit/Layers/ClaimsStoreMemory.ts"
import { makeLogCapture } from "../support/Logs.ts"


/** A previous run left the live claim of default/web on disk, held by Pod generation "old-uid". */
const seedLive = (client: SandboxdClient["Service"]) =>
  Effect.gen(function*() {
    const live = yield* client.claim({ template: Template, net: "", size: "", ttlSeconds: 3600, claimRef: "default/web" })
    return new Map<PodKey, ClaimRecord>([[keyOf("web"), { ...record(live.id), token: live.token }]])
  })
const seedDead = () =>
  Effect.succeed(new Map<PodKey, ClaimRecord>([[keyOf("web"), record("sb_00000000000dead0")]]))

/** "web" claimed from a sandboxd without a by-id read (absence is judged from listings alone); its sandbox. */
const claimedWithoutByIdRead = Effect.gen(function*() {
  const sim = yield* SandboxdSim
  yield* sim.setRevision({ byIdRead: false })
  yield* (yield* PodLifecycle).createPod(pod("web"))
  const [vm] = yield* sim.claims
  return vm
})

/** The Pod as the previous run left it: Running on claim `id`, generation "old-uid". */
const runningPod = (id: string): V1Pod => {
  const p = pod("web", { uid: "old-uid", annotations: { "sandbox.cocoonstack.io/claim-id": id } })
  return { ...p, status: { phase: "Running" } }
}

describe("a listing that omits a live claim", () => {
  it.effect("without a by-id read: the row is kept through the omission, the Pod stays on its VM, no new claim", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      const [live] = yield* sim.claims
      yield* sim.omitFromListings(live.id, 2)
      const summary = yield* startClaims
      assert.strictEqual(summary.quarantined, 1, "not dropped on one listing")
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Quarantined"))
      const provider = yield* PodLifecycle
      // The Pod's create re-verifies; the listing misses the claim again: still nothing claimed over it.
      const refused = yield* Effect.flip(provider.createPod(runningPod(live.id)))
      assert.strictEqual(refused._tag, "ClaimUnverifiable")
      const adopted = yield* provider.createPod(runningPod(live.id))
      assert.deepStrictEqual(adopted, { _tag: "Adopted", claimId: live.id })
      assert.strictEqual(yield* claimCount, 1, "only the seed's claim")
      assert.deepStrictEqual((yield* sim.claims).map((c) => c.id), [live.id])
    }).pipe(Effect.provide(world({ seed: seedLive, sim: { revision: { byIdRead: false } } }), { local: true })))

  it.effect("with the by-id read: the omission is overruled at once, the row lifted", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      const [live] = yield* sim.claims
      yield* sim.omitFromListings(live.id, 1)
      const summary = yield* startClaims
      assert.strictEqual(summary.quarantined, 0)
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Durable"))
      const byId = (yield* sim.audit).filter((e) => e.route === "get").map((e) => e.path)
      assert.deepStrictEqual(byId, [`/v1/sandboxes/${live.id}`])
    }).pipe(Effect.provide(world({ seed: seedLive }), { local: true })))
})

describe("a sandbox confirmed gone", () => {
  it.effect("a Running Pod goes Failed/SandboxLost naming the id; the row is kept Lost; never claimed again under its UID", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      const provider = yield* PodLifecycle
      yield* provider.createPod(pod("web"))
      const [vm] = yield* sim.claims
      const pushes = yield* subscribePushes
      yield* sim.forget(vm.id)
      const outcome = yield* publishExpiredLeases
      assert.deepStrictEqual(outcome.lost, [keyOf("web")])
      const [failed] = yield* drain(pushes)
      assert.strictEqual(failed?.status?.phase, "Failed")
      assert.strictEqual(failed?.status?.reason, "SandboxLost")
      assert.include(failed?.status?.message ?? "", vm.id)
      assert.deepStrictEqual(failed?.status?.containerStatuses?.map((c) => c.state?.terminated?.reason), [
        "SandboxLost",
        "SandboxLost"
      ])
      // VER-7 — a lost sandbox's row outlives restarts until its Pod is settled: kept, and written,
      // until the Pod is terminal or gone; never adopted.
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Lost"))
      const again = yield* Effect.flip(provider.createPod(pod("web")))
      assert.strictEqual(again._tag, "SandboxLost")
      assert.isFalse(isRetryable(again))
      assert.strictEqual(yield* claimCount, 1, "not silently re-claimed")
      // A new generation of the same name is a new Pod: it gets a fresh sandbox.
      const fresh = yield* provider.createPod(pod("web", { uid: "uid-web-2" }))
      assert.strictEqual(fresh._tag, "Claimed")
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Durable"), "the lost row gave way to the new claim")
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("without a by-id read: absence needs two listings at least one verify interval apart", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      const vm = yield* claimedWithoutByIdRead
      yield* sim.forget(vm.id)
      assert.deepStrictEqual((yield* publishExpiredLeases).lost, [])
      yield* TestClock.adjust("14 seconds")
      assert.deepStrictEqual((yield* publishExpiredLeases).lost, [], "14 s < the 15 s verify interval")
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Durable"))
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual((yield* publishExpiredLeases).lost, [keyOf("web")])
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("a listing that misses a live claim for a while is not a loss when it shows it again", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      const vm = yield* claimedWithoutByIdRead
      yield* sim.omitFromListings(vm.id, 1)
      assert.deepStrictEqual((yield* publishExpiredLeases).lost, [])
      yield* TestClock.adjust("10 seconds")
      assert.deepStrictEqual((yield* publishExpiredLeases).lost, [])
      yield* sim.omitFromListings(vm.id, 1)
      yield* TestClock.adjust("10 seconds")
      // Missing now and 20 s ago, but listed in between: the clock started again.
      assert.deepStrictEqual((yield* publishExpiredLeases).lost, [])
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Durable"))
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("after a restart: the Running Pod whose claim is confirmed gone is ended, not given a new claim", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const pushes = yield* subscribePushes
      const summary = yield* startClaims.pipe(Effect.provide(logs.layer))
      assert.strictEqual(summary.quarantined, 0)
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Lost"))
      // No Pod is tracked while the claims load: the log says what was done, not a Pod declared.
      assert.deepStrictEqual(
        logs.lines.filter((line) => line.message.startsWith("sandbox confirmed gone")).map((line) => line.message),
        ["sandbox confirmed gone; its row is kept Lost until its pod is settled"]
      )
      const provider = yield* PodLifecycle
      const error = yield* Effect.flip(provider.createPod(runningPod("sb_00000000000dead0")))
      assert.strictEqual(error._tag, "SandboxLost")
      assert.strictEqual(yield* claimCount, 0)
      const [failed] = yield* drain(pushes)
      assert.strictEqual(failed?.status?.reason, "SandboxLost")
      assert.include(failed?.status?.message ?? "", "sb_00000000000dead0")
      assert.isUndefined(failed?.status?.podIP)
      assert.notInclude(JSON.stringify(failed), Redacted.value(record("x").token).slice(0, 4))
    }).pipe(Effect.provide(world({ seed: seedDead }), { local: true })))
})

describe("a row whose lease ran out while the daemon was down (LEASE-10)", () => {
  /** The row of "web" with a deadline an hour after the TestClock's start; its VM is gone. */
  const deadline = DateTime.makeUnsafe(3_600_000)
  const seedDeadline = () => Effect.succeed(new Map<PodKey, ClaimRecord>([[keyOf("web"), record("sb_00000000000dead0", { deadline })]]))

  /** The restart at `elapsed` after the clock's start: the Pod's create, and what was pushed for it. */
  const restartAt = (elapsed: Duration.Input) =>
    Effect.gen(function*() {
      yield* TestClock.adjust(elapsed)
      const pushes = yield* subscribePushes
      yield* startClaims
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Lost"))
      const provider = yield* PodLifecycle
      const error = yield* Effect.flip(provider.createPod(runningPod("sb_00000000000dead0")))
      assert.strictEqual(error._tag, "SandboxLost", "never given another VM")
      assert.strictEqual(yield* claimCount, 0)
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Lost"), "the row stays Lost (VER-7)")
      const [pushed] = yield* drain(pushes)
      // The status read (UPD-4 — GetPodStatus) of the Pod once tracked says what the push said.
      yield* provider.updatePod(runningPod("sb_00000000000dead0"))
      const reported = yield* provider.getPodStatus(podKeyOf("default", "web"))
      return { error, pushed, reported }
    })

  for (const [when, elapsed] of [["at its deadline", "1 hour"], ["past its deadline", "3 hours"]] as const) {
    it.effect(`restarted ${when}: the Pod ends Failed/SandboxLeaseExpired naming the deadline, not SandboxLost`, () =>
      Effect.gen(function*() {
        const { error, pushed, reported } = yield* restartAt(elapsed)
        assert.strictEqual(error._tag === "SandboxLost" ? error.podReason : "", "SandboxLeaseExpired")
        assert.strictEqual(pushed?.status?.phase, "Failed")
        assert.strictEqual(pushed?.status?.reason, "SandboxLeaseExpired")
        assert.include(pushed?.status?.message ?? "", "1970-01-01T01:00:00Z")
        assert.strictEqual(pushed?.status?.containerStatuses?.[0]?.state?.terminated?.reason, "SandboxLeaseExpired")
        assert.strictEqual(error.message, pushed?.status?.message, "the create's failure says the same")
        assert.strictEqual(Option.getOrUndefined(reported)?.reason, "SandboxLeaseExpired", "the status read agrees")
      }).pipe(Effect.provide(world({ seed: seedDeadline }), { local: true })))
  }

  it.effect("restarted before its deadline: the VM went early, the Pod ends Failed/SandboxLost as before", () =>
    Effect.gen(function*() {
      const { error, pushed, reported } = yield* restartAt("59 minutes")
      assert.strictEqual(error._tag === "SandboxLost" ? error.podReason : "", "SandboxLost")
      assert.strictEqual(pushed?.status?.phase, "Failed")
      assert.strictEqual(pushed?.status?.reason, "SandboxLost")
      assert.include(pushed?.status?.message ?? "", "sb_00000000000dead0")
      assert.strictEqual(error.message, pushed?.status?.message, "the create's failure says the same (the status a Pod not Running gets)")
      assert.strictEqual(Option.getOrUndefined(reported)?.reason, "SandboxLost")
    }).pipe(Effect.provide(world({ seed: seedDeadline }), { local: true })))

  /** How many Pods each counter says were ended SandboxLeaseExpired and SandboxLost. */
  const endedCounts = Effect.all({
    leaseExpired: Effect.map(Metric.value(leaseExpiries), (state) => state.count),
    lost: Effect.map(Metric.value(sandboxesLost), (state) => state.count)
  })
  const countedSince = (before: { leaseExpired: number; lost: number }) =>
    Effect.map(endedCounts, (now) => ({ leaseExpired: now.leaseExpired - before.leaseExpired, lost: now.lost - before.lost }))
  /** The Pod "web" of the row's generation whose Running status never landed. */
  const pendingPod: V1Pod = { ...runningPod("sb_00000000000dead0"), status: { phase: "Pending" } }

  for (const [when, elapsed, counted] of [["past", "3 hours", { leaseExpired: 1, lost: 0 }], ["before", "59 minutes", { leaseExpired: 0, lost: 1 }]] as const) {
    it.effect(`restarted ${when} its deadline: the counter of the Pod's reason counts it once it is ended, Running or not, and no Pod gone`, () =>
      Effect.gen(function*() {
        yield* TestClock.adjust(elapsed)
        const before = yield* endedCounts
        yield* startClaims
        assert.deepStrictEqual(yield* countedSince(before), { leaseExpired: 0, lost: 0 }, "no Pod ended yet: none may exist")
        const error = yield* Effect.flip((yield* PodLifecycle).createPod(pendingPod))
        assert.strictEqual(error._tag, "SandboxLost")
        assert.deepStrictEqual(yield* countedSince(before), counted)
      }).pipe(Effect.provide(world({ seed: seedDeadline }), { local: true })))
  }

  it.effect("found gone before its deadline, its status not landed when the deadline passes: still SandboxLost, the reason is decided once", () =>
    Effect.gen(function*() {
      const first = yield* restartAt("59 minutes")
      assert.strictEqual(first.pushed?.status?.reason, "SandboxLost")
      // The status write did not land (the Pod still shows Running); the deadline passes, the
      // resync runs the create again: the VM went before its lease ended, and that stays true.
      yield* TestClock.adjust("2 minutes")
      const pushes = yield* subscribePushes
      const provider = yield* PodLifecycle
      const again = yield* Effect.flip(provider.createPod(runningPod("sb_00000000000dead0")))
      assert.strictEqual(again._tag === "SandboxLost" ? again.podReason : "", "SandboxLost")
      const [pushed] = yield* drain(pushes)
      assert.strictEqual(pushed?.status?.reason, "SandboxLost")
      assert.strictEqual(pushed?.status?.message, first.pushed?.status?.message, "the same status as the first push")
      const reported = yield* provider.getPodStatus(podKeyOf("default", "web"))
      assert.strictEqual(Option.getOrUndefined(reported)?.reason, "SandboxLost", "the status read agrees")
    }).pipe(Effect.provide(world({ seed: seedDeadline }), { local: true })))
})

describe("a Lost row's life (VER-7)", () => {
  const onDisk = ClaimsStoreMemoryControl.use((control) => Effect.map(control.disk, (disk) => Array.from(disk.keys())))

  /** After a restart whose pass found the row's VM gone: the row Lost, on disk as it was. */
  const lostAtStart = Effect.gen(function*() {
    yield* startClaims
    assert.deepStrictEqual(yield* rowState("web"), Option.some("Lost"))
    assert.deepStrictEqual(yield* onDisk, [keyOf("web")], "written as it was: the next start finds it gone again")
  })

  it.effect("kept while its Pod runs on; dropped (and written out) once the Pod is terminal, not for another generation", () =>
    Effect.gen(function*() {
      yield* lostAtStart
      const provider = yield* PodLifecycle
      yield* provider.settleTerminal({ ...runningPod("sb_00000000000dead0"), metadata: { namespace: "default", name: "web", uid: "other-uid" } })
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Lost"), "another generation's end settles nothing")
      const failed = runningPod("sb_00000000000dead0")
      yield* provider.settleTerminal({ ...failed, status: { phase: "Failed", reason: "SandboxLost" } })
      assert.isTrue(Option.isNone(yield* rowState("web")))
      assert.deepStrictEqual(yield* onDisk, [])
      assert.deepStrictEqual(yield* releasePaths, [], "nothing released: the VM is gone")
    }).pipe(Effect.provide(world({ seed: seedDead }), { local: true })))

  it.effect("PER-7: a drop whose write fails is logged with the error itself, and the next write carries it", () =>
    Effect.gen(function*() {
      yield* lostAtStart
      const logs = makeLogCapture()
      yield* (yield* ClaimsStoreMemoryControl).failNext(1)
      const failed = runningPod("sb_00000000000dead0")
      yield* (yield* PodLifecycle).settleTerminal({ ...failed, status: { phase: "Failed", reason: "SandboxLost" } }).pipe(Effect.provide(logs.layer))
      const [line] = logs.lines.filter((l) => l.message === "persist claims state")
      assert.strictEqual((line?.annotations["error"] as { readonly _tag?: unknown } | undefined)?._tag, "ClaimsWriteError")
      assert.deepStrictEqual(yield* onDisk, [keyOf("web")], "the failed write left the file as it was")
      yield* (yield* PodLifecycle).createPod(pod("api"))
      assert.deepStrictEqual(yield* onDisk, [keyOf("api")])
    }).pipe(Effect.provide(world({ seed: seedDead }), { local: true })))

  it.effect("dropped when its Pod is deleted (no owner asked, nothing released) or gone from the apiserver", () =>
    Effect.gen(function*() {
      yield* lostAtStart
      const provider = yield* PodLifecycle
      const outcome = yield* provider.deletePod(runningPod("sb_00000000000dead0"))
      assert.deepStrictEqual(outcome, { _tag: "LostDropped" })
      assert.deepStrictEqual(yield* onDisk, [])
      assert.deepStrictEqual(yield* releasePaths, [])
    }).pipe(Effect.provide(world({ seed: seedDead }), { local: true })))

  it.effect("a Pod gone from the apiserver: its key's settle run drops the row", () =>
    Effect.gen(function*() {
      yield* lostAtStart
      const provider = yield* PodLifecycle
      assert.deepStrictEqual(yield* provider.lostKeys, [keyOf("web")])
      assert.strictEqual(yield* provider.settleGone(keyOf("web")), "LostDropped")
      assert.deepStrictEqual(yield* onDisk, [])
      assert.deepStrictEqual(yield* provider.lostKeys, [])
    }).pipe(Effect.provide(world({ seed: seedDead }), { local: true })))

  it.effect("a quarantined row found gone by the create's own pass: that create is refused, not given a fresh claim", () =>
    Effect.gen(function*() {
      // No by-id read: the startup listing alone cannot confirm the absence, the row stays quarantined.
      const summary = yield* startClaims
      assert.strictEqual(summary.quarantined, 1)
      yield* TestClock.adjust("15 seconds")
      const refused = yield* Effect.flip((yield* PodLifecycle).createPod(runningPod("sb_00000000000dead0")))
      assert.strictEqual(refused._tag, "SandboxLost")
      assert.strictEqual(yield* claimCount, 0)
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Lost"))
    }).pipe(Effect.provide(world({ seed: seedDead, sim: { revision: { byIdRead: false } } }), { local: true })))
})
