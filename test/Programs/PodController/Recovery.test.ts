/**
 * A dependency that comes back wakes the keys waiting on it (Q-08 — a dependency that comes back
 * wakes the keys waiting on it). sandboxd slower than the client's timeout for minutes puts every
 * create at the slow end of its backoff (24-36 s); once it answers again, the first exchange that
 * hears it (the node's probe, in the daemon) sends the waiting keys on at once, instead of each
 * waiting out what is left of its step; a key whose request was in flight then (sent to the slow
 * sandboxd, it ends at the client's timeout) goes again as soon as it fails.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SimFault } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { backoffOnly, createPod, keyOf, makeWorld, podBody, quiet, running, secondsUntil, stopOnTestClock } from "./harness.ts"

describe("PodController: a dependency that comes back (Q-08)", () => {
  it.effect("sandboxd slow for minutes, then back: every waiting Pod runs within a few seconds of its first answer", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const daemon = yield* world.start(backoffOnly)
      yield* world.sim.injectFault("*", SimFault.latency("1 hour"))
      const names = Array.from({ length: 10 }, (_, i) => `slow-${i}`)
      for (const name of names) createPod(world.model, podBody(name))
      // Every key fails on and on until its backoff is at the cap (1, 2, 4, 8, 16, then 30 s ±20 %).
      yield* secondsUntil(() => names.every((name) => (daemon.calls.create.get(keyOf(name)) ?? 0) >= 7), 600)
      assert.isTrue(names.every((name) => running(world.model, name) === undefined))
      yield* world.sim.clearFaults
      // One exchange hears sandboxd answer again.
      yield* daemon.sandboxd.info
      const took = yield* secondsUntil(() => names.every((name) => running(world.model, name) !== undefined), 60)
      // At most a request's timeout (one sent before the recovery) and a few turns (a TestClock
      // second passes each few real milliseconds, a loaded machine's I/O takes several), never
      // what is left of a step at the backoff's cap (24-36 s).
      const bound = Duration.toSeconds(world.config.sandboxdTimeout) + 6
      assert.isAtMost(took, bound, `the last Pod ran ${took} s after sandboxd answered again`)
      yield* stopOnTestClock(daemon)
    }).pipe(quiet), { timeout: 120_000 })
})
