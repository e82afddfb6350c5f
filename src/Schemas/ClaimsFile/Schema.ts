/**
 * The on-disk claims file, in the Go daemon's format so a node can move between the two in either
 * direction (PER-1 — claims file format; PER-2 — timestamps at second precision):
 * `{"claims":{"<ns>/<name>":{"id":…,"token":…,"address":…,"podUID":…,"claimedAt":…,"deadline":…}}}`.
 * Writing reproduces the Go daemon's bytes exactly; reading is lenient where it is and strict where
 * leniency would lose a VM (PER-8 — loading the file). Unknown fields are kept and written back;
 * `intents` and a row's `owner` (AUTH-9 — a preserved VM is released once its owner goes) are
 * written only while they hold something.
 * Read by `Decode.ts` (the fast reader `Reader.ts` first), written by `Encode.ts`.
 */
import { Schema } from "effect"
import type { ClaimIntent, ClaimRecord } from "../Claims.ts"
import { ClaimId, type PodKey } from "../Ids.ts"

/** The file's text is not a claims table (bad JSON, wrong shape, bad timestamp). */
export class ClaimsFileDecodeError extends Schema.TaggedError<ClaimsFileDecodeError>()("ClaimsFileDecodeError", {
  message: Schema.String
}) {}

const OptionalText = Schema.optionalKey(Schema.NullOr(Schema.String))

/** One row as found on disk (before timestamp parsing). */
export const ClaimsFileEntry = Schema.Struct({
  id: ClaimId,
  token: Schema.String,
  address: OptionalText,
  podUID: OptionalText,
  claimedAt: OptionalText,
  deadline: OptionalText,
  /** AUTH-9: the owner a preserved row waits on; this daemon's own, which the reference ignores. */
  owner: Schema.optionalKey(Schema.NullOr(Schema.Struct({
    apiVersion: Schema.String,
    kind: Schema.String,
    name: Schema.String,
    uid: Schema.String
  })))
})
export type ClaimsFileEntry = typeof ClaimsFileEntry.Type

/** One claim intent as found on disk. */
export const ClaimsFileIntent = Schema.Struct({
  podUID: OptionalText,
  sentAt: Schema.String
})

/** The whole file as found on disk (fields other than `claims` and `intents` are kept as raw text). */
export const ClaimsFileShape = Schema.Struct({
  claims: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, ClaimsFileEntry))),
  intents: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, ClaimsFileIntent)))
})
export type ClaimsFileShape = typeof ClaimsFileShape.Type

/** What a token may hold: visible ASCII, as an HTTP header can carry it. */
export const printableToken = /^[\x21-\x7e]+$/

/** The decoded file: its rows, its claim intents, and its other top-level members as raw text. */
export interface ClaimsDocument {
  readonly rows: ReadonlyMap<PodKey, ClaimRecord>
  readonly intents: ReadonlyMap<PodKey, ClaimIntent>
  /** `"name":value,…` (compact), or "" when the file has no other member. */
  readonly unknownMembers: string
  /**
   * Present when the text is byte for byte what the writer makes of these rows and intents
   * (`encodeClaimsFile(rows, membersAfterClaims(intents, ""))`) and `readWrittenText` read it: where each row's member
   * (`"key":{…}`, exactly `encodeClaimMember(key, record)`) starts and ends in the text, in the
   * rows' order (sorted by key). The store's encoder starts from these bytes instead of encoding
   * every row again for the startup write.
   */
  readonly writtenMembers?: WrittenMembers
}

/** Text offsets of each row's member, one entry per row in the rows' order; `[starts[i], ends[i])`. */
export interface WrittenMembers {
  readonly starts: ReadonlyArray<number>
  readonly ends: ReadonlyArray<number>
}
