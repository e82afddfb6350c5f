/**
 * The pod controller's one retry policy: exponential from `initial`, doubling, capped at `max`,
 * then jittered ±20 %, forever (1 s → 30 s by default, so 24-36 s once capped; Q-07 — one jittered
 * retry schedule). Every retry of the controller waits on steps of this one `Schedule`: the per-key
 * queues, the informer's list and re-watch, and the status writer's conflict retries. A test hands
 * the controller a counting schedule to check that.
 */
import { Duration, Effect, Schedule } from "effect"

export interface BackoffPolicy {
  readonly initial: Duration.Duration
  readonly max: Duration.Duration
}

export const defaultBackoff: BackoffPolicy = { initial: Duration.seconds(1), max: Duration.seconds(30) }

/** The delays a retry waits, one per step. */
export type RetrySchedule = Schedule.Schedule<unknown>

/**
 * exponential from `initial`, capped at `max`, then ±20 % jitter. Capped after the jitter,
 * every delay from about the 7th retry on was exactly `max`, and a fleet's retries after an
 * apiserver outage stayed bunched at the cap; jittered after the cap they keep spreading there.
 */
export const schedule = (policy: BackoffPolicy): RetrySchedule =>
  Schedule.exponential(policy.initial, 2).pipe(
    Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, policy.max))),
    Schedule.jittered
  )

/**
 * One run of retries on the schedule: each call sleeps the next delay. A fresh one starts the
 * backoff afresh. The schedule never ends; if one did, the retry goes ahead without a wait.
 */
export const stepper = (retry: RetrySchedule): Effect.Effect<Effect.Effect<void>> =>
  Effect.map(Schedule.toStepWithSleep(retry), (step) => step(undefined).pipe(Effect.asVoid, Effect.ignore))

/**
 * The retry policy for a failure only a new node token can fix (sandboxd refused it): the
 * longest delay every time, from the first retry on, instead of hammering from 1 s up.
 */
export const slowSchedule = (policy: BackoffPolicy): RetrySchedule => Schedule.spaced(policy.max)
