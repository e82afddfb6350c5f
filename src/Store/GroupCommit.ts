/**
 * Group commit: one writer fiber owns the durable file; requests that arrive while a write is in
 * flight queue up and share the next write, so a burst of N commits costs far fewer than N writes.
 * The engine knows nothing of what a request means: `writeBatch` gets the batch's requests in
 * arrival order, and its outcome is what each of them resumes with. Batches never overlap: the
 * next is taken only after `writeBatch` of the previous one has finished.
 */
import { Deferred, Effect, Queue, type Scope } from "effect"

interface Pending<Request, E> {
  readonly request: Request
  readonly done: Deferred.Deferred<void, E>
}

/**
 * Starts the writer fiber in the current scope and returns `submit`, which resumes once the write
 * carrying its request has finished. Closing the scope lets an in-flight write finish; requests
 * still queued then, and any submitted afterwards, are interrupted.
 */
export const make = <Request, E>(
  writeBatch: (requests: ReadonlyArray<Request>) => Effect.Effect<void, E>
): Effect.Effect<(request: Request) => Effect.Effect<void, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Pending<Request, E>>()
    let closed = false

    const runBatch = (batch: ReadonlyArray<Pending<Request, E>>) =>
      Effect.gen(function*() {
        // Even a defect (in the caller's snapshot, say) must reach the callers, and the writer
        // must live on.
        const exit = yield* Effect.exit(Effect.suspend(() => writeBatch(batch.map((entry) => entry.request))))
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
    yield* Queue.takeAll(queue).pipe(Effect.flatMap(runBatch), Effect.forever, Effect.forkScoped)

    return (request: Request) =>
      Effect.suspend(() => {
        if (closed) return Effect.interrupt
        const done = Deferred.makeUnsafe<void, E>()
        Queue.offerUnsafe(queue, { request, done })
        return Deferred.await(done)
      })
  })
