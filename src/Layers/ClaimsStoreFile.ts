/**
 * The file `ClaimsStore` (ARCHITECTURE.md §6.1–6.3) and the group-commit engine it shares with
 * the in-memory test layer.
 *
 * Group commit (§6.2):
 *
 * One writer fiber owns the file. Commits that arrive while a write is in flight queue up and
 * share the next write. Each batch snapshots its rows only after the batch is taken, so every
 * change made before a caller's `commit` is in that caller's write. The writer then reports the
 * batch's landed keys to `ClaimsSnapshot.landed` (which turns their Tentative rows Durable)
 * before it snapshots the next batch, and resumes every caller of the batch with the write's
 * outcome. A failed write never calls `landed`.
 */
import { Deferred, Effect, Exit, Option, Queue, type Scope } from "effect"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import { ClaimsSnapshot, type ClaimsWriteError } from "../Services/ClaimsStore.ts"

/** One durable write of the whole table. `committing` = the batch's keys (for tests and logs). */
export type WriteTable = (
  rows: ReadonlyMap<PodKey, ClaimRecord>,
  committing: ReadonlySet<PodKey>
) => Effect.Effect<void, ClaimsWriteError>

interface PendingCommit {
  readonly key: Option.Option<PodKey>
  readonly done: Deferred.Deferred<void, ClaimsWriteError>
}

/**
 * Starts the writer fiber in the current scope and returns `commit`. Closing the scope lets an
 * in-flight write finish; commits still queued then are interrupted.
 */
export const makeGroupCommit = (
  write: WriteTable
): Effect.Effect<(key: Option.Option<PodKey>) => Effect.Effect<void, ClaimsWriteError>, never, ClaimsSnapshot | Scope.Scope> =>
  Effect.gen(function*() {
    const snapshot = yield* ClaimsSnapshot
    const queue = yield* Queue.unbounded<PendingCommit>()
    let closed = false

    const writeBatch = (batch: ReadonlyArray<PendingCommit>) =>
      Effect.gen(function*() {
        const committing = new Set<PodKey>()
        for (const entry of batch) if (Option.isSome(entry.key)) committing.add(entry.key.value)
        const rows = yield* snapshot.rowsForWrite(committing)
        const exit = yield* Effect.exit(write(rows, committing))
        if (Exit.isSuccess(exit)) {
          const written = new Map<PodKey, ClaimId>()
          for (const key of committing) {
            const row = rows.get(key)
            if (row !== undefined) written.set(key, row.id)
          }
          yield* snapshot.landed(written)
        }
        for (const entry of batch) Deferred.doneUnsafe(entry.done, exit)
      }).pipe(Effect.uninterruptible)

    // Registered before the writer is forked, so it runs after the writer has been interrupted
    // (finalizers run in reverse): nothing can be left queued behind it.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        closed = true
        const left = yield* Queue.clear(queue)
        for (const entry of left) yield* Deferred.interrupt(entry.done)
      })
    )
    yield* Queue.takeAll(queue).pipe(Effect.flatMap(writeBatch), Effect.forever, Effect.forkScoped)

    return (key: Option.Option<PodKey>) =>
      Effect.suspend(() => {
        if (closed) return Effect.interrupt
        const done = Deferred.makeUnsafe<void, ClaimsWriteError>()
        Queue.offerUnsafe(queue, { key, done })
        return Deferred.await(done)
      })
  })
