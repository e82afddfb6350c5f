/**
 * Claim intents in the store: written before the claim (a batch of them in one write), dropped in
 * the very write that lands the key's row, dropped lazily once settled, loaded back after a
 * restart and kept in every write until settled; and their place in the claims file.
 */
import { assert, describe, it } from "@effect/vitest"
import * as NFS from "node:fs"
import * as NOS from "node:os"
import * as NPath from "node:path"
import { Context, DateTime, Effect, Fiber, Layer, Option, Result } from "effect"
import * as ClaimsStoreFile from "../../src/Layers/ClaimsStoreFile.ts"
import type { ClaimIntent } from "../../src/Schemas/Claims.ts"
import { decodeClaimsDocument, decodeClaimsFile } from "../../src/Schemas/ClaimsFile/Decode.ts"
import { encodeClaimsFile, membersAfterClaims } from "../../src/Schemas/ClaimsFile/Encode.ts"
import { ClaimsStore } from "../../src/Services/ClaimsStore.ts"
import { makeClaimsCommit } from "../../src/Store/ClaimsCommit.ts"
import * as ClaimsStoreMemory from "../../testkit/Layers/ClaimsStoreMemory.ts"
import { key, record } from "../support/Claims.ts"
import { makeLogCapture } from "../support/Logs.ts"

const intent = (n: number): ClaimIntent => ({
  key: key(n),
  podUID: `uid-${n}`,
  sentAt: DateTime.makeUnsafe(1_780_000_000_000 + n * 1000)
})

const MemoryLayer = (options?: ClaimsStoreMemory.ClaimsStoreMemoryOptions) =>
  ClaimsStoreMemory.layer(options).pipe(Layer.provideMerge(ClaimsStoreMemory.testSnapshotLayer))

/** Runs `effect` against a file store on `statePath`, opened for it and closed after (a start and a clean stop). */
const withFileStore = (statePath: string) =>
<A, E>(effect: Effect.Effect<A, E, ClaimsStore | ClaimsStoreMemory.TestClaimsTable>) =>
  Effect.scoped(
    Effect.gen(function*() {
      const context = yield* Layer.build(
        Layer.effect(ClaimsStore, ClaimsStoreFile.make(statePath)).pipe(Layer.provideMerge(ClaimsStoreMemory.testSnapshotLayer))
      )
      return yield* effect.pipe(Effect.provide(context))
    })
  )

/** A store's intents as its load finds them on disk. */
const loadedIntents = Effect.gen(function*() {
  const store = yield* ClaimsStore
  yield* store.load
  return yield* store.intents
})

describe("claim intents: the file", () => {
  it("no intents: the reference's bytes; with intents: a second top-level member, sorted, second precision", () => {
    const rows = new Map([[key(1), record(1)]])
    assert.strictEqual(encodeClaimsFile(rows, membersAfterClaims(new Map(), "")), encodeClaimsFile(rows))
    assert.notInclude(encodeClaimsFile(rows), "intents")
    const text = encodeClaimsFile(rows, membersAfterClaims(new Map([[key(3), intent(3)], [key(2), { ...intent(2), podUID: "u<2>" }]]), ""))
    assert.isTrue(text.startsWith(`${encodeClaimsFile(rows).slice(0, -1)},"intents":{`))
    assert.include(text, `"ns/pod-2":{"podUID":"u\\u003c2\\u003e","sentAt":"2026-05-28T20:26:42Z"},"ns/pod-3":{`)
  })

  it("round trip; a reader of rows only (as the Go daemon reads) sees the same rows", () =>
    Effect.gen(function*() {
      const rows = new Map([[key(1), record(1)]])
      const intents = new Map([[key(2), intent(2)]])
      // A member a newer version wrote stays after the intents.
      const text = encodeClaimsFile(rows, membersAfterClaims(intents, `"future":[1]`))
      assert.isTrue(text.endsWith(`},"future":[1]}`))
      const decoded = decodeClaimsDocument(text)
      assert.isTrue(Result.isSuccess(decoded))
      if (Result.isFailure(decoded)) return
      assert.deepStrictEqual([...decoded.success.intents.keys()], [key(2)])
      assert.strictEqual(decoded.success.unknownMembers, `"future":[1]`, "intents are known: not kept twice")
      const back = decoded.success.intents.get(key(2))!
      assert.strictEqual(back.podUID, "uid-2")
      assert.strictEqual(DateTime.toEpochMillis(back.sentAt), Math.floor(1_780_000_002_000 / 1000) * 1000)
      assert.deepStrictEqual([...(yield* decodeClaimsFile(text)).keys()], [key(1)])
    }).pipe(Effect.runSync))

  it("an intent without a usable time is refused by position (it could not tell its sandboxes from older ones)", () => {
    for (const sentAt of ["yesterday", "0001-01-01T00:00:00Z"]) {
      const decoded = decodeClaimsDocument(JSON.stringify({ claims: {}, intents: { "ns/a": { podUID: "u", sentAt } } }))
      assert.isTrue(Result.isFailure(decoded), sentAt)
      if (Result.isFailure(decoded)) assert.include(decoded.failure.message, `intents["ns/a"].sentAt`)
    }
    assert.isTrue(Result.isFailure(decodeClaimsDocument(JSON.stringify({ claims: {}, intents: { "ns/a": { podUID: "u" } } }))))
  })
})

