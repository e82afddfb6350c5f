/**
 * The claims table's group commit: each request names the key whose tentative row it makes
 * durable (or none, for a plain save of the settled rows).
 *
 * Each batch snapshots its rows only after the batch is taken, so every change made before a
 * caller's `commit` is in that caller's write. The write then reports the batch's landed keys to
 * `ClaimsSnapshot.landed` (which turns their Tentative rows Durable) before the next batch
 * snapshots anything, and every caller of the batch resumes with the write's outcome. A failed
 * write never calls `landed`.
 */
import { Effect, Metric, Option, type Scope } from "effect"
import { commitBatchSize } from "../Services/Metrics.ts"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import { ClaimsSnapshot, type ClaimsWriteError } from "../Services/ClaimsStore.ts"
import * as GroupCommit from "./GroupCommit.ts"

/** One durable write of the whole table. `committing` = the batch's keys (for tests and logs). */
export type WriteTable = (
  rows: ReadonlyMap<PodKey, ClaimRecord>,
  committing: ReadonlySet<PodKey>
) => Effect.Effect<void, ClaimsWriteError>

/** Starts the writer in the current scope and returns `ClaimsStore.commit`. */
export const makeClaimsCommit = (
  write: WriteTable
): Effect.Effect<
  (key: Option.Option<PodKey>) => Effect.Effect<void, ClaimsWriteError>,
  never,
  ClaimsSnapshot | Scope.Scope
> =>
  Effect.gen(function*() {
    const snapshot = yield* ClaimsSnapshot
    return yield* GroupCommit.make((keys: ReadonlyArray<Option.Option<PodKey>>) =>
      Effect.gen(function*() {
        yield* Metric.update(commitBatchSize, keys.length)
        const committing = new Set<PodKey>()
        for (const key of keys) if (Option.isSome(key)) committing.add(key.value)
        const rows = yield* snapshot.rowsForWrite(committing)
        yield* write(rows, committing)
        const written = new Map<PodKey, ClaimId>()
        for (const key of committing) {
          const row = rows.get(key)
          if (row !== undefined) written.set(key, row.id)
        }
        yield* snapshot.landed(written)
      })
    )
  })
