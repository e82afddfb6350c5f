/**
 * The pod controller over the real wire: the in-memory API server and the
 * sandboxd simulator over loopback HTTP, the live clients, the real provider and file store.
 * These run on the real clock with short intervals (backoff 50 ms → 400 ms): every step is a
 * socket round trip, and TestClock would not move the sockets.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import * as NodeFs from "node:fs"
import { Duration, Effect, Fiber, Option, Redacted, Result, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as PodController from "../../../src/Programs/PodController/PodController.ts"
import { Pod as SlimPod } from "../../../src/Schemas/Pod/Schema.ts"
import { CoreEvents, Pods, Sandboxes } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import type { FailureRule } from "../../../testkit/Simulators/Apiserver/Model.ts"
import { SimFault } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import {
  claimIdOf,
  claimRequests,
  claimsOnDisk,
  createPod,
  createSandboxCr,
  eventually,
  eventuallyEffect,
  fastOptions,
  handedOnRun,
  keyOf,
  makeWorld,
  NS,
  peekPod,
  podBody,
  pushReceipt,
  quiet,
  releaseRequests,
  running,
  backoffOnly,
  secondsUntil,
  stopOnTestClock,
  witnessRunning,
  type World
} from "./harness.ts"
import { within } from "../../support/Wait.ts"

const asPod = (value: unknown) => value as V1Pod

describe("PodController", () => {
  it.live("50 pods go Running with podIP and claim-id; a restart on the same state file adopts them all", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const first = yield* world.start()
      const names = Array.from({ length: 50 }, (_, i) => `pod-${i}`)
      for (const name of names) createPod(world.model, podBody(name))
      yield* eventually("50 pods Running", () => names.every((n) => running(world.model, n) !== undefined), 15000)
      const ids = new Set<string>()
      for (const name of names) {
        const pod = running(world.model, name)!
        assert.strictEqual(pod.status?.podIP, "127.0.0.1")
        ids.add(claimIdOf(pod))
      }
      assert.strictEqual(ids.size, 50)
      assert.strictEqual(yield* claimRequests(world.sim), 50)
      assert.strictEqual((yield* world.sim.claims).length, 50)
      assert.deepStrictEqual(new Set(claimsOnDisk(world.statePath)), ids)
      assert.isTrue(yield* first.handle.synced)

      // A restart: the first daemon stops (drains), a second one starts on the same state file.
      yield* first.stop
      const second = yield* world.start()
      yield* eventuallyEffect("every pod adopted", Effect.sync(() => names.every((n) => second.calls.create.get(keyOf(n)) === 1)))
      yield* eventuallyEffect("provider holds all 50", Effect.map(second.lifecycle.getPods, (pods) => pods.length === 50))
      yield* second.handle.idle // every reconcile and status write begun has ended: a claim would have been sent
      assert.strictEqual(yield* claimRequests(world.sim), 50, "no new claims after the restart")
      assert.strictEqual((yield* world.sim.claims).length, 50)
      for (const name of names) assert.isTrue(ids.has(claimIdOf(running(world.model, name)!)))
    }).pipe(quiet), { timeout: 30_000 })

  it.live("a restart while sandboxd cannot list: running Pods keep Running (no ProviderFailed) and are adopted once it can", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const first = yield* world.start()
      createPod(world.model, podBody("kept-pending", {}))
      createPod(world.model, podBody("kept-never", { restartPolicy: "Never" }))
      yield* eventually("both Running", () => running(world.model, "kept-pending") && running(world.model, "kept-never"))
      yield* first.stop
      const phases: Array<string> = []
      const watch = world.model.watch(Pods, NS, {}, {
        onEvent: (event) => {
          const status = (event.object as { status?: { phase?: string; reason?: string } }).status
          phases.push(`${status?.phase}/${status?.reason ?? ""}`)
        },
        onClose: () => undefined
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => watch._tag === "Success" && watch.success.close()))
      yield* world.sim.injectFault("list", SimFault.status(500, "list broken"), { times: 6 })
      const second = yield* world.start()
      yield* eventually(
        "both adopted",
        () => second.calls.create.get(keyOf("kept-pending"))! > 1 && second.calls.create.get(keyOf("kept-never"))! > 1 &&
          running(world.model, "kept-pending") && running(world.model, "kept-never")
      )
      yield* eventuallyEffect("provider holds both", Effect.map(second.lifecycle.getPods, (pods) => pods.length === 2))
      assert.deepStrictEqual(phases.filter((p) => p !== "Running/"), [], "never Pending or Failed")
      assert.strictEqual(yield* claimRequests(world.sim), 2)
    }).pipe(quiet), { timeout: 20_000 })

  it.live("delete with the owner alive preserves the claim and removes the Pod at once; the replacement adopts; owner gone releases", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      yield* world.start()
      const ownerUid = createSandboxCr(world.model, "box")
      createPod(world.model, podBody("owned", { owner: { name: "box", uid: ownerUid } }))
      const claimId = claimIdOf(yield* eventually("owned Running", () => running(world.model, "owned")))

      // An hour's grace: were the final delete to wait out the grace period, this would time out.
      const deleted = world.model.delete(Pods, NS, "owned", { gracePeriodSeconds: 3600 })
      assert.strictEqual(deleted._tag, "Success")
      yield* eventually("the Pod object removed", () => peekPod(world.model, "owned") === undefined)
      assert.deepStrictEqual(yield* releaseRequests(world.sim), [], "preserved: no release")
      assert.isTrue((yield* world.sim.claims).some((c) => c.id === claimId))
      assert.include(claimsOnDisk(world.statePath), claimId)

      // A same-name replacement adopts the same sandbox: no new claim.
      createPod(world.model, podBody("owned", { owner: { name: "box", uid: ownerUid } }))
      const replacement = yield* eventually("replacement Running", () => running(world.model, "owned"))
      assert.strictEqual(claimIdOf(replacement), claimId)
      assert.strictEqual(yield* claimRequests(world.sim), 1)

      // The owner goes; then the Pod's deletion releases the sandbox.
      assert.strictEqual(world.model.delete(Sandboxes, NS, "box", {})._tag, "Success")
      assert.isUndefined(world.model.peek(Sandboxes, NS, "box"))
      world.model.delete(Pods, NS, "owned", { gracePeriodSeconds: 30 })
      yield* eventually("the Pod object removed", () => peekPod(world.model, "owned") === undefined, 5000)
      yield* eventuallyEffect(
        "release at sandboxd",
        Effect.map(releaseRequests(world.sim), (paths) => paths.includes(`/v1/sandboxes/${claimId}/release`))
      )
      assert.isFalse((yield* world.sim.claims).some((c) => c.id === claimId))
      yield* eventually("claim gone from disk", () => !claimsOnDisk(world.statePath).includes(claimId))
    }).pipe(quiet), { timeout: 20_000 })

  it.live("Pods deleted while the daemon was down: after the restart the bare one is released, the owned one preserved, both removed", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const first = yield* world.start()
      const ownerUid = createSandboxCr(world.model, "box")
      createPod(world.model, podBody("bare"))
      createPod(world.model, podBody("owned", { owner: { name: "box", uid: ownerUid } }))
      const bare = yield* eventually("bare Running", () => running(world.model, "bare"))
      const owned = yield* eventually("owned Running", () => running(world.model, "owned"))
      yield* first.stop
      world.model.delete(Pods, NS, "bare", { gracePeriodSeconds: 30 })
      world.model.delete(Pods, NS, "owned", { gracePeriodSeconds: 30 })
      yield* world.start()
      yield* eventually("both removed", () => peekPod(world.model, "bare") === undefined && peekPod(world.model, "owned") === undefined)
      yield* eventuallyEffect(
        "bare released",
        Effect.map(releaseRequests(world.sim), (paths) => paths.includes(`/v1/sandboxes/${claimIdOf(bare)}/release`))
      )
      assert.strictEqual((yield* releaseRequests(world.sim)).length, 1)
      assert.isTrue((yield* world.sim.claims).some((c) => c.id === claimIdOf(owned)))
      assert.include(claimsOnDisk(world.statePath), claimIdOf(owned))
    }).pipe(quiet), { timeout: 20_000 })

  it.live("while the release keeps failing the Pod object stays; it goes once the release succeeds", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      yield* world.start()
      createPod(world.model, podBody("bare"))
      const claimId = claimIdOf(yield* eventually("bare Running", () => running(world.model, "bare")))
      yield* world.sim.injectFault("release", SimFault.status(500, "disk on fire"), { times: 3 })
      world.model.delete(Pods, NS, "bare", { gracePeriodSeconds: 30 })
      yield* eventuallyEffect("three failed releases", Effect.map(releaseRequests(world.sim), (paths) => paths.length >= 3))
      assert.isDefined(peekPod(world.model, "bare")?.metadata.deletionTimestamp, "the object stays while the release fails")
      yield* eventually("the Pod object removed", () => peekPod(world.model, "bare") === undefined, 3000)
      assert.isFalse((yield* world.sim.claims).some((c) => c.id === claimId), "released")
      assert.strictEqual((yield* releaseRequests(world.sim)).length, 4)
    }).pipe(quiet), { timeout: 20_000 })

  it.live("no warm capacity: ProviderFailed/Pending naming the cause, Running once a claim is freed (within the backoff cap)", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld({ sim: { maxClaims: 1 } })
      const daemon = yield* world.start()
      createPod(world.model, podBody("first"))
      const first = yield* eventually("first Running", () => running(world.model, "first"))
      createPod(world.model, podBody("second"))
      const failed = yield* eventually("second ProviderFailed", () => {
        const pod = peekPod(world.model, "second")
        return pod?.status?.reason === "ProviderFailed" ? pod : undefined
      })
      assert.strictEqual(failed.status?.phase, "Pending")
      assert.include(failed.status?.message ?? "", "quota")
      assert.strictEqual(claimIdOf(failed), "", "no claim-id on a Pod without a sandbox")

      // The first Pod (bare) is deleted: its sandbox is released, which frees the quota.
      world.model.delete(Pods, NS, "first", { gracePeriodSeconds: 0 })
      yield* eventuallyEffect(
        "release of the first claim",
        Effect.map(releaseRequests(world.sim), (paths) => paths.includes(`/v1/sandboxes/${claimIdOf(first)}/release`))
      )
      // How soon the retry comes is the backoff schedule's business (tested on TestClock below).
      const second = yield* eventually("second Running", () => running(world.model, "second"))
      assert.isUndefined(second.status?.reason)
      assert.isAbove(daemon.calls.create.get(keyOf("second")) ?? 0, 1)
    }).pipe(quiet), { timeout: 20_000 })

  it.effect("default backoff on TestClock: a capacity failure is retried 1 s → 30 s and goes Running at the next retry once a claim is freed", () =>
    Effect.gen(function*() {
      // TestClock moves the backoff; real I/O turns are interleaved (TestClock does not drive sockets).
      // A long request timeout: TestClock jumps while a request is on the wire must not time it out.
      const world = yield* makeWorld({ sim: { maxClaims: 1 }, config: { sandboxdTimeout: Duration.hours(1) } })
      const daemon = yield* world.start(backoffOnly)
      const attempts = () => daemon.calls.create.get(keyOf("second")) ?? 0
      createPod(world.model, podBody("first"))
      yield* eventually("first Running", () => running(world.model, "first"))
      createPod(world.model, podBody("second"))
      yield* eventually("second ProviderFailed", () => peekPod(world.model, "second")?.status?.reason === "ProviderFailed")
      // 1, 2, 4, 8, 16, 30 s (±20 %): six retries wait at least 0.8 + 1.6 + 3.2 + 6.4 + 12.8 + 25.6 s,
      // the last at least 25 s. Only lower bounds: a slow machine makes retries later, never sooner
      // (the 30 s cap is KeyedQueue.test.ts's, on TestClock alone).
      const gaps: Array<number> = []
      for (let n = 2; n <= 7; n++) gaps.push(yield* secondsUntil(() => attempts() >= n))
      assert.strictEqual(attempts(), 7, "one retry at a time")
      assert.isAtLeast(gaps.reduce((a, b) => a + b, 0), 50, `exponential, not a fixed short interval: ${gaps.join(", ")}`)
      assert.isAtLeast(gaps[5]!, 25, `the sixth retry waits near the cap: ${gaps.join(", ")}`)
      // The seventh attempt's claim was refused before the claim is freed: the next one is the eighth.
      yield* eventuallyEffect("the seventh attempt refused", Effect.map(claimRequests(world.sim), (n) => n === 1 + 7))
      yield* world.sim.setMaxClaims(0)
      yield* secondsUntil(() => running(world.model, "second") !== undefined)
      assert.strictEqual(attempts(), 8, "the next retry after the claim was freed goes Running")
      // one claim request per attempt: first's, each refused retry, and the one that succeeded
      assert.strictEqual(yield* claimRequests(world.sim), 1 + 8)
      yield* stopOnTestClock(daemon)
    }).pipe(quiet), { timeout: 60_000 })

  it.effect("a refused node token (401): SandboxdUnauthorized, the Pod says the token was refused, retried only every 30 s", () =>
    Effect.gen(function*() {
      // A long request timeout: TestClock jumps while a request is on the wire must not time it out.
      const world = yield* makeWorld({
        sim: { rootToken: "the-right-token" },
        config: { sandboxdToken: Redacted.make("a-stale-token"), sandboxdTimeout: Duration.hours(1) }
      })
      const daemon = yield* world.start(backoffOnly)
      createPod(world.model, podBody("refused"))
      const failed = yield* eventually("ProviderFailed", () => {
        const pod = peekPod(world.model, "refused")
        return pod?.status?.reason === "ProviderFailed" ? pod : undefined
      })
      assert.include(failed.status?.message ?? "", "SandboxdUnauthorized")
      assert.include(failed.status?.message ?? "", "sandboxd refused the node token (HTTP 401)")
      assert.notInclude(failed.status?.message ?? "", "a-stale-token")
      // The capacity backoff would retry after 1, 2, 4 … s; a refused token waits 30 s every time.
      // Only lower bounds: a slow machine makes a retry later, never sooner.
      const attempts = () => daemon.calls.create.get(keyOf("refused")) ?? 0
      for (const n of [2, 3]) {
        assert.isAtLeast(yield* secondsUntil(() => attempts() >= n), 30, `retry ${n - 1} not before 30 s`)
        assert.strictEqual(attempts(), n, "one retry at a time")
      }
      yield* stopOnTestClock(daemon)
    }).pipe(quiet), { timeout: 120_000 })

  // On the TestClock (real I/O turns between its seconds): the resync is the later event that
  // must come, so "no retry before it" is read from when the retry came, not from a pause.
  const resync30s: PodController.PodControllerOptions = { ...PodController.defaultOptions, resyncInterval: Duration.seconds(30) }

  it.effect("a wrong runtime: ProviderFailed, no claim, no hot retry loop", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start(resync30s)
      createPod(world.model, podBody("alien", { annotations: { "sandbox.cocoonstack.io/runtime": "kata" } }))
      const failed = yield* eventually("alien ProviderFailed", () => {
        const pod = peekPod(world.model, "alien")
        return pod?.status?.reason === "ProviderFailed" ? pod : undefined
      })
      assert.strictEqual(failed.status?.phase, "Pending")
      assert.include(failed.status?.message ?? "", "kata")
      const requestsBefore = (yield* world.sim.stats).requests
      // The backoff would retry after 1, 2, 4 … s; the next attempt is the 30 s resync's.
      const attempts = () => daemon.calls.create.get(keyOf("alien")) ?? 0
      assert.strictEqual(attempts(), 1)
      assert.isAtLeast(yield* secondsUntil(() => attempts() >= 2), 29, "no retry before the resync")
      assert.strictEqual(attempts(), 2, "one retry at the resync")
      assert.strictEqual((yield* world.sim.stats).requests, requestsBefore)
      assert.strictEqual(yield* claimRequests(world.sim), 0)
      yield* stopOnTestClock(daemon)
    }).pipe(quiet), { timeout: 60_000 })

  it.effect("unfixable failures wait for the resync without rewriting the same status; restartPolicy Never fails for good; a Pod that never ran is removed at once", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start(resync30s)
      createPod(world.model, podBody("alien", { annotations: { "sandbox.cocoonstack.io/runtime": "kata" } }))
      createPod(world.model, podBody("once", { annotations: { "sandbox.cocoonstack.io/runtime": "kata" }, restartPolicy: "Never" }))
      yield* eventually("alien ProviderFailed", () => peekPod(world.model, "alien")?.status?.reason === "ProviderFailed")
      const once = yield* eventually("once Failed", () => {
        const pod = peekPod(world.model, "once")
        return pod?.status?.phase === "Failed" ? pod : undefined
      })
      assert.strictEqual(once.status?.reason, "ProviderFailed")
      const writes = world.model.statusWrites
      // A retry at each 30 s resync, none between two, and no status write for the same failure.
      const attempts = () => daemon.calls.create.get(keyOf("alien")) ?? 0
      const before = attempts()
      yield* secondsUntil(() => attempts() >= before + 1)
      for (const n of [before + 2, before + 3]) {
        assert.isAtLeast(yield* secondsUntil(() => attempts() >= n), 29, `retry ${n - before} a resync after the one before`)
        assert.strictEqual(attempts(), n, "one retry per resync")
      }
      assert.strictEqual(world.model.statusWrites, writes)
      assert.strictEqual(daemon.calls.create.get(keyOf("once")), 1, "a Failed Pod is left alone")
      assert.strictEqual(yield* claimRequests(world.sim), 0)

      // Nothing runs in it: a graceful delete removes the object at once (the TestClock stands).
      world.model.delete(Pods, NS, "alien", { gracePeriodSeconds: 30 })
      yield* eventually("alien removed", () => peekPod(world.model, "alien") === undefined, 3000)
      yield* stopOnTestClock(daemon)
    }).pipe(quiet), { timeout: 60_000 })

  it.live("the informer's cache holds the slim projection only, whatever else a served Pod carries", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start()
      const body = podBody("rich", { labels: { team: "a" } })
      const spec = body["spec"] as Record<string, unknown>
      spec["volumes"] = [{ name: "scratch", emptyDir: {} }]
      spec["containers"] = [{ name: "main", image: "python:3.12", env: [{ name: "A", value: "1" }], resources: { limits: { cpu: "1" } } }]
      spec["serviceAccountName"] = "default"
      createPod(world.model, body)
      yield* eventually("rich Running", () => running(world.model, "rich"))
      const cached = yield* eventuallyEffect(
        "rich Running in the cache",
        Effect.map(daemon.handle.cachedPods, (pods) => pods.find((p) => p.metadata?.name === "rich" && p.status?.phase === "Running"))
      )
      // every key is one of the slim Pod's: a strict decode refuses any other
      const strict = Schema.decodeUnknownResult(Schema.toType(SlimPod), { onExcessProperty: "error" })(cached)
      assert.isTrue(Result.isSuccess(strict), String(Result.isFailure(strict) ? strict.failure : ""))
      assert.deepStrictEqual(cached.spec?.containers, [{ name: "main", image: "python:3.12" }])
      assert.deepStrictEqual(cached.metadata?.labels, { team: "a" })
      assert.isUndefined((cached.metadata as Record<string, unknown> | undefined)?.["managedFields"])
    }).pipe(quiet), { timeout: 20_000 })

  it.live("a watch dropped mid-stream, closed cleanly, expired (410) or compacted: no pod missed; a status 409 is retried", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      yield* world.start()
      createPod(world.model, podBody("p0"))
      const p0 = yield* eventually("p0 Running", () => running(world.model, "p0"))

      // Connection reset mid-stream; a Pod created during the outage.
      yield* eventually("a watch open", () => world.model.openWatches() > 0)
      world.apiserver.resetWatchConnections()
      createPod(world.model, podBody("p1"))
      yield* eventually("p1 Running", () => running(world.model, "p1"))

      // A clean server close.
      yield* eventually("a watch open", () => world.model.openWatches() > 0)
      world.model.dropWatches()
      createPod(world.model, podBody("p2"))
      yield* eventually("p2 Running", () => running(world.model, "p2"))

      // 410 mid-stream (the watch fell behind), with the history compacted: only a relist finds p3.
      yield* eventually("a watch open", () => world.model.openWatches() > 0)
      createPod(world.model, podBody("p3"))
      world.model.compact()
      world.model.expireWatches()
      yield* eventually("p3 Running", () => running(world.model, "p3"))

      // A drop and a compaction together: the re-watch from the old resourceVersion gets 410. A Pod
      // force-deleted meanwhile is seen only as missing from the relist: its sandbox is released.
      yield* eventually("a watch open", () => world.model.openWatches() > 0)
      world.apiserver.resetWatchConnections()
      createPod(world.model, podBody("p4"))
      assert.isTrue(world.model.remove(Pods, NS, "p0"))
      world.model.compact()
      yield* eventually("p4 Running", () => running(world.model, "p4"))
      yield* eventuallyEffect(
        "p0 released",
        Effect.map(releaseRequests(world.sim), (paths) => paths.includes(`/v1/sandboxes/${claimIdOf(p0)}/release`))
      )

      // A status write that meets a 409 is re-read and written.
      const rule: FailureRule = { method: "PUT", path: /\/pods\/p5\/status$/, code: 409, times: 1 }
      world.model.faults.failures.push(rule)
      createPod(world.model, podBody("p5"))
      yield* eventually("p5 Running", () => running(world.model, "p5"))
      assert.strictEqual(rule.times, 0, "the 409 was served")
      assert.strictEqual(yield* claimRequests(world.sim), 6)
    }).pipe(quiet), { timeout: 30_000 })

  it.live("a burst of changes during a slow claim: exactly one claim, the newest spec recorded", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start()
      yield* world.sim.injectFault("claim", SimFault.latency("700 millis"), { times: 1 })
      createPod(world.model, podBody("slow", { labels: { rev: "0" } }))
      yield* eventuallyEffect("the claim in flight", Effect.map(claimRequests(world.sim), (n) => n === 1))
      const seen = (rev: string) =>
        Effect.map(daemon.handle.cachedPods, (pods) => pods.some((p) => p.metadata?.name === "slow" && p.metadata.labels?.["rev"] === rev))
      for (const rev of ["1", "2", "3"]) {
        const out = world.model.patch(Pods, NS, "slow", "merge", { metadata: { labels: { rev } } })
        assert.strictEqual(out._tag, "Success")
        // one change at a time: the next is made once the controller has seen this one
        yield* eventuallyEffect(`rev ${rev} seen`, seen(rev))
      }
      yield* eventually("slow Running", () => running(world.model, "slow"), 5000)
      yield* eventuallyEffect(
        "the provider holds rev 3",
        Effect.map(daemon.lifecycle.getPod(keyOf("slow")), (held) => Option.isSome(held) && held.value.metadata?.labels?.["rev"] === "3")
      )
      yield* daemon.handle.idle
      assert.strictEqual(yield* claimRequests(world.sim), 1)
      assert.strictEqual(daemon.calls.create.get(keyOf("slow")), 1)
      assert.isAtLeast(daemon.calls.update.get(keyOf("slow")) ?? 0, 1)
      const held = yield* daemon.lifecycle.getPod(keyOf("slow"))
      assert.strictEqual(Option.getOrThrow(held).metadata?.labels?.["rev"], "3")
      assert.strictEqual(peekPod(world.model, "slow")?.metadata.labels?.["rev"], "3", "the status write kept the newest labels")
    }).pipe(quiet), { timeout: 20_000 })

  it.live("the dangling sweep waits for a successful list, then deletes only the absent pods", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start()
      createPod(world.model, podBody("kept"))
      createPod(world.model, podBody("gone"))
      const kept = yield* eventually("kept Running", () => running(world.model, "kept"))
      const gone = yield* eventually("gone Running", () => running(world.model, "gone"))
      yield* daemon.stopController
      // While no controller runs, "gone" vanishes from the apiserver; the provider still has it.
      assert.isTrue(world.model.remove(Pods, NS, "gone"))
      const listFails: FailureRule = { method: "GET", path: "/api/v1/pods", code: 500, times: 1_000 }
      world.model.faults.failures.push(listFails)
      const second = yield* daemon.startController()
      // The second failed list is asked for only once the first failure was dealt with (a sweep
      // on it would have ended by then: the informer runs it before it lists again).
      yield* eventually("two failed lists", () => listFails.times !== undefined && listFails.times <= 998)
      assert.isFalse(yield* second.handle.synced)
      assert.isTrue(Option.isSome(yield* daemon.lifecycle.getPod(keyOf("gone"))), "no sweep after a failed list")
      assert.deepStrictEqual(yield* releaseRequests(world.sim), [])

      world.model.faults.failures.length = 0
      yield* eventuallyEffect("synced", second.handle.synced)
      yield* eventuallyEffect(
        "the absent pod released",
        Effect.map(releaseRequests(world.sim), (paths) => paths.includes(`/v1/sandboxes/${claimIdOf(gone)}/release`))
      )
      assert.isTrue(Option.isNone(yield* daemon.lifecycle.getPod(keyOf("gone"))))
      assert.isTrue(Option.isSome(yield* daemon.lifecycle.getPod(keyOf("kept"))))
      assert.deepStrictEqual(yield* releaseRequests(world.sim), [`/v1/sandboxes/${claimIdOf(gone)}/release`])
      assert.isTrue((yield* world.sim.claims).some((c) => c.id === claimIdOf(kept)))
    }).pipe(quiet), { timeout: 20_000 })

  it.live("status writes: another UID is not written, an identical push is skipped, a terminal Pod is left alone", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start()
      createPod(world.model, podBody("st"))
      createPod(world.model, podBody("witness"))
      yield* eventually("st Running", () => running(world.model, "st"))
      yield* eventually("witness Running", () => running(world.model, "witness"))
      yield* daemon.handle.idle
      const current = () => asPod(world.model.peek(Pods, NS, "st"))
      const receipt = pushReceipt(world, daemon, "witness")

      // An identical push: nothing to write.
      const writes0 = world.model.statusWrites
      yield* daemon.pushStatus(current())
      yield* receipt
      assert.strictEqual(world.model.statusWrites, writes0 + 1, "identical push skipped (the receipt is the one write)")

      // A different status is written (the channel works).
      const changed = current()
      changed.status = { ...changed.status, message: "changed by the provider" }
      yield* daemon.pushStatus(changed)
      yield* eventually("the changed status written", () => peekPod(world.model, "st")?.status?.message === "changed by the provider")
      assert.strictEqual(world.model.statusWrites, writes0 + 2)

      // A push for another generation of the Pod (another UID) is never written.
      const stale = current()
      stale.metadata = { ...stale.metadata, uid: "some-older-generation" }
      stale.status = { ...stale.status, message: "from the old generation" }
      yield* daemon.pushStatus(stale)
      yield* receipt
      assert.strictEqual(peekPod(world.model, "st")?.status?.message, "changed by the provider")
      assert.strictEqual(world.model.statusWrites, writes0 + 3)

      // Someone else makes the Pod terminal: pushes are dropped, and no provider call is made.
      const terminal = current()
      terminal.status = { ...terminal.status, phase: "Failed", reason: "Evicted", message: "evicted" }
      assert.strictEqual(world.model.updateStatus(Pods, NS, "st", terminal)._tag, "Success")
      yield* eventuallyEffect(
        "the controller sees the Pod Failed",
        Effect.map(daemon.handle.cachedPods, (pods) => pods.some((p) => p.metadata?.name === "st" && p.status?.phase === "Failed"))
      )
      const writes1 = world.model.statusWrites
      const calls = daemon.calls.create.get(keyOf("st"))
      const running2 = current()
      const { reason: _reason, ...rest } = running2.status ?? {}
      running2.status = { ...rest, phase: "Running", message: "alive again" }
      yield* daemon.pushStatus(running2)
      yield* receipt
      assert.strictEqual(peekPod(world.model, "st")?.status?.phase, "Failed")
      assert.strictEqual(world.model.statusWrites, writes1 + 1, "only the receipt's write")
      assert.strictEqual(daemon.calls.create.get(keyOf("st")), calls)
      assert.isUndefined(daemon.calls.delete.get(keyOf("st")))
    }).pipe(quiet), { timeout: 20_000 })

  it.live("drain lets an in-flight create finish and commit; no reconcile starts after drain began", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start()
      yield* world.sim.injectFault("claim", SimFault.latency("600 millis"), { times: 1 })
      createPod(world.model, podBody("inflight"))
      yield* eventuallyEffect("the claim in flight", Effect.map(claimRequests(world.sim), (n) => n === 1))
      // Started at once: the queue stops admitting before this fiber goes on.
      const draining = yield* Effect.forkChild(daemon.handle.drain(world.config.shutdownTimeout), { startImmediately: true })
      createPod(world.model, podBody("late"))
      yield* Fiber.join(draining)
      const claims = yield* world.sim.claims
      assert.strictEqual(claims.length, 1)
      const held = yield* daemon.table.held(keyOf("inflight"))
      assert.isTrue(Option.isSome(held))
      assert.strictEqual(Option.getOrThrow(held).state._tag, "Durable")
      assert.include(claimsOnDisk(world.statePath), claims[0].id)
      assert.strictEqual(claimIdOf(running(world.model, "inflight") ?? { metadata: {} }), claims[0].id, "its status written within the drain")
      // The controller has seen "late", and every run it admitted has ended.
      yield* eventuallyEffect("late seen", Effect.map(daemon.handle.cachedPods, (pods) => pods.some((p) => p.metadata?.name === "late")))
      yield* daemon.handle.idle
      assert.isUndefined(daemon.calls.create.get(keyOf("late")), "no reconcile after drain began")
      assert.strictEqual(yield* claimRequests(world.sim), 1)
    }).pipe(quiet), { timeout: 20_000 })
})

/** The intents in the claims file on disk (none when the file has no `intents` member). */
const intentsOnDisk = (statePath: string): ReadonlyArray<string> => {
  const parsed: unknown = JSON.parse(NodeFs.readFileSync(statePath, "utf8"))
  if (typeof parsed !== "object" || parsed === null || !("intents" in parsed)) return []
  const intents = parsed.intents
  return typeof intents === "object" && intents !== null ? Object.keys(intents) : []
}

