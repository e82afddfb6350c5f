/**
 * DeletePod (DEL-1 — DeletePod; AUTH-8 — what each verdict keeps) over the whole stack: the
 * sandboxd simulator and the in-memory API server over loopback HTTP, the live KubeApi as the owner
 * client, the real ClaimTable and the in-memory store. What sandboxd saw is asserted on the
 * simulator's audit log.
 */
import { assert, describe, it } from "@effect/vitest"
import { isRetryable } from "../../../src/Services/ProviderErrors.ts"
import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node"
import { DateTime, Effect, Exit, Fiber, Logger, Option, Redacted, References } from "effect"
import { TestClock } from "effect/testing"
import { ClaimsStoreMemoryControl } from "../../../testkit/Layers/ClaimsStoreMemory.ts"
import type { ClaimRecord } from "../../../src/Schemas/Claims.ts"
import { type PodKey, podKeyOf } from "../../../src/Schemas/Ids.ts"
import { ClaimTable } from "../../../src/Services/ClaimTable.ts"
import { PodLifecycle } from "../../../src/Services/PodLifecycle.ts"
import { SandboxdClient } from "../../../src/Services/SandboxdClient.ts"
import { Sandboxes } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import { ApiserverSim } from "../../../testkit/Simulators/Apiserver/Server.ts"
import { SandboxdSim, SimFault } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { deleteWorld, RecordedEvents, Template } from "../Authorization/world.ts"
import { type Line, makeLogCapture } from "../../support/Logs.ts"
import { eventually } from "../../support/Wait.ts"

const SandboxApiVersion = "agents.x-k8s.io/v1beta1"
const key = podKeyOf("default", "web") as PodKey

const pod = (uid: string, ownerReferences: ReadonlyArray<V1OwnerReference> = []): V1Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    namespace: "default",
    name: "web",
    uid,
    annotations: { "sandbox.cocoonstack.io/template": Template },
    ...(ownerReferences.length > 0 ? { ownerReferences: [...ownerReferences] } : {})
  },
  spec: { nodeName: "vk-sandboxd", containers: [{ name: "main", image: "python:3.12" }] },
  status: { phase: "Pending" }
})

/** A live Sandbox owner in the apiserver; returns the controller ref a Pod of it carries. */
const liveSandboxOwner = (name: string) =>
  Effect.map(ApiserverSim, ({ model }) => {
    const stored = model.put(Sandboxes, { apiVersion: SandboxApiVersion, kind: "Sandbox", metadata: { name, namespace: "default" }, spec: {} })
    const uid = String((stored["metadata"] as { uid: string }).uid)
    return { apiVersion: SandboxApiVersion, kind: "Sandbox", name, uid, controller: true } satisfies V1OwnerReference
  })

const auditOf = (route: "claim" | "release") =>
  Effect.map(SandboxdSim.use((sim) => sim.audit), (audit) => audit.filter((entry) => entry.route === route))

const heldRow = ClaimTable.use((table) => table.held(key))
const trackedPod = ClaimTable.use((table) => table.pod(key))

const expectHeld = Effect.fnUntraced(function*(id: string, token: string) {
  const row = yield* heldRow
  assert.isTrue(Option.isSome(row), "the claim is kept")
  const record = Option.getOrThrow(row).record
  assert.strictEqual(record.id, id)
  assert.strictEqual(Redacted.value(record.token), token, "with its release token")
})

/** The id and token of the sandbox the simulator holds for the pod key (exactly one). */
const simClaimOf = Effect.gen(function*() {
  const claims = (yield* SandboxdSim.use((sim) => sim.claims)).filter((claim) => claim.claimRef === key)
  assert.strictEqual(claims.length, 1)
  return claims[0]!
})

/** Claims a real sandbox straight from sandboxd, as a record the table can hold. */
const claimDirect = Effect.gen(function*() {
  const claimed = yield* SandboxdClient.use((client) =>
    client.claim({ template: Template, net: "", size: "", ttlSeconds: 0, claimRef: key })
  )
  const record: ClaimRecord = {
    id: claimed.id,
    token: claimed.token,
    address: claimed.ownerAddr,
    podUID: "uid-1",
    claimedAt: Option.some(yield* DateTime.now),
    deadline: claimed.deadline
  }
  return record
})

const inWorld = <A, E, R>(effect: Effect.Effect<A, E, R>) => effect.pipe(Effect.provide(deleteWorld(), { local: true }))

