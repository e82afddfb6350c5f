/**
 * Replaces a file so that a crash at any point leaves either the old bytes or the new ones: write
 * a fresh temp file beside it, fsync it, rename it over the file, fsync the directory. The temp
 * file is removed when any step before the rename fails.
 */
import { randomBytes } from "node:crypto"
import type * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { type ClaimsFileOps, errnoOf } from "./FileOps.ts"

/** The step a failed replace stopped at, and the path it was working on. */
export interface FailedStep {
  operation: string
  path: string
}

/** `.<base>.tmp-<hex>`: a temp file of ours beside `<base>`. */
export const tempNameFor = (base: string): string => `.${base}.tmp-${randomBytes(6).toString("hex")}`

/**
 * Temp files left by a crash: ours (`.<base>.tmp-<hex>`), the reference's fixed `<base>.tmp`, and
 * the state lock's record-in-progress (`<base>.lock.<nonce>`).
 */
export const isTempName = (base: string, name: string): boolean =>
  name.startsWith(`.${base}.tmp-`) || name === `${base}.tmp` ||
  (name.startsWith(`${base}.lock.`) && /^[0-9a-f]{24}$/.test(name.slice(base.length + 6)))

/**
 * The durable replace of `path` with `data`, as one promise: the steps follow each other directly,
 * without a fiber hop per step (that alone would cost a large share of the write). On failure
 * `failed` names the step and its path. A missing directory is recreated 0700 once, so a deleted
 * state directory does not break every later write.
 */
export const durableReplace = async (
  ops: ClaimsFileOps,
  path: string,
  data: Uint8Array,
  failed: FailedStep
): Promise<void> => {
  const dir = NPath.dirname(path)
  const temp = NPath.join(dir, tempNameFor(NPath.basename(path)))
  const at = (operation: string, target: string) => {
    failed.operation = operation
    failed.path = target
  }
  try {
    at("create", temp)
    let file: NFS.FileHandle
    try {
      file = await ops.create(temp, 0o600)
    } catch (cause) {
      if (errnoOf(cause) !== "ENOENT") throw cause
      at("mkdir", dir)
      await ops.mkdir(dir, 0o700)
      at("create", temp)
      file = await ops.create(temp, 0o600)
    }
    try {
      at("write", temp)
      await ops.write(file, data)
      at("fsync", temp)
      await ops.fsync(file)
    } finally {
      // After a successful fsync a close error loses nothing.
      await ops.close(file).catch(() => undefined)
    }
    at("rename", path)
    await ops.rename(temp, path)
  } catch (cause) {
    await ops.unlink(temp).catch(() => undefined)
    // inside a Promise run by Effect.tryPromise: the rethrow becomes the typed error
    throw cause
  }
  at("fsync", dir)
  await ops.fsyncDir(dir)
}
