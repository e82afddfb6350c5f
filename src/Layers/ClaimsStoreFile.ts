/**
 * The file `ClaimsStore`: the claims table in one JSON file under `--state-path`, replaced
 * durably on every write, with one writer per path.
 *
 * The parts live in `src/Store/`: the state directory's setup (`StateDir.ts`), the single-writer
 * lock (`StateLock.ts`), the group commit (`ClaimsCommit.ts` over `GroupCommit.ts`), the
 * incremental encoder (`ClaimsEncoder.ts`) and the durable replace (`DurableReplace.ts`). This
 * layer puts them together and turns their failures into the store's typed errors.
 */
import { isAscii } from "node:buffer"
import * as NPath from "node:path"
import { Effect, Layer } from "effect"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import { decodeClaimsDocument } from "../Schemas/ClaimsFile/Decode.ts"
import { membersAfterClaims } from "../Schemas/ClaimsFile/Encode.ts"
import { AppConfig } from "../Services/Config.ts"
import type { PodKey } from "../Schemas/Ids.ts"
import { ClaimsLoadError, ClaimsStore, ClaimsWriteError } from "../Services/ClaimsStore.ts"
import { makeClaimsEncoder } from "../Store/ClaimsEncoder.ts"
import { makeClaimsCommit, type WriteTable } from "../Store/ClaimsCommit.ts"
import { durableReplace, type FailedStep } from "../Store/DurableReplace.ts"
import { type ClaimsFileOps, describeCause, type FileStepError, nodeClaimsFileOps, step } from "../Store/FileOps.ts"
import { ensureDir, resolveLink, sweepTempFiles } from "../Store/StateDir.ts"
import * as StateLock from "../Store/StateLock.ts"

export { type ClaimsFileOps, nodeClaimsFileOps }

export interface ClaimsStoreFileOptions {
  readonly ops?: ClaimsFileOps
  readonly lock?: StateLock.StateLockOptions
}

/**
 * Builds the store for `statePath`: the directory is created 0700 when absent (and refused when
 * others could write to it), the single-writer lock taken for the scope, and the writer fiber
 * started.
 */
export const make = (statePath: string, options: ClaimsStoreFileOptions = {}) =>
  Effect.gen(function*() {
    const ops = options.ops ?? nodeClaimsFileOps
    const given = NPath.resolve(statePath)
    const loadError = (e: FileStepError) =>
      new ClaimsLoadError({ path: given, message: `cannot ${e.operation} ${e.path}: ${e.message}` })

    yield* ensureDir(ops, NPath.dirname(given)).pipe(Effect.catchTag("FileStepError", (e) => Effect.fail(loadError(e))))
    // A symlinked state file is followed: the file written is its target, in the target's
    // directory (which must pass the same checks), and the link stays as it is. A link that
    // leads nowhere is a volume that is not there: never an empty table.
    const path = yield* resolveLink(ops, given).pipe(Effect.catchTag("FileStepError", (e) => Effect.fail(loadError(e))))
    const dir = NPath.dirname(path)
    if (path !== given) {
      yield* ensureDir(ops, dir).pipe(Effect.catchTag("FileStepError", (e) => Effect.fail(loadError(e))))
      yield* Effect.logInfo("the state path is a symbolic link: the claims file is written at its target").pipe(
        Effect.annotateLogs({ statePath: given, target: path })
      )
    }
    yield* StateLock.acquire(path, options.lock).pipe(
      Effect.catchTag("StateLockError", (e) =>
        Effect.fail(
          new ClaimsLoadError({ path: given, message: `cannot take the state lock ${e.path} (${e.operation}): ${e.message}` })
        )
      )
    )

    /** The top-level members after `claims` as loaded (written by a newer version), kept through every write. */
    let otherMembers = ""
    const encode = makeClaimsEncoder()
    const writeTable: WriteTable = (rows, intents) =>
      Effect.suspend(() => {
        const data = encode(rows, membersAfterClaims(intents, otherMembers))
        const failed: FailedStep = { operation: "encode", path }
        return Effect.tryPromise({
          try: () => durableReplace(ops, path, data, failed),
          catch: (cause) =>
            new ClaimsWriteError({
              path: given,
              operation: failed.operation,
              message: `cannot ${failed.operation} ${failed.path}: ${describeCause(cause)}`
            })
        })
      })
    const commits = yield* makeClaimsCommit(writeTable)

    const load = Effect.gen(function*() {
      yield* ensureDir(ops, dir)
      yield* sweepTempFiles(ops, path)
      const bytes = yield* step("read", path, () => ops.readFile(path))
      if (bytes === undefined) {
        // The file was there when the store started (a link's target, say) and is gone now.
        if (path !== given) return yield* new ClaimsLoadError({ path: given, message: `the state file ${path} vanished` })
        return new Map<PodKey, ClaimRecord>()
      }
      const text = bytes.toString("utf8")
      const document = yield* Effect.fromResult(decodeClaimsDocument(text)).pipe(
        Effect.mapError((e) => new ClaimsLoadError({ path: given, message: `cannot decode ${path}: ${e.message}` }))
      )
      otherMembers = document.unknownMembers
      if (document.writtenMembers !== undefined) {
        // The file is the writer's own text of these rows: the encoder starts from its bytes, so
        // the startup write (PER-9 — the mandatory startup write) copies every row the startup left
        // unchanged instead of encoding it again. Its offsets count characters, which are bytes
        // only in ASCII text; every other file (a byte that is not ASCII, valid UTF-8 or not) is
        // encoded in full, as before, and never copied back.
        if (isAscii(bytes)) {
          encode.seed(bytes, document.rows, document.writtenMembers.starts, document.writtenMembers.ends)
        }
      }
      yield* commits.holdLoaded(document.intents)
      return document.rows
    }).pipe(
      Effect.catchTags({
        FileStepError: (e) => Effect.fail(loadError(e)),
        StateDirUnsafe: (e) => Effect.fail(new ClaimsLoadError({ path: given, message: e.message }))
      })
    )

    return ClaimsStore.of({
      path: given,
      load,
      commit: commits.commit,
      intend: commits.intend,
      settleIntent: commits.settleIntent,
      intents: commits.intents
    })
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

/** The file `ClaimsStore`: requires `AppConfig` and `ClaimsSnapshot`; fails with StateLocked, StateDirUnsafe or ClaimsLoadError. */
export const layer = layerWith()
