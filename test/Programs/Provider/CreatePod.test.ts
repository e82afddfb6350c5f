import { assert, describe, it } from "@effect/vitest"
import { podKeyOf } from "../../../src/Schemas/Ids.ts"
import { isRetryable } from "../../../src/Services/ProviderErrors.ts"
import { Clock, DateTime, Duration, Effect, Fiber, Option, Redacted, References } from "effect"
import { TestClock } from "effect/testing"
import { createPod } from "../../../src/Programs/Provider/CreatePod.ts"
import { startClaims } from "../../../src/Programs/Provider/Startup.ts"
import type { ClaimRecord } from "../../../src/Schemas/Claims.ts"
import type { ClaimId, PodKey } from "../../../src/Schemas/Ids.ts"
import { ClaimsStore } from "../../../src/Services/ClaimsStore.ts"
import type { SandboxdClient } from "../../../src/Services/SandboxdClient.ts"
import { makeLogCapture } from "../../support/Logs.ts"
import { SimFault } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import {
  advanceUntil,
  claimBodies,
  drain,
  eventually,
  failsWith,
  forgetPod,
  inWorld,
  keyOf,
  pod,
  record,
  releasePaths,
  rowState,
  simClaimIds,
  subscribePushes,
  Template
} from "./harness.ts"

const notPersisted = failsWith("ClaimNotPersisted")

/** A "previous run" left one claim on disk, for Pod default/web with the UID `pod("web")` has. */
const seedWeb = (client: SandboxdClient["Service"]) =>
  Effect.map(
    client.claim({ template: Template, net: "", size: "", ttlSeconds: 3600, claimRef: "default/web" }),
    (claimed) =>
      new Map<PodKey, ClaimRecord>([[keyOf("web"), {
        ...record(claimed.id, { claimedAt: DateTime.makeUnsafe(0), address: claimed.ownerAddr }),
        token: claimed.token,
        podUID: "uid-web"
      }]])
  )

