/**
 * A `SandboxdClient` backed directly by the sandboxd simulator model: no sockets, so unit tests
 * run on `TestClock` alone. It is the live client (`src/Sandboxd/Client.ts`) over a round trip
 * to the model instead of node:http: requests and replies keep their wire form (headers, JSON
 * bodies, statuses) and meet the same body caps, so they mean what they mean over HTTP.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { makeClient, type SandboxdClientShape } from "../../src/Sandboxd/Client.ts"
import { capReply, type RawReply } from "../../src/Sandboxd/Replies.ts"
import { authorizationOf } from "../../src/Sandboxd/Routes.ts"
import type { RoundTrip } from "../../src/Sandboxd/Transport.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import { KnownSecrets } from "../../src/Services/KnownSecrets.ts"
import { SandboxdClient, type SandboxdDecodeError, SandboxdUnreachable } from "../../src/Services/SandboxdClient.ts"
import { SandboxdSim, type SandboxdSimOptions, type SandboxdSimShape } from "../Simulators/Sandboxd/Model.ts"

/** A request handed to the model as the HTTP face would hand it over, its reply as the transport reads it. */
const simRoundTrip = (sim: SandboxdSimShape): RoundTrip => (exchange) =>
  sim.handle({
    method: exchange.method,
    path: exchange.path,
    authorization: authorizationOf(exchange.token === undefined ? "" : Redacted.value(exchange.token)),
    contentType: exchange.body === undefined ? undefined : "application/json",
    body: exchange.body ?? ""
  }).pipe(
    Effect.flatMap((response): Effect.Effect<RawReply, SandboxdUnreachable | SandboxdDecodeError> => {
      switch (response._tag) {
        case "Reply":
          return Effect.fromResult(capReply(exchange.operation, exchange.successStatus, { status: response.status, body: response.body }))
        // Over HTTP a reply stalled mid-body leaves the client waiting: only the timeout ends it.
        case "Stall":
          return Effect.never
        case "Drop":
        case "Truncate":
          // The request reached the model: like a reset after sending, its outcome is unknown.
          return Effect.fail(
            new SandboxdUnreachable({ operation: exchange.operation, message: `${exchange.method} ${exchange.path}: connection closed` })
          )
      }
    })
  )

/** The client over the `SandboxdSim` in context; the claim tokens of `KnownSecrets` when provided, else none. */
export const make: Effect.Effect<SandboxdClientShape, never, SandboxdSim | AppConfig> = Effect.gen(function*() {
  const sim = yield* SandboxdSim
  const config = yield* AppConfig
  const known = Option.getOrElse(yield* Effect.serviceOption(KnownSecrets), () => KnownSecrets.of({ current: Effect.succeed([]) }))
  return yield* makeClient(simRoundTrip(sim), config, known)
})

/** The client over a `SandboxdSim` already in context. */
export const layer: Layer.Layer<SandboxdClient, never, SandboxdSim | AppConfig> = Layer.effect(SandboxdClient, make)

/**
 * A fresh simulator plus a client for it; both are in the output so tests can drive the model.
 * The client authenticates with `AppConfig.sandboxdToken`: give the simulator the same root token
 * (or `""` on both for an open node).
 */
export const layerWithSim = (
  options: SandboxdSimOptions
): Layer.Layer<SandboxdClient | SandboxdSim, never, AppConfig> =>
  layer.pipe(Layer.provideMerge(Layer.fresh(SandboxdSim.layer(options))))
