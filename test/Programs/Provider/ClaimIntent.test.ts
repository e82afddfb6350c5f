/**
 * CreatePod writes the claim's intent durably before the claim leaves, drops it in the write that
 * lands the row, and settles it when sandboxd's "no" is certain; an outcome that may have made a
 * VM keeps it.
 */
import { podKeyOf } from "../../../src/Schemas/Ids.ts"
import { assert, describe, it } from "@effect/vitest"
import { isRetryable } from "../../../src/Services/ProviderErrors.ts"
import { DateTime, Duration, Effect, Fiber, Option, Redacted, Result } from "effect"
import { TestClock } from "effect/testing"
import { startClaims } from "../../../src/Programs/Provider/Startup.ts"
import type { ClaimIntent } from "../../../src/Schemas/Claims.ts"
import { ClaimDoubts } from "../../../src/Services/ClaimDoubts.ts"
import { ClaimsStore } from "../../../src/Services/ClaimsStore.ts"
import { PodLifecycle } from "../../../src/Services/PodLifecycle.ts"
import { SandboxdClient } from "../../../src/Services/SandboxdClient.ts"
import { ClaimsStoreMemoryControl } from "../../../testkit/Layers/ClaimsStoreMemory.ts"
import { SandboxdSim, SimFault } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { armed } from "../../support/Failpoints.ts"
import { claimCount, eventually, flushIO, keyOf, pod, Template, world } from "./harness.ts"

const heldIntents = ClaimsStore.use((store) => Effect.map(store.intents, (intents) => [...intents.keys()]))


describe("CreatePod: the claim intent", () => {
  it.effect("is on disk before the claim is sent, and leaves in the write that lands the row", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const control = yield* ClaimsStoreMemoryControl
      const create = yield* Effect.forkChild(provider.createPod(pod("web")))
      // Held just before the send: the intent has landed, nothing has been asked of sandboxd.
      yield* eventually(Effect.map(control.diskIntents, (intents) => intents.has(keyOf("web"))))
      assert.strictEqual(yield* claimCount, 0)
      const intent = (yield* control.diskIntents).get(keyOf("web"))!
      assert.strictEqual(intent.podUID, "uid-web")
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(create)
      assert.strictEqual(yield* claimCount, 1)
      const writes = yield* control.writes
      assert.strictEqual(writes.length, 2, "one write for the intent, one for the row")
      assert.deepStrictEqual([...writes[0]!.intending], [keyOf("web")])
      assert.isFalse(writes[0]!.rows.has(keyOf("web")))
      assert.isTrue(writes[1]!.rows.has(keyOf("web")))
      assert.strictEqual(writes[1]!.intents.size, 0, "the row and the intent's removal land together")
      assert.deepStrictEqual(yield* heldIntents, [])
    }).pipe(Effect.provide(world({ failpoints: armed("claim-before-send=delay(1s)").points }), { local: true })))

  it.effect("an intent that cannot be written stops the claim: nothing is sent, IntentNotPersisted (retryable)", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const control = yield* ClaimsStoreMemoryControl
      yield* control.failNextIntentWrites(1)
      const error = yield* Effect.flip(provider.createPod(pod("web")))
      assert.strictEqual(error._tag, "IntentNotPersisted")
      assert.isTrue(isRetryable(error))
      assert.strictEqual(yield* claimCount, 0)
      assert.deepStrictEqual(yield* heldIntents, [])
      yield* provider.createPod(pod("web"))
      assert.isTrue((yield* control.disk).has(keyOf("web")), "the retry claims")
    }).pipe(Effect.provide(world(), { local: true })))

  it.effect("sandboxd's certain no (429) settles the intent; a lost reply keeps it (the VM may exist)", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const sim = yield* SandboxdSim
      yield* sim.injectFault("claim", SimFault.status(429, "no warm capacity"), { times: 1 })
      yield* Effect.flip(provider.createPod(pod("web")))
      assert.deepStrictEqual(yield* heldIntents, [])
      yield* sim.injectFault("claim", SimFault.loseReply("drop"), { times: 1 })
      yield* Effect.flip(provider.createPod(pod("api")))
      assert.strictEqual((yield* sim.claims).filter((c) => c.claimRef === keyOf("api")).length, 1, "sandboxd made it")
      assert.deepStrictEqual(yield* heldIntents, [keyOf("api")])
      assert.isTrue(Option.isSome(Option.fromNullishOr((yield* (yield* ClaimsStoreMemoryControl).diskIntents).get(keyOf("api")))))
    }).pipe(Effect.provide(world(), { local: true })))
})

const ROOT = "root-secret-0123"
const rooted = {
  sim: { rootToken: ROOT, claimsOutliveClients: true },
  config: { sandboxdToken: Redacted.make(ROOT), sandboxdTimeout: Duration.seconds(3) }
} as const

/** Runs `effect` to its end, moving the TestClock (and real I/O) along until it finishes. */
const toEnd = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(Effect.result(effect))
    for (let i = 0; i < 400; i++) {
      for (let j = 0; j < 10; j++) yield* flushIO
      if (fiber.pollUnsafe() !== undefined) return yield* Fiber.join(fiber)
      yield* TestClock.adjust("500 millis")
    }
    return yield* Effect.die(new Error("never finished"))
  })