describe("PodController: claims in doubt whose Pod never comes back (DEL-3)", () => {
  // The claim's reply is lost after sandboxd made the VM: the key is in doubt, and the VM lives
  // on at sandboxd with no row for it. On the TestClock (the settle window and the backoff), with
  // real I/O turns in between. sandboxd's listing fails from the start, until the test clears the
  // faults: TestClock seconds pass while real I/O runs (the more, the slower the machine), and a
  // retry of the key would adopt the VM at its first listing, before the step the test is about.
  const lostReply = (name: string, spec: Parameters<typeof podBody>[1] = {}) =>
    Effect.gen(function*() {
      // A long request timeout: TestClock seconds pass while a request is on the wire, and under
      // load a round trip can outlast many of them; the settle window stays the default's 10 s.
      const world = yield* makeWorld({
        sim: { claimsOutliveClients: true },
        config: { sandboxdTimeout: Duration.hours(1), claimSettleTime: Duration.seconds(10) }
      })
      const daemon = yield* world.start(backoffOnly)
      yield* world.sim.injectFault("claim", SimFault.loseReply("drop"), { times: 1 })
      yield* world.sim.injectFault("list", SimFault.status(503, "listing unavailable"))
      createPod(world.model, podBody(name, spec))
      yield* secondsUntil(() => peekPod(world.model, name)?.status?.reason === "ClaimInDoubt")
      assert.strictEqual((yield* world.sim.claims).length, 1, "the lost reply's VM lives")
      return { world, daemon }
    })

  /** The VM released at sandboxd (by its own token: the row's), and no intent or row left on disk. */
  const settled = (world: World) =>
    Effect.gen(function*() {
      yield* secondsUntil(Effect.map(world.sim.claims, (claims) => claims.length === 0))
      assert.strictEqual((yield* releaseRequests(world.sim)).length, 1)
      // The intent and the released row may leave the file in two writes, in either order.
      yield* secondsUntil(() => intentsOnDisk(world.statePath).length === 0 && claimsOnDisk(world.statePath).length === 0)
    })

  it.effect("a lost claim reply, then the Pod force-deleted: the VM is released and the intent leaves the file", () =>
    Effect.gen(function*() {
      const { world, daemon } = yield* lostReply("web")
      world.model.delete(Pods, NS, "web", { gracePeriodSeconds: 0 })
      // The key is settled with no Pod in the cache (DEL-3's path), not by a Pod it still sees.
      yield* eventually("the Pod gone from the cache", Effect.map(daemon.handle.cachedPods, (pods) => pods.length === 0))
      yield* world.sim.clearFaults
      yield* settled(world)
      yield* stopOnTestClock(daemon)
    }).pipe(quiet), { timeout: 60_000 })

  it.effect("a restart with an intent whose Pod was deleted while the daemon was down: the VM is released and the intent goes", () =>
    Effect.gen(function*() {
      const { world, daemon } = yield* lostReply("web")
      yield* stopOnTestClock(daemon)
      assert.deepStrictEqual(intentsOnDisk(world.statePath), [keyOf("web")], "the stopped daemon left the intent")
      yield* world.sim.clearFaults
      world.model.delete(Pods, NS, "web", { gracePeriodSeconds: 0 })
      assert.isUndefined(peekPod(world.model, "web"))
      const second = yield* world.start(backoffOnly)
      yield* settled(world)
      yield* stopOnTestClock(second)
    }).pipe(quiet), { timeout: 60_000 })

  it.effect("restartPolicy Never with a lost claim reply: the Pod stays Pending (CU-05), then goes Running on the adopted VM", () =>
    Effect.gen(function*() {
      const { world, daemon } = yield* lostReply("job-1", { restartPolicy: "Never" })
      assert.strictEqual(peekPod(world.model, "job-1")?.status?.phase, "Pending")
      const [vm] = yield* world.sim.claims
      yield* world.sim.clearFaults
      yield* secondsUntil(() => running(world.model, "job-1") !== undefined)
      const pod = running(world.model, "job-1")!
      assert.strictEqual(claimIdOf(pod), vm!.id, "the lost reply's VM, adopted")
      assert.strictEqual(yield* claimRequests(world.sim), 1, "no second claim")
      assert.strictEqual((yield* world.sim.claims).length, 1)
      yield* stopOnTestClock(daemon)
    }).pipe(quiet), { timeout: 60_000 })
})

