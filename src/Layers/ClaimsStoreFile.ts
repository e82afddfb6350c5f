/**
 * The file `ClaimsStore` (ARCHITECTURE.md §6.1–6.3) and the group-commit engine it shares with
 * the in-memory test layer.
 *
 * Group commit (§6.2):
 *
 * One writer fiber owns the file. Commits that arrive while a write is in flight queue up and
 * share the next write. Each batch snapshots its rows only after the batch is taken, so every
 * change made before a caller's `commit` is in that caller's write. The writer then reports the
 * batch's landed keys to `ClaimsSnapshot.landed` (which turns their Tentative rows Durable)
 * before it snapshots the next batch, and resumes every caller of the batch with the write's
 * outcome. A failed write never calls `landed`.
 */
import { randomBytes } from "node:crypto"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { Deferred, Effect, Exit, Layer, Option, Queue, Schema, type Scope } from "effect"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import { assembleClaimsFile, compareKeys, decodeClaimsFile, encodeClaimMember } from "../Schemas/ClaimsFile.ts"
import { AppConfig } from "../Schemas/Config.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"
import { ClaimsLoadError, ClaimsSnapshot, ClaimsStore, ClaimsWriteError } from "../Services/ClaimsStore.ts"
import * as StateLock from "./StateLock.ts"

/** One durable write of the whole table. `committing` = the batch's keys (for tests and logs). */
export type WriteTable = (
  rows: ReadonlyMap<PodKey, ClaimRecord>,
  committing: ReadonlySet<PodKey>
) => Effect.Effect<void, ClaimsWriteError>

interface PendingCommit {
  readonly key: Option.Option<PodKey>
  readonly done: Deferred.Deferred<void, ClaimsWriteError>
}

/**
 * Starts the writer fiber in the current scope and returns `commit`. Closing the scope lets an
 * in-flight write finish; commits still queued then are interrupted.
 */
export const makeGroupCommit = (
  write: WriteTable
): Effect.Effect<(key: Option.Option<PodKey>) => Effect.Effect<void, ClaimsWriteError>, never, ClaimsSnapshot | Scope.Scope> =>
  Effect.gen(function*() {
    const snapshot = yield* ClaimsSnapshot
    const queue = yield* Queue.unbounded<PendingCommit>()
    let closed = false

    const writeBatch = (batch: ReadonlyArray<PendingCommit>) =>
      Effect.gen(function*() {
        const committing = new Set<PodKey>()
        for (const entry of batch) if (Option.isSome(entry.key)) committing.add(entry.key.value)
        const rows = yield* snapshot.rowsForWrite(committing)
        const exit = yield* Effect.exit(write(rows, committing))
        if (Exit.isSuccess(exit)) {
          const written = new Map<PodKey, ClaimId>()
          for (const key of committing) {
            const row = rows.get(key)
            if (row !== undefined) written.set(key, row.id)
          }
          yield* snapshot.landed(written)
        }
        for (const entry of batch) Deferred.doneUnsafe(entry.done, exit)
      }).pipe(Effect.uninterruptible)

    // Registered before the writer is forked, so it runs after the writer has been interrupted
    // (finalizers run in reverse): nothing can be left queued behind it.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        closed = true
        const left = yield* Queue.clear(queue)
        for (const entry of left) yield* Deferred.interrupt(entry.done)
      })
    )
    yield* Queue.takeAll(queue).pipe(Effect.flatMap(writeBatch), Effect.forever, Effect.forkScoped)

    return (key: Option.Option<PodKey>) =>
      Effect.suspend(() => {
        if (closed) return Effect.interrupt
        const done = Deferred.makeUnsafe<void, ClaimsWriteError>()
        Queue.offerUnsafe(queue, { key, done })
        return Deferred.await(done)
      })
  })

// ---------------------------------------------------------------------------------------------
// The file layer

/**
 * The filesystem operations of the file layer, one per step, so a test can make any single step
 * fail (as root, mode bits stop nothing). Missing files are `undefined`, not errors.
 */