describe("claim intents: the group commit", () => {
  it.effect("an intent is durable when intend resumes; the write that lands the row drops it; settled ones go with the next write", () =>
    Effect.gen(function*() {
      const store = yield* ClaimsStore
      const control = yield* ClaimsStoreMemory.ClaimsStoreMemoryControl
      const table = yield* ClaimsStoreMemory.TestClaimsTable
      yield* store.intend(intent(1))
      yield* store.intend(intent(2))
      assert.deepStrictEqual([...(yield* control.diskIntents).keys()], [key(1), key(2)])
      yield* table.put(key(1), record(1), { tentative: true })
      yield* store.commit(Option.some(key(1)))
      const last = (yield* control.writes).at(-1)!
      assert.isTrue(last.rows.has(key(1)), "the row landed")
      assert.deepStrictEqual([...last.intents.keys()], [key(2)], "in the same write as the row, the intent left")
      assert.deepStrictEqual([...(yield* store.intents).keys()], [key(2)])
      yield* store.settleIntent(key(2))
      assert.deepStrictEqual([...(yield* control.diskIntents).keys()], [key(2)], "settling writes nothing by itself")
      yield* store.commit(Option.none())
      assert.strictEqual((yield* control.diskIntents).size, 0)
      assert.notInclude((yield* control.writes).at(-1)!.text, "intents")
    }).pipe(Effect.provide(MemoryLayer())))

  it.effect("a row commit that fails keeps the intent (its claim may hold a VM)", () =>
    Effect.gen(function*() {
      const store = yield* ClaimsStore
      const control = yield* ClaimsStoreMemory.ClaimsStoreMemoryControl
      const table = yield* ClaimsStoreMemory.TestClaimsTable
      yield* store.intend(intent(1))
      yield* table.put(key(1), record(1), { tentative: true })
      yield* control.failNext(1)
      yield* Effect.flip(store.commit(Option.some(key(1))))
      assert.deepStrictEqual([...(yield* store.intents).keys()], [key(1)])
      assert.deepStrictEqual([...(yield* control.diskIntents).keys()], [key(1)])
    }).pipe(Effect.provide(MemoryLayer())))

  it.effect("a batch of intents costs one write", () =>
    Effect.gen(function*() {
      const store = yield* ClaimsStore
      const control = yield* ClaimsStoreMemory.ClaimsStoreMemoryControl
      // A row write held in flight: the intents queue up behind it and share the next write.
      yield* control.pause
      const held = yield* Effect.forkChild(store.commit(Option.none()), { startImmediately: true })
      const fibers = yield* Effect.forEach(
        Array.from({ length: 20 }, (_, n) => n),
        (n) => Effect.forkChild(store.intend(intent(n)), { startImmediately: true })
      )
      yield* Effect.yieldNow
      yield* control.resume
      yield* Fiber.join(held)
      yield* Effect.forEach(fibers, Fiber.join)
      const writes = yield* control.writes
      // The held write may already have taken them all; at most one more write follows it.
      assert.isAtMost(writes.length, 2)
      assert.strictEqual(writes.reduce((n, w) => n + w.intending.size, 0), 20)
      assert.strictEqual((yield* control.diskIntents).size, 20)
    }).pipe(Effect.provide(MemoryLayer())))

  it.effect("after a restart the loaded intents are held and written again until settled", () =>
    Effect.gen(function*() {
      const store = yield* ClaimsStore
      const control = yield* ClaimsStoreMemory.ClaimsStoreMemoryControl
      yield* store.load
      assert.deepStrictEqual([...(yield* store.intents).keys()], [key(7)])
      yield* store.commit(Option.none())
      assert.deepStrictEqual([...(yield* control.writes).at(-1)!.intents.keys()], [key(7)])
      yield* store.settleIntent(key(7))
      yield* store.commit(Option.none())
      assert.strictEqual((yield* control.writes).at(-1)!.intents.size, 0)
    }).pipe(Effect.provide(MemoryLayer({ initialIntents: new Map([[key(7), intent(7)]]) }))))

  it.effect("the file store: intents on disk, loaded by the next store on the same path", () =>
    Effect.gen(function*() {
      const dir = NFS.mkdtempSync(NPath.join(NOS.tmpdir(), "vk-intents-"))
      const statePath = NPath.join(dir, "claims.json")
      const withStore = withFileStore(statePath)
      yield* withStore(Effect.gen(function*() {
        const store = yield* ClaimsStore
        yield* store.load
        yield* store.intend(intent(1))
        yield* store.intend(intent(2))
        const table = yield* ClaimsStoreMemory.TestClaimsTable
        yield* table.put(key(2), record(2), { tentative: true })
        yield* store.commit(Option.some(key(2)))
      }))
      const onDisk = JSON.parse(NFS.readFileSync(statePath, "utf8")) as { claims: object; intents: object }
      assert.deepStrictEqual(Object.keys(onDisk.claims), [key(2)])
      assert.deepStrictEqual(Object.keys(onDisk.intents), [key(1)])
      const loaded = yield* withStore(loadedIntents)
      assert.deepStrictEqual([...loaded.keys()], [key(1)])
      NFS.rmSync(dir, { recursive: true, force: true })
    }))

  it.effect("a clean shutdown writes the settled intents out: the next start loads none (a refused claim is not in doubt)", () =>
    Effect.gen(function*() {
      const dir = NFS.mkdtempSync(NPath.join(NOS.tmpdir(), "vk-intents-"))
      const statePath = NPath.join(dir, "claims.json")
      const withStore = withFileStore(statePath)
      const onDisk = () => Object.keys((JSON.parse(NFS.readFileSync(statePath, "utf8")) as { intents?: object }).intents ?? {})
      yield* withStore(Effect.gen(function*() {
        const store = yield* ClaimsStore
        yield* store.load
        // Two claims sent: sandboxd refuses the first (settled), the second's outcome is unknown.
        yield* store.intend(intent(1))
        yield* store.intend(intent(2))
        yield* store.settleIntent(key(1))
        assert.deepStrictEqual(onDisk(), [key(1), key(2)], "settling writes nothing by itself")
      }))
      assert.deepStrictEqual(onDisk(), [key(2)], "the shutdown wrote the settled one out; the other stays")
      const loaded = yield* withStore(loadedIntents)
      assert.deepStrictEqual([...loaded.keys()], [key(2)])
      NFS.rmSync(dir, { recursive: true, force: true })
    }))

  it.effect("a clean shutdown with nothing settled since the last write writes nothing", () =>
    Effect.gen(function*() {
      const control = yield* Effect.scoped(Effect.gen(function*() {
        const context = yield* Layer.build(MemoryLayer())
        const store = Context.get(context, ClaimsStore)
        yield* store.intend(intent(1))
        yield* store.commit(Option.none())
        return Context.get(context, ClaimsStoreMemory.ClaimsStoreMemoryControl)
      }))
      assert.strictEqual(yield* control.writeCount, 2)
      assert.deepStrictEqual([...(yield* control.diskIntents).keys()], [key(1)])
    }))
})

describe("claim intents: the shutdown write", () => {
  it.effect("a defect in the shutdown write is logged with its cause, and the shutdown goes on", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      let writes = 0
      yield* Effect.scoped(Effect.gen(function*() {
        const commits = yield* makeClaimsCommit(() =>
          Effect.suspend(() => ++writes === 1 ? Effect.void : Effect.die(new Error("encoder bug")))
        )
        yield* commits.intend(intent(1))
        yield* commits.settleIntent(key(1))
      })).pipe(Effect.provide(ClaimsStoreMemory.testSnapshotLayer), Effect.provide(logs.layer))
      assert.strictEqual(writes, 2, "the shutdown made its write")
      const lines = logs.lines.filter((line) => line.message.startsWith("persist claims state at shutdown"))
      assert.strictEqual(lines.length, 1, "the defect reached a log line")
    }))
})