/**
 * No sandboxd request times out while the TestClock moves under it: on a loaded machine a round
 * trip can span several of `secondsUntil`'s steps.
 */
const longRequests = { config: { sandboxdTimeout: Duration.hours(1) } }

/** A first daemon runs Pod "web" on a VM and stops: the VM's id, for the restarts that follow. */
const runningThenStopped = (world: World, spec: Parameters<typeof podBody>[1] = {}) =>
  Effect.gen(function*() {
    const first = yield* world.start(backoffOnly)
    createPod(world.model, podBody("web", spec))
    yield* secondsUntil(() => running(world.model, "web") !== undefined)
    const vm = claimIdOf(running(world.model, "web")!)
    yield* stopOnTestClock(first)
    return vm
  })

/** The Warning Events recorded on Pod `name`, as the apiserver stores them. */
const podWarnings = (world: World, name: string): ReadonlyArray<{ readonly reason: string; readonly message: string }> => {
  const list = world.model.list(CoreEvents, NS)
  if (!Result.isSuccess(list)) return []
  const items = list.success["items"] as unknown as ReadonlyArray<
    { type?: string; reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } }
  >
  return items
    .filter((e) => e.type === "Warning" && e.involvedObject?.kind === "Pod" && e.involvedObject.name === name)
    .map((e) => ({ reason: e.reason ?? "", message: e.message ?? "" }))
}

