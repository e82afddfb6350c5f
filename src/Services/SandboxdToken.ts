/**
 * Where the sandboxd client gets the node token for each request. The token file can change
 * under a running daemon (a mounted Secret is replaced by a symlink swap), so the token is a
 * value read now, not one fixed at startup. The live layer is `Layers/SandboxdTokenFile.ts`;
 * without it the client sends the token read at startup (`AppConfig.sandboxdToken`).
 */
import { Context, type Effect, type Redacted, type Stream } from "effect"

export class SandboxdToken extends Context.Service<SandboxdToken, {
  /** The token to send now; re-read from the file when the last look is older than a second. */
  readonly current: Effect.Effect<Redacted.Redacted<string>>
  /** Re-read the file at once (sandboxd refused the token); true when the token changed. */
  readonly reload: Effect.Effect<boolean>
  /** The client reports each node-token reply: refused (401/403) or not. */
  readonly noteReply: (refused: boolean) => Effect.Effect<void>
  /**
   * One element each time sandboxd accepts the token again after refusing it, so work held back
   * by the refusal (claims retried at the slow end of the backoff) can go at once.
   */
  readonly acceptedAgain: Stream.Stream<void>
}>()("vk-sandbox/SandboxdToken") {}
