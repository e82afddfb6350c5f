/**
 * In-memory `ClaimsStore` for tests of the provider: the same group commit as the file layer,
 * a "disk" that holds the last landed table, a record of every write (its rows, its batch, its
 * outcome), injectable write failures, and a gate that holds writes in flight.
 *
 * Provides `ClaimsStore` and `ClaimsStoreMemoryControl`; requires `ClaimsSnapshot`.
 */
import { Context, Effect, Latch, Layer, Option, Ref } from "effect"
import type { ClaimIntent, ClaimRecord } from "../../src/Schemas/Claims.ts"
import { encodeClaimsFile, membersAfterClaims } from "../../src/Schemas/ClaimsFile/Encode.ts"
import type { PodKey } from "../../src/Schemas/Ids.ts"
import { ClaimsLoadError, ClaimsSnapshot, ClaimsStore, ClaimsWriteError } from "../../src/Services/ClaimsStore.ts"
import { makeClaimsCommit } from "../../src/Store/ClaimsCommit.ts"
import { RowsView } from "../../src/Store/RowsView.ts"

/** One attempted write, in order. */
export interface MemoryWrite {
  /** 1-based, in the order writes started. */
  readonly seq: number
  /** The keys whose commits this write carried. */
  readonly committing: ReadonlySet<PodKey>
  /** The keys whose new claim intents this write carried. */
  readonly intending: ReadonlySet<PodKey>
  /** Exactly the rows the write would have put on disk. */
  readonly rows: ReadonlyMap<PodKey, ClaimRecord>
  /** The claim intents the write would have put on disk. */
  readonly intents: ReadonlyMap<PodKey, ClaimIntent>
  /** The file's bytes, the reference's format. */
  readonly text: string
  /** None = landed; Some = the failed operation. */
  readonly failed: Option.Option<string>
}

export class ClaimsStoreMemoryControl extends Context.Service<ClaimsStoreMemoryControl, {
  /** Every write attempted so far, oldest first. */
  readonly writes: Effect.Effect<ReadonlyArray<MemoryWrite>>
  /** How many writes were attempted (landed or failed). */
  readonly writeCount: Effect.Effect<number>
  /** The table as of the last landed write (what a restart would load). */
  readonly disk: Effect.Effect<ReadonlyMap<PodKey, ClaimRecord>>
  /** The intents as of the last landed write. */
  readonly diskIntents: Effect.Effect<ReadonlyMap<PodKey, ClaimIntent>>
  /**
   * The next `count` writes fail with ClaimsWriteError at `operation` (default "fsync"). Writes
   * of new claim intents alone are not counted (see `failNextIntentWrites`); nor do they wait
   * for `resume`.
   */
  readonly failNext: (count: number, operation?: string) => Effect.Effect<void>
  /** Every write fails from now on (Some(operation)), or none (None). */
  readonly failAlways: (operation: Option.Option<string>) => Effect.Effect<void>
  /** The next `count` writes of new claim intents alone fail at "fsync". */
  readonly failNextIntentWrites: (count: number) => Effect.Effect<void>
  /** Writes started from now on wait, after taking their rows, until `resume`. */
  readonly pause: Effect.Effect<void>
  readonly resume: Effect.Effect<void>
}>()("vk-sandbox/ClaimsStoreMemoryControl") {}

export interface ClaimsStoreMemoryOptions {
  /** What `load` returns (default: empty). */
  readonly initial?: ReadonlyMap<PodKey, ClaimRecord>
  /** The intents "on disk" at the start, held by the store once `load` ran (default: none). */
  readonly initialIntents?: ReadonlyMap<PodKey, ClaimIntent>
  /** `load` fails with ClaimsLoadError carrying this message. */
  readonly loadError?: string
  /** Reported as the store's path (default "/memory/claims.json"). */
  readonly path?: string
}