describe("CreatePod", () => {
  it.effect("fresh claim: claim_ref = pod key, TTL 86400 by default, row durable on disk, Running pushed with the claim-id", () =>
    inWorld(({ control, provider }) => Effect.gen(function*() {
      const pushes = yield* subscribePushes
      const outcome = yield* provider.createPod(pod("web"))
      const [body] = yield* claimBodies
      assert.deepStrictEqual(body, { template: Template, ttl_seconds: 86400, claim_ref: "default/web" })
      const disk = yield* control.disk
      const onDisk = disk.get(keyOf("web"))
      assert.isDefined(onDisk)
      const [id] = yield* simClaimIds
      assert.strictEqual(onDisk!.id, id)
      assert.deepStrictEqual(outcome, { _tag: "Claimed", claimId: onDisk!.id })
      assert.strictEqual(onDisk!.podUID, "uid-web")
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Durable"))
      const [pushed, ...more] = yield* drain(pushes)
      assert.strictEqual(more.length, 0)
      assert.strictEqual(pushed.metadata?.annotations?.["sandbox.cocoonstack.io/claim-id"], id)
      assert.strictEqual(pushed.status?.phase, "Running")
      assert.deepStrictEqual(pushed.status?.conditions?.map((c) => `${c.type}=${c.status}`), [
        "Initialized=True",
        "Ready=True",
        "PodScheduled=True"
      ])
      assert.deepStrictEqual(pushed.status?.containerStatuses?.map((c) => [c.name, c.image, c.imageID, c.ready]), [
        ["main", "python:3.12", `sandboxd://${id}`, true],
        ["sidecar", "busybox", `sandboxd://${id}`, true]
      ])
      // The simulator advertises its loopback address as owner_addr: an IP literal.
      assert.strictEqual(pushed.status?.podIP, "127.0.0.1")
      assert.deepStrictEqual(pushed.status?.podIPs, [{ ip: "127.0.0.1" }])
      assert.strictEqual(pushed.status?.hostIP, "127.0.0.1")
      assert.deepStrictEqual(pushed.status?.startTime, DateTime.toDateUtc(Option.getOrThrow(onDisk!.claimedAt)))
      // The token never leaves through the pushed Pod.
      assert.notInclude(JSON.stringify(pushed), Redacted.value(onDisk!.token))
    })))

  it.effect("durability ordering: nothing is pushed and status stays Pending until the commit lands (CRT-14)", () =>
    inWorld(({ control, provider }) => Effect.gen(function*() {
      const pushes = yield* subscribePushes
      yield* control.pause
      const create = yield* Effect.forkChild(provider.createPod(pod("web")))
      yield* eventually(Effect.map(rowState("web"), (state) => Option.getOrUndefined(state) === "Tentative"))
      assert.deepStrictEqual(yield* drain(pushes), [])
      const status = yield* provider.getPodStatus(podKeyOf("default", "web"))
      assert.strictEqual(Option.getOrThrow(status).phase, "Pending")
      assert.strictEqual(Option.getOrThrow(status).message, "waiting", "the Pod's own status is kept")
      assert.strictEqual((yield* control.disk).size, 0)
      yield* control.resume
      yield* Fiber.join(create)
      assert.strictEqual((yield* control.disk).size, 1)
      const pushed = yield* drain(pushes)
      assert.strictEqual(pushed.length, 1)
      assert.strictEqual(Option.getOrThrow(yield* provider.getPodStatus(podKeyOf("default", "web"))).phase, "Running")
    })))

  it.effect("a failed commit returns the sandbox, withdraws the row and the Pod, pushes nothing (CRT-15)", () =>
    inWorld(({ control, provider }) => Effect.gen(function*() {
      const pushes = yield* subscribePushes
      yield* control.failNext(1, "rename")
      const error = yield* notPersisted(provider.createPod(pod("web")))
      assert.isTrue(isRetryable(error))
      assert.strictEqual(error.cause.operation, "rename")
      assert.isUndefined(error.releaseError)
      assert.deepStrictEqual(yield* simClaimIds, [], "sandboxd got the VM back")
      assert.deepStrictEqual(yield* releasePaths, [`/v1/sandboxes/${error.claimId}/release`])
      assert.deepStrictEqual(yield* rowState("web"), Option.none())
      assert.isTrue(Option.isNone(yield* provider.getPod(podKeyOf("default", "web"))))
      assert.deepStrictEqual(yield* drain(pushes), [])
      // A retry claims afresh.
      yield* provider.createPod(pod("web"))
      assert.strictEqual((yield* drain(pushes)).length, 1)
    })))

  it.effect("a commit cut short (the store closing at shutdown) is undone like a failed write: VM returned, nothing kept or pushed", () =>
    inWorld(() => Effect.gen(function*() {
      const store = yield* ClaimsStore
      const pushes = yield* subscribePushes
      // What a closing store does to a commit still queued: it interrupts it (no write carries it).
      const closing = ClaimsStore.of({ ...store, commit: (key) => Option.isSome(key) ? Effect.interrupt : store.commit(key) })
      const error = yield* notPersisted(createPod(pod("web")).pipe(Effect.provideService(ClaimsStore, closing)))
      assert.strictEqual(error.cause.operation, "commit")
      assert.isUndefined(error.releaseError)
      assert.deepStrictEqual(yield* simClaimIds, [], "sandboxd got the VM back")
      assert.deepStrictEqual(yield* releasePaths, [`/v1/sandboxes/${error.claimId}/release`])
      assert.deepStrictEqual(yield* rowState("web"), Option.none())
      assert.deepStrictEqual(yield* drain(pushes), [])
    })))

  it.effect("commit and release both fail: both errors, the credential kept tentative; the next create returns it first (CRT-15, CRT-9)", () =>
    inWorld(({ control, provider, sim, table }) => Effect.gen(function*() {
      const pushes = yield* subscribePushes
      yield* control.failNext(1)
      yield* sim.injectFault("release", SimFault.status(500, "boom"))
      const error = yield* notPersisted(provider.createPod(pod("web")))
      assert.strictEqual(error.releaseError?._tag, "SandboxdHttpError")
      const stranded = error.claimId
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Tentative"))
      assert.isTrue(Option.isSome(yield* provider.getPod(podKeyOf("default", "web"))), "pods[key] stays (CRT-16)")
      assert.strictEqual(Option.getOrThrow(yield* provider.getPodStatus(podKeyOf("default", "web"))).phase, "Pending")
      // The stranded row is in no write but its own commit.
      yield* control.failNext(0)
      // Still unreturnable: nothing new is claimed and the row is kept.
      const blocked = yield* Effect.flip(provider.createPod(pod("web")))
      assert.strictEqual(blocked._tag, "StrandedClaimNotReturned")
      assert.isTrue(isRetryable(blocked))
      assert.strictEqual((yield* claimBodies).length, 1)
      assert.strictEqual(Option.getOrThrow(yield* table.held(keyOf("web"))).record.id, stranded)
      // sandboxd recovers: the stranded VM is returned, then a fresh claim made.
      yield* sim.clearFaults
      yield* provider.createPod(pod("web"))
      const releases = yield* releasePaths
      assert.strictEqual(releases.at(-1), `/v1/sandboxes/${stranded}/release`)
      assert.strictEqual((yield* claimBodies).length, 2)
      const row = Option.getOrThrow(yield* table.held(keyOf("web")))
      assert.notStrictEqual(row.record.id, stranded)
      assert.strictEqual(row.state._tag, "Durable")
      assert.deepStrictEqual(yield* simClaimIds, [row.record.id])
      assert.strictEqual((yield* drain(pushes)).length, 1)
      for (const write of yield* control.writes) {
        const written = write.rows.get(keyOf("web"))
        if (written?.id === stranded) assert.isTrue(write.committing.has(keyOf("web")))
      }
    })))

  it.effect("a sandboxd that 404s the stranded release counts as returned (CRT-9)", () =>
    inWorld(({ control, provider, sim }) => Effect.gen(function*() {
      yield* control.failNext(1)
      yield* sim.injectFault("release", SimFault.status(500, "boom"), { times: 1 })
      const error = yield* notPersisted(provider.createPod(pod("web")))
      yield* sim.forget(error.claimId) // the VM vanished: its release now answers 404
      yield* provider.createPod(pod("web"))
      assert.strictEqual((yield* claimBodies).length, 2)
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Durable"))
    })))

  it.effect("group commit: N concurrent creates share writes; every caller resumes after its own row landed", () =>
    inWorld(({ control, provider }) => Effect.gen(function*() {
      const pushes = yield* subscribePushes
      const names = Array.from({ length: 8 }, (_, i) => `pod-${i}`)
      yield* control.pause
      const fibers = yield* Effect.forEach(names, (name) => Effect.forkChild(provider.createPod(pod(name))))
      yield* eventually(Effect.map(
        Effect.forEach(names, rowState),
        (states) => states.every((state) => Option.getOrUndefined(state) === "Tentative")
      ))
      yield* control.resume
      yield* Effect.forEach(fibers, Fiber.join)
      const disk = yield* control.disk
      assert.deepStrictEqual([...disk.keys()].sort(), names.map((name) => keyOf(name)).sort())
      const writes = yield* control.writes
      assert.isBelow(writes.length, names.length)
      assert.strictEqual((yield* drain(pushes)).length, names.length)
      // Tentative exclusion: a row appears in a write only once its own commit has been carried.
      const carried = new Set<string>()
      for (const write of writes) {
        for (const key of write.committing) carried.add(key)
        for (const key of write.rows.keys()) assert.isTrue(carried.has(key), `${key} written before its commit`)
      }
    })))

  it.effect("a tentative row stays out of another key's commit while its own write is pending", () =>
    inWorld(({ control, provider, sim }) => Effect.gen(function*() {
      yield* control.failNext(1)
      yield* sim.injectFault("release", SimFault.status(500, "boom"))
      yield* Effect.flip(provider.createPod(pod("stranded")))
      yield* provider.createPod(pod("other"))
      const last = (yield* control.writes).at(-1)!
      assert.isFalse(last.rows.has(keyOf("stranded")))
      assert.isTrue(last.rows.has(keyOf("other")))
    })))

  it.effect("pod-change errors: wrong runtime, bad TTL (checked before template), missing template; no claim made", () =>
    inWorld(({ provider }) => Effect.gen(function*() {
      const runtime = yield* Effect.flip(
        provider.createPod(pod("a", { annotations: { "sandbox.cocoonstack.io/runtime": "Sandboxd" } }))
      )
      assert.strictEqual(runtime._tag, "RuntimeMismatch")
      assert.isFalse(isRetryable(runtime))
      const ttlFirst = yield* Effect.flip(provider.createPod({
        ...pod("b", { annotations: { "sandbox.cocoonstack.io/ttl-seconds": "-5" } }),
        metadata: { namespace: "default", name: "b", annotations: { "sandbox.cocoonstack.io/ttl-seconds": "-5" } }
      }))
      assert.strictEqual(ttlFirst._tag, "InvalidTtl")
      const template = yield* Effect.flip(provider.createPod({
        ...pod("c"),
        metadata: { namespace: "default", name: "c", annotations: { "sandbox.cocoonstack.io/template": "" } }
      }))
      assert.strictEqual(template._tag, "MissingTemplate")
      assert.isFalse(isRetryable(template))
      assert.deepStrictEqual(yield* claimBodies, [])
      // An empty runtime annotation counts as absent (CRT-2 — empty means absent).
      yield* provider.createPod(pod("d", { annotations: { "sandbox.cocoonstack.io/runtime": "" } }))
    })))

  const ttlVectors: ReadonlyArray<readonly [string, number | undefined | "invalid"]> = [
    ["0", undefined],
    ["60", 60],
    ["+0012", 12],
    ["86400", 86400],
    ["100000", 100000],
    ["9223372036854775807", Number.MAX_SAFE_INTEGER],
    ["-1", "invalid"],
    ["-0", undefined],
    ["1.5", "invalid"],
    [" 5", "invalid"],
    ["5 ", "invalid"],
    ["0x10", "invalid"],
    ["1_000", "invalid"],
    ["9223372036854775808", "invalid"],
    ["abc", "invalid"]
  ]
  // The largest int64 is valid; it is sent as the largest exact JSON integer (sandboxd clamps to 24 h).
  it.effect("TTL vectors (CRT-6): what reaches sandboxd's ttl_seconds", () =>
    inWorld(({ provider }) => Effect.gen(function*() {
      let index = 0
      for (const [value, expected] of ttlVectors) {
        index++
        const before = (yield* claimBodies).length
        const result = yield* Effect.result(
          provider.createPod(pod(`ttl-${index}`, { annotations: { "sandbox.cocoonstack.io/ttl-seconds": value } }))
        )
        const bodies = yield* claimBodies
        if (expected === "invalid") {
          assert.strictEqual(result._tag, "Failure", value)
          assert.strictEqual(bodies.length, before, value)
        } else {
          assert.strictEqual(result._tag, "Success", value)
          assert.strictEqual(bodies.at(-1)?.ttl_seconds, expected, value)
        }
      }
    }), { sim: { pools: [{ template: Template, net: "none", size: "small", target: 32 }] } }))

  it.effect("sandboxd without capacity: ClaimFailed keeps NoWarmCapacity reachable, retryable, no state change", () =>
    inWorld(({ provider, sim }) => Effect.gen(function*() {
      yield* sim.setDraining(true)
      const error = yield* failsWith("ClaimFailed")(provider.createPod(pod("web")))
      assert.strictEqual(error.cause._tag, "NoWarmCapacity")
      assert.isTrue(isRetryable(error))
      assert.isTrue(Option.isNone(yield* provider.getPod(podKeyOf("default", "web"))))
      assert.deepStrictEqual(yield* rowState("web"), Option.none())
    })))

  it.effect("adoption in place: same claim id and start time, new pod UID, no new claim (CRT-4, CRT-5)", () =>
    inWorld(({ control, provider }) => Effect.gen(function*() {
      const pushes = yield* subscribePushes
      yield* provider.createPod(pod("web", { uid: "uid-1" }))
      const [first] = yield* drain(pushes)
      // The old Pod is gone (a preserved delete), the claim stays.
      yield* forgetPod("web")
      // Template and TTL are not validated on this path.
      const outcome = yield* provider.createPod(
        pod("web", { uid: "uid-2", annotations: { "sandbox.cocoonstack.io/ttl-seconds": "bad" } })
      )
      const [second] = yield* drain(pushes)
      assert.strictEqual((yield* claimBodies).length, 1)
      const id = first.metadata?.annotations?.["sandbox.cocoonstack.io/claim-id"]
      assert.strictEqual(second.metadata?.annotations?.["sandbox.cocoonstack.io/claim-id"], id)
      assert.deepStrictEqual(outcome, { _tag: "Adopted", claimId: id })
      assert.strictEqual(second.metadata?.uid, "uid-2")
      assert.deepStrictEqual(second.status?.startTime, first.status?.startTime)
      assert.strictEqual((yield* control.disk).get(keyOf("web"))?.podUID, "uid-2", "the rebind was saved")
    })))

  it.effect("a failed save after an adoption is logged at ERROR and nothing else: Adopted, Running, the rebind kept for the next write (PER-7)", () =>
    inWorld(({ control, provider }) => Effect.gen(function*() {
      const logs = makeLogCapture()
      const pushes = yield* subscribePushes
      yield* provider.createPod(pod("web", { uid: "uid-1" }))
      yield* drain(pushes)
      yield* forgetPod("web")
      // The adoption's write fails: there is nothing to undo (the VM is the same, the row was
      // Durable), so the create goes on and the failure is an operator's ERROR line.
      yield* control.failNext(1)
      const outcome = yield* provider.createPod(pod("web", { uid: "uid-2" })).pipe(Effect.provide(logs.layer))
      assert.strictEqual(outcome._tag, "Adopted")
      const [pushed] = yield* drain(pushes)
      assert.strictEqual(pushed.status?.phase, "Running")
      const failed = logs.lines.filter((line) => line.message === "persist claims state")
      assert.deepStrictEqual(failed.map((line) => [line.level, (line.annotations["error"] as { readonly _tag?: unknown })._tag]), [["Error", "ClaimsWriteError"]])
      assert.strictEqual((yield* control.disk).get(keyOf("web"))?.podUID, "uid-1", "the file still names the old Pod")
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Durable"))
      // The next write (another Pod's claim) carries the rebind.
      yield* provider.createPod(pod("api"))
      assert.strictEqual((yield* control.disk).get(keyOf("web"))?.podUID, "uid-2")
    })))

  it.effect("a restart: the same Pod re-attached writes nothing and says so; a replacement Pod writes its UID and says so (PER-7)", () =>
    inWorld(({ control, provider, sim }) => Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* startClaims
      const writes = yield* control.writeCount
      const pushes = yield* subscribePushes
      // The Pod whose row was loaded, with the same UID: re-attached, nothing written.
      const outcome = yield* provider.createPod(pod("web")).pipe(
        Effect.provide(logs.layer),
        Effect.provideService(References.MinimumLogLevel, "Debug")
      )
      const [claim] = yield* sim.claims
      assert.deepStrictEqual(outcome, { _tag: "Adopted", claimId: claim.id })
      assert.strictEqual(yield* control.writeCount, writes, "no write for a row nothing changed")
      const [pushed] = yield* drain(pushes)
      assert.strictEqual(pushed.status?.phase, "Running")
      assert.deepStrictEqual(logs.lines.map((line) => line.message), ["re-attached pod to the sandbox it holds (same pod UID)"])
      // A replacement Pod (another UID) takes the claim over: its UID is written.
      logs.lines.length = 0
      yield* provider.createPod(pod("web", { uid: "uid-web-2" })).pipe(Effect.provide(logs.layer))
      assert.strictEqual(yield* control.writeCount, writes + 1)
      assert.strictEqual((yield* control.disk).get(keyOf("web"))?.podUID, "uid-web-2")
      assert.deepStrictEqual(logs.lines.map((line) => [line.message, line.annotations["previousPodUid"]]), [
        ["adopted preserved sandbox for replacement pod", "uid-web"]
      ])
    }), { seed: seedWeb }))

  it.effect("the same Pod re-attached after this create refreshed its expired deadline: the refresh is written", () =>
    inWorld(({ control, provider, sim, table }) => Effect.gen(function*() {
      yield* startClaims
      const [claim] = yield* sim.claims
      // The cached deadline has passed: step 3 lists and takes sandboxd's deadline.
      yield* table.refreshDeadline(keyOf("web"), claim.id as ClaimId, Option.some(DateTime.makeUnsafe(0)))
      const writes = yield* control.writeCount
      yield* provider.createPod(pod("web"))
      assert.strictEqual(yield* control.writeCount, writes + 1)
      const onDisk = (yield* control.disk).get(keyOf("web"))
      assert.strictEqual(onDisk?.podUID, "uid-web")
      assert.strictEqual(DateTime.toEpochMillis(Option.getOrThrow(onDisk!.deadline)), new Date(claim.deadline).getTime())
    }), { seed: seedWeb }))

  it.effect("CreatePod applies no stale-UID guard: with the old generation still tracked, the new Pod adopts (ST-4)", () =>
    inWorld(({ provider }) => Effect.gen(function*() {
      const pushes = yield* subscribePushes
      const first = yield* provider.createPod(pod("web", { uid: "uid-1" }))
      yield* drain(pushes)
      // The delete of uid-1 and the create of uid-2 reached the controller as one change of the key.
      const second = yield* provider.createPod(pod("web", { uid: "uid-2" }))
      assert.deepStrictEqual(second, { _tag: "Adopted", claimId: first.claimId })
      assert.strictEqual((yield* claimBodies).length, 1)
      assert.strictEqual(Option.getOrThrow(yield* provider.getPod(podKeyOf("default", "web"))).metadata?.uid, "uid-2")
      const [pushed] = yield* drain(pushes)
      assert.strictEqual(pushed?.metadata?.uid, "uid-2")
      assert.strictEqual(pushed?.status?.phase, "Running")
    })))

  it.effect("the claim-to-push segment is not cut by interruption", () =>
    inWorld(({ control, provider }) => Effect.gen(function*() {
      const pushes = yield* subscribePushes
      yield* control.pause
      const create = yield* Effect.forkChild(provider.createPod(pod("web")))
      yield* eventually(Effect.map(rowState("web"), (state) => Option.isSome(state)))
      const interrupting = yield* Effect.forkChild(Fiber.interrupt(create))
      yield* control.resume
      yield* Fiber.join(interrupting)
      assert.strictEqual((yield* control.disk).size, 1)
      assert.strictEqual((yield* drain(pushes)).length, 1)
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Durable"))
    })))

  it.effect("the undo release is bounded by its own 10 s even when the client would wait longer (CRT-12)", () =>
    inWorld(({ control, provider, sim }) => Effect.gen(function*() {
      yield* control.failNext(1)
      yield* sim.injectFault("release", SimFault.hang)
      const create = yield* Effect.forkChild(provider.createPod(pod("web")))
      yield* eventually(Effect.map(releasePaths, (paths) => paths.length === 1))
      // When the create ended is read off the TestClock: it cannot be seen ended before it ends.
      const asked = yield* Clock.currentTimeMillis
      yield* advanceUntil(Effect.sync(() => create.pollUnsafe() !== undefined), "1 second", 15)
      const waited = (yield* Clock.currentTimeMillis) - asked
      assert.isAtLeast(waited, 10_000, "still waiting on the release before 10 s")
      assert.isAtMost(waited, 11_000, "given up at 10 s")
      const error = yield* notPersisted(Fiber.join(create))
      assert.strictEqual(error.releaseError?._tag, "SandboxdTimeout")
      assert.deepStrictEqual(yield* rowState("web"), Option.some("Tentative"), "credential kept in memory")
    }), { config: { sandboxdTimeout: Duration.seconds(60) } }))
})
