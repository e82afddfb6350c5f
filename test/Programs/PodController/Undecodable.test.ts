/**
 * INF-1 — a Pod the daemon cannot decode is left out: a Pod the daemon cannot decode (a value the
 * apiserver's storage holds but the slim Pod refuses: here a label whose value is a number, stored
 * as is by the simulator's `put`) is left out of the informer, never the whole list or watch. Over
 * the real wire: the in-memory API server and the sandboxd simulator over loopback HTTP, the live
 * clients, the real provider.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Metric, Option, Result } from "effect"
import { sandboxLostStatus } from "../../../src/Programs/Provider/Status.ts"
import * as Metrics from "../../../src/Services/Metrics.ts"
import { SimFault } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { CoreEvents, Pods } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../testkit/Simulators/Apiserver/Status.ts"
import { makeLogCapture } from "../../support/Logs.ts"
import {
  claimIdOf,
  claimsOnDisk,
  claimRequests,
  createPod,
  eventually,
  eventuallyEffect,
  keyOf,
  makeWorld,
  NS,
  peekPod,
  podBody,
  pushReceipt,
  releaseRequests,
  running
} from "./harness.ts"

/** `podBody(name)` with a label value of a type the slim Pod refuses (the apiserver keeps strings only). */
const badBody = (name: string, value: unknown = 7): JsonObject => {
  const body = podBody(name)
  return { ...body, metadata: { ...(body["metadata"] as JsonObject), labels: { team: value } } } as JsonObject
}

/** The stored Pod with a bad label added, everything else (status, uid) as stored. */
const spoiled = (stored: JsonObject, value: unknown = 7): JsonObject => {
  const metadata = stored["metadata"] as JsonObject
  return { ...stored, metadata: { ...metadata, labels: { team: value } } } as JsonObject
}

const WARNING = "a pod the daemon cannot decode is left out"

/** A daemon on a fresh world, with Pod `name` created and Running on it. */
const runningIn = (name: string, options?: Parameters<typeof podBody>[1]) =>
  Effect.gen(function*() {
    const world = yield* makeWorld()
    const daemon = yield* world.start()
    createPod(world.model, podBody(name, options))
    const pod = yield* eventually(`${name} Running`, () => running(world.model, name))
    return { world, daemon, pod }
  })

/** The same, with a Pod "witness" running too, whose pushes are receipts (`pushReceipt`). */
const runningWithWitness = (name: string) =>
  Effect.gen(function*() {
    const { world, daemon, pod } = yield* runningIn(name)
    createPod(world.model, podBody("witness"))
    yield* eventually("witness Running", () => running(world.model, "witness"))
    yield* daemon.handle.idle
    return { world, daemon, pod, receipt: pushReceipt(world, daemon, "witness") }
  })

const undecodableCount = Effect.map(Metric.value(Metrics.undecodablePods), (state) => state.count)

/** `vk_sandbox_pods_unreadable`: the keys held by a version the daemon cannot decode now. */
const unreadableNow = Effect.map(Metric.value(Metrics.unreadablePods), (state) => state.value)

/** The Events with reason Undecodable the daemon wrote in the namespace. */
const undecodableEvents = (model: { list: (r: typeof CoreEvents, ns: string) => Result.Result<JsonObject, unknown> }) => {
  const list = model.list(CoreEvents, NS)
  const items = Result.isSuccess(list) ? (list.success["items"] as ReadonlyArray<JsonObject>) : []
  return items.filter((event) => event["reason"] === "Undecodable")
}

