/**
 * The live `DependencyRecovery`: per dependency, whether its last exchange failed; an answer
 * after a failure is published (a sliding PubSub of one: a listener that is busy hears one
 * recovery, not every answer since).
 */
import { Effect, Layer, PubSub, Stream } from "effect"
import { type Dependency, DependencyRecovery } from "../Services/DependencyRecovery.ts"

export const make = Effect.gen(function*() {
  const failing = new Set<Dependency>()
  const recoveries = yield* PubSub.sliding<Dependency>(1)
  return DependencyRecovery.of({
    note: (dependency, answered) =>
      Effect.suspend(() => {
        if (!answered) {
          failing.add(dependency)
          return Effect.void
        }
        return failing.delete(dependency) ? PubSub.publish(recoveries, dependency).pipe(Effect.asVoid) : Effect.void
      }),
    recovered: Stream.fromPubSub(recoveries)
  })
})

export const layer: Layer.Layer<DependencyRecovery> = Layer.effect(DependencyRecovery, make)