describe("PodController: a lost sandbox across restarts (VER-7)", () => {
  it.effect("the VM lost while the daemon was down, and a restart before the SandboxLost status landed: the Pod never goes Running on a new VM", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld(longRequests)
      const vm = yield* runningThenStopped(world)
      // sandboxd loses the VM while no daemon runs (its lease is far from over).
      yield* world.sim.forget(vm)
      // The second daemon confirms it gone, but its status write cannot land before it stops.
      const statusFails: FailureRule = { method: "PUT", path: /\/pods\/web\/status$/, code: 500 }
      world.model.faults.failures.push(statusFails)
      const second = yield* world.start(backoffOnly)
      yield* secondsUntil(() => (second.calls.create.get(keyOf("web")) ?? 0) >= 1)
      // A few retries of the write, all refused.
      for (let i = 0; i < 3; i++) yield* secondsUntil(() => true).pipe(Effect.andThen(TestClock.adjust("1 second")))
      assert.strictEqual(peekPod(world.model, "web")?.status?.phase, "Running", "the Failed status has not landed")
      yield* stopOnTestClock(second)
      assert.include(claimsOnDisk(world.statePath), vm, "the lost row stays in the file until the Pod's status is written")
      world.model.faults.failures.length = 0
      // The third daemon: the mark must survive the restart, whatever the second wrote.
      // The default resync (60 s): the row goes at the first reconcile that finds the Pod terminal.
      const third = yield* world.start(PodController.defaultOptions)
      yield* secondsUntil(() => {
        const now = peekPod(world.model, "web")
        return now?.status?.reason === "SandboxLost" || (now !== undefined && claimIdOf(now) !== vm)
      })
      assert.strictEqual(claimIdOf(peekPod(world.model, "web")!), vm, "not moved to another VM")
      const failed = peekPod(world.model, "web")!
      assert.strictEqual(failed.status?.phase, "Failed")
      assert.include(failed.status?.message ?? "", vm)
      assert.strictEqual(yield* claimRequests(world.sim), 1, "never claimed again for the same Pod")
      assert.deepStrictEqual(yield* world.sim.claims, [])
      // The Event says what the Pod's reason says: SandboxLost, never CreateFailed (LEASE-10 — a
      // lease that ran out while the daemon was down ends the Pod as lease-expired).
      yield* secondsUntil(() => podWarnings(world, "web").length > 0)
      for (const event of podWarnings(world, "web")) {
        assert.deepStrictEqual(event, { reason: "SandboxLost", message: `sandbox ${vm} is gone (sandboxd confirmed it); the pod is not given another` })
      }
      // Once the Failed status landed, the row has nothing left to guard: it leaves the file at
      // the next reconcile of the key (the resync's, the status change enqueues nothing: PC-06 —
      // what changes enqueue a Pod).
      yield* secondsUntil(() => claimsOnDisk(world.statePath).length === 0)
      yield* stopOnTestClock(third)
      // And a fourth start finds a terminal Pod and no row: nothing is claimed or written for it.
      const writes = world.model.statusWritesOf.get("web")
      const fourth = yield* world.start(backoffOnly)
      yield* secondsUntil(fourth.handle.synced)
      yield* witnessRunning(world, fourth, "witness")
      assert.strictEqual(peekPod(world.model, "web")?.status?.reason, "SandboxLost")
      assert.strictEqual(yield* claimRequests(world.sim), 2, "the witness's claim only")
      assert.strictEqual(world.model.statusWritesOf.get("web"), writes)
      assert.isUndefined(fourth.calls.create.get(keyOf("web")))
      yield* stopOnTestClock(fourth)
    }).pipe(quiet), { timeout: 60_000 })

  it.effect("the lease ran out while the daemon was down: the restart ends the Pod Failed/SandboxLeaseExpired naming the deadline, never a new VM (LEASE-10)", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld(longRequests)
      const vm = yield* runningThenStopped(world, { annotations: { "sandbox.cocoonstack.io/ttl-seconds": "600" } })
      const [claim] = yield* world.sim.claims
      assert.strictEqual(claim?.id, vm)
      // No daemon runs while the lease ends; sandboxd reaps the VM at its deadline.
      yield* TestClock.adjust("10 minutes")
      yield* secondsUntil(Effect.map(world.sim.claims, (claims) => claims.length === 0))
      const second = yield* world.start(backoffOnly)
      yield* secondsUntil(() => {
        const now = peekPod(world.model, "web")
        return now?.status?.phase === "Failed" || (now !== undefined && claimIdOf(now) !== vm)
      })
      const ended = peekPod(world.model, "web")!
      assert.strictEqual(claimIdOf(ended), vm, "not moved to another VM")
      assert.strictEqual(ended.status?.reason, "SandboxLeaseExpired")
      assert.include(ended.status?.message ?? "", claim!.deadline.replace(/\.[0-9]+Z$/, "Z"), "the message names the deadline")
      // The Event reads as the lease watch's would: reason and message both say the lease ended.
      yield* secondsUntil(() => podWarnings(world, "web").length > 0)
      assert.deepStrictEqual(podWarnings(world, "web"), [
        { reason: "LeaseExpired", message: `sandbox ${vm} lease ended; the microVM is reaped at the deadline` }
      ])
      assert.strictEqual(yield* claimRequests(world.sim), 1, "never claimed again for the same Pod")
      assert.include(claimsOnDisk(world.statePath), vm, "the row stays Lost until the Pod is seen terminal (VER-7)")
      yield* stopOnTestClock(second)
    }).pipe(quiet), { timeout: 60_000 })

  it.effect("the VM lost and the Pod force-deleted, both while the daemon was down: the next start drops the row at its first sync", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld(longRequests)
      const vm = yield* runningThenStopped(world)
      yield* world.sim.forget(vm)
      assert.isTrue(world.model.remove(Pods, NS, "web"))
      const second = yield* world.start(backoffOnly)
      yield* secondsUntil(() => claimsOnDisk(world.statePath).length === 0)
      assert.isTrue(Option.isNone(yield* second.table.held(keyOf("web"))))
      assert.strictEqual(yield* claimRequests(world.sim), 1)
      yield* stopOnTestClock(second)
    }).pipe(quiet), { timeout: 60_000 })

  it.effect("the VM lost while the first Pod list fails: the Lost key's run before the sync drops nothing, and the Pod ends SandboxLost on its own VM", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld(longRequests)
      const vm = yield* runningThenStopped(world)
      // The restart's Pod list fails: no Pod is tracked yet, so every row looks Pod-less.
      const listFails: FailureRule = { method: "GET", path: "/api/v1/pods", code: 500 }
      world.model.faults.failures.push(listFails)
      const second = yield* world.start(backoffOnly)
      // The VM goes after the startup pass vouched for it; the lease watch confirms it gone and
      // publishes the key for a run, which comes before any Pod list.
      yield* world.sim.forget(vm)
      // Whatever the start queued has run: the run awaited is the one the tick publishes.
      yield* within("the restarted controller idle", second.handle.idle)
      const published = yield* second.runs.next(keyOf("web"))
      assert.deepStrictEqual((yield* second.leaseTick).podless, [keyOf("web")])
      yield* published
      assert.isFalse(yield* second.handle.synced)
      assert.deepStrictEqual(claimsOnDisk(world.statePath), [vm], "the Lost row stays: its Pod may well exist")
      world.model.faults.failures.length = 0
      yield* secondsUntil(() => {
        const now = peekPod(world.model, "web")
        return now?.status?.reason === "SandboxLost" || (now !== undefined && claimIdOf(now) !== vm)
      })
      assert.strictEqual(claimIdOf(peekPod(world.model, "web")!), vm, "not moved to another VM")
      assert.strictEqual(peekPod(world.model, "web")?.status?.phase, "Failed")
      assert.strictEqual(yield* claimRequests(world.sim), 1, "never claimed again for the same Pod")
      yield* stopOnTestClock(second)
    }).pipe(quiet), { timeout: 60_000 })
})

