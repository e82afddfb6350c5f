/**
 * The claims table's group commit: a request makes a key's tentative row durable (or just saves
 * the settled rows), or carries a claim intent to write before its claim is sent. Intents are
 * written with every batch until they leave; a key's intent is left out of the very write that
 * lands its row, so a crash leaves one or the other, and a settled one is written out at the latest
 * at a clean shutdown (CRT-25 — a settled intent does not outlive a clean shutdown). Each batch
 * snapshots its rows only once taken, and reports its landed keys to `ClaimsSnapshot.landed`
 * before the next batch snapshots anything; a failed write never calls `landed`.
 */
import { Cause, Effect, Metric, Option, type Scope } from "effect"
import { commitBatchSize } from "../Services/Metrics.ts"
import type { ClaimIntent, ClaimRecord } from "../Schemas/Claims.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import { ClaimsSnapshot, type ClaimsWriteError } from "../Services/ClaimsStore.ts"
import * as GroupCommit from "./GroupCommit.ts"

/**
 * One durable write of the whole table and the intents. `committing` = the batch's row keys,
 * `intending` = the keys whose new intents the batch carries (both for tests and logs).
 */
export type WriteTable = (
  rows: ReadonlyMap<PodKey, ClaimRecord>,
  intents: ReadonlyMap<PodKey, ClaimIntent>,
  committing: ReadonlySet<PodKey>,
  intending: ReadonlySet<PodKey>
) => Effect.Effect<void, ClaimsWriteError>

type Request =
  | { readonly _tag: "Commit"; readonly key: Option.Option<PodKey> }
  | { readonly _tag: "Intend"; readonly key: PodKey }

export interface ClaimsCommit {
  readonly commit: (key: Option.Option<PodKey>) => Effect.Effect<void, ClaimsWriteError>
  readonly intend: (intent: ClaimIntent) => Effect.Effect<void, ClaimsWriteError>
  readonly settleIntent: (key: PodKey) => Effect.Effect<void>
  readonly intents: Effect.Effect<ReadonlyMap<PodKey, ClaimIntent>>
  /** Startup: the intents found in the file, held (and written again) until settled. */
  readonly holdLoaded: (intents: ReadonlyMap<PodKey, ClaimIntent>) => Effect.Effect<void>
}

/** Starts the writer in the current scope and returns the store's commit and intent operations. */
export const makeClaimsCommit = (
  write: WriteTable
): Effect.Effect<ClaimsCommit, never, ClaimsSnapshot | Scope.Scope> =>
  Effect.gen(function*() {
    const snapshot = yield* ClaimsSnapshot
    // Both changed only in synchronous steps (no Ref needed); a batch reads `held` after it is taken.
    const held = new Map<PodKey, ClaimIntent>()
    /** The intents the file holds: those the last write that landed carried, or those loaded. */
    let written: ReadonlyMap<PodKey, ClaimIntent> = new Map()
    const submit = yield* GroupCommit.make((requests: ReadonlyArray<Request>) =>
      Effect.gen(function*() {
        yield* Metric.update(commitBatchSize, requests.length)
        const committing = new Set<PodKey>()
        const intending = new Set<PodKey>()
        for (const request of requests) {
          if (request._tag === "Intend") intending.add(request.key)
          else if (Option.isSome(request.key)) committing.add(request.key.value)
        }
        const rows = yield* snapshot.rowsForWrite(committing)
        const intents = new Map(held)
        const dropped = new Map<PodKey, ClaimIntent>()
        for (const key of committing) {
          const intent = intents.get(key)
          if (intent !== undefined && rows.has(key)) {
            intents.delete(key)
            dropped.set(key, intent)
          }
        }
        yield* write(rows, intents, committing, intending)
        written = intents
        // Only the intent this write left out goes: one set again meanwhile is a newer claim's.
        for (const [key, intent] of dropped) if (held.get(key) === intent) held.delete(key)
        const landed = new Map<PodKey, ClaimId>()
        for (const key of committing) {
          const row = rows.get(key)
          if (row !== undefined) landed.set(key, row.id)
        }
        yield* snapshot.landed(landed)
      })
    )
    // Registered after the writer's own, so it runs first at shutdown, while the writer still takes
    // requests. Only an intent settled since the last write makes it write.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        const settled = [...written].some(([key, intent]) => held.get(key) !== intent)
        if (!settled) return Effect.void
        return submit({ _tag: "Commit", key: Option.none() }).pipe(
          Effect.catchTag("ClaimsWriteError", (error) =>
            Effect.logError("persist claims state at shutdown: settled claim intents stay in the file").pipe(
              Effect.annotateLogs({ error })
            )),
          // A defect (a bug in the write) is logged with its cause; the shutdown goes on either way.
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.void
              : Effect.logError("persist claims state at shutdown: settled claim intents stay in the file", cause)
          )
        )
      })
    )
    return {
      commit: (key) => submit({ _tag: "Commit", key }),
      intend: (intent) =>
        Effect.suspend(() => {
          // Held before the request is queued, so the batch that takes the request writes it.
          held.set(intent.key, intent)
          return submit({ _tag: "Intend", key: intent.key })
        }),
      settleIntent: (key) => Effect.sync(() => void held.delete(key)),
      intents: Effect.sync((): ReadonlyMap<PodKey, ClaimIntent> => new Map(held)),
      holdLoaded: (intents) =>
        Effect.sync(() => {
          for (const [key, intent] of intents) if (!held.has(key)) held.set(key, intent)
          written = new Map(intents)
        })
    }
  })
