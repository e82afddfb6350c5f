import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { type ClaimsFileOps, nodeClaimsFileOps } from "../../src/Store/FileOps.ts"
import { ensureDir, sweepTempFiles, unsafeReason } from "../../src/Store/StateDir.ts"
import { tempDir as makeTempDir } from "../support/TempDir.ts"

const tempDir = makeTempDir("vk-statedir-")
const modeOf = (path: string) => Effect.promise(async () => (await NFS.stat(path)).mode & 0o7777)
/** A directory with exactly `mode` (mkdir alone is narrowed by the umask). */
const dirWithMode = (parent: string, name: string, mode: number) =>
  Effect.promise(async () => {
    const dir = NPath.join(parent, name)
    await NFS.mkdir(dir)
    await NFS.chmod(dir, mode)
    return dir
  })
const euid = process.geteuid?.()

/** Node's steps with every chmod recorded. */
const watchingChmod = () => {
  const chmods: Array<string> = []
  const ops: ClaimsFileOps = {
    ...nodeClaimsFileOps,
    chmod: (path, mode) => {
      chmods.push(path)
      return nodeClaimsFileOps.chmod(path, mode)
    }
  }
  return { ops, chmods }
}

describe("StateDir", () => {
  it.effect("an absent directory is created 0700, parents included", () =>
    Effect.gen(function*() {
      const dir = NPath.join(yield* tempDir, "a", "b")
      yield* ensureDir(nodeClaimsFileOps, dir)
      assert.strictEqual(yield* modeOf(dir), 0o700)
    }))

  for (const mode of [0o700, 0o750, 0o755]) {
    it.effect(`a present directory of ours with mode ${mode.toString(8)} is accepted and its mode left alone`, () =>
      Effect.gen(function*() {
        const dir = yield* dirWithMode(yield* tempDir, "state", mode)
        const watch = watchingChmod()
        yield* ensureDir(watch.ops, dir)
        assert.strictEqual(yield* modeOf(dir), mode)
        assert.deepStrictEqual(watch.chmods, [], "never chmods a directory it did not create")
      }))
  }

  for (
    const [mode, why] of [
      [0o1777, "sticky"],
      [0o777, "writable by group or others"],
      [0o770, "writable by group or others"],
      [0o702, "writable by group or others"],
      [0o1700, "sticky"]
    ] as const
  ) {
    it.effect(`a directory with mode ${mode.toString(8)} is refused (${why}) and keeps its mode`, () =>
      Effect.gen(function*() {
        const dir = yield* dirWithMode(yield* tempDir, "shared", mode)
        const watch = watchingChmod()
        const error = yield* Effect.flip(ensureDir(watch.ops, dir))
        assert.strictEqual(error._tag, "StateDirUnsafe")
        assert.strictEqual(error.path, dir)
        assert.include(error.message, dir)
        assert.include(error.message, why)
        assert.include(error.message, `mode ${mode.toString(8).padStart(4, "0")}`)
        assert.notInclude(error.message, "\n")
        assert.strictEqual(yield* modeOf(dir), mode, "the mode is untouched")
        assert.deepStrictEqual(watch.chmods, [])
      }))
  }

  it.effect("a directory owned by another user is refused", () =>
    Effect.gen(function*() {
      const dir = yield* dirWithMode(yield* tempDir, "theirs", 0o700)
      const error = yield* Effect.flip(ensureDir(nodeClaimsFileOps, dir, (euid ?? 0) + 4242))
      assert.strictEqual(error._tag, "StateDirUnsafe")
      assert.include(error.message, "owned by uid")
    }))

  it.effect.skipIf(euid !== 0)("as root: a directory chowned to another uid is refused; one chowned to us with 0700 is accepted", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      const theirs = yield* dirWithMode(parent, "theirs", 0o700)
      yield* Effect.promise(() => NFS.chown(theirs, 65534, 65534))
      const error = yield* Effect.flip(ensureDir(nodeClaimsFileOps, theirs))
      assert.strictEqual(error._tag, "StateDirUnsafe")
      assert.include(error.message, "owned by uid 65534")
      // What the chart's init container prepares: chowned to the daemon's uid, mode 0700.
      const prepared = yield* dirWithMode(parent, "prepared", 0o700)
      yield* Effect.promise(() => NFS.chown(prepared, 0, 0))
      yield* ensureDir(nodeClaimsFileOps, prepared)
    }))

  it.effect("a file where the directory should be is refused", () =>
    Effect.gen(function*() {
      const file = NPath.join(yield* tempDir, "file")
      yield* Effect.promise(() => NFS.writeFile(file, ""))
      const error = yield* Effect.flip(ensureDir(nodeClaimsFileOps, file))
      assert.strictEqual(error._tag, "StateDirUnsafe")
      assert.include(error.message, "is not a directory")
    }))

  it.effect("a directory someone else made between the look and the mkdir is checked, not chmodded", () =>
    Effect.gen(function*() {
      const dir = NPath.join(yield* tempDir, "raced")
      let looks = 0
      const watch = watchingChmod()
      const ops: ClaimsFileOps = {
        ...watch.ops,
        // The first look finds nothing; then the other process's mkdir wins the race.
        stat: (path) => (looks++ === 0 ? Promise.resolve(undefined) : nodeClaimsFileOps.stat(path)),
        mkdir: async () => {
          await NFS.mkdir(dir)
          await NFS.chmod(dir, 0o777)
          return undefined
        }
      }
      const error = yield* Effect.flip(ensureDir(ops, dir))
      assert.strictEqual(error._tag, "StateDirUnsafe")
      assert.deepStrictEqual(watch.chmods, [])
      assert.strictEqual(yield* modeOf(dir), 0o777)
    }))

  it("the reasons, one line each", () => {
    const ours = euid ?? 0
    assert.isUndefined(unsafeReason({ mode: 0o40700, uid: ours, isDirectory: true }, ours))
    assert.strictEqual(
      unsafeReason({ mode: 0o41777, uid: 0, isDirectory: true }, 1000),
      "is writable by group or others, sticky (a shared directory such as /tmp), owned by uid 0, not by this daemon's uid 1000 (mode 1777)"
    )
    assert.isUndefined(unsafeReason({ mode: 0o40700, uid: 5, isDirectory: true }, undefined), "no uid to compare on this platform")
  })

  it.effect("a failed step is a FileStepError naming the step and the path", () =>
    Effect.gen(function*() {
      const file = NPath.join(yield* tempDir, "file")
      yield* Effect.promise(() => NFS.writeFile(file, ""))
      const error = yield* Effect.flip(ensureDir(nodeClaimsFileOps, NPath.join(file, "sub")))
      assert.strictEqual(error._tag, "FileStepError")
      assert.strictEqual(error.path, NPath.join(file, "sub"))
    }))

  it.effect("the sweep removes the temp files of this path only", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      for (const name of [".claims.json.tmp-0a1b2c", "claims.json.tmp", "claims.json", "other.json.tmp"]) {
        yield* Effect.promise(() => NFS.writeFile(NPath.join(dir, name), ""))
      }
      yield* sweepTempFiles(nodeClaimsFileOps, NPath.join(dir, "claims.json"))
      assert.deepStrictEqual((yield* Effect.promise(() => NFS.readdir(dir))).sort(), ["claims.json", "other.json.tmp"])
    }))
})
