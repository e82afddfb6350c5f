/**
 * The one poll loop of the test tooling (the demo, the bench's harness and the tests): look at a
 * state until it holds, in real time (timers, not Effect's Clock), so it works as well under a
 * TestClock, which does not move on its own. A poll's limit only ends what would otherwise hang.
 */
import { Effect } from "effect"

/** `ms` of real time (a timer, not Effect time). */
export const sleepReal = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/** A value, or no value yet (`undefined` or `false`). */
export type Check<A, E, R> = Effect.Effect<A | undefined | false, E, R> | (() => A | undefined | false)

/**
 * Looks at `check` every `everyMs` of real time until it yields a value other than `undefined`
 * or `false`, and returns that value; after `limitMs` ends with `timedOut(limitMs)`.
 */
export const poll = <A, E, R, T>(
  check: Check<A, E, R>,
  limitMs: number,
  everyMs: number,
  timedOut: (limitMs: number) => Effect.Effect<never, T>
) =>
  Effect.gen(function*() {
    const read: Effect.Effect<A | undefined | false, E, R> = Effect.isEffect(check) ? check : Effect.sync(check)
    const deadline = Date.now() + limitMs
    while (true) {
      const value = yield* read
      if (value !== undefined && value !== false) return value
      if (Date.now() > deadline) return yield* timedOut(limitMs)
      yield* sleepReal(everyMs)
    }
  })
