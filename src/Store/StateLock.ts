/**
 * One writer per state file: `<state-path>.lock` names the daemon holding the state path, and a
 * second daemon refuses to start with `StateLocked`. A holder is judged live or stale by its boot
 * id, pid namespace, pid and process start time, and across pid namespaces by the heartbeat on
 * the file's mtime (docs/architecture.md, "Durability and group commit"). The lock file is created
 * complete (temp file, fsync, hard link) and a takeover removes only the exact stale record it
 * judged, under a short mkdir mutex. Released (if still ours) when the scope closes.
 */
import { randomBytes } from "node:crypto"
import * as NFS from "node:fs/promises"
import * as os from "node:os"
import * as NPath from "node:path"
import { Clock, Duration, Effect, Schema, type Scope } from "effect"
import { StateLocked } from "../Services/ClaimsStore.ts"
import { every } from "../Services/Loops.ts"

/** The lock file could not be read or written (not a verdict about another holder). */
export class StateLockError extends Schema.TaggedError<StateLockError>()("StateLockError", {
  path: Schema.String,
  operation: Schema.String,
  message: Schema.String
}) {}

export const LockRecord = Schema.Struct({
  bootId: Schema.String,
  pidNamespace: Schema.String,
  pid: Schema.Number,
  startTime: Schema.String,
  hostname: Schema.String,
  /** Distinguishes two acquisitions by the same process. */
  nonce: Schema.String
})
export type LockRecord = typeof LockRecord.Type
const decodeRecord = Schema.decodeUnknownResult(Schema.fromJsonString(LockRecord))

export interface StateLockOptions {
  /** How often the holder touches the lock file (default 2 s). */
  readonly heartbeat?: Duration.Input
  /** A foreign-namespace record whose heartbeat stood still this long is stale (default 10 s). */
  readonly staleAfter?: Duration.Input
}

export const lockPathFor = (statePath: string): string => `${statePath}.lock`

const errorCode = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const readText = async (path: string): Promise<string | undefined> => {
  try {
    return await NFS.readFile(path, "utf8")
  } catch (cause) {
    if (errorCode(cause) === "ENOENT") return undefined
    // inside a Promise run by Effect.tryPromise: the rethrow becomes the typed error
    throw cause
  }
}

/** `/proc/<pid>/stat` field 22 (start time in clock ticks since boot); undefined when gone. */
export const processStartTime = async (pid: number): Promise<string | undefined> => {
  const stat = await readText(`/proc/${pid}/stat`).catch(() => undefined)
  if (stat === undefined) return undefined
  // The command name (field 2) may hold spaces and parentheses: count from the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return fields[22 - 3]
}

/** This process's identity; fields that /proc cannot give are "". */
export const currentIdentity = async (): Promise<Omit<LockRecord, "nonce">> => {
  const bootId = ((await readText("/proc/sys/kernel/random/boot_id").catch(() => undefined)) ?? "").trim()
  const pidNamespace = await NFS.readlink("/proc/self/ns/pid").catch(() => "")
  const startTime = (await processStartTime(process.pid)) ?? ""
  return { bootId, pidNamespace, pid: process.pid, startTime, hostname: os.hostname() }
}

type Verdict = "live" | "stale" | "watch-heartbeat"

/** Judges a record from what this process can see (see the module comment). */
export const judge = async (record: LockRecord, self: Omit<LockRecord, "nonce">): Promise<Verdict> => {
  if (record.bootId !== "" && self.bootId !== "" && record.bootId !== self.bootId) return "stale"
  if (record.bootId === "" || self.bootId === "" || record.pidNamespace === "" || record.pidNamespace !== self.pidNamespace) {
    return "watch-heartbeat"
  }
  const startTime = await processStartTime(record.pid)
  if (startTime === undefined) return "stale"
  return startTime === record.startTime ? "live" : "stale"
}

/**
 * Takes the lock on `statePath` for the current scope. Fails with `StateLocked` when another
 * live daemon holds it. The directory of `statePath` must exist.
 */
