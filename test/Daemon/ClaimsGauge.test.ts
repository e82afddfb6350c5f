/**
 * `vk_sandbox_claims` at the composition root: `src/Daemon.ts` counts the claims table's rows by
 * state at each scrape. A row whose VM sandboxd confirmed gone stays as a Lost row until its Pod
 * is settled (VER-7 — a lost sandbox's row outlives restarts until its Pod is settled); an operator
 * sees how many there are under `state="lost"`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { claimIdOf, createPod, eventually, eventuallyEffect, podBody, running } from "../Programs/PodController/harness.ts"
import { startDaemon, world } from "./harness.ts"

/** `vk_sandbox_claims` by state, and `vk_sandbox_claims_held`, from a scrape. */
const claimsOf = (body: string) => ({
  byState: Object.fromEntries([...body.matchAll(/^vk_sandbox_claims\{state="([a-z_]+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])])),
  held: Number(/^vk_sandbox_claims_held (\d+)$/m.exec(body)?.[1] ?? "-1")
})

describe("Daemon: vk_sandbox_claims by state", () => {
  it.live("a row turned Lost (VER-7) is counted under state=\"lost\", no longer under durable", () =>
    Effect.gen(function*() {
      const w = yield* world({ leaseWatchInterval: Duration.millis(200) })
      const daemon = yield* startDaemon(w.config)
      const scrape = Effect.map(daemon.metrics, (answer) => claimsOf(answer.body))
      createPod(w.model, podBody("p"))
      const pod = yield* eventually("p Running", () => running(w.model, "p"))
      yield* eventuallyEffect("p counted durable", Effect.map(scrape, (c) => c.byState["durable"] === 1))
      assert.deepStrictEqual((yield* scrape).byState, { durable: 1, tentative: 0, quarantined: 0, lost: 0 })

      // The VM vanishes; the Pod's Failed status cannot be written, so its Lost row stays (VER-7).
      w.model.faults.failures.push({ method: "PUT", path: /\/pods\/p\/status$/, code: 500 })
      yield* w.sim.forget(claimIdOf(pod))
      yield* eventuallyEffect("the row counted lost", Effect.map(scrape, (c) => c.byState["lost"] === 1))
      assert.deepStrictEqual(yield* scrape, { byState: { durable: 0, tentative: 0, quarantined: 0, lost: 1 }, held: 1 })
      yield* daemon.stop
    }), { timeout: 30_000 })
})