describe("PodController: rows whose Pod is gone (LEASE-9)", () => {
  it.effect("a Pod force-deleted while the daemon was down: its row is kept (preserved, not released) while the VM lives, and goes once sandboxd reaped the VM", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld(longRequests)
      const vm = yield* runningThenStopped(world, { annotations: { "sandbox.cocoonstack.io/ttl-seconds": "600" } })
      // Force-deleted: no object, so no owner reference to judge by. A bare Pod or an owned one?
      assert.isTrue(world.model.remove(Pods, NS, "web"))
      const second = yield* world.start(backoffOnly)
      yield* secondsUntil(second.handle.synced)
      // AUTH-6 — doubt preserves: treated as preserved. The VM lives on for a replacement Pod;
      // nothing is released.
      assert.strictEqual((yield* second.leaseTick).podless.length, 0)
      // Whatever the tick handed on for a run (a preserved row's owner asked again) has run.
      yield* handedOnRun(second)
      assert.deepStrictEqual(yield* releaseRequests(world.sim), [])
      assert.deepStrictEqual(claimsOnDisk(world.statePath), [vm])
      // Its deadline passes: sandboxd reaps it (the daemon never renews a lease).
      yield* TestClock.adjust("10 minutes")
      yield* secondsUntil(Effect.map(world.sim.claims, (claims) => claims.length === 0))
      assert.deepStrictEqual((yield* second.leaseTick).podless, [keyOf("web")])
      yield* secondsUntil(() => claimsOnDisk(world.statePath).length === 0)
      assert.isTrue(Option.isNone(yield* second.table.held(keyOf("web"))))
      assert.strictEqual(yield* claimRequests(world.sim), 1)
      assert.deepStrictEqual(yield* releaseRequests(world.sim), [])
      yield* stopOnTestClock(second)
    }).pipe(quiet), { timeout: 90_000 })
})

