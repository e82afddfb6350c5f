/**
 * The claims file's text → its rows, intents and other members (PER-8 — loading the file): the
 * fast reader (`Reader.ts`) for the writer's own text, the full decode (the Schema, then the text
 * member by member, `RawText.ts`) for any other, lenient where Go is and strict where leniency
 * would lose a VM.
 */
import { invalidJsonMessage } from "../Json.ts"
import { DateTime, Effect, Option, Redacted, Result, Schema } from "effect"
import type { ClaimIntent, ClaimRecord } from "../Claims.ts"
import { type PodKey, podKeyOfText } from "../Ids.ts"
import { membersOf, memberText, positionOf, repeated, skipSpace } from "./RawText.ts"
import { readWrittenText } from "./Reader.ts"
import { type ClaimsDocument, ClaimsFileDecodeError, ClaimsFileShape, printableToken } from "./Schema.ts"
import { parseTimestamp } from "./Time.ts"

const decodeShape = Schema.decodeUnknownResult(ClaimsFileShape)

const parseOptionalTimestamp = (
  key: string,
  field: string,
  value: string | null | undefined
): Result.Result<Option.Option<DateTime.Utc>, string> => {
  if (value === undefined || value === null) return Result.succeed(Option.none())
  return Result.mapError(parseTimestamp(value), (message) => `claims[${JSON.stringify(key)}].${field}: ${message}`)
}

/** Decodes a parsed JSON value into the in-memory table (rows with no `claimedAt` keep None). */
export const decodeClaimsValue = (
  value: unknown
): Result.Result<ReadonlyMap<PodKey, ClaimRecord>, ClaimsFileDecodeError> => {
  const shape = decodeShape(value)
  if (Result.isFailure(shape)) return Result.fail(new ClaimsFileDecodeError({ message: shape.failure.message }))
  const rows = new Map<PodKey, ClaimRecord>()
  const claims = shape.success.claims
  if (claims === undefined || claims === null) {
    return Result.fail(
      new ClaimsFileDecodeError({
        message: `no "claims" object (the file holds ${claims === null ? `"claims":null` : "no claims member"}); ` +
          `a claims file is {"claims":{…}}, and only a missing file starts an empty table`
      })
    )
  }
  for (const key of Object.keys(claims)) {
    const entry = claims[key]!
    const claimedAt = parseOptionalTimestamp(key, "claimedAt", entry.claimedAt)
    if (Result.isFailure(claimedAt)) return Result.fail(new ClaimsFileDecodeError({ message: claimedAt.failure }))
    const deadline = parseOptionalTimestamp(key, "deadline", entry.deadline)
    if (Result.isFailure(deadline)) return Result.fail(new ClaimsFileDecodeError({ message: deadline.failure }))
    rows.set(podKeyOfText(key), {
      id: entry.id,
      token: Redacted.make(entry.token),
      address: entry.address ?? "",
      podUID: entry.podUID ?? "",
      claimedAt: claimedAt.success,
      deadline: deadline.success,
      ...(entry.owner === undefined || entry.owner === null
        ? {}
        : { owner: { apiVersion: entry.owner.apiVersion, kind: entry.owner.kind, name: entry.owner.name, uid: entry.owner.uid } })
    })
  }
  return Result.succeed(rows)
}

const knownRowFields: ReadonlySet<string> = new Set(["id", "token", "address", "podUID", "claimedAt", "deadline", "owner"])

const decodeIntents = (value: unknown): Result.Result<ReadonlyMap<PodKey, ClaimIntent>, ClaimsFileDecodeError> => {
  const out = new Map<PodKey, ClaimIntent>()
  const shape = decodeShape(value)
  if (Result.isFailure(shape)) return Result.fail(new ClaimsFileDecodeError({ message: shape.failure.message }))
  const intents = shape.success.intents
  if (intents === undefined || intents === null) return Result.succeed(out)
  for (const key of Object.keys(intents)) {
    const sentAt = parseTimestamp(intents[key]!.sentAt)
    // An intent without a time could not tell its claim's sandboxes from older ones: refused.
    if (Result.isFailure(sentAt) || Option.isNone(sentAt.success)) {
      const why = Result.isFailure(sentAt) ? sentAt.failure : "the zero time"
      return Result.fail(new ClaimsFileDecodeError({ message: `intents[${JSON.stringify(key)}].sentAt: ${why}` }))
    }
    const intentKey = podKeyOfText(key)
    out.set(intentKey, { key: intentKey, podUID: intents[key]!.podUID ?? "", sentAt: sentAt.success.value })
  }
  return Result.succeed(out)
}

