/**
 * Durable storage of the claims table (`--state-path`). The file layer is
 * `Layers/ClaimsStoreFile.ts` (built from the parts in `Store/`);
 * `testkit/Layers/ClaimsStoreMemory.ts` is the test layer with injectable write failures.
 */
import { Context, type Effect, type Option, Schema } from "effect"
import type { ClaimIntent, ClaimRecord } from "../Schemas/Claims.ts"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"

/**
 * The file exists but cannot be read or decoded: the daemon refuses to start (PER-8 — loading the
 * file).
 */
export class ClaimsLoadError extends Schema.TaggedError<ClaimsLoadError>()("ClaimsLoadError", {
  path: Schema.String,
  message: Schema.String
}) {}

/** A durable write did not land; the old file is untouched. */
export class ClaimsWriteError extends Schema.TaggedError<ClaimsWriteError>()("ClaimsWriteError", {
  path: Schema.String,
  operation: Schema.String,
  message: Schema.String
}) {}

/** Another live daemon holds the state path (one writer per state file). */
export class StateLocked extends Schema.TaggedError<StateLocked>()("StateLocked", {
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * The directory of the state path may not hold the claims file (writable by others, sticky, owned
 * by another user, not a directory): the daemon refuses to start rather than change it.
 */
export class StateDirUnsafe extends Schema.TaggedError<StateDirUnsafe>()("StateDirUnsafe", {
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * Where a write takes its rows from, and whom it tells when they landed. The ClaimTable layer
 * provides it. Both are atomic, synchronous updates of the in-memory state.
 */
export class ClaimsSnapshot extends Context.Service<ClaimsSnapshot, {
  /**
   * Every Durable and Quarantined row, plus the Tentative rows of `committing` (PER-3 — what a
   * write contains; PER-6 — only its own commit makes a claim durable).
   */
  readonly rowsForWrite: (committing: ReadonlySet<PodKey>) => Effect.Effect<ReadonlyMap<PodKey, ClaimRecord>>
  /** Called after a write landed, before the next write starts: Tentative rows written with this id become Durable. */
  readonly landed: (written: ReadonlyMap<PodKey, ClaimId>) => Effect.Effect<void>
}>()("vk-sandbox/ClaimsSnapshot") {}

export class ClaimsStore extends Context.Service<ClaimsStore, {
  readonly path: string
  /**
   * Startup read: missing file → empty table; unreadable or undecodable → ClaimsLoadError.
   * Rows with no claimedAt are returned with None (the caller back-fills, PER-8). The file's
   * intents are kept by the store (see `intents`) and written again until settled.
   */
  readonly load: Effect.Effect<ReadonlyMap<PodKey, ClaimRecord>, ClaimsLoadError>
  /**
   * Group commit: write the table (rows from ClaimsSnapshot at write time) including `key`'s
   * tentative row when given. Resumes only once a write that contains the change has landed,
   * failing with that write's error.
   */
  readonly commit: (key: Option.Option<PodKey>) => Effect.Effect<void, ClaimsWriteError>
  /**
   * Writes `intent` durably before its claim is sent, riding the group commit (a batch of intents
   * costs one write). The intent leaves the file in the same write that lands its key's row
   * (`commit(Some(key))`), or in the next write after `settleIntent`.
   */
  readonly intend: (intent: ClaimIntent) => Effect.Effect<void, ClaimsWriteError>
  /** The claim's outcome is known without a row (it failed, or its doubt was resolved): the next write drops the intent. */
  readonly settleIntent: (key: PodKey) => Effect.Effect<void>
  /** The intents held now: those `load` found (until settled) and the claims in flight. */
  readonly intents: Effect.Effect<ReadonlyMap<PodKey, ClaimIntent>>
}>()("vk-sandbox/ClaimsStore") {}
