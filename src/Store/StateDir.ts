/**
 * The state directory (the one holding `--state-path`): set up before the lock is taken and
 * before each load, and swept of the temp files a crash can leave behind.
 */
import * as NPath from "node:path"
import { Effect } from "effect"
import { isTempName } from "./DurableReplace.ts"
import { type ClaimsFileOps, type FileStepError, step } from "./FileOps.ts"

/** mkdir -p 0700 when missing; tightened to 0700 when group or others have any access. */
export const ensureDir = (ops: ClaimsFileOps, dir: string): Effect.Effect<void, FileStepError> =>
  Effect.gen(function*() {
    const stat = yield* step("stat", dir, () => ops.stat(dir))
    if (stat === undefined) {
      yield* step("mkdir", dir, () => ops.mkdir(dir, 0o700))
      // The umask may have narrowed the mode; 0700 is what we want, exactly.
      yield* step("chmod", dir, () => ops.chmod(dir, 0o700))
    } else if ((stat.mode & 0o077) !== 0) {
      yield* step("chmod", dir, () => ops.chmod(dir, 0o700))
    }
  })

/** Removes the temp files of `path` that an earlier run left in its directory (and only those). */
export const sweepTempFiles = (ops: ClaimsFileOps, path: string): Effect.Effect<void, FileStepError> =>
  Effect.gen(function*() {
    const dir = NPath.dirname(path)
    const base = NPath.basename(path)
    const names = yield* step("readdir", dir, () => ops.readdir(dir))
    for (const name of names) {
      if (!isTempName(base, name)) continue
      const temp = NPath.join(dir, name)
      yield* step("unlink", temp, () => ops.unlink(temp))
      yield* Effect.logInfo("removed a temp file left by an earlier run").pipe(Effect.annotateLogs({ file: temp }))
    }
  })