const parseClaimsText = (text: string): Result.Result<unknown, ClaimsFileDecodeError> => {
  try {
    return Result.succeed(JSON.parse(text))
  } catch (cause) {
    return Result.fail(new ClaimsFileDecodeError({ message: invalidJsonMessage(cause) }))
  }
}

/**
 * Decodes the file's text. Empty text, truncated JSON and a top-level array are errors. The
 * writer's own text is read as text (`readWrittenText`), any other by the full decode.
 */
export const decodeClaimsDocument = (text: string): Result.Result<ClaimsDocument, ClaimsFileDecodeError> => {
  const read = readWrittenText(text)
  return read !== undefined ? Result.succeed(read) : decodeClaimsDocumentInFull(text)
}

/** `decodeClaimsDocument` without the fast reader: the definition the tests hold it to. */
export const decodeClaimsDocumentInFull = (text: string): Result.Result<ClaimsDocument, ClaimsFileDecodeError> =>
  Result.flatMap(parseClaimsText(text), (value) => decodeInFull(text, value))

const decodeInFull = (text: string, value: unknown): Result.Result<ClaimsDocument, ClaimsFileDecodeError> => {
  const fail = (message: string) => Result.fail(new ClaimsFileDecodeError({ message }))
  const decoded = decodeClaimsValue(value)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  // The shape is an object whose `claims` is an object of objects, so the scan below meets only those.
  const top = membersOf(text, skipSpace(text, 0))
  const topTwice = repeated(top)
  if (topTwice !== undefined) return fail(`member ${topTwice.keyText} written twice (${positionOf(text, topTwice.at)})`)
  const claimsMember = top.find((m) => m.key === "claims")!
  const unknownMembers = top.filter((m) => m.key !== "claims" && m.key !== "intents").map((m) => memberText(text, m)).join(",")
  const intents = decodeIntents(value)
  if (Result.isFailure(intents)) return Result.fail(intents.failure)
  const keys = membersOf(text, claimsMember.valueStart)
  const rows = new Map<PodKey, ClaimRecord>()
  const keyOfId = new Map<string, string>()
  const seenKeys = new Set<string>()
  for (const member of keys) {
    // Only for a message: where a row sits takes a scan from the file's start, and one per row
    // made a 10,000-row file cost 10,000 scans of the whole file.
    const row = () => `row ${member.keyText} (${positionOf(text, member.at)})`
    if (seenKeys.has(member.key)) return fail(`${row()}: the key is written twice`)
    seenKeys.add(member.key)
    const fields = membersOf(text, member.valueStart)
    const fieldTwice = repeated(fields)
    if (fieldTwice !== undefined) {
      return fail(`${row()}: field ${fieldTwice.keyText} written twice (${positionOf(text, fieldTwice.at)})`)
    }
    const record = decoded.success.get(podKeyOfText(member.key))!
    const token = Redacted.value(record.token)
    if (token === "") return fail(`${row()}: empty token`)
    if (!printableToken.test(token)) return fail(`${row()}: the token holds characters other than visible ASCII`)
    const other = keyOfId.get(record.id)
    if (other !== undefined) {
      return fail(`${row()}: claim id ${JSON.stringify(record.id)} is already the claim of row ${JSON.stringify(other)}`)
    }
    keyOfId.set(record.id, member.key)
    const unknown = fields.filter((f) => !knownRowFields.has(f.key))
    rows.set(
      podKeyOfText(member.key),
      unknown.length === 0 ? record : { ...record, unknownFields: unknown.map((f) => memberText(text, f)).join(",") }
    )
  }
  return Result.succeed({ rows, intents: intents.success, unknownMembers })
}

/** Decodes the file's text into its rows (see `decodeClaimsDocument`). */
export const decodeClaimsFile = (
  text: string
): Effect.Effect<ReadonlyMap<PodKey, ClaimRecord>, ClaimsFileDecodeError> =>
  Effect.suspend(() => Effect.fromResult(Result.map(decodeClaimsDocument(text), (document) => document.rows)))