describe("PodController: the row of an ended lease (LEASE-11)", () => {
  it.effect("a Pod never deleted whose lease ended: Failed/SandboxLeaseExpired repeats until seen stored, then the row leaves the table and the file, nothing released, and later ticks list nothing", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld(longRequests)
      // The default resync (60 s): a status change enqueues nothing (PC-06), the resync sees it.
      const daemon = yield* world.start(PodController.defaultOptions)
      createPod(world.model, podBody("web", { annotations: { "sandbox.cocoonstack.io/ttl-seconds": "600" } }))
      yield* secondsUntil(() => running(world.model, "web") !== undefined)
      const vm = claimIdOf(running(world.model, "web")!)
      // Its deadline passes: sandboxd reaps it (the daemon never renews a lease).
      yield* TestClock.adjust("10 minutes")
      yield* secondsUntil(Effect.map(world.sim.claims, (claims) => claims.length === 0))
      assert.deepStrictEqual((yield* daemon.leaseTick).published, [keyOf("web")])
      yield* secondsUntil(() => peekPod(world.model, "web")?.status?.reason === "SandboxLeaseExpired")
      assert.strictEqual(peekPod(world.model, "web")?.status?.phase, "Failed")
      assert.deepStrictEqual(claimsOnDisk(world.statePath), [vm])
      // Until the pod controller has seen the Pod terminal, each tick pushes the status again
      // (LEASE-7 — expired pushes repeat).
      const seenTerminal = Effect.map(daemon.lifecycle.getPod(keyOf("web")), (pod) =>
        Option.isSome(pod) && pod.value.status?.phase === "Failed")
      if (!(yield* seenTerminal)) assert.deepStrictEqual((yield* daemon.leaseTick).published, [keyOf("web")])
      yield* secondsUntil(seenTerminal)
      // Seen terminal: the next tick drops the row and writes the file without it.
      const tick = yield* daemon.leaseTick
      assert.deepStrictEqual(tick.ended, [keyOf("web")])
      assert.deepStrictEqual(tick.published, [])
      assert.isTrue(Option.isNone(yield* daemon.table.held(keyOf("web"))))
      assert.deepStrictEqual(claimsOnDisk(world.statePath), [])
      // Later ticks have nothing to look at: no listing, no by-id read, no push.
      const asked = (yield* world.sim.audit).length
      for (let i = 0; i < 3; i++) {
        yield* TestClock.adjust("30 seconds")
        const later = yield* daemon.leaseTick
        assert.deepStrictEqual([later.published, later.refreshed, later.lost, later.podless, later.ended], [[], [], [], [], []])
      }
      assert.strictEqual((yield* world.sim.audit).length, asked, "no sandboxd request")
      // Nothing released (sandboxd reaped it) and nothing claimed again; the Pod stays as it was.
      assert.deepStrictEqual(yield* releaseRequests(world.sim), [])
      assert.strictEqual(yield* claimRequests(world.sim), 1)
      assert.strictEqual(peekPod(world.model, "web")?.status?.reason, "SandboxLeaseExpired")
      yield* stopOnTestClock(daemon)
      // A restart finds a terminal Pod and no row: nothing claimed or written.
      const writes = world.model.statusWritesOf.get("web")
      const second = yield* world.start(backoffOnly)
      yield* secondsUntil(second.handle.synced)
      yield* witnessRunning(world, second, "witness")
      assert.strictEqual(yield* claimRequests(world.sim), 2, "the witness's claim only")
      assert.strictEqual(world.model.statusWritesOf.get("web"), writes)
      assert.deepStrictEqual(claimsOnDisk(world.statePath), [claimIdOf(running(world.model, "witness")!)])
      yield* stopOnTestClock(second)
    }).pipe(quiet), { timeout: 90_000 })
})
