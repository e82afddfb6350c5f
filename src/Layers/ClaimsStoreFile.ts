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
import { Deferred, Effect, Layer, Metric, Option, Queue, Schema, type Scope } from "effect"
import { commitBatchSize } from "../Programs/Observability/Metrics.ts"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import { compareKeys, decodeClaimsFile, encodeClaimMember, encodeClaimsFile } from "../Schemas/ClaimsFile.ts"
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
        // Even a defect (in the snapshot, say) must reach the callers, and the writer must live on.
        const exit = yield* Effect.exit(Effect.gen(function*() {
          const rows = yield* snapshot.rowsForWrite(committing)
          yield* write(rows, committing)
          const written = new Map<PodKey, ClaimId>()
          for (const key of committing) {
            const row = rows.get(key)
            if (row !== undefined) written.set(key, row.id)
          }
          yield* snapshot.landed(written)
        }))
        for (const entry of batch) Deferred.doneUnsafe(entry.done, exit)
        yield* Metric.update(commitBatchSize, batch.length)
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

/**
 * The rows of one write without copying the table: a read-only view of a map that nobody changes
 * after the view is taken (an immutable state's map, or one its owner copies before its next
 * change), keeping the rows `include` accepts, as `project` maps them. That makes it a consistent
 * snapshot at the price of a filter on each read, instead of a copy of every row per write.
 */
export class RowsView<R> implements ReadonlyMap<PodKey, ClaimRecord> {
  readonly #base: ReadonlyMap<PodKey, R>
  readonly #include: (key: PodKey, row: R) => boolean
  readonly #project: (row: R) => ClaimRecord
  #size = -1
  constructor(
    base: ReadonlyMap<PodKey, R>,
    include: (key: PodKey, row: R) => boolean,
    project: (row: R) => ClaimRecord
  ) {
    this.#base = base
    this.#include = include
    this.#project = project
  }
  get size(): number {
    if (this.#size < 0) {
      let n = 0
      this.#base.forEach((row, key) => {
        if (this.#include(key, row)) n++
      })
      this.#size = n
    }
    return this.#size
  }
  get(key: PodKey): ClaimRecord | undefined {
    const row = this.#base.get(key)
    return row !== undefined && this.#include(key, row) ? this.#project(row) : undefined
  }
  has(key: PodKey): boolean {
    return this.get(key) !== undefined
  }
  forEach(callback: (record: ClaimRecord, key: PodKey, map: ReadonlyMap<PodKey, ClaimRecord>) => void): void {
    this.#base.forEach((row, key) => {
      if (this.#include(key, row)) callback(this.#project(row), key, this)
    })
  }
  // Iteration (not on the write path, which uses forEach and get) goes through a copy, made once.
  #copy: Map<PodKey, ClaimRecord> | undefined
  #materialized(): Map<PodKey, ClaimRecord> {
    if (this.#copy === undefined) {
      const copy = new Map<PodKey, ClaimRecord>()
      this.forEach((record, key) => copy.set(key, record))
      this.#copy = copy
    }
    return this.#copy
  }
  entries(): MapIterator<[PodKey, ClaimRecord]> {
    return this.#materialized().entries()
  }
  keys(): MapIterator<PodKey> {
    return this.#materialized().keys()
  }
  values(): MapIterator<ClaimRecord> {
    return this.#materialized().values()
  }
  [Symbol.iterator](): MapIterator<[PodKey, ClaimRecord]> {
    return this.entries()
  }
}

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
  readonly write: (file: NFS.FileHandle, data: Uint8Array) => Promise<void>
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
    // inside a Promise run by Effect.tryPromise: the rethrow becomes the typed error
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

/** A failed filesystem step, before it is reported as ClaimsWriteError / ClaimsLoadError. */
class FileStepError extends Schema.TaggedError<FileStepError>()("FileStepError", {
  operation: Schema.String,
  path: Schema.String,
  /** The errno code ("ENOENT", "EIO", …) or "". */
  code: Schema.String,
  message: Schema.String
}) {}