export const acquire = (
  statePath: string,
  options: StateLockOptions = {}
): Effect.Effect<void, StateLocked | StateLockError, Scope.Scope> =>
  Effect.gen(function*() {
    const lockPath = lockPathFor(statePath)
    const heartbeat = Duration.fromInputUnsafe(options.heartbeat ?? Duration.seconds(2))
    const staleAfter = Duration.fromInputUnsafe(options.staleAfter ?? Duration.seconds(10))
    const io = <A>(operation: string, path: string, run: () => Promise<A>) =>
      Effect.tryPromise({
        try: run,
        catch: (cause) => new StateLockError({ path, operation, message: describe(cause) })
      })
    const locked = (record: LockRecord, why: string) =>
      new StateLocked({
        path: statePath,
        message: `state path ${statePath} is in use by another vk-sandbox (pid ${record.pid} on ${
          record.hostname || "unknown host"
        }, ${why}; lock ${lockPath})`
      })

    const self = yield* io("identify", "/proc", currentIdentity)
    const mine: LockRecord = { ...self, nonce: randomBytes(12).toString("hex") }
    const mineText = JSON.stringify(mine)

    /** true = created; false = a lock exists. */
    const tryCreate = io("create", lockPath, async () => {
      const temp = `${lockPath}.${mine.nonce}`
      const handle = await NFS.open(temp, "wx", 0o600)
      try {
        await handle.writeFile(mineText)
        await handle.sync()
      } finally {
        await handle.close()
      }
      try {
        await NFS.link(temp, lockPath)
        return true
      } catch (cause) {
        if (errorCode(cause) === "EEXIST") return false
        // inside a Promise run by Effect.tryPromise: the rethrow becomes the typed error
        throw cause
      } finally {
        await NFS.unlink(temp).catch(() => undefined)
      }
    })

    const readLock = io("read", lockPath, async () => {
      const text = await readText(lockPath)
      if (text === undefined) return undefined
      const stat = await NFS.stat(lockPath).catch(() => undefined)
      return { text, mtimeMs: stat?.mtimeMs ?? 0, ino: stat?.ino ?? 0 }
    })

    /** Removes the lock only if it still holds `staleText`, under a mutex among starters. */
    const removeStale = (staleText: string) =>
      Effect.gen(function*() {
        const mutex = `${lockPath}.takeover`
        const took = yield* io("takeover", mutex, () =>
          NFS.mkdir(mutex, { mode: 0o700 }).then(() => true, (cause) => {
            if (errorCode(cause) === "EEXIST") return false
            // inside a Promise run by Effect.tryPromise: the rethrow becomes the typed error
            throw cause
          }))
        if (!took) {
          // Another starter is mid-takeover (microseconds); one left by a crash is abandoned after staleAfter.
          const stat = yield* io("takeover", mutex, () => NFS.stat(mutex).catch(() => undefined))
          const now = yield* Clock.currentTimeMillis
          if (stat !== undefined && now - stat.mtimeMs > Duration.toMillis(staleAfter)) {
            yield* io("takeover", mutex, () => NFS.rmdir(mutex).catch(() => undefined))
          } else {
            yield* Effect.sleep(Duration.millis(20))
          }
          return
        }
        yield* io("takeover", lockPath, async () => {
          try {
            if ((await readText(lockPath)) === staleText) await NFS.unlink(lockPath)
          } finally {
            await NFS.rmdir(mutex).catch(() => undefined)
          }
        })
      })

    /** Watches a foreign-namespace holder's heartbeat: "live" as soon as it moves. */
    const watchHeartbeat = (first: { readonly text: string; readonly mtimeMs: number; readonly ino: number }) =>
      Effect.gen(function*() {
        const observedAt = yield* Clock.currentTimeMillis
        const age = Math.max(0, observedAt - first.mtimeMs)
        const waitMs = Math.max(0, Duration.toMillis(staleAfter) - age)
        const pollMs = Math.max(1, Math.min(Duration.toMillis(heartbeat), waitMs))
        while (true) {
          const now = yield* Clock.currentTimeMillis
          if (now - observedAt >= waitMs) return "stale" as const
          yield* Effect.sleep(Duration.millis(Math.min(pollMs, waitMs - (now - observedAt))))
          const again = yield* readLock
          if (again === undefined) return "gone" as const
          if (again.text !== first.text || again.mtimeMs !== first.mtimeMs || again.ino !== first.ino) {
            return "live" as const
          }
        }
      })

    let acquired = false
    for (let attempt = 0; attempt < 20 && !acquired; attempt++) {
      if (yield* tryCreate) {
        acquired = true
        break
      }
      const existing = yield* readLock
      if (existing === undefined) continue // released meanwhile: try again
      const decoded = decodeRecord(existing.text)
      const record: LockRecord = decoded._tag === "Success"
        ? decoded.success
        : { bootId: "", pidNamespace: "", pid: 0, startTime: "", hostname: "", nonce: "" }
      const verdict = yield* io("inspect", `/proc/${record.pid}/stat`, () => judge(record, self))
      if (verdict === "live") return yield* locked(record, "process alive")
      if (verdict === "watch-heartbeat") {
        const seen = yield* watchHeartbeat(existing)
        if (seen === "live") return yield* locked(record, "heartbeat moving in another pid namespace")
        if (seen === "gone") continue
      }
      yield* Effect.logWarning("taking over a stale state lock").pipe(
        Effect.annotateLogs({ lock: lockPath, stalePid: record.pid, staleHost: record.hostname })
      )
      yield* removeStale(existing.text)
    }
    if (!acquired) {
      return yield* new StateLockError({ path: lockPath, operation: "acquire", message: "lock kept changing hands" })
    }

    // Registered before the heartbeat is forked, so it runs after the heartbeat stopped.
    yield* Effect.addFinalizer(() =>
      io("release", lockPath, async () => {
        if ((await readText(lockPath)) === mineText) await NFS.unlink(lockPath)
      }).pipe(Effect.ignore)
    )
    const touch = Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* io("heartbeat", lockPath, () => NFS.utimes(lockPath, now, now))
    }).pipe(
      Effect.catch((error) => Effect.logWarning("state lock heartbeat failed").pipe(Effect.annotateLogs({ error })))
    )
    yield* every(heartbeat, touch).pipe(Effect.forkScoped)
  })
