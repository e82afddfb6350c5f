/**
 * The claim tokens the daemon holds right now, for scrubbing text that comes from sandboxd. A
 * sandboxd or a proxy in front of it can quote any token it was ever sent, including another
 * Pod's, in an error body; the client removes each of these by name before such text reaches a
 * Pod status, an Event, a log line or an error message. The live layer reads the claim table
 * (`Layers/ClaimTableRef.ts`); it is read on the error path only, never for a successful reply.
 */
import { Context, Effect, Layer, type Redacted } from "effect"

export class KnownSecrets extends Context.Service<KnownSecrets, {
  /** Every claim token in the table now: durable, tentative and quarantined rows alike. */
  readonly current: Effect.Effect<ReadonlyArray<Redacted.Redacted<string>>>
}>()("vk-sandbox/KnownSecrets") {
  /** No claim tokens: a client used without a claim table (a probe, a tool) knows only its own. */
  static readonly none: Layer.Layer<KnownSecrets> = Layer.succeed(
    KnownSecrets,
    KnownSecrets.of({ current: Effect.succeed([]) })
  )
}
