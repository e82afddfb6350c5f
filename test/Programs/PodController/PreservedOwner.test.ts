/**
 * AUTH-9 — a preserved VM is released once its owner goes: a VM preserved because its Pod was
 * deleted while the owner lived is released once that owner is gone, though no Pod will ever be
 * deleted for it again. The namespace controller does exactly this: it deletes a namespace's Pods
 * and their Sandboxes in no set order, and a Pod that goes first leaves its VM preserved; before,
 * nothing asked the owner again and the VM was held until its lease ended (24 h by default). The
 * row keeps the owner it waits on, in the claims file too, so a restart in between changes nothing;
 * each lease-watch tick asks again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import { Pods, Sandboxes } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import {
  claimIdOf,
  claimsOnDisk,
  createPod,
  createSandboxCr,
  eventually,
  eventuallyEffect,
  makeWorld,
  NS,
  peekPod,
  podBody,
  quiet,
  releaseRequests,
  running,
  type World
} from "./harness.ts"

/** A Sandbox and its Running Pod, then the Pod deleted while the Sandbox lives: preserved. */
const preserved = (world: World) =>
  Effect.gen(function*() {
    const ownerUid = createSandboxCr(world.model, "box")
    createPod(world.model, podBody("box", { owner: { name: "box", uid: ownerUid } }))
    const claimId = claimIdOf(yield* eventually("the Pod Running", () => running(world.model, "box")))
    world.model.delete(Pods, NS, "box", { gracePeriodSeconds: 30 })
    yield* eventually("the Pod object removed", () => peekPod(world.model, "box") === undefined)
    assert.deepStrictEqual(yield* releaseRequests(world.sim), [], "preserved: the owner lives")
    // The row says whom it waits on.
    yield* eventually("the owner in the claims file", () => fileText(world).includes(`"owner":{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","name":"box","uid":"${ownerUid}"}`))
    return { claimId, ownerUid }
  })

const fileText = (world: World) => {
  try {
    return NodeFs.readFileSync(world.statePath, "utf8")
  } catch {
    return ""
  }
}

const released = (world: World, claimId: string) =>
  eventuallyEffect("the release at sandboxd", Effect.map(releaseRequests(world.sim), (paths) => paths.includes(`/v1/sandboxes/${claimId}/release`)))

describe("PodController: a preserved VM whose owner goes later (AUTH-9)", () => {
  it.live("the owner deleted after its Pod: the next lease-watch tick releases the VM and drops the row", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start()
      const { claimId } = yield* preserved(world)
      // The Pod's deletion has been handled to the end (its key's runs done): only a tick asks again.
      yield* eventuallyEffect("the key idle", Effect.gen(function*() {
        const cached = yield* daemon.handle.cachedPods
        return cached.length === 0 && (yield* daemon.handle.retainedKeys) === 0
      }))
      // While the owner lives, a tick asks and keeps it.
      yield* daemon.leaseTick
      assert.deepStrictEqual(yield* releaseRequests(world.sim), [])
      assert.strictEqual(world.model.delete(Sandboxes, NS, "box", {})._tag, "Success")
      yield* daemon.leaseTick
      yield* released(world, claimId)
      yield* eventually("the row gone from the file", () => !claimsOnDisk(world.statePath).includes(claimId))
      assert.isFalse((yield* world.sim.claims).some((c) => c.id === claimId))
    }).pipe(quiet), { timeout: 30_000 })

  it.live("a restart in between: the reloaded row still knows its owner, and is released once it goes", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const first = yield* world.start()
      const { claimId } = yield* preserved(world)
      yield* first.stop
      assert.strictEqual(world.model.delete(Sandboxes, NS, "box", {})._tag, "Success")
      const second = yield* world.start()
      yield* eventually("the reloaded row verified", () => claimsOnDisk(world.statePath).includes(claimId))
      yield* eventuallyEffect("released after a tick", Effect.gen(function*() {
        yield* second.leaseTick
        return (yield* releaseRequests(world.sim)).includes(`/v1/sandboxes/${claimId}/release`)
      }))
      yield* eventually("the row gone from the file", () => !claimsOnDisk(world.statePath).includes(claimId))
    }).pipe(quiet), { timeout: 30_000 })

  it.live("a replacement Pod adopts the preserved VM: the row waits on no owner any more", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start()
      const { claimId, ownerUid } = yield* preserved(world)
      createPod(world.model, podBody("box", { owner: { name: "box", uid: ownerUid } }))
      assert.strictEqual(claimIdOf(yield* eventually("the replacement Running", () => running(world.model, "box"))), claimId)
      yield* eventually("the owner left the file", () => !fileText(world).includes(`"owner"`))
      yield* daemon.leaseTick
      assert.deepStrictEqual(yield* releaseRequests(world.sim), [])
    }).pipe(quiet), { timeout: 30_000 })
})