describe("DeletePod: preserve, then adopt (AUTH-8)", () => {
  it.effect("owner alive: the claim and its token stay, the Pod entry goes; a same-name Pod with a new UID adopts the same VM, no release", () =>
    inWorld(Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const owner = yield* liveSandboxOwner("sb")
      const created = yield* provider.createPod(pod("uid-1", [owner]))
      assert.strictEqual(created._tag, "Claimed")
      const sim = yield* simClaimOf

      const outcome = yield* provider.deletePod(pod("uid-1", [owner]))
      assert.strictEqual(outcome._tag, "Preserved")
      assert.deepStrictEqual(outcome._tag === "Preserved" ? [outcome.verdict._tag, outcome.verdict.reason] : [], ["Preserve", "OwnerAlive"])
      yield* expectHeld(sim.id, sim.token)
      assert.isTrue(Option.isNone(yield* trackedPod), "the Pod entry is dropped")
      assert.isTrue(Option.isNone(yield* provider.getPod(podKeyOf("default", "web"))))
      const writesAfterPreserve = yield* ClaimsStoreMemoryControl.use((c) => c.writeCount)

      const replacement = yield* provider.createPod(pod("uid-2", [owner]))
      assert.deepStrictEqual(replacement, { _tag: "Adopted", claimId: sim.id })
      assert.strictEqual((yield* auditOf("claim")).length, 1, "one claim in total")
      assert.strictEqual((yield* SandboxdSim.use((s) => s.claims)).length, 1)
      assert.strictEqual((yield* auditOf("release")).length, 0, "no release")
      yield* expectHeld(sim.id, sim.token)
      assert.strictEqual(Option.getOrThrow(yield* trackedPod).metadata?.uid, "uid-2")
      // Adoption rebinds the claim to the new Pod UID and writes that down (log-only on failure).
      assert.isAbove(yield* ClaimsStoreMemoryControl.use((c) => c.writeCount), writesAfterPreserve)

      const events = yield* RecordedEvents.use((r) => r.all)
      const preserved = events.filter((e) => e.reason === "Preserved")
      assert.strictEqual(preserved.length, 1)
      assert.strictEqual(preserved[0]!.involved.uid, "uid-1")
      assert.include(preserved[0]!.message, sim.id)
      assert.notInclude(preserved[0]!.message, sim.token)
    })))

  it.effect("preserve writes once, the owner the row now waits on (AUTH-9); the same owner again writes nothing", () =>
    inWorld(Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const owner = yield* liveSandboxOwner("sb")
      yield* provider.createPod(pod("uid-1", [owner]))
      const control = yield* ClaimsStoreMemoryControl
      const before = yield* control.writeCount
      yield* provider.deletePod(pod("uid-1", [owner]))
      assert.strictEqual(yield* control.writeCount, before + 1)
      const row = (yield* control.disk).get(key)
      assert.deepStrictEqual(row?.owner, { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid })
      // A stand-in of the same generation and owner (AUTH-9 — a preserved VM is released once its
      // owner goes's recheck) preserves with no write.
      yield* provider.deletePod(pod("uid-1", [owner]))
      assert.strictEqual(yield* control.writeCount, before + 1)
    })))

  it.effect("a preserve whose write fails fails the delete and keeps the Pod tracked; the retry writes the owner (AUTH-9)", () =>
    inWorld(Effect.gen(function*() {
      // Found by the chaos run: the owner's write failed (EIO), the Pod object was removed all the
      // same, a restart followed, and the reloaded row waited on no one while its Sandbox was gone.
      const provider = yield* PodLifecycle
      const owner = yield* liveSandboxOwner("sb")
      yield* provider.createPod(pod("uid-1", [owner]))
      const control = yield* ClaimsStoreMemoryControl
      yield* control.failNext(1)
      const failed = yield* Effect.flip(provider.deletePod(pod("uid-1", [owner])))
      assert.strictEqual(failed._tag, "PreserveNotPersisted")
      assert.isUndefined((yield* control.disk).get(key)?.owner, "nothing on disk names the owner")
      assert.isUndefined(Option.getOrThrow(yield* heldRow).record.owner, "nor does memory: the retry must write")
      assert.strictEqual(Option.getOrThrow(yield* trackedPod).metadata?.uid, "uid-1", "the Pod stays tracked for the retry")
      assert.strictEqual((yield* auditOf("release")).length, 0)

      const retried = yield* provider.deletePod(pod("uid-1", [owner]))
      assert.strictEqual(retried._tag, "Preserved")
      assert.deepStrictEqual((yield* control.disk).get(key)?.owner, { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid })
      assert.isTrue(Option.isNone(yield* trackedPod))
    })))
})

