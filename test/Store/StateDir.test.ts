import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NFS from "node:fs/promises"
import * as os from "node:os"
import * as NPath from "node:path"
import { nodeClaimsFileOps } from "../../src/Store/FileOps.ts"
import { ensureDir, sweepTempFiles } from "../../src/Store/StateDir.ts"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => NFS.mkdtemp(NPath.join(os.tmpdir(), "vk-statedir-"))),
  (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
)
const modeOf = (path: string) => Effect.promise(async () => (await NFS.stat(path)).mode & 0o777)

describe("StateDir", () => {
  it.effect("a missing directory is created 0700, parents included", () =>
    Effect.gen(function*() {
      const dir = NPath.join(yield* tempDir, "a", "b")
      yield* ensureDir(nodeClaimsFileOps, dir)
      assert.strictEqual(yield* modeOf(dir), 0o700)
    }))

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
