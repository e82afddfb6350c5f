/**
 * The live `SandboxdClient`: the client of `Sandboxd/Client.ts` over node:http
 * (`Sandboxd/Transport.ts`), one keep-alive agent with as many sockets as requests may be in
 * flight. The replies are read by `Sandboxd/Replies.ts`, as the simulator-backed client reads them.
 */
import { Effect, Layer } from "effect"
import type { Scope } from "effect"
import { makeClient, type SandboxdClientShape } from "../Sandboxd/Client.ts"
import { httpRoundTrip } from "../Sandboxd/Transport.ts"
import { AppConfig } from "../Services/Config.ts"
import { KnownSecrets } from "../Services/KnownSecrets.ts"
import { SandboxdClient } from "../Services/SandboxdClient.ts"

export type { SandboxdClientShape }

/**
 * The sandboxd client over HTTP, scoped: its keep-alive agent is destroyed with the scope. Error
 * text is scrubbed of the node token, the request's token and every claim token `KnownSecrets`
 * holds when the reply arrives.
 */
export const make: Effect.Effect<SandboxdClientShape, never, AppConfig | KnownSecrets | Scope.Scope> = Effect.gen(function*() {
  const config = yield* AppConfig
  const roundTrip = yield* httpRoundTrip(config.sandboxdUrl, Math.max(1, config.sandboxdMaxConcurrency))
  return yield* makeClient(roundTrip, config, yield* KnownSecrets)
})

/**
 * Requires `AppConfig` and the `KnownSecrets` its error text is scrubbed of; the daemon also
 * provides `SandboxdToken` (token-file rotation).
 */
export const layer: Layer.Layer<SandboxdClient, never, AppConfig | KnownSecrets> = Layer.effect(SandboxdClient, make)