describe("DeletePod: release (DEL-1 step 6, 7)", () => {
  it.effect("bare Pod: released with the claim's own token, row and Pod dropped, file rewritten, Released event", () =>
    inWorld(Effect.gen(function*() {
      const provider = yield* PodLifecycle
      yield* provider.createPod(pod("uid-1"))
      const sim = yield* simClaimOf
      const control = yield* ClaimsStoreMemoryControl
      const before = yield* control.writeCount
      const outcome = yield* provider.deletePod(pod("uid-1"))
      assert.deepStrictEqual(outcome._tag === "Released" ? [outcome.verdict.reason, outcome.alreadyGone] : outcome._tag, ["BarePod", false])
      const releases = yield* auditOf("release")
      assert.strictEqual(releases.length, 1)
      assert.strictEqual(releases[0]!.path, `/v1/sandboxes/${sim.id}/release`)
      assert.strictEqual(releases[0]!.authorization, `Bearer ${sim.token}`)
      assert.strictEqual((yield* SandboxdSim.use((s) => s.claims)).length, 0)
      assert.isTrue(Option.isNone(yield* heldRow))
      assert.isTrue(Option.isNone(yield* trackedPod))
      assert.isAbove(yield* control.writeCount, before)
      assert.isFalse((yield* control.disk).has(key))
      const released = (yield* RecordedEvents.use((r) => r.all)).filter((e) => e.reason === "Released")
      assert.strictEqual(released.length, 1)
    })))

  it.effect("owner gone (object-level 404 over HTTP) releases; a persist failure after it is only logged", () =>
    inWorld(Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const owner = yield* liveSandboxOwner("sb")
      yield* provider.createPod(pod("uid-1", [owner]))
      const { model } = yield* ApiserverSim
      model.delete(Sandboxes, "default", "sb")
      const control = yield* ClaimsStoreMemoryControl
      yield* control.failNext(1)
      const outcome = yield* provider.deletePod(pod("uid-1", [owner]))
      assert.deepStrictEqual(outcome._tag === "Released" ? outcome.verdict.reason : outcome._tag, "OwnerGone")
      assert.strictEqual((yield* auditOf("release")).length, 1)
      assert.isTrue(Option.isNone(yield* heldRow), "converged in memory")
      assert.isTrue((yield* control.disk).has(key), "DEL-2: the released row stays on disk until the next write")
    })))

  it.effect("sandboxd 500: ReleaseFailed (retryable), claim and Pod entry kept; the retry releases with the same token", () =>
    inWorld(Effect.gen(function*() {
      const provider = yield* PodLifecycle
      yield* provider.createPod(pod("uid-1"))
      const sim = yield* simClaimOf
      const control = yield* ClaimsStoreMemoryControl
      const writes = yield* control.writeCount
      yield* SandboxdSim.use((s) => s.injectFault("release", SimFault.status(500, "boom"), { times: 1 }))

      const failed = yield* Effect.exit(provider.deletePod(pod("uid-1")))
      assert.isTrue(Exit.isFailure(failed))
      const found = Exit.isFailure(failed) ? Option.getOrThrow(Exit.findErrorOption(failed)) : undefined
      const error = found?._tag === "ReleaseFailed" ? found : undefined
      assert.strictEqual(found?._tag, "ReleaseFailed")
      assert.strictEqual(error !== undefined && isRetryable(error), true)
      assert.strictEqual(error?.claim, sim.id)
      assert.strictEqual(error?.pod, key)
      assert.strictEqual(error?.cause._tag, "SandboxdHttpError")
      assert.notInclude(error?.message ?? "", sim.token)
      yield* expectHeld(sim.id, sim.token)
      assert.strictEqual(Option.getOrThrow(yield* trackedPod).metadata?.uid, "uid-1", "the Pod entry is kept")
      assert.strictEqual(yield* control.writeCount, writes, "nothing written")
      assert.strictEqual((yield* SandboxdSim.use((s) => s.claims)).length, 1, "the VM is still there")
      const warning = (yield* RecordedEvents.use((r) => r.all)).filter((e) => e.reason === "ReleaseFailed")
      assert.strictEqual(warning.length, 1)
      assert.strictEqual(warning[0]!.type, "Warning")

      const retried = yield* provider.deletePod(pod("uid-1"))
      assert.strictEqual(retried._tag, "Released")
      const releases = yield* auditOf("release")
      assert.deepStrictEqual(releases.map((r) => r.authorization), [`Bearer ${sim.token}`, `Bearer ${sim.token}`])
      assert.strictEqual((yield* SandboxdSim.use((s) => s.claims)).length, 0)
      assert.isTrue(Option.isNone(yield* heldRow))
      assert.isTrue(Option.isNone(yield* trackedPod))
      assert.isFalse((yield* control.disk).has(key))
    })))

  it.effect("a lost release reply fails and keeps the claim; the retry's 404 converges", () =>
    inWorld(Effect.gen(function*() {
      const provider = yield* PodLifecycle
      yield* provider.createPod(pod("uid-1"))
      const sim = yield* simClaimOf
      yield* SandboxdSim.use((s) => s.injectFault("release", SimFault.loseReply("drop"), { times: 1 }))
      const failed = yield* Effect.flip(provider.deletePod(pod("uid-1")))
      assert.strictEqual(failed._tag, "ReleaseFailed")
      assert.strictEqual(failed._tag === "ReleaseFailed" ? failed.cause._tag : "", "SandboxdUnreachable")
      assert.strictEqual((yield* SandboxdSim.use((s) => s.claims)).length, 0, "sandboxd did release")
      yield* expectHeld(sim.id, sim.token)
      assert.isTrue(Option.isSome(yield* trackedPod))
      const retried = yield* provider.deletePod(pod("uid-1"))
      assert.deepStrictEqual(retried._tag === "Released" ? retried.alreadyGone : retried._tag, true)
      assert.isTrue(Option.isNone(yield* heldRow))
      assert.isFalse((yield* ClaimsStoreMemoryControl.use((c) => c.disk)).has(key))
    })))

  it.effect("a release that never answers times out (sandboxd timeout on the TestClock): ReleaseFailed, claim kept", () =>
    inWorld(Effect.gen(function*() {
      const provider = yield* PodLifecycle
      yield* provider.createPod(pod("uid-1"))
      const sim = yield* simClaimOf
      yield* SandboxdSim.use((s) => s.injectFault("release", SimFault.hang, { times: 1 }))
      const fiber = yield* Effect.forkChild(Effect.flip(provider.deletePod(pod("uid-1"))))
      // sandboxd has the request: the client's timeout runs from before it was sent.
      yield* eventually("the release at sandboxd", Effect.map(SandboxdSim.use((s) => s.audit), (audit) => audit.some((e) => e.route === "release")))
      yield* TestClock.adjust("11 seconds")
      const failed = yield* Fiber.join(fiber)
      assert.strictEqual(failed._tag, "ReleaseFailed")
      assert.strictEqual(failed._tag === "ReleaseFailed" ? failed.cause._tag : "", "SandboxdTimeout")
      yield* expectHeld(sim.id, sim.token)
      assert.isTrue(Option.isSome(yield* trackedPod))
    })))

  it.effect("sandboxd 404 (already gone) converges: row and Pod dropped, file rewritten", () =>
    inWorld(Effect.gen(function*() {
      const provider = yield* PodLifecycle
      yield* provider.createPod(pod("uid-1"))
      const sim = yield* simClaimOf
      yield* SandboxdSim.use((s) => s.forget(sim.id))
      const control = yield* ClaimsStoreMemoryControl
      const before = yield* control.writeCount
      const outcome = yield* provider.deletePod(pod("uid-1"))
      assert.deepStrictEqual(outcome._tag === "Released" ? outcome.alreadyGone : outcome._tag, true)
      assert.strictEqual((yield* auditOf("release")).length, 1)
      assert.isTrue(Option.isNone(yield* heldRow))
      assert.isTrue(Option.isNone(yield* trackedPod))
      assert.isAbove(yield* control.writeCount, before)
      assert.isFalse((yield* control.disk).has(key))
    })))
})

