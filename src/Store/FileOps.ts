/**
 * The filesystem steps of the claims file, one function per step, so a test can make any single
 * step fail (as root, mode bits stop nothing). Missing files are `undefined`, not errors.
 */
import * as NFS from "node:fs/promises"
import { Effect, Schema } from "effect"

export interface FileStat {
  readonly mode: number
  readonly uid: number
  readonly isDirectory: boolean
}

export interface ClaimsFileOps {
  /** Follows symlinks. */
  readonly stat: (path: string) => Promise<FileStat | undefined>
  /** Does not follow a symlink: says whether `path` is one. */
  readonly lstat: (path: string) => Promise<{ readonly isSymbolicLink: boolean } | undefined>
  /** What a symlink says (not resolved). */
  readonly readlink: (path: string) => Promise<string>
  /** The path with every symlink resolved; undefined when it (or a link on the way) leads nowhere. */
  readonly realpath: (path: string) => Promise<string | undefined>
  /** `mkdir -p`: the first directory it created, undefined when all existed. */
  readonly mkdir: (dir: string, mode: number) => Promise<string | undefined>
  readonly chmod: (path: string, mode: number) => Promise<void>
  readonly readdir: (dir: string) => Promise<ReadonlyArray<string>>
  /** The file's bytes; undefined when there is no such file. */
  readonly readFile: (path: string) => Promise<Buffer<ArrayBuffer> | undefined>
  readonly unlink: (path: string) => Promise<void>
  /** Creates a new file (fails if it exists). */
  readonly create: (path: string, mode: number) => Promise<NFS.FileHandle>
  readonly write: (file: NFS.FileHandle, data: Uint8Array) => Promise<void>
  readonly fsync: (file: NFS.FileHandle) => Promise<void>
  readonly close: (file: NFS.FileHandle) => Promise<void>
  readonly rename: (from: string, to: string) => Promise<void>
  readonly fsyncDir: (dir: string) => Promise<void>
}

/** The errno code of a failed Node call ("ENOENT", "EIO", …), or "". */
export const errnoOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : ""

export const describeCause = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const orMissing = <A>(promise: Promise<A>): Promise<A | undefined> =>
  promise.catch((cause) => {
    if (errnoOf(cause) === "ENOENT") return undefined
    // inside a Promise run by Effect.tryPromise: the rethrow becomes the typed error
    throw cause
  })

export const nodeClaimsFileOps: ClaimsFileOps = {
  stat: (path) =>
    orMissing(NFS.stat(path)).then((s) => s && { mode: s.mode, uid: s.uid, isDirectory: s.isDirectory() }),
  lstat: (path) => orMissing(NFS.lstat(path)).then((s) => s && { isSymbolicLink: s.isSymbolicLink() }),
  readlink: (path) => NFS.readlink(path),
  realpath: (path) => orMissing(NFS.realpath(path)),
  mkdir: (dir, mode) => NFS.mkdir(dir, { recursive: true, mode }),
  chmod: (path, mode) => NFS.chmod(path, mode),
  readdir: (dir) => NFS.readdir(dir),
  readFile: (path) => orMissing(NFS.readFile(path)),
  unlink: (path) => NFS.unlink(path),
  create: (path, mode) => NFS.open(path, "wx", mode),
  write: (file, data) => file.writeFile(data),
  fsync: (file) => file.sync(),
  close: (file) => file.close(),
  rename: (from, to) => NFS.rename(from, to),
  fsyncDir: async (dir) => {
    const handle = await NFS.open(dir, "r")
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  }
}

/** A failed filesystem step, before the store reports it as ClaimsWriteError / ClaimsLoadError. */
export class FileStepError extends Schema.TaggedError<FileStepError>()("FileStepError", {
  operation: Schema.String,
  path: Schema.String,
  /** The errno code ("ENOENT", "EIO", …) or "". */
  code: Schema.String,
  message: Schema.String
}) {}

/** Runs one step, naming it (and its path) in the typed error. */
export const step = <A>(operation: string, target: string, run: () => Promise<A>): Effect.Effect<A, FileStepError> =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new FileStepError({ operation, path: target, code: errnoOf(cause), message: describeCause(cause) })
  })
