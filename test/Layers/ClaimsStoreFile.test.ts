import { assert, describe, it } from "@effect/vitest"
import { DateTime, Deferred, Effect, Exit, Fiber, Layer, Option, Redacted, Scope } from "effect"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import * as ClaimsStoreFile from "../../src/Layers/ClaimsStoreFile.ts"
import { TestClaimsTable, testSnapshotLayer } from "../../testkit/Layers/ClaimsStoreMemory.ts"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import { testConfig } from "../../testkit/Config.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import { type ClaimId, type PodKey, podKeyOf } from "../../src/Schemas/Ids.ts"
import { encodeClaimsFile } from "../../src/Schemas/ClaimsFile/Encode.ts"
import { ClaimsStore } from "../../src/Services/ClaimsStore.ts"
import { tempDir as makeTempDir } from "../support/TempDir.ts"

const record = (n: number, extra: Partial<ClaimRecord> = {}): ClaimRecord => ({
  id: `sb_${n.toString(16).padStart(16, "0")}` as ClaimId,
  token: Redacted.make(`tok-${n}`),
  address: "10.0.0.1:7777",
  podUID: `uid-${n}`,
  claimedAt: Option.some(DateTime.makeUnsafe(Date.UTC(2026, 6, 27, 2, 15, n % 60))),
  deadline: Option.none(),
  ...extra
})
const key = (n: number): PodKey => podKeyOf("ns", `pod-${n}`)

/** A fresh directory for one test, removed with the test's scope. */
const tempDir = makeTempDir("vk-claims-")

/** The store (and its test snapshot table) for `statePath`, built in a scope of its own. */
const storeLayer = (statePath: string, ops?: ClaimsStoreFile.ClaimsFileOps) =>
  ClaimsStoreFile.layerWith(ops === undefined ? {} : { ops }).pipe(
    Layer.provide(AppConfig.layer(testConfig({ statePath }))),
    Layer.provideMerge(testSnapshotLayer)
  )

const withStore = <A, E, R>(
  statePath: string,
  body: Effect.Effect<A, E, R>,
  ops?: ClaimsStoreFile.ClaimsFileOps
) => body.pipe(Effect.provide(storeLayer(statePath, ops), { local: true }))