describe("DeletePod: the stale-UID guard and held claims", () => {
  it.effect("a deletePod carrying an older Pod UID touches nothing", () =>
    inWorld(Effect.gen(function*() {
      const provider = yield* PodLifecycle
      yield* provider.createPod(pod("uid-2"))
      const sim = yield* simClaimOf
      const control = yield* ClaimsStoreMemoryControl
      const writes = yield* control.writeCount
      const outcome = yield* provider.deletePod(pod("uid-1"))
      assert.strictEqual(outcome._tag, "StaleUid")
      yield* expectHeld(sim.id, sim.token)
      assert.strictEqual(Option.getOrThrow(yield* trackedPod).metadata?.uid, "uid-2")
      assert.strictEqual((yield* auditOf("release")).length, 0)
      assert.strictEqual(yield* control.writeCount, writes)
      assert.deepStrictEqual(yield* RecordedEvents.use((r) => r.all), [])
    })))

  it.effect("no claim: only the Pod entry goes", () =>
    inWorld(Effect.gen(function*() {
      const provider = yield* PodLifecycle
      yield* provider.updatePod(pod("uid-1"))
      assert.isTrue(Option.isSome(yield* trackedPod))
      assert.strictEqual((yield* provider.deletePod(pod("uid-1")))._tag, "NoClaim")
      assert.isTrue(Option.isNone(yield* trackedPod))
      assert.strictEqual((yield* auditOf("release")).length, 0)
    })))

  it.effect("a tentative claim is releasable", () =>
    inWorld(Effect.gen(function*() {
      const record = yield* claimDirect
      yield* ClaimTable.use((table) => table.recordTentative(key, record, pod("uid-1")))
      assert.strictEqual(Option.getOrThrow(yield* heldRow).state._tag, "Tentative")
      const outcome = yield* (yield* PodLifecycle).deletePod(pod("uid-1"))
      assert.strictEqual(outcome._tag, "Released")
      const releases = yield* auditOf("release")
      assert.deepStrictEqual(releases.map((r) => r.authorization), [`Bearer ${Redacted.value(record.token)}`])
      assert.isTrue(Option.isNone(yield* heldRow))
    })))

  it.effect("a quarantined claim is releasable", () =>
    inWorld(Effect.gen(function*() {
      const record = yield* claimDirect
      yield* ClaimTable.use((table) => table.loadQuarantined(new Map([[key, record]])))
      assert.strictEqual(Option.getOrThrow(yield* heldRow).state._tag, "Quarantined")
      const outcome = yield* (yield* PodLifecycle).deletePod(pod("uid-1"))
      assert.strictEqual(outcome._tag, "Released")
      assert.strictEqual((yield* auditOf("release")).length, 1)
      assert.strictEqual((yield* SandboxdSim.use((s) => s.claims)).length, 0)
      assert.isTrue(Option.isNone(yield* heldRow))
    })))
})

