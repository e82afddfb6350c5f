/**
 * PER-7 — log-only saves: the write after a change nothing can undo (an adoption, a release, a row
 * dropped or marked, an intent settled). A failure is logged at ERROR with the error itself
 * (`persist claims state`, its tag and path); the change stays in memory and the next write
 * carries it.
 */
import { Effect, Option } from "effect"
import { ClaimsStore } from "../../Services/ClaimsStore.ts"

export const saveState: Effect.Effect<void, never, ClaimsStore> = Effect.gen(function*() {
  const store = yield* ClaimsStore
  yield* store.commit(Option.none()).pipe(
    Effect.catchTag("ClaimsWriteError", (error) =>
      Effect.logError("persist claims state").pipe(Effect.annotateLogs({ error, path: error.path })))
  )
})
