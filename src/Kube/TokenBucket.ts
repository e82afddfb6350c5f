/**
 * A client-side token bucket for apiserver calls (`--kube-api-qps`, `--kube-api-burst`):
 * client-node has no rate limiter of its own. Time comes from the Effect `Clock`, so a test
 * drives it with `TestClock`.
 *
 * Reservation style: `take` always removes one token at once, even into a deficit, and then
 * sleeps until that deficit would have refilled. Waiters are therefore served in arrival order
 * without a queue, and a burst of N callers gets N tokens immediately, then one per 1/qps.
 */
import { Clock, Duration, Effect, Metric, Ref } from "effect"
import { rateLimiterWait } from "../Services/Metrics.ts"

export interface TokenBucket {
  /** Waits (on the Clock) until one token is available and consumes it. */
  readonly take: Effect.Effect<void>
}

interface BucketState {
  /** May be negative: tokens already promised to sleeping callers. */
  readonly tokens: number
  readonly updatedAtMillis: number
}

/** A bucket that never waits: for qps ≤ 0 or not finite (limiting switched off). */
export const unlimited: TokenBucket = { take: Effect.void }

export const make = (qps: number, burst: number): Effect.Effect<TokenBucket> =>
  Effect.gen(function*() {
    if (!Number.isFinite(qps) || qps <= 0) return unlimited
    const capacity = Math.max(1, Math.floor(burst))
    const startedAt = yield* Clock.currentTimeMillis
    const state = yield* Ref.make<BucketState>({ tokens: capacity, updatedAtMillis: startedAt })

    const refill = (current: BucketState, now: number): BucketState => {
      // Two fibers may read the clock out of order; never let time run backwards.
      const elapsed = Math.max(0, now - current.updatedAtMillis)
      return {
        tokens: Math.min(capacity, current.tokens + (elapsed * qps) / 1000),
        updatedAtMillis: Math.max(now, current.updatedAtMillis)
      }
    }

    /** Reserves one token; returns how long to wait for it (0 when one was in hand). */
    const reserve = (now: number) =>
      Ref.modify(state, (current): [number, BucketState] => {
        const refilled = refill(current, now)
        const left = refilled.tokens - 1
        const waitMillis = left >= 0 ? 0 : (-left * 1000) / qps
        return [waitMillis, { ...refilled, tokens: left }]
      })

    /** An interrupted waiter gives its promised token back, so it is not lost. */
    const giveBack = Ref.update(state, (current) => ({ ...current, tokens: Math.min(capacity, current.tokens + 1) }))

    const take = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const waitMillis = yield* reserve(now)
      yield* Metric.update(rateLimiterWait, waitMillis / 1000)
      if (waitMillis > 0) {
        yield* Effect.sleep(Duration.millis(waitMillis)).pipe(Effect.onInterrupt(() => giveBack))
      }
    })
    return { take }
  })
