import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Random, Schedule } from "effect"
import * as Backoff from "../../../src/Programs/PodController/Backoff.ts"

/** The first `count` delays of one run of the schedule, in milliseconds. */
const delays = (count: number) =>
  Effect.gen(function*() {
    const step = yield* Schedule.toStep(Backoff.schedule(Backoff.defaultBackoff))
    const out: Array<number> = []
    for (let i = 0; i < count; i++) {
      const [, delay] = yield* step(0, undefined)
      out.push(Duration.toMillis(delay))
    }
    return out
  })

describe("Backoff", () => {
  it.effect("Q-07: at the cap the delays keep their ±20 % jitter (24-36 s), not all exactly 30 s", () =>
    Effect.gen(function*() {
      for (const seed of ["a", "b", "c"]) {
        const all = yield* delays(20).pipe(Random.withSeed(seed))
        // from 1 s doubling: the 6th delay (32 s) is the first one capped
        const capped = all.slice(9, 20)
        for (const delay of capped) {
          assert.isAtLeast(delay, 24_000, `seed ${seed}: ${capped.join(", ")}`)
          assert.isAtMost(delay, 36_000, `seed ${seed}: ${capped.join(", ")}`)
        }
        assert.isAbove(new Set(capped).size, 5, `seed ${seed}: spread, not bunched: ${capped.join(", ")}`)
        // before the cap: 1 s, 2 s, 4 s … each ±20 %
        all.slice(0, 5).forEach((delay, i) => {
          assert.isAtLeast(delay, 0.8 * 1000 * 2 ** i)
          assert.isAtMost(delay, 1.2 * 1000 * 2 ** i)
        })
      }
    }))
})
