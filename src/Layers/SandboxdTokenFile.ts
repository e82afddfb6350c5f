/**
 * The node token from `--sandboxd-token-file`, kept current while the daemon runs. The file is
 * read again when the token is needed and the last read is at least a second old, and at once
 * when sandboxd refuses the token; reading through the path follows a Secret's symlink swap. A
 * read that fails, or a file that is empty for a moment mid-swap, keeps the token in use (an
 * empty token would mean "no Authorization header", which is never what a rotation asks for).
 * With no token file the token is the (empty) one from the configuration.
 */
import { Clock, Effect, Layer, PubSub, Redacted, Ref, Semaphore, Stream } from "effect"
import { readFile } from "node:fs/promises"
import { AppConfig } from "../Services/Config.ts"
import { SandboxdToken } from "../Services/SandboxdToken.ts"

/** How old the last read may be before a request reads the file again. */
export const RECHECK_MILLIS = 1000

export const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const path = config.sandboxdTokenFile

  // Refused → accepted transitions, whatever the token's source.
  const refused = yield* Ref.make(false)
  const accepted = yield* PubSub.sliding<void>(1)
  const noteReply = (isRefusal: boolean) =>
    Effect.gen(function*() {
      const wasRefused = yield* Ref.getAndSet(refused, isRefusal)
      if (wasRefused && !isRefusal) yield* PubSub.publish(accepted, undefined)
    })
  const acceptedAgain = Stream.fromPubSub(accepted)

  if (path === "") {
    return SandboxdToken.of({
      current: Effect.succeed(config.sandboxdToken),
      reload: Effect.succeed(false),
      noteReply,
      acceptedAgain
    })
  }
  const state = yield* Ref.make({ token: config.sandboxdToken, readAt: yield* Clock.currentTimeMillis })
  const oneReader = yield* Semaphore.make(1)

  /** Reads the file when forced or when the last read is stale (checked again under the lock). */
  const refresh = (force: boolean) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const before = yield* Ref.get(state)
      if (!force && now - before.readAt < RECHECK_MILLIS) return false
      yield* Ref.set(state, { ...before, readAt: now })
      const text = yield* Effect.tryPromise(() => readFile(path, "utf8")).pipe(
        Effect.tapError(() => Effect.logWarning("cannot re-read --sandboxd-token-file; keeping the token in use")),
        Effect.option
      )
      if (text._tag === "None") return false
      const token = text.value.trim()
      if (token === "") {
        yield* Effect.logWarning("--sandboxd-token-file is empty; keeping the token in use")
        return false
      }
      if (token === Redacted.value(before.token)) return false
      yield* Ref.set(state, { token: Redacted.make(token), readAt: now })
      yield* Effect.logInfo("sandboxd token changed; using the new one from --sandboxd-token-file")
      return true
    }).pipe(oneReader.withPermits(1), Effect.annotateLogs({ path }))

  const current = Effect.gen(function*() {
    const { readAt } = yield* Ref.get(state)
    if ((yield* Clock.currentTimeMillis) - readAt >= RECHECK_MILLIS) yield* refresh(false)
    return (yield* Ref.get(state)).token
  })

  return SandboxdToken.of({ current, reload: refresh(true), noteReply, acceptedAgain })
})

export const layer: Layer.Layer<SandboxdToken, never, AppConfig> = Layer.effect(SandboxdToken, make)
