/**
 * The file `ClaimsStore`: the claims table in one JSON file under `--state-path`, replaced
 * durably on every write, with one writer per path.
 *
 * The parts live in `src/Store/`: the state directory's setup (`StateDir.ts`), the single-writer
 * lock (`StateLock.ts`), the group commit (`ClaimsCommit.ts` over `GroupCommit.ts`), the
 * incremental encoder (`ClaimsEncoder.ts`) and the durable replace (`DurableReplace.ts`). This
 * layer puts them together and turns their failures into the store's typed errors.
 */
import * as NPath from "node:path"
import { Effect, Layer } from "effect"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import { decodeClaimsFile } from "../Schemas/ClaimsFile.ts"
import { AppConfig } from "../Services/Config.ts"
import type { PodKey } from "../Schemas/Ids.ts"
import { ClaimsLoadError, ClaimsStore, ClaimsWriteError } from "../Services/ClaimsStore.ts"
import { makeClaimsEncoder } from "../Store/ClaimsEncoder.ts"
import { makeClaimsCommit, type WriteTable } from "../Store/ClaimsCommit.ts"
import { durableReplace, type FailedStep } from "../Store/DurableReplace.ts"
import { type ClaimsFileOps, describeCause, type FileStepError, nodeClaimsFileOps, step } from "../Store/FileOps.ts"
import { ensureDir, sweepTempFiles } from "../Store/StateDir.ts"
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
    const path = NPath.resolve(statePath)
    const dir = NPath.dirname(path)
    const loadError = (e: FileStepError) =>
      new ClaimsLoadError({ path, message: `cannot ${e.operation} ${e.path}: ${e.message}` })

    yield* ensureDir(ops, dir).pipe(Effect.catchTag("FileStepError", (e) => Effect.fail(loadError(e))))
    yield* StateLock.acquire(path, options.lock).pipe(
      Effect.catchTag("StateLockError", (e) =>
        Effect.fail(new ClaimsLoadError({ path, message: `cannot take the state lock ${e.path} (${e.operation}): ${e.message}` }))
      )
    )

    const load = Effect.gen(function*() {
      yield* ensureDir(ops, dir)
      yield* sweepTempFiles(ops, path)
      const text = yield* step("read", path, () => ops.readFile(path))
      if (text === undefined) return new Map<PodKey, ClaimRecord>() as ReadonlyMap<PodKey, ClaimRecord>
      return yield* decodeClaimsFile(text).pipe(
        Effect.mapError((e) => new ClaimsLoadError({ path, message: `cannot decode ${path}: ${e.message}` }))
      )
    }).pipe(
      Effect.catchTags({
        FileStepError: (e) => Effect.fail(loadError(e)),
        StateDirUnsafe: (e) => Effect.fail(new ClaimsLoadError({ path, message: e.message }))
      })
    )

    const encode = makeClaimsEncoder()
    const writeTable: WriteTable = (rows) =>
      Effect.suspend(() => {
        const data = encode(rows)
        const failed: FailedStep = { operation: "encode", path }
        return Effect.tryPromise({
          try: () => durableReplace(ops, path, data, failed),
          catch: (cause) =>
            new ClaimsWriteError({
              path,
              operation: failed.operation,
              message: `cannot ${failed.operation} ${failed.path}: ${describeCause(cause)}`
            })
        })
      })

    const commit = yield* makeClaimsCommit(writeTable)
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

/** The file `ClaimsStore`: requires `AppConfig` and `ClaimsSnapshot`; fails with StateLocked, StateDirUnsafe or ClaimsLoadError. */
export const layer = layerWith()