describe("DeletePod logs: pod key and claim id, never the token", () => {
  const { lines, logger: capture } = makeLogCapture()
  /** Everything a log sink could print for a line. */
  const rendered = (line: Line) => {
    const parts = [line.message]
    for (const [name, value] of Object.entries(line.annotations)) {
      parts.push(name, String(value))
      try {
        parts.push(JSON.stringify(value))
      } catch {
        // not serialisable: String() above is what a sink would print
      }
    }
    return parts.join(" ")
  }

  it.effect("a preserve and a release (after a failed release) log pod and claim, and no token anywhere", () =>
    Effect.gen(function*() {
      lines.length = 0
      const provider = yield* PodLifecycle
      const owner = yield* liveSandboxOwner("sb")
      yield* provider.createPod(pod("uid-1", [owner]))
      const sim = yield* simClaimOf
      yield* provider.deletePod(pod("uid-1", [owner]))
      const preserve = lines.filter((l) => l.message.includes("preserving sandbox"))
      assert.strictEqual(preserve.length, 1)
      assert.strictEqual(preserve[0]!.annotations["pod"], key)
      assert.strictEqual(preserve[0]!.annotations["claim"], sim.id)
      assert.include(String(preserve[0]!.annotations["reason"]), "alive")

      // the owner goes; a release fails once, then succeeds
      const { model } = yield* ApiserverSim
      model.delete(Sandboxes, "default", "sb")
      yield* provider.updatePod(pod("uid-1", [owner]))
      yield* SandboxdSim.use((s) => s.injectFault("release", SimFault.status(500, "boom"), { times: 1 }))
      yield* Effect.exit(provider.deletePod(pod("uid-1", [owner])))
      yield* provider.deletePod(pod("uid-1", [owner]))
      const authorized = lines.filter((l) => l.message.includes("release authorized"))
      assert.strictEqual(authorized.length, 2)
      for (const line of authorized) {
        assert.strictEqual(line.annotations["pod"], key)
        assert.strictEqual(line.annotations["claim"], sim.id)
      }
      const failed = lines.filter((l) => l.message.includes("release failed"))
      assert.strictEqual(failed.length, 1)
      assert.strictEqual(failed[0]!.annotations["pod"], key)
      assert.strictEqual(failed[0]!.annotations["claim"], sim.id)
      for (const line of lines) assert.notInclude(rendered(line), sim.token, line.message)
    }).pipe(Effect.provide(deleteWorld(), { local: true }), Effect.provide(Logger.layer([capture]))))
})
