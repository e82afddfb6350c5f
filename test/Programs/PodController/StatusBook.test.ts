/**
 * The status writer's per-key state (`StatusBook`): a repair queued from a last push read before
 * a yield is not queued once a newer write has landed or the Pod was forgotten meanwhile.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Pushed } from "../../../src/Programs/PodController/StatusBody.ts"
import { StatusBook } from "../../../src/Programs/PodController/StatusBook.ts"
import type { PodKey } from "../../../src/Schemas/Ids.ts"
import type { Pod } from "../../../src/Schemas/Pod/Schema.ts"

const key = "default/web" as PodKey
const pushOf = (podIP: string): Pushed => ({
  uid: "uid-1",
  resourceVersion: "1",
  labels: undefined,
  annotations: undefined,
  status: { phase: "Running", podIP }
})
const stored = (version: string): Pod => ({ metadata: { uid: "uid-1", resourceVersion: version } })

/** The book after `push` was written and stored at resourceVersion 2. */
const written = (push: Pushed) => {
  const book = new StatusBook()
  book.queuePush(key, push, "uid-1", 0)
  book.recordWritten(key, push, stored("3"), "2")
  book.settle(key, push)
  return book
}

describe("StatusBook", () => {
  it("a repair of the last push queues it", () => {
    const first = pushOf("10.0.0.1")
    const book = written(first)
    assert.isTrue(book.queueRepair(key, book.lastPush(key)!))
    assert.strictEqual(book.pendingOf(key), first)
  })

  it("a repair read before a newer write landed queues nothing: the older push is never written over it", () => {
    const first = pushOf("10.0.0.1")
    const book = written(first)
    const read = book.lastPush(key)!
    // meanwhile (the repair check yields) a newer push is written
    const second = pushOf("10.0.0.2")
    book.queuePush(key, second, "uid-1", 1)
    book.recordWritten(key, second, stored("5"), "4")
    book.settle(key, second)
    const queued = book.queueRepair(key, read)
    assert.isUndefined(book.pendingOf(key), "the older push waits to be written")
    assert.strictEqual(book.lastPush(key), second)
    assert.isFalse(queued)
  })

  it("a repair read before the Pod was forgotten queues nothing and keeps nothing", () => {
    const book = written(pushOf("10.0.0.1"))
    const read = book.lastPush(key)!
    book.forget(key)
    const queued = book.queueRepair(key, read)
    assert.strictEqual(book.retainedKeys().size, 0, "a push waits for a Pod that is gone")
    assert.isFalse(queued)
  })

  it("a repair while a newer push waits leaves that push in place", () => {
    const first = pushOf("10.0.0.1")
    const book = written(first)
    const waiting = pushOf("10.0.0.3")
    book.queuePush(key, waiting, "uid-1", 2)
    book.queueRepair(key, first)
    assert.strictEqual(book.pendingOf(key), waiting)
  })
})