/** A promise to hold a filesystem step on, and its release. */
const gate = () => {
  let resolve: () => void = () => undefined
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

const readText = (path: string) => Effect.promise(() => NFS.readFile(path, "utf8"))
const modeOf = (path: string) => Effect.promise(async () => (await NFS.stat(path)).mode & 0o777)
const listDir = (dir: string) => Effect.promise(() => NFS.readdir(dir))

const referenceFile = `{"claims":{` +
  `"default/a":{"id":"sb_00000000000000a1","token":"tok-a","address":"10.0.0.5:7777","podUID":"uid-a","claimedAt":"2026-07-27T02:15:00Z","deadline":"2026-07-28T02:15:00Z"},` +
  `"default/b":{"id":"sb_00000000000000b2","token":"t\\u003cb\\u003e","podUID":"","claimedAt":"2026-07-27T02:16:01Z"},` +
  `"team-x/z":{"id":"sb_00000000000000c3","token":"tok-z","address":"[fd00::1]:7777","podUID":"uid-z","claimedAt":"2026-01-02T03:04:05Z"}` +
  `}}`

/** Ops that log every step and fail the named one (once `armed`). */
const recordingOps = (failAt?: keyof ClaimsStoreFile.ClaimsFileOps) => {
  const steps: Array<string> = []
  const written: Array<string> = []
  let armed = false
  const ops = {} as Record<string, unknown>
  for (const [name, fn] of Object.entries(ClaimsStoreFile.nodeClaimsFileOps)) {
    ops[name] = (...args: Array<unknown>) => {
      steps.push(name)
      if (name === "write") written.push(Buffer.from(args[1] as Uint8Array).toString("utf8"))
      if (armed && name === failAt) {
        return Promise.reject(Object.assign(new Error(`EIO: injected ${name} failure`), { code: "EIO" }))
      }
      return (fn as (...a: Array<unknown>) => Promise<unknown>)(...args)
    }
  }
  return {
    ops: ops as unknown as ClaimsStoreFile.ClaimsFileOps,
    steps,
    written,
    arm: () => {
      armed = true
      steps.length = 0
    }
  }
}

describe("ClaimsStoreFile", () => {
  it.effect("a reference-format file loads and is written back byte-identically", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      yield* Effect.promise(() => NFS.writeFile(path, referenceFile))
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          const table = yield* TestClaimsTable
          const loaded = yield* store.load
          assert.strictEqual(loaded.size, 3)
          for (const [k, r] of loaded) yield* table.put(k, r)
          yield* store.commit(Option.none())
        })
      )
      assert.strictEqual(yield* readText(path), referenceFile)
    }))

  it.effect("the first write works on a missing directory: {\"claims\":{}}, dir 0700, file 0600", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "state", "nested", "claims.json")
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          assert.strictEqual((yield* store.load).size, 0)
          yield* store.commit(Option.none())
        })
      )
      assert.strictEqual(yield* readText(path), `{"claims":{}}`)
      assert.strictEqual(yield* modeOf(NPath.dirname(path)), 0o700)
      assert.strictEqual(yield* modeOf(path), 0o600)
    }))

  it.effect("an existing 0755 directory of ours is used as it is (its mode untouched)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const stateDir = NPath.join(dir, "hostpath")
      yield* Effect.promise(() => NFS.mkdir(stateDir, { mode: 0o755 }))
      yield* Effect.promise(() => NFS.chmod(stateDir, 0o755))
      const path = NPath.join(stateDir, "claims.json")
      yield* withStore(path, ClaimsStore.use((s) => s.commit(Option.none())))
      assert.strictEqual(yield* modeOf(stateDir), 0o755)
      assert.strictEqual(yield* modeOf(path), 0o600)
    }))

  it.effect("a state path in a shared directory (mode 1777, like /tmp) refuses to start and leaves it as it was", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const shared = NPath.join(dir, "tmp")
      yield* Effect.promise(() => NFS.mkdir(shared))
      yield* Effect.promise(() => NFS.chmod(shared, 0o1777))
      const path = NPath.join(shared, "claims.json")
      const error = yield* Effect.flip(withStore(path, ClaimsStore.use((s) => s.load)))
      assert.strictEqual(error._tag, "StateDirUnsafe")
      assert.include(error.message, shared)
      assert.strictEqual((yield* Effect.promise(() => NFS.stat(shared))).mode & 0o7777, 0o1777)
      assert.deepStrictEqual(yield* listDir(shared), [], "no lock, no file")
    }))

  it.effect("a deleted state directory is recreated 0700 by the next write", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const stateDir = NPath.join(dir, "state")
      const path = NPath.join(stateDir, "claims.json")
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          yield* store.commit(Option.none())
          yield* Effect.promise(() => NFS.rm(stateDir, { recursive: true }))
          yield* store.commit(Option.none())
        })
      )
      assert.strictEqual(yield* readText(path), `{"claims":{}}`)
      assert.strictEqual(yield* modeOf(stateDir), 0o700)
    }))

  it.effect("load: missing file → empty; empty, truncated, or array → ClaimsLoadError naming the path", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      const load = withStore(path, ClaimsStore.use((s) => s.load))
      assert.strictEqual((yield* load).size, 0)
      for (const text of ["", `{"claims":{"ns/a":{"id":"sb_1"`, `[]`, `[{"claims":{}}]`]) {
        yield* Effect.promise(() => NFS.writeFile(path, text))
        const error = yield* Effect.flip(load)
        assert.strictEqual(error._tag, "ClaimsLoadError")
        assert.strictEqual(error.path, path)
        assert.include(error.message, path)
        assert.strictEqual(yield* readText(path), text, "a bad file is left as it is")
      }
    }))

  it.effect("load: an unreadable file (a directory in its place) refuses to start", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      yield* Effect.promise(() => NFS.mkdir(path))
      const error = yield* Effect.flip(withStore(path, ClaimsStore.use((s) => s.load)))
      assert.strictEqual(error._tag, "ClaimsLoadError")
    }))

  it.effect("load sweeps temp files left by a crash, and only those", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      const names = [
        ".claims.json.tmp-0a1b2c",
        "claims.json.tmp",
        "claims.json.lock.0123456789abcdef01234567",
        "claims.json.lock.keep",
        "other.json",
        ".other.json.tmp-1"
      ]
      for (const name of names) {
        yield* Effect.promise(() => NFS.writeFile(NPath.join(dir, name), "partial"))
      }
      yield* Effect.promise(() => NFS.writeFile(path, `{"claims":{}}`))
      yield* withStore(path, ClaimsStore.use((s) => s.load))
      const left = (yield* listDir(dir)).sort()
      assert.deepStrictEqual(left, [".other.json.tmp-1", "claims.json", "claims.json.lock.keep", "other.json"])
    }))

  it.effect("the mandatory write of the table as loaded is a full durable write of the file's own bytes (PER-9)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      yield* Effect.promise(() => NFS.writeFile(path, referenceFile))
      const rec = recordingOps()
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          const table = yield* TestClaimsTable
          for (const [k, r] of yield* store.load) yield* table.put(k, r)
          rec.arm()
          yield* store.commit(Option.none())
        }),
        rec.ops
      )
      assert.deepStrictEqual(rec.steps, ["create", "write", "fsync", "close", "rename", "fsyncDir"])
      assert.deepStrictEqual(rec.written, [referenceFile])
    }))

  it.effect("the write of rows unchanged since the load copies their loaded bytes: no row is encoded again", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      // as the writer writes it and its fast reader reads it: nothing in it escaped
      const writtenFile = referenceFile.replace(`"t\\u003cb\\u003e"`, `"tok-b"`)
      assert.notStrictEqual(writtenFile, referenceFile)
      yield* Effect.promise(() => NFS.writeFile(path, writtenFile))
      let tokensRead = 0
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          const table = yield* TestClaimsTable
          for (const [k, r] of yield* store.load) {
            // The same record object, its token counted when read (encoding a row reads it).
            const token = r.token
            Object.defineProperty(r, "token", { get: () => (tokensRead++, token) })
            yield* table.put(k, r)
          }
          yield* store.commit(Option.none())
        })
      )
      assert.strictEqual(yield* readText(path), writtenFile)
      assert.strictEqual(tokensRead, 0)
    }))

  it.effect("a file with a byte that is not UTF-8 in a string is written again as the writer writes its rows, never copied", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      // 0xFF reads as U+FFFD: one character for one byte, so the text's offsets still count bytes.
      const [before, after] = referenceFile.split(`"uid-a"`) as [string, string]
      yield* Effect.promise(() => NFS.writeFile(path, Buffer.concat([Buffer.from(`${before}"uid-`), Buffer.from([0xff]), Buffer.from(`"${after}`)])))
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          const table = yield* TestClaimsTable
          for (const [k, r] of yield* store.load) yield* table.put(k, r)
          yield* store.commit(Option.none())
        })
      )
      const expected = `${before}"uid-\ufffd"${after}`
      assert.deepStrictEqual(yield* Effect.promise(() => NFS.readFile(path)), Buffer.from(expected))
    }))

  it.effect("after the write of the table as loaded, each later write is exactly the table's encoding", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      yield* Effect.promise(() => NFS.writeFile(path, referenceFile))
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          const table = yield* TestClaimsTable
          const rows = new Map(yield* store.load)
          for (const [k, r] of rows) yield* table.put(k, r)
          yield* store.commit(Option.none())
          const steps: ReadonlyArray<(rows: Map<PodKey, ClaimRecord>) => void> = [
            (rows) => rows.set(podKeyOf("default", "b"), { ...rows.get(podKeyOf("default", "b"))!, podUID: "uid-b2" }),
            (rows) => rows.set(podKeyOf("default", "aa"), record(7)),
            (rows) => rows.delete(podKeyOf("default", "a")),
            (rows) => rows.set(podKeyOf("zz", "last"), record(8))
          ]
          for (const change of steps) {
            const before = new Set(rows.keys())
            change(rows)
            for (const k of before) if (!rows.has(k)) yield* table.remove(k)
            for (const [k, r] of rows) yield* table.put(k, r)
            yield* store.commit(Option.none())
            assert.strictEqual(yield* readText(path), encodeClaimsFile(rows))
          }
        })
      )
    }))

  it.effect("a table changed before the first write is written as it is then, never as loaded", () =>
    Effect.gen(function*() {
      for (const change of ["a row removed", "a row replaced by an equal copy", "a row added"] as const) {
        const dir = yield* tempDir
        const path = NPath.join(dir, "claims.json")
        yield* Effect.promise(() => NFS.writeFile(path, referenceFile))
        const expected = yield* withStore(
          path,
          Effect.gen(function*() {
            const store = yield* ClaimsStore
            const table = yield* TestClaimsTable
            const loaded = new Map(yield* store.load)
            if (change === "a row removed") loaded.delete(podKeyOf("default", "b"))
            if (change === "a row replaced by an equal copy") loaded.set(podKeyOf("default", "b"), { ...loaded.get(podKeyOf("default", "b"))! })
            if (change === "a row added") loaded.set(key(9), record(9))
            for (const [k, r] of loaded) yield* table.put(k, r)
            yield* store.commit(Option.none())
            return encodeClaimsFile(loaded)
          })
        )
        assert.strictEqual(yield* readText(path), expected, change)
        if (change !== "a row replaced by an equal copy") assert.notStrictEqual(expected, referenceFile, change)
      }
    }))

  it.effect("a write is create(0600) → write → fsync → close → rename → fsync(dir), no temp left", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      const rec = recordingOps()
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          yield* store.commit(Option.none())
          rec.arm()
          yield* store.commit(Option.none())
        }),
        rec.ops
      )
      assert.deepStrictEqual(rec.steps, ["create", "write", "fsync", "close", "rename", "fsyncDir"])
      assert.deepStrictEqual(yield* listDir(dir), ["claims.json"])
    }))

  for (const failAt of ["create", "write", "fsync", "rename", "fsyncDir"] as const) {
    it.effect(`an injected ${failAt} failure → ClaimsWriteError, old file intact, temp removed, landed not called`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const path = NPath.join(dir, "claims.json")
        const rec = recordingOps(failAt)
        yield* withStore(
          path,
          Effect.gen(function*() {
            const store = yield* ClaimsStore
            const table = yield* TestClaimsTable
            yield* table.put(key(1), record(1))
            yield* store.commit(Option.none())
            const before = yield* readText(path)
            const landedBefore = (yield* table.landedCalls).length
            yield* table.put(key(2), record(2), { tentative: true })
            rec.arm()
            const error = yield* Effect.flip(store.commit(Option.some(key(2))))
            assert.strictEqual(error._tag, "ClaimsWriteError")
            assert.strictEqual(error.operation, failAt === "fsyncDir" ? "fsync" : failAt)
            assert.strictEqual(error.path, path)
            assert.strictEqual((yield* table.landedCalls).length, landedBefore, "landed is not called")
            assert.deepStrictEqual([...(yield* table.tentative)], [key(2)], "the row stays tentative")
            if (failAt !== "fsyncDir") assert.strictEqual(yield* readText(path), before, "old file untouched")
            assert.deepStrictEqual(yield* listDir(dir), ["claims.json", "claims.json.lock"].sort())
          }),
          rec.ops
        )
      }))
  }

  it.effect("an unwritable path fails the first write (PER-9) with ClaimsWriteError", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      const rec = recordingOps("create")
      rec.arm()
      const error = yield* Effect.flip(
        withStore(path, ClaimsStore.use((s) => s.commit(Option.none())), rec.ops)
      )
      assert.strictEqual(error._tag, "ClaimsWriteError")
      assert.strictEqual(error._tag === "ClaimsWriteError" ? error.operation : "", "create")
      assert.deepStrictEqual(yield* listDir(dir), [], "nothing written, lock released")
    }))

  it.effect("group commit: N concurrent commits share fewer than N writes; each resumes after its row landed", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      const n = 32
      // Hold the first write in fsync until every commit has been queued.
      const release = gate()
      let writes = 0
      const ops: ClaimsStoreFile.ClaimsFileOps = {
        ...ClaimsStoreFile.nodeClaimsFileOps,
        rename: (from, to) => {
          writes++
          return ClaimsStoreFile.nodeClaimsFileOps.rename(from, to)
        },
        fsync: async (file) => {
          if (writes === 0) await release.promise
          return ClaimsStoreFile.nodeClaimsFileOps.fsync(file)
        }
      }
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          const table = yield* TestClaimsTable
          const fibers = yield* Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) =>
            Effect.gen(function*() {
              yield* table.put(key(i), record(i), { tentative: true })
              yield* store.commit(Option.some(key(i)))
              // Resumed: the row is on disk and no longer tentative.
              const onDisk = JSON.parse(yield* readText(path)) as { claims: Record<string, { id: string }> }
              assert.strictEqual(onDisk.claims[key(i)]?.id, record(i).id)
              assert.isFalse((yield* table.tentative).has(key(i)))
            }).pipe(Effect.forkChild({ startImmediately: true })))
          release.resolve()
          yield* Effect.forEach(fibers, Fiber.join)
          assert.isBelow(writes, n)
          assert.isAtMost(writes, 3)
          const onDisk = JSON.parse(yield* readText(path)) as { claims: Record<string, unknown> }
          assert.strictEqual(Object.keys(onDisk.claims).length, n)
          assert.strictEqual((yield* table.tentative).size, 0)
        }),
        ops
      )
    }))

  it.effect("tentative exclusion: a tentative row is in no write but its own commit's", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      const rec = recordingOps()
      const firstWriteStarted = yield* Deferred.make<void>()
      const release = gate()
      let held = false
      const ops: ClaimsStoreFile.ClaimsFileOps = {
        ...rec.ops,
        fsync: async (file) => {
          if (!held) {
            held = true
            Deferred.doneUnsafe(firstWriteStarted, Exit.void)
            await release.promise
          }
          return rec.ops.fsync(file)
        }
      }
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          const table = yield* TestClaimsTable
          yield* table.put(key(1), record(1), { tentative: true })
          yield* table.put(key(2), record(2), { tentative: true }) // claimed, its commit comes later
          yield* table.put(key(9), record(9), { tentative: true }) // never committed
          const a = yield* Effect.forkChild(store.commit(Option.some(key(1))), { startImmediately: true })
          yield* Deferred.await(firstWriteStarted)
          // While A's write is in flight, B commits, and so does someone with no row of its own.
          const b = yield* Effect.forkChild(store.commit(Option.some(key(2))), { startImmediately: true })
          const c = yield* Effect.forkChild(store.commit(Option.none()), { startImmediately: true })
          release.resolve()
          yield* Fiber.join(a)
          yield* Fiber.join(b)
          yield* Fiber.join(c)
          assert.deepStrictEqual([...(yield* table.tentative)], [key(9)])
        }),
        ops
      )
      assert.strictEqual(rec.written.length, 2)
      const [first, second] = rec.written.map((t) => Object.keys((JSON.parse(t) as { claims: object }).claims))
      assert.deepStrictEqual(first, [key(1)], "B's tentative row is not in A's write")
      assert.deepStrictEqual(second, [key(1), key(2)])
      for (const text of rec.written) assert.notInclude(text, record(9).id)
    }))

  it.effect("the row cache never leaks a removed, replaced or excluded row into a write", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      const rec = recordingOps()
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          const table = yield* TestClaimsTable
          for (let i = 0; i < 5; i++) yield* table.put(key(i), record(i))
          yield* store.commit(Option.none())
          yield* table.remove(key(3))
          yield* table.put(key(1), record(101)) // re-claimed: a new record under the same key
          yield* table.put(key(4), record(104), { tentative: true }) // replaced by a tentative claim
          yield* store.commit(Option.none())
        }),
        rec.ops
      )
      const last = JSON.parse(rec.written.at(-1)!) as { claims: Record<string, { id: string }> }
      assert.deepStrictEqual(Object.keys(last.claims), [key(0), key(1), key(2)])
      assert.strictEqual(last.claims[key(1)]!.id, record(101).id)
    }))

  it.effect("a symlinked state file is followed: written beside its target, the link kept, the lock beside the target", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const volume = NPath.join(dir, "volume")
      const stateDir = NPath.join(dir, "state")
      yield* Effect.promise(() => NFS.mkdir(volume, { mode: 0o700 }))
      yield* Effect.promise(() => NFS.mkdir(stateDir, { mode: 0o700 }))
      const target = NPath.join(volume, "claims.json")
      const link = NPath.join(stateDir, "claims.json")
      yield* Effect.promise(() => NFS.writeFile(target, referenceFile, { mode: 0o600 }))
      yield* Effect.promise(() => NFS.symlink("../volume/claims.json", link))
      yield* withStore(
        link,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          const table = yield* TestClaimsTable
          assert.strictEqual(store.path, link)
          const loaded = yield* store.load
          assert.strictEqual(loaded.size, 3)
          for (const [k, r] of loaded) yield* table.put(k, r)
          yield* table.put(key(7), record(7))
          yield* store.commit(Option.none())
          assert.include(yield* listDir(volume), "claims.json.lock")
        })
      )
      assert.strictEqual(yield* Effect.promise(() => NFS.readlink(link)), "../volume/claims.json", "the link is kept")
      const written = JSON.parse(yield* readText(target)) as { claims: Record<string, unknown> }
      assert.strictEqual(Object.keys(written.claims).length, 4, "the target holds the new table")
      assert.deepStrictEqual(yield* listDir(stateDir), ["claims.json"], "nothing written beside the link")
      assert.deepStrictEqual((yield* listDir(volume)).sort(), ["claims.json"])
    }))

  it.effect("a dangling symlink (its volume not mounted) refuses to start and writes nothing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const link = NPath.join(dir, "claims.json")
      yield* Effect.promise(() => NFS.symlink(NPath.join(dir, "unmounted", "claims.json"), link))
      const error = yield* Effect.flip(withStore(link, ClaimsStore.use((s) => s.commit(Option.none()))))
      assert.strictEqual(error._tag, "StateDirUnsafe")
      assert.include(error.message, "does not exist (a volume not mounted?)")
      assert.deepStrictEqual(yield* listDir(dir), ["claims.json"])
      assert.isTrue((yield* Effect.promise(() => NFS.lstat(link))).isSymbolicLink(), "the link is left as it is")
      // The state directory itself a dangling link: the same.
      const dirLink = NPath.join(dir, "state")
      yield* Effect.promise(() => NFS.symlink(NPath.join(dir, "unmounted"), dirLink))
      const dirError = yield* Effect.flip(withStore(NPath.join(dirLink, "claims.json"), ClaimsStore.use((s) => s.load)))
      assert.strictEqual(dirError._tag, "StateDirUnsafe")
      assert.include(dirError.message, "does not exist (a volume not mounted?)")
      assert.isFalse(yield* Effect.promise(() => NFS.stat(NPath.join(dir, "unmounted")).then(() => true, () => false)))
    }))

  it.effect("a file holding {} or {\"claims\":null} refuses to start and is left as it is", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      for (const text of [`{}`, `{"claims":null}`]) {
        yield* Effect.promise(() => NFS.writeFile(path, text))
        const error = yield* Effect.flip(withStore(path, ClaimsStore.use((s) => s.load)))
        assert.strictEqual(error._tag, "ClaimsLoadError")
        assert.include(error.message, `no "claims" object`)
        assert.strictEqual(yield* readText(path), text)
      }
    }))

  it.effect("fields a newer version wrote, top level and in rows, survive a rewrite", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      const newer = `{"claims":{` +
        `"default/a":{"id":"sb_00000000000000a1","token":"tok-a","podUID":"uid-a","claimedAt":"2026-07-27T02:15:00Z","attempt":{"n":3}}` +
        `},"leases":{"default/z":{"uid":"u"}},"format":2}`
      yield* Effect.promise(() => NFS.writeFile(path, newer))
      yield* withStore(
        path,
        Effect.gen(function*() {
          const store = yield* ClaimsStore
          const table = yield* TestClaimsTable
          for (const [k, r] of yield* store.load) yield* table.put(k, r)
          yield* table.put(key(1), record(1))
          yield* store.commit(Option.none())
        })
      )
      const text = yield* readText(path)
      assert.include(text, `"claimedAt":"2026-07-27T02:15:00Z","attempt":{"n":3}}`)
      assert.isTrue(text.endsWith(`}},"leases":{"default/z":{"uid":"u"}},"format":2}`), text)
      assert.include(text, `"ns/pod-1":`)
    }))

  it.effect("a second store on the same path refuses to start with StateLocked; free again after close", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "claims.json")
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(storeLayer(path), scope)
      const error = yield* Effect.flip(withStore(path, ClaimsStore.use((s) => s.load)))
      assert.strictEqual(error._tag, "StateLocked")
      assert.strictEqual(error.path, path)
      assert.include(error.message, path)
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual((yield* withStore(path, ClaimsStore.use((s) => s.load))).size, 0)
    }))
})