export const make = (options: ClaimsStoreMemoryOptions = {}) =>
  Effect.gen(function*() {
    const path = options.path ?? "/memory/claims.json"
    const writes = yield* Ref.make<ReadonlyArray<MemoryWrite>>([])
    const disk = yield* Ref.make<ReadonlyMap<PodKey, ClaimRecord>>(options.initial ?? new Map())
    // Touched only by synchronous steps, so no Ref is needed.
    const failures: { next: number; nextOp: string; always: Option.Option<string> } = {
      next: 0,
      nextOp: "fsync",
      always: Option.none()
    }
    let intentFailures = 0
    const takeIntentFailure = (): Option.Option<string> => {
      if (intentFailures <= 0) return Option.none()
      intentFailures -= 1
      return Option.some("fsync")
    }
    const takeFailure = (): Option.Option<string> => {
      if (Option.isSome(failures.always)) return failures.always
      if (failures.next > 0) {
        failures.next -= 1
        return Option.some(failures.nextOp)
      }
      return Option.none()
    }
    const gate = yield* Latch.make(true)

    const diskIntents = yield* Ref.make<ReadonlyMap<PodKey, ClaimIntent>>(options.initialIntents ?? new Map())
    const commits = yield* makeClaimsCommit((rows, intents, committing, intending) =>
      Effect.gen(function*() {
        // A write of new intents alone is not a commit of rows: it has its own failure knob, and
        // the gate holds only row writes (so a paused store still lets claims be sent).
        const intentsOnly = committing.size === 0 && intending.size > 0
        if (!intentsOnly) yield* gate.await
        const failed = intentsOnly ? takeIntentFailure() : takeFailure()
        const snapshotRows = new Map(rows)
        const snapshotIntents = new Map(intents)
        yield* Ref.update(writes, (all) => [
          ...all,
          {
            seq: all.length + 1,
            committing: new Set(committing),
            intending: new Set(intending),
            rows: snapshotRows,
            intents: snapshotIntents,
            text: encodeClaimsFile(snapshotRows, membersAfterClaims(snapshotIntents, "")),
            failed
          }
        ])
        if (Option.isSome(failed)) {
          return yield* new ClaimsWriteError({ path, operation: failed.value, message: `injected ${failed.value} failure` })
        }
        yield* Ref.set(disk, snapshotRows)
        yield* Ref.set(diskIntents, snapshotIntents)
      })
    )

    const store = ClaimsStore.of({
      path,
      load: options.loadError === undefined
        ? Effect.andThen(Effect.flatMap(Ref.get(diskIntents), commits.holdLoaded), Ref.get(disk))
        : Effect.fail(new ClaimsLoadError({ path, message: options.loadError })),
      commit: commits.commit,
      intend: commits.intend,
      settleIntent: commits.settleIntent,
      intents: commits.intents
    })
    const control = ClaimsStoreMemoryControl.of({
      writes: Ref.get(writes),
      writeCount: Effect.map(Ref.get(writes), (all) => all.length),
      disk: Ref.get(disk),
      diskIntents: Ref.get(diskIntents),
      failNext: (count, operation = "fsync") =>
        Effect.sync(() => {
          failures.next = count
          failures.nextOp = operation
        }),
      failAlways: (operation) =>
        Effect.sync(() => {
          failures.always = operation
        }),
      failNextIntentWrites: (count) =>
        Effect.sync(() => {
          intentFailures = count
        }),
      pause: Effect.asVoid(gate.close),
      resume: Effect.asVoid(gate.open)
    })
    return { store, control }
  })

/** `ClaimsStore` + `ClaimsStoreMemoryControl`, requiring `ClaimsSnapshot`. */
export const layer = (options: ClaimsStoreMemoryOptions = {}) =>
  Layer.effectContext(
    Effect.map(make(options), ({ control, store }) =>
      Context.make(ClaimsStore, store).pipe(Context.add(ClaimsStoreMemoryControl, control))
    )
  )

// ---------------------------------------------------------------------------------------------
// A minimal `ClaimsSnapshot` for tests of the stores (the real one is the ClaimTable layer).

export class TestClaimsTable extends Context.Service<TestClaimsTable, {
  /**
   * Adds or replaces a row; `tentative` rows are written only by their own commit (PER-6 — only its
   * own commit makes a claim durable).
   */
  readonly put: (key: PodKey, record: ClaimRecord, options?: { readonly tentative?: boolean }) => Effect.Effect<void>
  readonly remove: (key: PodKey) => Effect.Effect<void>
  /** Keys whose row is still tentative. */
  readonly tentative: Effect.Effect<ReadonlySet<PodKey>>
  /** Every `landed` call, oldest first. */
  readonly landedCalls: Effect.Effect<ReadonlyArray<ReadonlyMap<PodKey, string>>>
}>()("vk-sandbox/test/TestClaimsTable") {}

/** `ClaimsSnapshot` + `TestClaimsTable` over one in-memory table. */
export const testSnapshotLayer = Layer.effectContext(
  Effect.sync(() => {
    // Copy-on-write, like the real table's immutable state: a write's rows are a view of `rows`,
    // and the first change after a snapshot replaces `rows` with a copy instead of mutating it.
    let rows = new Map<PodKey, ClaimRecord>()
    let snapshotTaken = false
    const forChange = () => {
      if (snapshotTaken) {
        rows = new Map(rows)
        snapshotTaken = false
      }
      return rows
    }
    const tentative = new Set<PodKey>()
    const landedCalls: Array<ReadonlyMap<PodKey, string>> = []
    const snapshot = ClaimsSnapshot.of({
      rowsForWrite: (committing) =>
        Effect.sync(() => {
          snapshotTaken = true
          const excluded = new Set<PodKey>()
          for (const key of tentative) if (!committing.has(key)) excluded.add(key)
          const include = excluded.size === 0 ? () => true : (key: PodKey) => !excluded.has(key)
          return new RowsView<ClaimRecord>(rows, include, (record) => record)
        }),
      landed: (written) =>
        Effect.sync(() => {
          landedCalls.push(new Map(written))
          // Only the write of this very record makes it durable (a replaced row stays tentative).
          for (const [key, id] of written) if (rows.get(key)?.id === id) tentative.delete(key)
        })
    })
    const table = TestClaimsTable.of({
      put: (key, record, options) =>
        Effect.sync(() => {
          forChange().set(key, record)
          if (options?.tentative === true) tentative.add(key)
          else tentative.delete(key)
        }),
      remove: (key) =>
        Effect.sync(() => {
          forChange().delete(key)
          tentative.delete(key)
        }),
      tentative: Effect.sync(() => new Set(tentative)),
      landedCalls: Effect.sync(() => landedCalls.slice())
    })
    return Context.make(ClaimsSnapshot, snapshot).pipe(Context.add(TestClaimsTable, table))
  })
)