const describeCause = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const errnoOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : ""

/**
 * Encodes the table to the file's bytes, reusing the UTF-8 JSON of every row whose record object
 * is unchanged since the previous call (re-encoding 2000 rows costs about as much as the durable
 * write itself). Only the rows passed in are ever written: a member is reused only when the cached
 * entry is for the same key AND the same record object, and after each call the cache holds
 * exactly the rows of that call, so a removed or excluded (tentative) row can never come back
 * from it. The key order is kept sorted incrementally.
 *
 * Two output buffers take turns: runs of unchanged members that were adjacent in the previous
 * output are copied from it as one block each, and only new or changed members are copied from
 * their own bytes. A commit that removes one row and adds one costs a few block copies instead of
 * one small copy per row (the per-row copies touch memory scattered over the heap, which is cold
 * after the write's I/O waits). The returned bytes are a view of a buffer that the call after next
 * overwrites: the single writer writes them before it encodes again.
 */
export const makeClaimsEncoder = () => {
  interface Member {
    readonly key: PodKey
    record: ClaimRecord
    bytes: Uint8Array
    /** `bytes.length`, kept here so that an unchanged row costs no look at its bytes. */
    length: number
    /** The call that last saw this key among the rows. */
    seen: number
    /** Where its bytes start in the last output; -1 when not there (new, or re-encoded). */
    offset: number
    /** Its position in the rows' iteration order of the last call. */
    order: number
  }
  const cache = new Map<PodKey, Member>()
  /** Every cached member, sorted by key: the order of the last output. */
  let sorted: Array<Member> = []
  /** Every cached member in the rows' iteration order of the last call. */
  let iterated: Array<Member> = []
  let call = 0
  /** The last output (read by the next call) and the buffer the next call writes. */
  let last = Buffer.alloc(0)
  let spare = Buffer.alloc(0)
  const open = Buffer.from(`{"claims":{`)
  const close = Buffer.from(`}}`)
  const comma = 0x2c
  const encodeMember = (key: PodKey, record: ClaimRecord) => Buffer.from(encodeClaimMember(key, record))

  const startOver = (rows: ReadonlyMap<PodKey, ClaimRecord>): Uint8Array => {
    // Cannot happen (every cached member is in `sorted`); start over rather than write wrong bytes.
    cache.clear()
    sorted = []
    iterated = []
    last = Buffer.alloc(0)
    spare = Buffer.alloc(0)
    return Buffer.from(encodeClaimsFile(rows))
  }

  return (rows: ReadonlyMap<PodKey, ClaimRecord>): Uint8Array => {
    const current = ++call
    const added: Array<Member> = []
    let bodyBytes = 0
    let count = 0
    // Pass 1: a member for every row, reused only for the very same record object. A table's
    // iteration order barely changes between writes, so the member of the last call's next
    // position is tried before the cache lookup (which hashes the key: a few cache misses per row
    // when memory is cold after the write's I/O waits).
    const previousOrder = iterated
    const order: Array<Member> = []
    let next = 0
    rows.forEach((record, key) => {
      const guess = previousOrder[next]
      let member: Member | undefined
      if (guess !== undefined && guess.key === key) {
        member = guess
        next++
      } else {
        member = cache.get(key)
        if (member !== undefined) next = member.order + 1
      }
      if (member === undefined) {
        const bytes = encodeMember(key, record)
        member = { key, record, bytes, length: bytes.length, seen: current, offset: -1, order: 0 }
        cache.set(key, member)
        added.push(member)
      } else {
        if (member.record !== record) {
          member.record = record
          member.bytes = encodeMember(key, record)
          member.length = member.bytes.length
          member.offset = -1
        }
        member.seen = current
      }
      member.order = order.length
      order.push(member)
      bodyBytes += member.length
      count++
    })
    iterated = order
    if (added.length > 1) added.sort((a, b) => compareKeys(a.key, b.key))

    const byteLength = open.length + bodyBytes + Math.max(0, count - 1) + close.length
    if (spare.length < byteLength) spare = Buffer.alloc(Math.max(byteLength, Math.ceil(last.length * 1.5)))
    const target = spare
    const previous = last
    target.set(open, 0)
    let offset = open.length
    // The pending block of the previous output: [runFrom, runTo) goes to `runDest`.
    let runFrom = -1
    let runTo = -1
    let runDest = -1
    const flush = () => {
      if (runFrom >= 0) {
        previous.copy(target, runDest, runFrom, runTo)
        offset = runDest + (runTo - runFrom)
        runFrom = -1
      }
    }
    const out: Array<Member> = []
    const place = (member: Member) => {
      const length = member.length
      if (runFrom >= 0 && member.offset === runTo + 1) {
        // Adjacent to the block in the previous output (after its comma): the block grows.
        member.offset = runDest + (member.offset - runFrom)
        runTo += 1 + length
      } else {
        flush()
        if (out.length > 0) target[offset++] = comma
        if (member.offset >= 0) {
          runFrom = member.offset
          runTo = member.offset + length
          runDest = offset
          member.offset = offset
        } else {
          target.set(member.bytes, offset)
          member.offset = offset
          offset += length
        }
      }
      out.push(member)
    }
    // Pass 2: the previous order minus the members not among the rows, merged with the new keys
    // (each new key's place found by binary search, not by comparing it with every key before it).
    const insertAt = added.map((member) => {
      let lo = 0
      let hi = sorted.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (compareKeys(sorted[mid]!.key, member.key) < 0) lo = mid + 1
        else hi = mid
      }
      return lo
    })
    let a = 0
    for (let i = 0; i < sorted.length; i++) {
      const member = sorted[i]!
      while (a < added.length && insertAt[a]! <= i) place(added[a++]!)
      if (member.seen !== current) {
        cache.delete(member.key)
        continue
      }
      place(member)
    }
    while (a < added.length) place(added[a++]!)
    flush()
    if (out.length !== count || cache.size !== count || offset + close.length !== byteLength) return startOver(rows)
    target.set(close, offset)
    sorted = out
    last = target
    spare = previous
    return target.subarray(0, byteLength)
  }
}

