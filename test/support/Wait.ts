/**
 * Waiting on work that runs on real sockets, files and timers, which TestClock cannot move:
 * the one copy of `eventually` and friends for every test. A wait's time limit only ends a test
 * that would otherwise hang; no test asserts how fast anything was. A check that something did
 * NOT happen waits for a receipt instead (`Receipts.ts`): a span of real time proves nothing.
 */
import { Effect, Logger } from "effect"
import { type Check, poll, sleepReal } from "../../testkit/Poll.ts"

/**
 * A few ms of real time (a 5 ms timer), so sockets, files and child processes make progress: the
 * one step of every test's own poll loop (`while (no reply yet) yield* flushIO`).
 */
export const flushIO = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))

export { sleepReal }

/**
 * The end of the current job (a macrotask later): a WeakRef's target made or read during a job
 * stays alive until that job ends (KeepDuringJob), so only a collection after it can free it.
 */
export const nextMacrotask = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/**
 * Polls `check` every `everyMs` of real time (one real turn by default) until it yields a value
 * other than `undefined` or `false`, and returns that value; after `limitMs` of real time the
 * test fails naming `what`.
 */
export const eventually = <A, E = never, R = never>(what: string, check: Check<A, E, R>, limitMs = 15_000, everyMs = 2) =>
  poll(check, limitMs, everyMs, (limit) => Effect.die(new Error(`timed out after ${limit} ms waiting for ${what}`)))

/**
 * `effect`, or the test fails naming `what` after `limitMs` of real time: the hang limit of a
 * wait on a receipt, so one that never comes says which it was (not the test's bare timeout).
 */
export const within = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, limitMs = 20_000) =>
  Effect.raceFirst(
    effect,
    Effect.callback<never>((resume) => {
      const timer = setTimeout(() => resume(Effect.die(new Error(`timed out after ${limitMs} ms waiting for ${what}`))), limitMs)
      return Effect.sync(() => clearTimeout(timer))
    })
  )

/** Logs off unless VK_TEST_LOGS is set (the daemon's parts log every step). */
export const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  process.env["VK_TEST_LOGS"] === undefined && process.env["PODCTL_LOGS"] === undefined
    ? Effect.provide(effect, Logger.layer([]))
    : effect