describe("PodController: a Pod the decoder refuses (INF-1)", () => {
  it.live("is left out of a list and of the watch: the node syncs, others run, it gets no claim and no status; logged once per version", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.gen(function*() {
        const world = yield* makeWorld()
        const before = yield* undecodableCount
        createPod(world.model, podBody("good"))
        const bad = world.model.put(Pods, badBody("bad"))
        const badUid = String((bad["metadata"] as JsonObject)["uid"])
        const daemon = yield* world.start()
        yield* eventuallyEffect("synced despite the bad pod", daemon.handle.synced, 5_000)
        yield* eventually("good Running", () => running(world.model, "good"))
        const warnings = () => logs.lines.filter((line) => line.message === WARNING)
        yield* eventually("the bad pod logged", () => warnings().length === 1)
        const [line] = warnings()
        assert.strictEqual(line!.annotations["pod"], `${NS}/bad`)
        assert.strictEqual(line!.annotations["uid"], badUid)
        assert.match(String(line!.annotations["error"]), /labels/)
        assert.strictEqual((yield* undecodableCount) - before, 1)

        // The watch goes on past a bad Pod: one added after the list, and a second bad version.
        world.model.put(Pods, badBody("bad-later"))
        createPod(world.model, podBody("after"))
        yield* eventually("after Running", () => running(world.model, "after"))
        world.model.put(Pods, spoiled(world.model.peek(Pods, NS, "bad")!, 8))
        yield* eventually("each new version logged once", () => warnings().length === 3)
        // A relist that meets the same versions again logs nothing new.
        world.model.compact()
        world.model.expireWatches()
        createPod(world.model, podBody("relisted"))
        yield* eventually("relisted Running", () => running(world.model, "relisted"))
        // "relisted" came after the relist's bad versions; every run they could have caused has ended.
        yield* daemon.handle.idle
        assert.strictEqual(warnings().length, 3)
        assert.strictEqual((yield* undecodableCount) - before, 3)

        // Nothing was done for the bad Pods: no claim, no status, nothing in the provider.
        assert.strictEqual(yield* claimRequests(world.sim), 3)
        assert.isUndefined(peekPod(world.model, "bad")?.status?.phase)
        assert.isUndefined(peekPod(world.model, "bad-later")?.status?.phase)
        assert.isTrue(Option.isNone(yield* daemon.lifecycle.getPod(keyOf("bad"))))
        assert.deepStrictEqual((yield* daemon.handle.cachedPods).map((pod) => pod.metadata?.name).sort(), ["after", "good", "relisted"])

        // Once it can be read, it is an ordinary Pod.
        world.model.put(Pods, spoiled(world.model.peek(Pods, NS, "bad")!, "seven"))
        yield* eventually("bad Running once readable", () => running(world.model, "bad"))
      }).pipe(Effect.provide(logs.layer))
    }), { timeout: 30_000 })

  it.live("a tracked Pod that turns undecodable keeps its last good state: no release, no status write (a push waits); readable again, the push is written", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.gen(function*() {
        const { world, daemon, pod: p, receipt } = yield* runningWithWitness("p")
        const good = world.model.peek(Pods, NS, "p")!
        const writes = world.model.statusWrites

        world.model.put(Pods, spoiled(good))
        yield* eventually("the bad update logged", () => logs.lines.some((line) => line.message === WARNING))
        // A push for the Pod while its version cannot be read: built on the last good Pod it
        // would only meet a 409 and a re-read of the same bad Pod, so it waits.
        yield* daemon.pushStatus({ ...(good as V1Pod), status: { ...(good["status"] as object), message: "pushed while unreadable" } })
        yield* receipt
        const cached = (yield* daemon.handle.cachedPods).find((pod) => pod.metadata?.name === "p")
        assert.strictEqual(cached?.metadata?.resourceVersion, p.metadata.resourceVersion, "the last good state is kept")
        assert.strictEqual(world.model.statusWrites, writes + 1, "no status write but the receipt's")
        assert.deepStrictEqual(yield* releaseRequests(world.sim), [])
        assert.isTrue(Option.isSome(yield* daemon.lifecycle.getPod(keyOf("p"))))

        world.model.put(Pods, spoiled(world.model.peek(Pods, NS, "p")!, "seven"))
        yield* eventually("the waiting push written", () => peekPod(world.model, "p")?.status?.message === "pushed while unreadable")
        assert.deepStrictEqual(yield* releaseRequests(world.sim), [])
      }).pipe(Effect.provide(logs.layer))
    }), { timeout: 30_000 })

  it.live("a Pending Pod whose newest version is undecodable gets no claim from its last good version; readable again, it is claimed at once", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.gen(function*() {
        const world = yield* makeWorld()
        const daemon = yield* world.start()
        // No claim can be had: the create fails and is retried on the backoff (50 → 400 ms).
        yield* world.sim.injectFault("claim", SimFault.status(429, "pool empty"))
        createPod(world.model, podBody("p"))
        yield* eventually("p ProviderFailed", () => peekPod(world.model, "p")?.status?.reason === "ProviderFailed")
        world.model.put(Pods, spoiled(world.model.peek(Pods, NS, "p")!))
        yield* eventually("the bad update logged", () => logs.lines.some((line) => line.message === WARNING))
        const attempts = daemon.calls.create.get(keyOf("p")) ?? 0
        // The key waits out its backoff: its next run must come, and it is the one that would
        // create (counted) or, once the faults are cleared, claim.
        const nextRun = yield* daemon.runs.next(keyOf("p"))
        assert.strictEqual(yield* unreadableNow, 1, "held: counted in the gauge")
        // Claims could be had now; the retry that comes finds the key unreadable and claims nothing.
        yield* world.sim.clearFaults
        yield* nextRun
        assert.deepStrictEqual(yield* world.sim.claims, [], "no VM claimed from the last good version")
        assert.strictEqual(daemon.calls.create.get(keyOf("p")) ?? 0, attempts, "no create")
        assert.strictEqual(peekPod(world.model, "p")?.status?.phase, "Pending")
        // Why it waits is on the Pod, where its owner looks (kubectl describe), not only in the log.
        const [event] = yield* eventually("the Undecodable event", () => {
          const found = undecodableEvents(world.model)
          return found.length > 0 ? found : undefined
        })
        const involved = event!["involvedObject"] as JsonObject
        assert.deepStrictEqual([involved["kind"], involved["name"], involved["uid"]], ["Pod", "p", (world.model.peek(Pods, NS, "p")!["metadata"] as JsonObject)["uid"]])
        assert.strictEqual(event!["type"], "Warning")
        assert.match(String(event!["message"]), /cannot decode this pod at resourceVersion \d+ \(.*labels.*\).*no sandbox is claimed/)

        // Readable again, as it was before (no change that would enqueue it, PC-06 — what changes
        // enqueue a Pod; the resync is a minute away): claimed at once.
        const { labels: _bad, ...metadata } = world.model.peek(Pods, NS, "p")!["metadata"] as JsonObject
        world.model.put(Pods, { ...world.model.peek(Pods, NS, "p")!, metadata } as JsonObject)
        yield* eventually("p Running once readable", () => running(world.model, "p"), 5_000)
        assert.strictEqual((yield* world.sim.claims).length, 1)
        assert.strictEqual(yield* unreadableNow, 0, "readable again: no longer held")
      }).pipe(Effect.provide(logs.layer))
    }), { timeout: 30_000 })

  it.live("a tracked Running Pod that turns undecodable and then loses its VM is written Failed/SandboxLost all the same (a patch, once); a condition another writer set in the unreadable version stays", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.gen(function*() {
        const { world, daemon, pod: p, receipt } = yield* runningWithWitness("p")
        assert.isDefined(p.status?.podIP)
        // What the lease watch builds its push from (taken now: once the Pod is seen Failed, its Lost row goes).
        const tracked = yield* daemon.lifecycle.getPod(keyOf("p"))
        const row = yield* daemon.table.held(keyOf("p"))
        assert.isTrue(Option.isSome(tracked) && Option.isSome(row))
        // The version the daemon cannot read also carries another writer's condition (a
        // readiness gate's controller): the last good Pod never had it.
        const gate = { type: "example.com/Gate", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" }
        const current = spoiled(world.model.peek(Pods, NS, "p")!)
        const currentStatus = current["status"] as JsonObject
        world.model.put(Pods, {
          ...current,
          status: { ...currentStatus, conditions: [...(currentStatus["conditions"] as ReadonlyArray<JsonObject>), gate] }
        } as JsonObject)
        yield* eventually("the bad update logged", () => logs.lines.some((line) => line.message === WARNING))

        // sandboxd loses the VM; the lease watch confirms it gone and pushes Failed/SandboxLost.
        yield* world.sim.forget(claimIdOf(p))
        assert.deepStrictEqual((yield* daemon.leaseTick).lost, [keyOf("p")])
        const failed = yield* eventually("p Failed", () => {
          const pod = peekPod(world.model, "p")
          return pod?.status?.phase === "Failed" ? pod : undefined
        })
        assert.strictEqual(failed.status?.reason, "SandboxLost")
        assert.include(failed.status?.message ?? "", claimIdOf(p))
        assert.isUndefined(failed.status?.podIP, "the Running status's IP is gone")
        const stored = world.model.peek(Pods, NS, "p")!
        const status = stored["status"] as JsonObject
        assert.isFalse(
          ((status["conditions"] ?? []) as ReadonlyArray<JsonObject>).some((c) => c["type"] === "Ready" && c["status"] === "True"),
          "no Ready=True left"
        )
        assert.deepStrictEqual(
          ((status["conditions"] ?? []) as ReadonlyArray<JsonObject>).map((c) => c["type"]),
          ["example.com/Gate"],
          "the node agent's conditions gone, another writer's kept as stored"
        )
        assert.deepStrictEqual((stored["metadata"] as JsonObject)["labels"], { team: 7 }, "nothing else of the Pod written")
        assert.strictEqual(failed.metadata.uid, p.metadata.uid)
        assert.deepStrictEqual(yield* releaseRequests(world.sim), [], "nothing released: the VM is gone")

        // The same ending pushed again (as the lease watch repeats its pushes) is not written again.
        assert.strictEqual(world.model.statusPatches, 1)
        const writes = world.model.statusWrites
        // Seen terminal as the patch left it: the Lost row goes (VER-7 — a lost sandbox's row
        // outlives restarts until its Pod is settled), as after a PUT.
        yield* eventuallyEffect("the Lost row dropped", Effect.map(daemon.table.held(keyOf("p")), Option.isNone), 5_000)
        const claim = Option.getOrThrow(row).record
        const trackedPod = Option.getOrThrow(tracked)
        yield* daemon.pushStatus({ ...trackedPod, status: sandboxLostStatus(trackedPod, claim.id, claim.claimedAt) })
        yield* receipt
        assert.strictEqual(world.model.statusPatches, 1)
        assert.strictEqual(world.model.statusWrites, writes + 1, "no write but the receipt's")
      }).pipe(Effect.provide(logs.layer))
    }), { timeout: 30_000 })

  it.live("the lease of a Pod that turned undecodable ends: written Failed/SandboxLeaseExpired once, then its row goes (LEASE-11) instead of a push, a log line and an Event bump every tick", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.gen(function*() {
        const { world, daemon, pod: p } = yield* runningIn("p", { annotations: { "sandbox.cocoonstack.io/ttl-seconds": "1" } })
        world.model.put(Pods, spoiled(world.model.peek(Pods, NS, "p")!))
        yield* eventually("the bad update logged", () => logs.lines.some((line) => line.message === WARNING))
        // The lease ends and sandboxd reaps the VM. The daemon here reads the real clock: its
        // deadline (1 s after the claim) is the receipt, not a span of time.
        const claim = (yield* world.sim.claims).find((c) => c.id === claimIdOf(p))!
        yield* eventually("the lease's deadline passed", () => Date.now() > Date.parse(claim.deadline))
        yield* world.sim.forget(claimIdOf(p))
        assert.deepStrictEqual((yield* daemon.leaseTick).published, [keyOf("p")])
        yield* eventually("p Failed", () => peekPod(world.model, "p")?.status?.reason === "SandboxLeaseExpired")
        assert.strictEqual(world.model.statusPatches, 1)
        // What was patched is what the daemon now holds of the Pod (its newest version still
        // unreadable): the next tick drops the row rather than pushing, logging and counting again.
        yield* eventuallyEffect("seen terminal", Effect.map(daemon.lifecycle.getPod(keyOf("p")), (pod) =>
          Option.isSome(pod) && pod.value.status?.phase === "Failed"), 5_000)
        const tick = yield* daemon.leaseTick
        assert.deepStrictEqual([tick.ended, tick.published], [[keyOf("p")], []])
        assert.isTrue(Option.isNone(yield* daemon.table.held(keyOf("p"))))
        assert.deepStrictEqual(claimsOnDisk(world.statePath), [])
        assert.deepStrictEqual(yield* releaseRequests(world.sim), [], "nothing released: sandboxd reaped it")
        assert.strictEqual(world.model.statusPatches, 1)
      }).pipe(Effect.provide(logs.layer))
    }), { timeout: 30_000 })

  it.live("a controller restart meets a tracked Pod only in an undecodable version: what the provider holds is not dangling; its DELETED event releases it", () =>
    Effect.gen(function*() {
      const { world, daemon, pod: p } = yield* runningIn("p")
      yield* daemon.stopController
      world.model.put(Pods, spoiled(world.model.peek(Pods, NS, "p")!))
      const writes = world.model.statusWrites
      const second = yield* daemon.startController()
      yield* eventuallyEffect("synced", second.handle.synced)
      yield* second.handle.idle // the first sync's work has all ended: a release would have been sent
      assert.deepStrictEqual(yield* releaseRequests(world.sim), [], "no dangling release of a Pod that is there")
      assert.isTrue(Option.isSome(yield* daemon.lifecycle.getPod(keyOf("p"))))
      assert.strictEqual(world.model.statusWrites, writes, "no status write")
      assert.strictEqual(yield* unreadableNow, 1)

      // Its deletion is seen although the DELETED event's Pod cannot be decoded.
      assert.isTrue(world.model.remove(Pods, NS, "p"))
      yield* eventuallyEffect(
        "p released",
        Effect.map(releaseRequests(world.sim), (paths) => paths.includes(`/v1/sandboxes/${claimIdOf(p)}/release`))
      )
      assert.strictEqual(yield* unreadableNow, 0, "gone: no longer held")
    }).pipe(Effect.provide(makeLogCapture().layer)), { timeout: 30_000 })

  it.live("a relist that no longer holds a Pod known only in an undecodable version ends it: released", () =>
    Effect.gen(function*() {
      const { world, daemon, pod: q } = yield* runningIn("q")
      // After a controller restart (the provider keeps what it holds) q is known only in its
      // undecodable version.
      yield* daemon.stopController
      world.model.put(Pods, spoiled(world.model.peek(Pods, NS, "q")!))
      const second = yield* daemon.startController()
      yield* eventuallyEffect("synced", second.handle.synced)
      yield* second.handle.idle
      assert.deepStrictEqual(yield* releaseRequests(world.sim), [])
      // The watch misses the deletion (dropped, history compacted): only the relist tells.
      yield* eventually("a watch open", () => world.model.openWatches() > 0)
      world.apiserver.resetWatchConnections()
      assert.isTrue(world.model.remove(Pods, NS, "q"))
      world.model.compact()
      yield* eventuallyEffect(
        "q released",
        Effect.map(releaseRequests(world.sim), (paths) => paths.includes(`/v1/sandboxes/${claimIdOf(q)}/release`))
      )
    }).pipe(Effect.provide(makeLogCapture().layer)), { timeout: 30_000 })
})