/**
 * Temp files left by a crash: ours (`.<base>.tmp-<hex>`), the reference's fixed `<base>.tmp`, and
 * the state lock's record-in-progress (`<base>.lock.<nonce>`).
 */
const isTempName = (base: string, name: string): boolean =>
  name.startsWith(`.${base}.tmp-`) || name === `${base}.tmp` ||
  (name.startsWith(`${base}.lock.`) && /^[0-9a-f]{24}$/.test(name.slice(base.length + 6)))

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
        catch: (cause) => new FileStepError({ operation, path: target, code: errnoOf(cause), message: describeCause(cause) })
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
    /**
     * The durable replace, as one promise: the steps follow each other directly, without a fiber
     * hop per step (that alone would cost a large share of the write). `failed` names the step.
     */
    const durableReplace = async (data: Uint8Array, failed: { operation: string; path: string }) => {
      const temp = NPath.join(dir, `.${base}.tmp-${randomBytes(6).toString("hex")}`)
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
          // A deleted state directory must not break every later write: recreate it once.
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
    const writeTable: WriteTable = (rows) =>
      Effect.suspend(() => {
        const data = encode(rows)
        const failed = { operation: "encode", path }
        return Effect.tryPromise({
          try: () => durableReplace(data, failed),
          catch: (cause) =>
            new ClaimsWriteError({
              path,
              operation: failed.operation,
              message: `cannot ${failed.operation} ${failed.path}: ${describeCause(cause)}`
            })
        })
      })

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
