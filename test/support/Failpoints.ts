/**
 * Armed failpoints for tests: `armed` parses the environment syntax and counts crashes instead
 * of ending the process; `decorated` wraps a world's sandboxd client and claims store as the
 * daemon's composition root does when `VK_SANDBOX_FAILPOINTS` is set.
 */
import { Effect, Layer, Result } from "effect"
import { parseFailpoints } from "../../src/Cli/Failpoints.ts"
import * as FailpointDecorators from "../../src/Layers/FailpointDecorators.ts"
import { make } from "../../src/Layers/Failpoints.ts"
import { ClaimsStore } from "../../src/Services/ClaimsStore.ts"
import type { FailpointsShape } from "../../src/Services/Failpoints.ts"
import { SandboxdClient } from "../../src/Services/SandboxdClient.ts"

export interface Armed {
  readonly points: FailpointsShape
  readonly crashes: { count: number }
  /** Settles at the first crash: a test waits for it rather than for a span of real time. */
  readonly crashed: Promise<void>
}

/** The points `text` arms; a `crash` only counts. */
export const armed = (text: string): Armed => {
  const crashes = { count: 0 }
  let noteCrash = () => {}
  const crashed = new Promise<void>((resolve) => {
    noteCrash = resolve
  })
  const terms = parseFailpoints(text)
  if (Result.isFailure(terms)) throw new Error(terms.failure)
  return {
    points: make(terms.success, () => {
      crashes.count++
      noteCrash()
    }),
    crashes,
    crashed
  }
}

/** `layer` with its SandboxdClient and ClaimsStore wrapped by the decorators of `points`. */
export const decorated = <A, E, R>(points: FailpointsShape | undefined, layer: Layer.Layer<A, E, R>) => {
  if (points === undefined) return layer
  const decorators = FailpointDecorators.make(points)
  const wrap = Layer.mergeAll(
    Layer.effect(SandboxdClient, Effect.map(SandboxdClient.use(Effect.succeed), decorators.sandboxd)),
    Layer.effect(ClaimsStore, Effect.map(ClaimsStore.use(Effect.succeed), decorators.store))
  )
  return wrap.pipe(Layer.provideMerge(layer))
}
