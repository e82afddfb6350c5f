import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { durableReplace, type FailedStep, isTempName } from "../../src/Store/DurableReplace.ts"
import { type ClaimsFileOps, nodeClaimsFileOps } from "../../src/Store/FileOps.ts"
import { tempDir as makeTempDir } from "../support/TempDir.ts"

const tempDir = makeTempDir("vk-replace-")

/** Node's steps, recorded, with `failAt` failing (EIO). */
const recording = (failAt?: keyof ClaimsFileOps) => {
  const steps: Array<string> = []
  const ops = {} as Record<string, unknown>
  for (const [name, fn] of Object.entries(nodeClaimsFileOps)) {
    ops[name] = (...args: Array<unknown>) => {
      steps.push(name)
      if (name === failAt) return Promise.reject(Object.assign(new Error(`EIO: ${name}`), { code: "EIO" }))
      return (fn as (...a: Array<unknown>) => Promise<unknown>)(...args)
    }
  }
  return { ops: ops as unknown as ClaimsFileOps, steps }
}

const replace = (ops: ClaimsFileOps, path: string, text: string) =>
  Effect.gen(function*() {
    const failed: FailedStep = { operation: "", path: "" }
    const exit = yield* Effect.exit(Effect.tryPromise(() => durableReplace(ops, path, Buffer.from(text), failed)))
    return { exit, failed }
  })

describe("DurableReplace", () => {
  it.effect("create(0600) → write → fsync → close → rename → fsync(dir); no temp file left", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "f.json")
      const rec = recording()
      const { exit } = yield* replace(rec.ops, path, "new")
      assert.isTrue(exit._tag === "Success")
      assert.deepStrictEqual(rec.steps, ["create", "write", "fsync", "close", "rename", "fsyncDir"])
      assert.strictEqual(yield* Effect.promise(() => NFS.readFile(path, "utf8")), "new")
      assert.strictEqual((yield* Effect.promise(() => NFS.stat(path))).mode & 0o777, 0o600)
      assert.deepStrictEqual(yield* Effect.promise(() => NFS.readdir(dir)), ["f.json"])
    }))

  for (const failAt of ["create", "write", "fsync", "rename"] as const) {
    it.effect(`a ${failAt} failure names the step, keeps the old file and removes the temp file`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const path = NPath.join(dir, "f.json")
        yield* Effect.promise(() => NFS.writeFile(path, "old"))
        const { exit, failed } = yield* replace(recording(failAt).ops, path, "new")
        assert.isTrue(exit._tag === "Failure")
        assert.strictEqual(failed.operation, failAt)
        assert.strictEqual(failed.path === path, failAt === "rename", "rename names the file, the others the temp")
        assert.strictEqual(yield* Effect.promise(() => NFS.readFile(path, "utf8")), "old")
        assert.deepStrictEqual(yield* Effect.promise(() => NFS.readdir(dir)), ["f.json"])
      }))
  }

  it.effect("a directory fsync failure is reported as fsync of the directory (the file is already replaced)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "f.json")
      const { exit, failed } = yield* replace(recording("fsyncDir").ops, path, "new")
      assert.isTrue(exit._tag === "Failure")
      assert.deepStrictEqual(failed, { operation: "fsync", path: dir })
    }))

  it.effect("a missing directory is recreated 0700 once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = NPath.join(dir, "gone", "f.json")
      const rec = recording()
      const { exit } = yield* replace(rec.ops, path, "new")
      assert.isTrue(exit._tag === "Success")
      assert.deepStrictEqual(rec.steps.slice(0, 3), ["create", "mkdir", "create"])
      assert.strictEqual((yield* Effect.promise(() => NFS.stat(NPath.dirname(path)))).mode & 0o777, 0o700)
    }))

  it("temp names: ours, the reference's fixed one and the lock's record-in-progress; nothing else", () => {
    for (const name of [".claims.json.tmp-0a1b2c", "claims.json.tmp", "claims.json.lock.0123456789abcdef01234567"]) {
      assert.isTrue(isTempName("claims.json", name), name)
    }
    for (const name of ["claims.json", "claims.json.lock", "claims.json.lock.keep", ".other.json.tmp-1", "claims.json.tmpx"]) {
      assert.isFalse(isTempName("claims.json", name), name)
    }
  })
})