/**
 * The state a crash between the claim and its row leaves: sandboxd made the VM for the key, the
 * file holds the claim's intent and no row. Returns the VM's id.
 */
const crashedClaim = (name: string) =>
  Effect.gen(function*() {
    const sim = yield* SandboxdSim
    const client = yield* SandboxdClient
    const sentAt = yield* DateTime.now
    yield* TestClock.adjust("1 second")
    const claimed = yield* Effect.orDie(client.claim({ template: Template, net: "", size: "", ttlSeconds: 0, claimRef: keyOf(name) }))
    assert.strictEqual((yield* sim.claims).length, 1)
    return { id: claimed.id, intent: { key: keyOf(name), podUID: `uid-${name}`, sentAt } as ClaimIntent }
  })

describe("crash recovery: intents found at startup", () => {
  it.effect("the key is in doubt before any Pod is seen; its Pod's create adopts the crashed claim's VM, no second claim", () =>
    Effect.gen(function*() {
      const { id, intent } = yield* crashedClaim("web")
      const store = yield* ClaimsStore
      // What a restart finds: the intent (and no row) in the file.
      yield* store.intend(intent)
      yield* startClaims
      assert.deepStrictEqual(Option.map(yield* ClaimDoubts.use((d) => d.get(keyOf("web"))), (d) => d.podUid), Option.some("uid-web"))
      const created = yield* toEnd(PodLifecycle.use((p) => p.createPod(pod("web"))))
      assert.isTrue(Result.isSuccess(created) && created.success._tag === "Adopted" && created.success.claimId === id)
      assert.strictEqual(yield* claimCount, 1, "only the crashed claim")
      const control = yield* ClaimsStoreMemoryControl
      assert.strictEqual((yield* control.disk).get(keyOf("web"))?.id, id)
      assert.strictEqual((yield* control.diskIntents).size, 0, "the adoption's write dropped the intent")
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("a deleted Pod whose key is in doubt: the VM is adopted, then released under the owner's verdict", () =>
    Effect.gen(function*() {
      const { intent } = yield* crashedClaim("web")
      const store = yield* ClaimsStore
      yield* store.intend(intent)
      yield* startClaims
      const deleted = yield* toEnd(PodLifecycle.use((p) => p.deletePod(pod("web"))))
      assert.isTrue(Result.isSuccess(deleted) && deleted.success._tag === "Released", String(Result.isFailure(deleted) ? deleted.failure.message : ""))
      assert.strictEqual((yield* (yield* SandboxdSim).claims).length, 0, "the crashed claim's VM was returned")
      const control = yield* ClaimsStoreMemoryControl
      assert.strictEqual((yield* control.disk).size, 0)
      assert.strictEqual((yield* control.diskIntents).size, 0)
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("an old intent: its window counts from the load, so a VM still being made when the daemon restarts is adopted, not doubled (CRT-22)", () =>
    Effect.gen(function*() {
      const store = yield* ClaimsStore
      const sim = yield* SandboxdSim
      const client = yield* SandboxdClient
      // Sent an hour ago, by a process that may have waited that long for a permit before sending.
      yield* store.intend({ key: keyOf("web"), podUID: "uid-web", sentAt: yield* DateTime.now })
      yield* TestClock.adjust("1 hour")
      yield* startClaims
      const early = yield* toEnd(PodLifecycle.use((p) => p.createPod(pod("web"))))
      assert.strictEqual(Result.isFailure(early) ? early.failure._tag : early.success._tag, "ClaimInDoubt")
      assert.strictEqual((yield* sim.claims).length, 0, "nothing claimed inside the window")
      // sandboxd finishes the old claim's VM.
      const made = yield* Effect.orDie(client.claim({ template: Template, net: "", size: "", ttlSeconds: 0, claimRef: keyOf("web") }))
      const later = yield* toEnd(PodLifecycle.use((p) => p.createPod(pod("web"))))
      assert.isTrue(Result.isSuccess(later) && later.success._tag === "Adopted" && later.success.claimId === made.id)
      assert.deepStrictEqual((yield* sim.claims).map((c) => c.id), [made.id], "one VM for the key")
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("an intent whose claim made no VM: after the settle time the key claims afresh and the intent is gone", () =>
    Effect.gen(function*() {
      const store = yield* ClaimsStore
      yield* store.intend({ key: keyOf("web"), podUID: "uid-web", sentAt: yield* DateTime.now })
      yield* startClaims
      const created = yield* toEnd(PodLifecycle.use((p) => p.createPod(pod("web"))))
      // The first attempts wait out the settle time (ClaimInDoubt); the create ends by claiming.
      const final = Result.isSuccess(created) ? created.success._tag : created.failure._tag
      assert.include(["Claimed", "ClaimInDoubt"], final)
      if (final === "ClaimInDoubt") {
        yield* TestClock.adjust("1 minute")
        const again = yield* toEnd(PodLifecycle.use((p) => p.createPod(pod("web"))))
        assert.isTrue(Result.isSuccess(again) && again.success._tag === "Claimed")
      }
      assert.strictEqual(yield* claimCount, 1)
      const control = yield* ClaimsStoreMemoryControl
      assert.isTrue((yield* control.disk).has(keyOf("web")))
      assert.strictEqual((yield* control.diskIntents).size, 0)
    }).pipe(Effect.provide(world(rooted), { local: true })))
})

describe("crash recovery: intents whose Pod is gone (DEL-3)", () => {
  it.effect("a VM was made: settleGone adopts it and releases it with its own token; no row and no intent stay on disk", () =>
    Effect.gen(function*() {
      const { intent } = yield* crashedClaim("web")
      yield* (yield* ClaimsStore).intend(intent)
      yield* startClaims
      const settled = yield* toEnd(PodLifecycle.use((p) => p.settleGone(keyOf("web"))))
      assert.isTrue(Result.isSuccess(settled) && settled.success === "Released", String(Result.isFailure(settled) ? settled.failure.message : ""))
      assert.strictEqual((yield* (yield* SandboxdSim).claims).length, 0, "the crashed claim's VM was returned")
      const control = yield* ClaimsStoreMemoryControl
      assert.strictEqual((yield* control.disk).size, 0)
      assert.strictEqual((yield* control.diskIntents).size, 0)
      assert.deepStrictEqual(yield* PodLifecycle.use((p) => p.doubtKeys), [])
      const [namespace, name] = keyOf("web").split("/") as [string, string]
      assert.isTrue(Option.isNone(yield* PodLifecycle.use((p) => p.getPod(podKeyOf(namespace, name)))), "no stand-in is left tracked")
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("the release fails after the adoption: the stand-in stays tracked, so the key's next run (a tracked Pod gone from the cache) releases it", () =>
    Effect.gen(function*() {
      const { intent } = yield* crashedClaim("web")
      yield* (yield* ClaimsStore).intend(intent)
      yield* startClaims
      const sim = yield* SandboxdSim
      yield* sim.injectFault("release", SimFault.status(503, "restarting"), { times: 1 })
      const failed = yield* toEnd(PodLifecycle.use((p) => p.settleGone(keyOf("web"))))
      assert.isTrue(Result.isFailure(failed) && failed.failure._tag === "ReleaseFailed", "the release failed")
      assert.strictEqual((yield* sim.claims).length, 1, "the VM is still there")
      const [namespace, name] = keyOf("web").split("/") as [string, string]
      const tracked = yield* PodLifecycle.use((p) => p.getPod(podKeyOf(namespace, name)))
      assert.isTrue(Option.isSome(tracked), "the stand-in is tracked, so the controller runs DeletePod for it again")
      const retried = yield* toEnd(PodLifecycle.use((p) => p.deletePod(Option.getOrThrow(tracked))))
      assert.isTrue(Result.isSuccess(retried) && retried.success._tag === "Released", "released on the retry")
      assert.strictEqual((yield* sim.claims).length, 0, "the VM was returned")
      const control = yield* ClaimsStoreMemoryControl
      assert.strictEqual((yield* control.disk).size, 0)
      assert.strictEqual((yield* control.diskIntents).size, 0)
      assert.isTrue(Option.isNone(yield* PodLifecycle.use((p) => p.getPod(podKeyOf(namespace, name)))))
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("no VM was made: in doubt until the settle window passed, then the intent is written out of the file at once", () =>
    Effect.gen(function*() {
      const store = yield* ClaimsStore
      yield* store.intend({ key: keyOf("web"), podUID: "uid-web", sentAt: yield* DateTime.now })
      yield* startClaims
      assert.deepStrictEqual(yield* PodLifecycle.use((p) => p.doubtKeys), [keyOf("web")])
      const early = yield* Effect.result(PodLifecycle.use((p) => p.settleGone(keyOf("web"))))
      assert.isTrue(Result.isFailure(early) && early.failure._tag === "ClaimInDoubt", "sandboxd may still be making the VM")
      const control = yield* ClaimsStoreMemoryControl
      assert.strictEqual((yield* control.diskIntents).size, 1)
      yield* TestClock.adjust("1 minute")
      const settled = yield* toEnd(PodLifecycle.use((p) => p.settleGone(keyOf("web"))))
      assert.isTrue(Result.isSuccess(settled) && settled.success === "NoClaim")
      assert.strictEqual((yield* control.diskIntents).size, 0, "written out without waiting for another write")
      assert.strictEqual(yield* claimCount, 0)
      const again = yield* PodLifecycle.use((p) => p.settleGone(keyOf("web")))
      assert.strictEqual(again, "NotInDoubt")
      const [namespace, name] = keyOf("web").split("/") as [string, string]
      assert.isTrue(Option.isNone(yield* PodLifecycle.use((p) => p.getPod(podKeyOf(namespace, name)))), "no stand-in is left tracked")
    }).pipe(Effect.provide(world(rooted), { local: true })))
})