export interface ClaimsFileOps {
  readonly stat: (path: string) => Promise<{ readonly mode: number } | undefined>
  readonly mkdir: (dir: string, mode: number) => Promise<void>
  readonly chmod: (path: string, mode: number) => Promise<void>
  readonly readdir: (dir: string) => Promise<ReadonlyArray<string>>
  readonly readFile: (path: string) => Promise<string | undefined>
  readonly unlink: (path: string) => Promise<void>
  /** Creates a new file (fails if it exists). */
  readonly create: (path: string, mode: number) => Promise<NFS.FileHandle>
  readonly write: (file: NFS.FileHandle, text: string) => Promise<void>
  readonly fsync: (file: NFS.FileHandle) => Promise<void>
  readonly close: (file: NFS.FileHandle) => Promise<void>
  readonly rename: (from: string, to: string) => Promise<void>
  readonly fsyncDir: (dir: string) => Promise<void>
}

const isNotFound = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && "code" in cause && cause.code === "ENOENT"

const orMissing = <A>(promise: Promise<A>): Promise<A | undefined> =>
  promise.catch((cause) => {
    if (isNotFound(cause)) return undefined
    throw cause
  })

export const nodeClaimsFileOps: ClaimsFileOps = {
  stat: (path) => orMissing(NFS.stat(path)),
  mkdir: async (dir, mode) => {
    await NFS.mkdir(dir, { recursive: true, mode })
  },
  chmod: (path, mode) => NFS.chmod(path, mode),
  readdir: (dir) => NFS.readdir(dir),
  readFile: (path) => orMissing(NFS.readFile(path, "utf8")),
  unlink: (path) => NFS.unlink(path),
  create: (path, mode) => NFS.open(path, "wx", mode),
  write: (file, text) => file.writeFile(text),
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

/** A failed filesystem step, before it is reported as ClaimsWriteError / ClaimsLoadError. */
class FileStepError extends Schema.TaggedError<FileStepError>()("FileStepError", {
  operation: Schema.String,
  path: Schema.String,
  /** The errno code ("ENOENT", "EIO", …) or "". */
  code: Schema.String,
  message: Schema.String
}) {}

const describeCause = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/**
 * Encodes the table, reusing the JSON of every row whose record object is unchanged since the
 * previous encoding. Only the rows passed in are ever written: the cache is looked up by key AND
 * record identity, and rebuilt from exactly those rows on every call, so a removed or excluded
 * (tentative) row can never come back from it.
 */
export const makeClaimsEncoder = () => {
  let members = new Map<PodKey, { readonly record: ClaimRecord; readonly member: string }>()
  let sortedKeys: Array<PodKey> = []
  return (rows: ReadonlyMap<PodKey, ClaimRecord>): string => {
    const next = new Map<PodKey, { readonly record: ClaimRecord; readonly member: string }>()
    const added: Array<PodKey> = []
    for (const [key, record] of rows) {
      const cached = members.get(key)
      if (cached === undefined) added.push(key)
      next.set(key, cached !== undefined && cached.record === record ? cached : { record, member: encodeClaimMember(key, record) })
    }
    const removed = members.size - (rows.size - added.length)
    let keys: Array<PodKey>
    if (added.length + removed > 32) {
      keys = Array.from(rows.keys()).sort(compareKeys)
    } else {
      keys = removed > 0 ? sortedKeys.filter((key) => rows.has(key)) : sortedKeys.slice()
      for (const key of added) {
        let lo = 0
        let hi = keys.length
        while (lo < hi) {
          const mid = (lo + hi) >>> 1
          if (compareKeys(keys[mid]!, key) < 0) lo = mid + 1
          else hi = mid
        }
        keys.splice(lo, 0, key)
      }
    }
    members = next
    sortedKeys = keys
    const out = new Array<string>(keys.length)
    for (let i = 0; i < keys.length; i++) out[i] = next.get(keys[i]!)!.member
    return assembleClaimsFile(out)
  }
}

/** Temp files of this store: `.<base>.tmp-<hex>`, plus the reference's fixed `<base>.tmp`. */
const isTempName = (base: string, name: string): boolean => name.startsWith(`.${base}.tmp-`) || name === `${base}.tmp`

export interface ClaimsStoreFileOptions {
  readonly ops?: ClaimsFileOps
  readonly lock?: StateLock.StateLockOptions
}

/**
 * Builds the store for `statePath`: the directory is created 0700 (or tightened to 0700), the
 * single-writer lock taken for the scope, and the writer fiber started.
 */
export const make = (statePath: string, options: ClaimsStoreFileOptions = {}) =>
  Effect.gen(function*() {
    const ops = options.ops ?? nodeClaimsFileOps
    const path = NPath.resolve(statePath)
    const dir = NPath.dirname(path)
    const base = NPath.basename(path)
    const step = <A>(operation: string, target: string, run: () => Promise<A>) =>
      Effect.tryPromise({
        try: run,
        catch: (cause) =>
          new FileStepError({
            operation,
            path: target,
            code: typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
              ? cause.code
              : "",
            message: describeCause(cause)
          })
      })
    const loadError = (e: FileStepError) =>
      new ClaimsLoadError({ path, message: `cannot ${e.operation} ${e.path}: ${e.message}` })

    /** mkdir -p 0700 when missing; tightened to 0700 when group or others have any access. */
    const ensureDir = Effect.gen(function*() {
      const stat = yield* step("stat", dir, () => ops.stat(dir))
      if (stat === undefined) {
        yield* step("mkdir", dir, () => ops.mkdir(dir, 0o700))
        // The umask may have narrowed the mode; 0700 is what we want, exactly.
        yield* step("chmod", dir, () => ops.chmod(dir, 0o700))
      } else if ((stat.mode & 0o077) !== 0) {
        yield* step("chmod", dir, () => ops.chmod(dir, 0o700))
      }
    })

    yield* ensureDir.pipe(Effect.mapError(loadError))
    yield* StateLock.acquire(path, options.lock).pipe(
      Effect.catchTag("StateLockError", (e) =>
        Effect.fail(new ClaimsLoadError({ path, message: `cannot take the state lock ${e.path} (${e.operation}): ${e.message}` }))
      )
    )

    const load = Effect.gen(function*() {
      yield* ensureDir
      const names = yield* step("readdir", dir, () => ops.readdir(dir))
      for (const name of names) {
        if (!isTempName(base, name)) continue
        const temp = NPath.join(dir, name)
        yield* step("unlink", temp, () => ops.unlink(temp))
        yield* Effect.logInfo("removed a temp file left by an earlier run").pipe(Effect.annotateLogs({ file: temp }))
      }
      const text = yield* step("read", path, () => ops.readFile(path))
      if (text === undefined) return new Map<PodKey, ClaimRecord>() as ReadonlyMap<PodKey, ClaimRecord>
      return yield* decodeClaimsFile(text).pipe(
        Effect.mapError((e) => new ClaimsLoadError({ path, message: `cannot decode ${path}: ${e.message}` }))
      )
    }).pipe(Effect.catchTag("FileStepError", (e) => Effect.fail(loadError(e))))

    const encode = makeClaimsEncoder()
    const writeTable: WriteTable = (rows) =>
      Effect.gen(function*() {
        const text = encode(rows)
        const temp = NPath.join(dir, `.${base}.tmp-${randomBytes(6).toString("hex")}`)
        const create = step("create", temp, () => ops.create(temp, 0o600))
        // A deleted state directory must not break every later write: recreate it once.
        const file = yield* create.pipe(
          Effect.catchIf(
            (e) => e.code === "ENOENT",
            () => Effect.andThen(step("mkdir", dir, () => ops.mkdir(dir, 0o700)), create)
          )
        )
        yield* Effect.gen(function*() {
          yield* step("write", temp, () => ops.write(file, text)).pipe(
            Effect.andThen(step("fsync", temp, () => ops.fsync(file))),
            Effect.ensuring(step("close", temp, () => ops.close(file)).pipe(Effect.ignore))
          )
          yield* step("rename", path, () => ops.rename(temp, path))
        }).pipe(Effect.onError(() => step("unlink", temp, () => ops.unlink(temp)).pipe(Effect.ignore)))
        yield* step("fsync", dir, () => ops.fsyncDir(dir))
      }).pipe(
        Effect.mapError((e) =>
          new ClaimsWriteError({ path, operation: e.operation, message: `cannot ${e.operation} ${e.path}: ${e.message}` })
        )
      )

    const commit = yield* makeGroupCommit(writeTable)
    return ClaimsStore.of({ path, load, commit })
  })

/** The file `ClaimsStore` for `AppConfig.statePath`, with injectable filesystem steps. */
export const layerWith = (options: ClaimsStoreFileOptions = {}) =>
  Layer.effect(
    ClaimsStore,
    Effect.gen(function*() {
      const config = yield* AppConfig
      return yield* make(config.statePath, options)
    })
  )

/** The file `ClaimsStore`: requires `AppConfig` and `ClaimsSnapshot`; fails with StateLocked or ClaimsLoadError. */
export const layer = layerWith()
