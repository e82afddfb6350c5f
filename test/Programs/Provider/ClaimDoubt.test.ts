/**
 * Claims whose outcome is unknown, over the wire (the sandboxd simulator on loopback HTTP, the
 * real client) on TestClock: a key in doubt is never claimed again until a listing settles it;
 * the attempt's VM is adopted through the root by-id read, or released by id and its absence
 * confirmed, or — where neither is possible — the key stays in doubt with its stray reported. A
 * gateway's 5xx (other than sandboxd's own 500) is such an outcome too (CRT-23 — what a failed
 * claim says about its VM), and a VM whose `claimed_at` is written at whole seconds is still known
 * as the attempt's (CRT-24 — a VM made in the attempt's first second is the attempt's).
 */
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Fiber, Metric, Option, Redacted, Result } from "effect"
import { TestClock } from "effect/testing"
import type { V1Pod } from "@kubernetes/client-node"
import { ClaimsStoreMemoryControl } from "../../../testkit/Layers/ClaimsStoreMemory.ts"
import { madeSinceAttempt } from "../../../src/Programs/ClaimDoubt.ts"
import { claimsInDoubt } from "../../../src/Services/Metrics.ts"
import { ClaimDoubts } from "../../../src/Services/ClaimDoubts.ts"
import { ClaimTable } from "../../../src/Services/ClaimTable.ts"
import { PodLifecycle } from "../../../src/Services/PodLifecycle.ts"
import { OLDEST_REVISION, SandboxdSim, SimFault } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { makeLogCapture } from "../../support/Logs.ts"
import { claimCount, drain, flushIO, keyOf, pod, subscribePushes, world } from "./harness.ts"

const ROOT = "root-secret-0123"
const rooted = {
  sim: { rootToken: ROOT, claimsOutliveClients: true },
  config: { sandboxdToken: Redacted.make(ROOT), sandboxdTimeout: Duration.seconds(3) }
} as const

/** Live VMs per claim_ref. */
const vmsPerPod = Effect.map(SandboxdSim.use((sim) => sim.claims), (claims) => {
  const counts = new Map<string, number>()
  for (const claim of claims) counts.set(claim.claimRef, (counts.get(claim.claimRef) ?? 0) + 1)
  return counts
})

/** Runs one create to its end, moving the TestClock (and real I/O) along until it finishes. */
const createToEnd = (p: V1Pod, step: Duration.Input = "500 millis") =>
  Effect.gen(function*() {
    const provider = yield* PodLifecycle
    const fiber = yield* Effect.forkChild(Effect.result(provider.createPod(p)))
    for (let i = 0; i < 400; i++) {
      for (let j = 0; j < 10; j++) yield* flushIO
      if (fiber.pollUnsafe() !== undefined) return yield* Fiber.join(fiber)
      yield* TestClock.adjust(Duration.fromInputUnsafe(step))
    }
    return yield* Effect.die(new Error("create never finished"))
  })

const failureTag = <A, E extends { readonly _tag: string }>(result: Result.Result<A, E>) =>
  Result.isFailure(result) ? result.failure._tag : "Success"

