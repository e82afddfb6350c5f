/**
 * CRT-12 — detached release: the release used by the undo and stranded paths. It runs to its end
 * whatever happens to the caller (the caller may be shutting down with a claimed VM in hand) and is
 * bounded by its own 10 s, on top of the client's timeout.
 */
import { Duration, Effect, type Redacted } from "effect"
import type { ClaimId } from "../../Schemas/Ids.ts"
import { SandboxdClient, type SandboxdReleaseError, SandboxdTimeout } from "../../Services/SandboxdClient.ts"

export const detachedReleaseBound = Duration.seconds(10)

export const detachedRelease = (id: ClaimId, token: Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const sandboxd = yield* SandboxdClient
    return yield* sandboxd.release(id, token).pipe(
      Effect.timeoutOrElse({
        duration: detachedReleaseBound,
        orElse: () =>
          Effect.fail<SandboxdReleaseError>(
            new SandboxdTimeout({
              operation: "release",
              timeoutMillis: Duration.toMillis(detachedReleaseBound),
              message: `release of ${id} did not finish within ${Duration.format(detachedReleaseBound)}`
            })
          )
      })
    )
  }).pipe(Effect.uninterruptible)
