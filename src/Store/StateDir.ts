/**
 * The state directory (the one holding `--state-path`): created 0700 when absent, checked when
 * present, and swept of the temp files a crash can leave behind. A directory others may write to
 * (even a sticky one such as /tmp) or that another user owns is refused, never "fixed": the file
 * holds every release token of the node, and a rename there could be swapped under us. Only a
 * directory the daemon has just created has its mode set.
 */
import * as NPath from "node:path"
import { Effect } from "effect"
import { StateDirUnsafe } from "../Services/ClaimsStore.ts"
import { isTempName } from "./DurableReplace.ts"
import { type ClaimsFileOps, type FileStepError, step } from "./FileOps.ts"

const octal = (mode: number): string => (mode & 0o7777).toString(8).padStart(4, "0")

/** Why `stat` of an existing directory makes it unfit for the claims file; undefined when fit. */
export const unsafeReason = (
  stat: { readonly mode: number; readonly uid: number; readonly isDirectory: boolean },
  euid: number | undefined
): string | undefined => {
  if (!stat.isDirectory) return "is not a directory"
  const problems: Array<string> = []
  if ((stat.mode & 0o022) !== 0) problems.push("writable by group or others")
  if ((stat.mode & 0o1000) !== 0) problems.push("sticky (a shared directory such as /tmp)")
  if (euid !== undefined && stat.uid !== euid) problems.push(`owned by uid ${stat.uid}, not by this daemon's uid ${euid}`)
  if (problems.length === 0) return undefined
  return `is ${problems.join(", ")} (mode ${octal(stat.mode)})`
}

/**
 * Creates `dir` 0700 when it is absent (parents too); refuses it when it is present and unfit
 * (see `unsafeReason`). A directory it did not create keeps its mode: a private 0755 is accepted
 * as it is.
 */
export const ensureDir = (
  ops: ClaimsFileOps,
  dir: string,
  euid: number | undefined = process.geteuid?.()
): Effect.Effect<void, FileStepError | StateDirUnsafe> =>
  Effect.gen(function*() {
    if ((yield* step("stat", dir, () => ops.stat(dir))) === undefined) {
      const link = yield* step("lstat", dir, () => ops.lstat(dir))
      if (link?.isSymbolicLink === true) {
        // A link to a volume that is not mounted: creating the directory elsewhere would start
        // the node with an empty table while its claims sit on the missing volume.
        const target = yield* step("readlink", dir, () => ops.readlink(dir))
        return yield* new StateDirUnsafe({
          path: dir,
          message: `state directory ${dir} is a symbolic link to ${target}, which does not exist (a volume not mounted?)`
        })
      }
      const created = yield* step("mkdir", dir, () => ops.mkdir(dir, 0o700))
      // Another process may have made it meanwhile (nothing created): then it is checked below
      // like any directory found in place, and its mode is not ours to change.
      if (created !== undefined) {
        // The umask may have narrowed the mode; 0700 is what we want, exactly.
        yield* step("chmod", dir, () => ops.chmod(dir, 0o700))
      }
    }
    const stat = yield* step("stat", dir, () => ops.stat(dir))
    const reason = stat === undefined ? "vanished while being set up" : unsafeReason(stat, euid)
    if (reason !== undefined) {
      return yield* new StateDirUnsafe({
        path: dir,
        message: `state directory ${dir} ${reason}: refusing to keep the claims file there; ` +
          `use a directory of its own, owned by the daemon's user and writable by it alone`
      })
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

/**
 * Where the state file really is: `path` itself, or, when it is a symlink, its target with every
 * link resolved. A link that leads nowhere (its volume not mounted, say) is refused.
 */
export const resolveLink = (ops: ClaimsFileOps, path: string): Effect.Effect<string, FileStepError | StateDirUnsafe> =>
  Effect.gen(function*() {
    const link = yield* step("lstat", path, () => ops.lstat(path))
    if (link?.isSymbolicLink !== true) return path
    const target = yield* step("realpath", path, () => ops.realpath(path))
    if (target !== undefined) return target
    const says = yield* step("readlink", path, () => ops.readlink(path))
    return yield* new StateDirUnsafe({
      path,
      message: `state file ${path} is a symbolic link to ${says}, which does not exist (a volume not mounted?): ` +
        `refusing to start with an empty claims table`
    })
  })
