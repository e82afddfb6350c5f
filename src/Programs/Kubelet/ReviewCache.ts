/**
 * A small cache of review answers (KAPI-4 — review answers are cached briefly, a failed review
 * refuses): each answer kept for the time its kind earns (an acceptance longer than a refusal), at
 * most `capacity` answers, the least recently used one dropped first. Only answers are kept: a
 * review that failed is asked again next time. Time is the Effect `Clock`, so tests drive it with
 * `TestClock`.
 *
 * State: one Map per cache, read and written only by `through`, synchronously in each step
 * (a lookup, or the keeping of an answer): no other fiber runs between a read and its write.
 */
import { Clock, Duration, Effect, Option } from "effect"

interface Entry<A> {
  readonly value: A
  readonly expiresAtMillis: number
}

export interface ReviewCache<A> {
  /**
   * The answer kept for `key` while it is fresh; otherwise `review`'s answer, kept for
   * `ttlOf(answer)`. A failed review is not kept.
   */
  readonly through: <E, R>(key: string, review: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** How many answers are kept now (expired ones included until they are next looked up or pushed out). */
  readonly size: Effect.Effect<number>
}

export const make = <A>(capacity: number, ttlOf: (answer: A) => Duration.Duration): ReviewCache<A> => {
  const entries = new Map<string, Entry<A>>()

  const fresh = (key: string, now: number): Option.Option<A> => {
    const entry = entries.get(key)
    if (entry === undefined) return Option.none()
    entries.delete(key)
    if (entry.expiresAtMillis <= now) return Option.none()
    // Re-inserted: a Map iterates in insertion order, so the first key is the least recently used.
    entries.set(key, entry)
    return Option.some(entry.value)
  }

  const keep = (key: string, value: A, now: number): void => {
    entries.delete(key)
    entries.set(key, { value, expiresAtMillis: now + Duration.toMillis(ttlOf(value)) })
    while (entries.size > capacity) {
      const oldest = entries.keys().next()
      if (oldest.done === true) break
      entries.delete(oldest.value)
    }
  }

  const through = <E, R>(key: string, review: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Option.match(fresh(key, now), {
        onSome: Effect.succeed,
        onNone: () =>
          Effect.flatMap(review, (answer) =>
            Effect.map(Clock.currentTimeMillis, (answeredAt) => {
              keep(key, answer, answeredAt)
              return answer
            }))
      }))

  return { through, size: Effect.sync(() => entries.size) }
}