describe("claims whose outcome is unknown", () => {
  // Two ways sandboxd makes the VM and the token never arrives: the reply is lost, or a proxy that
  // forwarded the claim answers 503 when the upstream connection breaks (CRT-23).
  for (
    const [what, fault] of [
      ["a lost reply after creation", SimFault.loseReply("drop")],
      ["a gateway's 503 after sandboxd made the VM (CRT-23)", SimFault.replaceReply(503, "upstream connect error or disconnect/reset before headers")]
    ] as const
  ) {
    it.effect(`${what}: the key is in doubt, the VM is adopted with its token, no second claim`, () =>
      Effect.gen(function*() {
        const sim = yield* SandboxdSim
        const pushes = yield* subscribePushes
        yield* sim.injectFault("claim", fault, { times: 1 })
        const first = yield* createToEnd(pod("web"))
        assert.strictEqual(failureTag(first), "ClaimInDoubt")
        assert.isTrue(Option.isSome(yield* ClaimDoubts.use((d) => d.get(keyOf("web")))))
        assert.strictEqual((yield* Metric.value(claimsInDoubt)).value, 1)
        const [made] = yield* sim.claims
        assert.isDefined(made)
        assert.deepStrictEqual(yield* drain(pushes), [], "never Running while in doubt")

        const second = yield* createToEnd(pod("web"))
        assert.isTrue(Result.isSuccess(second) && second.success._tag === "Adopted" && second.success.claimId === made.id)
        assert.strictEqual(yield* claimCount, 1, "no second claim")
        const disk = yield* (yield* ClaimsStoreMemoryControl).disk
        const row = disk.get(keyOf("web"))
        assert.strictEqual(row?.id, made.id)
        assert.strictEqual(Redacted.value(row!.token), made.token)
        assert.isTrue(Option.isNone(yield* ClaimDoubts.use((d) => d.get(keyOf("web")))))
        assert.strictEqual((yield* Metric.value(claimsInDoubt)).value, 0)
        assert.deepStrictEqual(yield* vmsPerPod, new Map([[keyOf("web"), 1]]))
        const pushed = (yield* drain(pushes)).at(-1)
        assert.strictEqual(pushed?.status?.phase, "Running")
        assert.strictEqual(pushed?.metadata?.annotations?.["sandbox.cocoonstack.io/claim-id"], made.id)
      }).pipe(Effect.provide(world(rooted), { local: true })))
  }

  it("CRT-24: a claimed_at at a whole second counts from the attempt's second; one with a fraction from its instant", () => {
    const at = (iso: string) => DateTime.makeUnsafe(iso)
    const started = at("2026-12-02T10:00:00.500Z")
    assert.isTrue(madeSinceAttempt(at("2026-12-02T10:00:00Z"), started), "the same second, written without fractions")
    assert.isFalse(madeSinceAttempt(at("2026-12-02T09:59:59Z"), started), "the second before")
    assert.isFalse(madeSinceAttempt(at("2026-12-02T10:00:00.499Z"), started), "a fraction before the instant")
    assert.isTrue(madeSinceAttempt(at("2026-12-02T10:00:00.500Z"), started))
    assert.isTrue(madeSinceAttempt(at("1969-12-31T23:59:59Z"), at("1969-12-31T23:59:59.250Z")), "before 1970 too")
  })

  it.effect("a lost reply, sandboxd writing claimed_at at whole seconds (CRT-24): the VM made in the attempt's first second is the attempt's", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      // The attempt begins half a second into a second; its VM's claimed_at reads that second's start.
      yield* TestClock.adjust("500 millis")
      yield* sim.injectFault("claim", SimFault.loseReply("drop"), { times: 1 })
      assert.strictEqual(failureTag(yield* createToEnd(pod("web"))), "ClaimInDoubt")
      const [made] = yield* sim.claims
      assert.isDefined(made)
      // Settled until it is no longer in doubt: adopted, never Absent with a second claim.
      let settled = yield* createToEnd(pod("web"))
      for (let i = 0; i < 20 && failureTag(settled) === "ClaimInDoubt"; i++) settled = yield* createToEnd(pod("web"))
      assert.isTrue(Result.isSuccess(settled) && settled.success._tag === "Adopted" && settled.success.claimId === made.id)
      assert.strictEqual(yield* claimCount, 1, "no second claim")
      assert.deepStrictEqual(yield* vmsPerPod, new Map([[keyOf("web"), 1]]))
    }).pipe(Effect.provide(world({ ...rooted, sim: { ...rooted.sim, wholeSecondClaimedAt: true } }), { local: true })))

  it.effect("a gateway's 503 after sandboxd made the VM, no by-id read (CRT-23): the VM is released by id, and only then a fresh claim", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      yield* sim.setRevision({ byIdRead: false })
      yield* sim.injectFault("claim", SimFault.replaceReply(503, "upstream reset"), { times: 1 })
      const first = yield* createToEnd(pod("web"))
      assert.strictEqual(failureTag(first), "ClaimInDoubt")
      // The Pod's message does not blame sandboxd for a status only a proxy sends.
      assert.include(
        Result.isFailure(first) ? first.failure.message : "",
        "sandboxd's address answered 503, a status sandboxd never sends (a proxy in front of it): non-JSON body: upstream reset"
      )
      const [made] = yield* sim.claims
      assert.isDefined(made)
      // Still in doubt: the attempt's VM is released by id, and nothing new is claimed.
      assert.strictEqual(failureTag(yield* createToEnd(pod("web"))), "ClaimInDoubt")
      assert.deepStrictEqual(yield* sim.claims, [], "the attempt's VM is released, not leaked")
      assert.strictEqual(yield* claimCount, 1, "no second claim while in doubt")
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(failureTag(yield* createToEnd(pod("web"))), "Success")
      assert.strictEqual(yield* claimCount, 2)
      const [fresh] = yield* sim.claims
      assert.notStrictEqual(fresh?.id, made.id)
      assert.deepStrictEqual(yield* vmsPerPod, new Map([[keyOf("web"), 1]]))
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("slow sandboxd (replies after the timeout): never more than two VMs per Pod, every Pod Running", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      const table = yield* ClaimTable
      // Every claim takes 3.5 s against a 3 s timeout; sandboxd finishes it all the same.
      yield* sim.injectFault("claim", SimFault.latency("3500 millis"))
      const names = ["a", "b", "c", "d"]
      let maxPerPod = 0
      const running = new Set<string>()
      for (let round = 0; round < 12 && running.size < names.length; round++) {
        if (round === 6) yield* sim.clearFaults // sandboxd is fast again
        const provider = yield* PodLifecycle
        const fibers = yield* Effect.forEach(
          names.filter((n) => !running.has(n)),
          (name) => Effect.map(Effect.forkChild(Effect.result(provider.createPod(pod(name)))), (fiber) => [name, fiber] as const)
        )
        for (let i = 0; i < 400; i++) {
          for (let j = 0; j < 10; j++) yield* flushIO
          for (const count of (yield* vmsPerPod).values()) maxPerPod = Math.max(maxPerPod, count)
          if (fibers.every(([, fiber]) => fiber.pollUnsafe() !== undefined)) break
          yield* TestClock.adjust("250 millis")
        }
        for (const [name, fiber] of fibers) {
          const result = yield* Fiber.join(fiber)
          if (Result.isSuccess(result)) running.add(name)
          else assert.include(["ClaimInDoubt", "ClaimFailed"], result.failure._tag)
        }
        yield* TestClock.adjust("1 second")
      }
      assert.strictEqual(running.size, names.length, "every Pod Running")
      assert.isAtMost(maxPerPod, 2)
      const perPod = yield* vmsPerPod
      for (const name of names) {
        assert.strictEqual(perPod.get(keyOf(name)), 1, `one live VM for ${name}`)
        const row = Option.getOrThrow(yield* table.durable(keyOf(name)))
        const vm = (yield* sim.claims).find((c) => c.claimRef === keyOf(name))
        assert.strictEqual(row.id, vm?.id)
      }
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("without the by-id read, the attempt's VM is released by id and its absence confirmed before a new claim", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      yield* sim.setRevision({ byIdRead: false })
      yield* sim.injectFault("claim", SimFault.loseReply("drop"), { times: 1 })
      assert.strictEqual(failureTag(yield* createToEnd(pod("web"))), "ClaimInDoubt")
      const [lost] = yield* sim.claims
      // Released by id with the root token; a later listing must confirm it before claiming.
      assert.strictEqual(failureTag(yield* createToEnd(pod("web"))), "ClaimInDoubt")
      assert.deepStrictEqual(yield* sim.claims, [])
      const rootRelease = (yield* sim.audit).find((e) => e.route === "release")
      assert.strictEqual(rootRelease?.path, `/v1/sandboxes/${lost.id}/release`)
      assert.strictEqual(rootRelease?.authorization, `Bearer ${ROOT}`)
      yield* TestClock.adjust("10 seconds")
      const third = yield* createToEnd(pod("web"))
      assert.strictEqual(failureTag(third), "Success")
      const [fresh] = yield* sim.claims
      assert.notStrictEqual(fresh.id, lost.id)
      assert.strictEqual(yield* claimCount, 2)
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("the log of an unknown outcome carries the error itself (its tag), not only its text", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* (yield* SandboxdSim).injectFault("claim", SimFault.loseReply("drop"), { times: 1 })
      assert.strictEqual(failureTag(yield* createToEnd(pod("web")).pipe(Effect.provide(logs.layer))), "ClaimInDoubt")
      const [line] = logs.lines.filter((l) => l.message.startsWith("claim outcome unknown"))
      assert.match(String((line?.annotations["error"] as { readonly _tag?: unknown } | undefined)?._tag), /^Sandboxd/)
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("the oldest revision (no by-id read, no root release): the key stays in doubt, never claimed again", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      yield* sim.setRevision(OLDEST_REVISION)
      yield* sim.injectFault("claim", SimFault.loseReply("drop"), { times: 1 })
      assert.strictEqual(failureTag(yield* createToEnd(pod("web"))), "ClaimInDoubt")
      const [stray] = yield* sim.claims
      for (let i = 0; i < 5; i++) {
        const again = yield* createToEnd(pod("web"))
        assert.strictEqual(failureTag(again), "ClaimInDoubt")
        if (Result.isFailure(again) && again.failure._tag === "ClaimInDoubt") {
          assert.deepStrictEqual(again.failure.strays, [stray.id])
        }
        yield* TestClock.adjust("30 seconds")
      }
      assert.strictEqual(yield* claimCount, 1, "never claimed again")
      assert.deepStrictEqual((yield* sim.claims).map((c) => c.id), [stray.id], "the stray is left alone, not lost")
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("a timeout with no VM made: the key may claim again only after the settle time", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      // A reply hung before any work: no VM is made, but the client cannot know that.
      yield* sim.injectFault("claim", SimFault.stall(200, "{"), { times: 1 })
      assert.strictEqual(failureTag(yield* createToEnd(pod("web"))), "ClaimInDoubt")
      // Right after the timeout: the settle time (= the 3 s timeout) has not passed.
      assert.strictEqual(failureTag(yield* createToEnd(pod("web"))), "ClaimInDoubt")
      assert.strictEqual(yield* claimCount, 1)
      yield* TestClock.adjust("4 seconds")
      assert.strictEqual(failureTag(yield* createToEnd(pod("web"))), "Success")
      assert.strictEqual(yield* claimCount, 2)
    }).pipe(Effect.provide(world(rooted), { local: true })))

  it.effect("a claim that waited for a connection permit: its doubt is not settled before the settle time after it was abandoned (CRT-22)", () =>
    Effect.gen(function*() {
      const sim = yield* SandboxdSim
      const provider = yield* PodLifecycle
      // Claims take longer than the 3 s timeout; one connection permit, so b waits 3 s for a's.
      yield* sim.injectFault("claim", SimFault.latency("3500 millis"))
      const a = yield* Effect.forkChild(Effect.result(provider.createPod(pod("a"))))
      const b = yield* Effect.forkChild(Effect.result(provider.createPod(pod("b"))))
      let elapsed = 0
      while (b.pollUnsafe() === undefined && elapsed < 20_000) {
        for (let j = 0; j < 10; j++) yield* flushIO
        if (b.pollUnsafe() !== undefined) break
        yield* TestClock.adjust("100 millis")
        elapsed += 100
      }
      assert.strictEqual(failureTag(yield* Fiber.join(b)), "ClaimInDoubt")
      assert.isAtLeast(elapsed, 6_000, "b's request started only after a's gave up its permit")
      assert.strictEqual(failureTag(yield* Fiber.join(a)), "ClaimInDoubt")
      yield* sim.clearFaults
      // Sent at 0 s: sent + timeout + settle (6 s) has passed, but b was abandoned at 6 s and
      // sandboxd is still making its VM. The retry must not claim a second one.
      yield* TestClock.adjust("100 millis")
      assert.strictEqual(failureTag(yield* createToEnd(pod("b"), "100 millis")), "ClaimInDoubt")
      assert.strictEqual(yield* claimCount, 2, "no second claim for b")
      // Once the VMs are made, each key's retry adopts its own.
      yield* TestClock.adjust("5 seconds")
      const adopted = (result: Result.Result<{ readonly _tag: string }, { readonly _tag: string }>) =>
        Result.isSuccess(result) ? result.success._tag : result.failure._tag
      assert.strictEqual(adopted(yield* createToEnd(pod("b"))), "Adopted")
      assert.strictEqual(adopted(yield* createToEnd(pod("a"))), "Adopted")
      assert.strictEqual(yield* claimCount, 2)
      assert.deepStrictEqual(yield* vmsPerPod, new Map([[keyOf("a"), 1], [keyOf("b"), 1]]))
    }).pipe(
      Effect.provide(world({ ...rooted, config: { ...rooted.config, sandboxdMaxConcurrency: 1 } }), { local: true })
    ))

  for (
    const [what, body] of [
      ["an empty token", `{"id":"sb_00000000000000a1","token":"","deadline":"2030-01-01T00:00:00Z"}`],
      ["a token with CR/LF", `{"id":"sb_00000000000000a2","token":"abc\\r\\ndef","deadline":"2030-01-01T00:00:00Z"}`],
      ["a 100 KB id", `{"id":"sb_${"a".repeat(100 * 1024)}","token":"t0k3n","deadline":"2030-01-01T00:00:00Z"}`]
    ] as const
  ) {
    it.effect(`an invalid reply (${what}) is an unknown outcome, never Running`, () =>
      Effect.gen(function*() {
        const sim = yield* SandboxdSim
        const pushes = yield* subscribePushes
        yield* sim.injectFault("claim", SimFault.body(200, body), { times: 1 })
        const first = yield* createToEnd(pod("web"))
        assert.strictEqual(failureTag(first), "ClaimInDoubt")
        assert.deepStrictEqual(yield* drain(pushes), [])
        assert.isTrue(Option.isNone(yield* ClaimTable.use((t) => t.held(keyOf("web")))))
        yield* TestClock.adjust("10 seconds")
        assert.strictEqual(failureTag(yield* createToEnd(pod("web"))), "Success")
        const [vm] = yield* sim.claims
        const disk = yield* (yield* ClaimsStoreMemoryControl).disk
        assert.strictEqual(disk.get(keyOf("web"))?.id, vm.id)
      }).pipe(Effect.provide(world(rooted), { local: true })))
  }
})
