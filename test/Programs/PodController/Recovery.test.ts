/**
 * A dependency that comes back wakes the keys waiting on it (Q-08 — a returning dependency wakes
 * waiting keys). sandboxd slower than the client's timeout for minutes puts every
 * create at the slow end of its backoff (24-36 s); once it answers again, the first exchange that
 * hears it (the node's probe, in the daemon) sends the waiting keys on at once, instead of each
 * waiting out what is left of its step; a key whose request was in flight then (sent to the slow
 * sandboxd, it ends at the client's timeout) goes again as soon as it fails.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { claimRefOf } from "../../../src/Sandboxd/Routes.ts"
import { SimFault, type SimRequest } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { backoffOnly, createPod, eventually, keyOf, makeWorld, podBody, quiet, running, secondsUntil, stopOnTestClock } from "./harness.ts"

/** The claim_ref of a JSON body ("" for any other body). */
const bodyClaimRef = (body: string): string => {
  try {
    const parsed: unknown = JSON.parse(body)
    return typeof parsed === "object" && parsed !== null && "claim_ref" in parsed ? String(parsed.claim_ref) : ""
  } catch {
    return ""
  }
}

/** The pod key a claim or listing request is for. */
const keyAsked = (request: SimRequest): string => claimRefOf(request.path) ?? bodyClaimRef(request.body)

describe("PodController: a dependency that comes back (Q-08)", () => {
  it.effect("sandboxd slow for minutes, then back: every waiting Pod runs at once, one in flight then once its request times out", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start(backoffOnly)
      yield* world.sim.injectFault("*", SimFault.latency("1 hour"))
      const names = Array.from({ length: 10 }, (_, i) => `slow-${i}`)
      for (const name of names) createPod(world.model, podBody(name))
      // Every key fails on and on until its backoff is at the cap (1, 2, 4, 8, 16, then 30 s ±20 %).
      yield* secondsUntil(() => names.every((name) => (daemon.calls.create.get(keyOf(name)) ?? 0) >= 7), 600)
      assert.isTrue(names.every((name) => running(world.model, name) === undefined))
      // From here the TestClock stands but for one request timeout, so real I/O, however slow, is
      // never taken for waiting: a key left to what remains of its backoff step would never run.
      // First the held requests settle: the daemon waits on exactly the requests sandboxd holds
      // (a request timed out on the last step is gone from both sides, one sent is held on both).
      const waiting = (): Array<string> => names.filter((name) => (daemon.sandboxdInFlight.get(keyOf(name)) ?? 0) > 0).map(keyOf).sort()
      const held = yield* eventually<ReadonlyArray<string>>("the daemon waiting on exactly the requests sandboxd holds",
        Effect.map(world.sim.delayed, (requests) => {
          const asked = requests.map(keyAsked).sort()
          const now = waiting()
          return asked.join() === now.join() && now
        }), 60_000)
      yield* world.sim.clearFaults
      // One exchange hears sandboxd answer again.
      yield* daemon.sandboxd.info
      const heldNames = new Set<string>(held)
      yield* eventually("every Pod whose request sandboxd does not hold Running", () =>
        names.every((name) => heldNames.has(keyOf(name)) || running(world.model, name) !== undefined), 60_000)
      assert.isTrue(names.every((name) => !heldNames.has(keyOf(name)) || running(world.model, name) === undefined))
      // A held request ends at its client's timeout (sent at most that long ago); its key goes
      // again as soon as it fails, on the same TestClock instant.
      yield* TestClock.adjust(world.config.sandboxdTimeout)
      yield* eventually("every Pod Running", () => names.every((name) => running(world.model, name) !== undefined), 60_000)
      yield* stopOnTestClock(daemon)
    }).pipe(quiet), { timeout: 180_000 })
})
