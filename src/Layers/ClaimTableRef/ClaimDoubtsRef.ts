/**
 * ClaimDoubts in one `Ref`: every operation is a single pure update, like the claim table.
 */
import { DateTime, Effect, Layer, Option, Ref } from "effect"
import type { ClaimId, PodKey } from "../../Schemas/Ids.ts"
import { ClaimDoubts, type Doubt } from "../../Services/ClaimDoubts.ts"

interface State {
  readonly doubts: ReadonlyMap<PodKey, Doubt>
  readonly seen: ReadonlyMap<ClaimId, DateTime.Utc>
  readonly missing: ReadonlyMap<ClaimId, DateTime.Utc>
}

/** First sightings kept at most; the oldest are forgotten first (a forgotten id only looks newer). */
const SEEN_LIMIT = 10_000

export const makeClaimDoubts = Effect.gen(function*() {
  const ref = yield* Ref.make<State>({ doubts: new Map(), seen: new Map(), missing: new Map() })
  const read = <A>(f: (s: State) => A) => Effect.map(Ref.get(ref), f)

  return ClaimDoubts.of({
    all: read((s) => s.doubts),
    get: (key) => read((s) => Option.fromUndefinedOr(s.doubts.get(key))),
    add: ({ abandonedAt, key, podUid, startedAt }) =>
      Ref.update(ref, (s) => {
        const existing = s.doubts.get(key)
        const doubt: Doubt = existing === undefined
          ? { key, podUid, startedAt, abandonedAt, releasing: [], stuck: [] }
          : {
            ...existing,
            podUid,
            startedAt: DateTime.min(existing.startedAt, startedAt),
            abandonedAt: DateTime.max(existing.abandonedAt, abandonedAt)
          }
        return { ...s, doubts: new Map(s.doubts).set(key, doubt) }
      }),
    update: (key, f) =>
      Ref.update(ref, (s) => {
        const existing = s.doubts.get(key)
        return existing === undefined ? s : { ...s, doubts: new Map(s.doubts).set(key, f(existing)) }
      }),
    clear: (key) =>
      Ref.update(ref, (s) => {
        if (!s.doubts.has(key)) return s
        const doubts = new Map(s.doubts)
        doubts.delete(key)
        return { ...s, doubts }
      }),

    noteSeen: (ids, at) =>
      Ref.modify(ref, (s) => {
        let seen: Map<ClaimId, DateTime.Utc> | undefined
        for (const id of ids) {
          if (s.seen.has(id) || seen?.has(id) === true) continue
          seen ??= new Map(s.seen)
          seen.set(id, at)
        }
        if (seen !== undefined && seen.size > SEEN_LIMIT) {
          for (const id of seen.keys()) {
            if (seen.size <= SEEN_LIMIT) break
            seen.delete(id)
          }
        }
        const next = seen === undefined ? s : { ...s, seen }
        return [next.seen, next]
      }),
    noteMissing: (id, at) =>
      Ref.modify(ref, (s) => {
        const since = s.missing.get(id)
        if (since !== undefined) return [since, s]
        return [at, { ...s, missing: new Map(s.missing).set(id, at) }]
      }),
    notePresent: (ids) =>
      Ref.update(ref, (s) => {
        // Nearly always nothing is missing: the ids are not even looked at then.
        if (s.missing.size === 0) return s
        let missing: Map<ClaimId, DateTime.Utc> | undefined
        for (const id of ids) {
          if (!(missing ?? s.missing).has(id)) continue
          missing ??= new Map(s.missing)
          missing.delete(id)
        }
        return missing === undefined ? s : { ...s, missing }
      })
  })
})

export const ClaimDoubtsRefLayer: Layer.Layer<ClaimDoubts> = Layer.effect(ClaimDoubts, makeClaimDoubts)
