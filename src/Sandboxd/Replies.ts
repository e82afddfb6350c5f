/**
 * What a sandboxd reply means: one `interpret*` per operation, from the status and body to the
 * typed outcome. Both clients use them (the HTTP one and the simulator-backed one in testkit), so
 * a reply means the same whichever way it came. Error text quoting sandboxd is scrubbed of the
 * secrets the caller names; a claim reply that cannot be kept is an unknown outcome, never a no.
 */
import { Option, Redacted, Result, Schema } from "effect"
import { type ClaimId, claimIdOfText } from "../Schemas/Ids.ts"
import { parseJsonQuietly } from "../Schemas/Json.ts"
import {
  ClaimResponseWire,
  ErrorBodyWire,
  InfoResponseWire,
  type ListedSandboxWire,
  ListResponseWire,
  parseDeadline,
  SandboxDetailWire,
  ZERO_TIME
} from "../Schemas/Sandboxd.ts"
import { safeExcerpt, scrubText } from "../Schemas/Scrub.ts"
import {
  type ClaimResult,
  type ListedSandbox,
  type NodeInfo,
  NoWarmCapacity,
  type ReleaseOutcome,
  type RootReleaseOutcome,
  type SandboxLookup,
  SandboxdDecodeError,
  SandboxdHttpError,
  SandboxdUnauthorized
} from "../Services/SandboxdClient.ts"

/** Error replies are read up to this many bytes; the rest is discarded. */
export const ERROR_BODY_LIMIT = 64 * 1024
/** Success bodies (the list above all) beyond this are refused with a decode error. */
export const SUCCESS_BODY_LIMIT = 16 * 1024 * 1024

/** A reply as read off the wire (or produced by the simulator model directly). */
export interface RawReply {
  readonly status: number
  readonly body: string
}

/**
 * The body caps applied to a reply already in memory (the simulator-backed layer), so it meets
 * the same limits the HTTP transport enforces while streaming: a success body beyond
 * `SUCCESS_BODY_LIMIT` is refused, an error body is cut to `ERROR_BODY_LIMIT` bytes.
 */
export const capReply = (
  operation: string,
  successStatus: number,
  reply: RawReply
): Result.Result<RawReply, SandboxdDecodeError> => {
  const bytes = Buffer.byteLength(reply.body)
  if (reply.status === successStatus) {
    return bytes > SUCCESS_BODY_LIMIT
      ? Result.fail(
        new SandboxdDecodeError({
          operation,
          message: `${operation} reply body exceeds the ${SUCCESS_BODY_LIMIT / (1024 * 1024)} MiB limit`
        })
      )
      : Result.succeed(reply)
  }
  return bytes > ERROR_BODY_LIMIT
    ? Result.succeed({ status: reply.status, body: Buffer.from(reply.body).subarray(0, ERROR_BODY_LIMIT).toString("utf8") })
    : Result.succeed(reply)
}

/** Never quotes the body: a malformed claim response can carry a token. */
const parseJson = parseJsonQuietly

/**
 * What an error reply says, scrubbed of `secrets` and of anything credential-shaped: the `error`
 * field of a `{"error":…}` body, a short excerpt of any other non-empty body, or "".
 */
export const errorMessageOf = (body: string, secrets: ReadonlyArray<string> = []): string => {
  const json = parseJson(body)
  if (Result.isSuccess(json)) {
    const decoded = Schema.decodeUnknownOption(ErrorBodyWire)(json.success)
    if (Option.isSome(decoded)) return scrubText(decoded.value.error, secrets)
  }
  const excerpt = safeExcerpt(body, secrets)
  return excerpt === "" ? "" : `non-JSON body: ${excerpt}`
}

const decodeJson = <S extends Schema.Decoder<unknown>>(
  schema: S,
  operation: string,
  body: string
): Result.Result<S["Type"], SandboxdDecodeError> => {
  const json = parseJson(body)
  if (Result.isFailure(json)) {
    return Result.fail(new SandboxdDecodeError({ operation, message: json.failure }))
  }
  const decoded = Schema.decodeUnknownResult(schema)(json.success)
  return Result.isFailure(decoded)
    ? Result.fail(
      new SandboxdDecodeError({
        operation,
        // The schema's message quotes the offending value, and a claim response or a by-id read
        // can carry a token.
        message: operation === "claim" || operation === "get"
          ? `unexpected ${operation} response shape`
          : `unexpected body: ${decoded.failure.message}`
      })
    )
    : Result.succeed(decoded.success)
}

const httpError = (operation: string, reply: RawReply, secrets: ReadonlyArray<string>) =>
  new SandboxdHttpError({ operation, status: reply.status, message: errorMessageOf(reply.body, secrets) })

// ---- claim reply validation --------------------------------------------------------------------

/** A sandbox id: what sandboxd issues (`sb_` + 16 hex) fits well inside; path- and log-safe. */
export const SANDBOX_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/
/** Claim tokens are 32 hex digits; anything up to this length of visible ASCII is accepted. */
export const TOKEN_MAX_LENGTH = 512
const TOKEN_PATTERN = /^[\x21-\x7e]+$/
export const OWNER_ADDR_MAX_LENGTH = 512
const OWNER_ADDR_PATTERN = /^[\x21-\x7e]+$/

/** Why a token cannot be kept as a claim's credential, or None when it can. Never quotes it. */
export const tokenProblem = (token: string): Option.Option<string> => {
  if (token === "") return Option.some("an empty token")
  if (token.length > TOKEN_MAX_LENGTH) return Option.some(`a token longer than ${TOKEN_MAX_LENGTH} characters`)
  if (!TOKEN_PATTERN.test(token)) return Option.some("a token with characters other than visible ASCII")
  return Option.none()
}

/** Why an id cannot be recorded, or None when it can. Quotes only its length. */
export const idProblem = (id: string): Option.Option<string> =>
  SANDBOX_ID_PATTERN.test(id)
    ? Option.none()
    : Option.some(`an id of ${id.length} characters outside [A-Za-z0-9_.-] (at most 128, starting alphanumeric)`)

const invalidClaimReply = (what: string) =>
  new SandboxdDecodeError({ operation: "claim", message: `the claim reply carries ${what}: its outcome is unknown` })

/** 401/403 to a call made with the node token. sandboxd's body is not quoted: it may repeat the token. */
export const isRefusal = (reply: RawReply) => reply.status === 401 || reply.status === 403
const unauthorized = (operation: string, reply: RawReply) =>
  new SandboxdUnauthorized({
    operation,
    status: reply.status,
    message: `sandboxd refused the node token (HTTP ${reply.status}); check --sandboxd-token-file`
  })

export const interpretClaim = (
  reply: RawReply,
  secrets: ReadonlyArray<string> = []
): Result.Result<ClaimResult, NoWarmCapacity | SandboxdUnauthorized | SandboxdHttpError | SandboxdDecodeError> => {
  if (reply.status === 429) {
    const detail = errorMessageOf(reply.body, secrets)
    return Result.fail(
      new NoWarmCapacity({ message: `node at capacity or draining${detail === "" ? "" : `: ${detail}`}` })
    )
  }
  if (isRefusal(reply)) return Result.fail(unauthorized("claim", reply))
  if (reply.status !== 200) return Result.fail(httpError("claim", reply, secrets))
  const decoded = decodeJson(Schema.NullOr(ClaimResponseWire), "claim", reply.body)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const body = decoded.success
  const id = body?.id ?? ""
  if (id === "") {
    const redirect = body?.redirect ?? []
    return Result.fail(
      new NoWarmCapacity({
        message: redirect.length > 0
          ? `sandboxd redirected the claim to ${scrubText(redirect.slice(0, 8).join(", ").slice(0, 512), secrets)}`
          : "sandboxd answered without a sandbox id"
      })
    )
  }
  // A reply we cannot keep is not a refusal: sandboxd may have made the VM all the same.
  const badId = idProblem(id)
  if (Option.isSome(badId)) return Result.fail(invalidClaimReply(badId.value))
  const badToken = tokenProblem(body?.token ?? "")
  if (Option.isSome(badToken)) return Result.fail(invalidClaimReply(badToken.value))
  const deadlineText = body?.deadline ?? ""
  if (deadlineText !== ZERO_TIME && Option.isNone(parseDeadline(deadlineText))) {
    return Result.fail(invalidClaimReply("no parseable RFC 3339 deadline"))
  }
  // The newest sandboxd omits owner_addr when it advertises no host: absent is allowed, garbage is not.
  const ownerAddr = body?.owner_addr ?? ""
  if (ownerAddr.length > OWNER_ADDR_MAX_LENGTH || (ownerAddr !== "" && !OWNER_ADDR_PATTERN.test(ownerAddr))) {
    return Result.fail(invalidClaimReply("an owner_addr that is not a bounded address"))
  }
  return Result.succeed({
    id: claimIdOfText(id),
    token: Redacted.make(body?.token ?? ""),
    ownerAddr,
    deadline: parseDeadline(deadlineText)
  })
}

/** A release: 204 released, 404 what `notFound` says, anything else an HTTP error. */
const interpretReleaseAs = <A extends ReleaseOutcome | RootReleaseOutcome>(notFound: A) =>
(
  reply: RawReply,
  secrets: ReadonlyArray<string> = []
): Result.Result<"Released" | A, SandboxdHttpError> => {
  if (reply.status === 204) return Result.succeed("Released")
  if (reply.status === 404) return Result.succeed(notFound)
  return Result.fail(httpError("release", reply, secrets))
}

/** A release with the claim's token: a 404 says the sandbox is already gone. */
export const interpretRelease = interpretReleaseAs<ReleaseOutcome>("AlreadyGone")

/** A root release: only a 204 proves it (a 404 is also what a revision without root release says). */
export const interpretRootRelease = interpretReleaseAs<RootReleaseOutcome>("NotProven")

/**
 * One row per key, the first one seen. A listing that repeats an id (or info that repeats a pool)
 * describes one thing; passing the repeats on would give the NodeInventory duplicate list-map keys,
 * which the apiserver refuses, and every consumer would count the same sandbox twice.
 */
const firstOfEach = <A>(rows: ReadonlyArray<A>, keyOf: (row: A) => string): ReadonlyArray<A> => {
  const seen = new Set<string>()
  return rows.filter((row) => {
    const key = keyOf(row)
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/** A listing's row as the client keeps it: absent and `null` fields read as Go's zero values. */
const listedOf = (row: ListedSandboxWire): ListedSandbox => {
  const claimedAt = parseDeadline(row.claimed_at)
  return {
    id: row.id,
    claimRef: row.claim_ref ?? "",
    deadline: parseDeadline(row.deadline),
    hibernated: row.hibernated ?? false,
    archived: row.archived ?? false,
    failed: row.failed ?? "",
    key: { template: row.key?.template ?? "", net: row.key?.net ?? "", size: row.key?.size ?? "" },
    ...(Option.isSome(claimedAt) ? { claimedAt: claimedAt.value } : {})
  }
}

/**
 * A listing: `ListResponseWire` decoded, one row per id (the first), each as `listedOf` reads it;
 * an undecodable body is a decode error, never an empty listing (VER-4 — failed listing vs empty listing).
 */
export const interpretList = (
  reply: RawReply,
  secrets: ReadonlyArray<string> = []
): Result.Result<ReadonlyArray<ListedSandbox>, SandboxdUnauthorized | SandboxdHttpError | SandboxdDecodeError> => {
  if (isRefusal(reply)) return Result.fail(unauthorized("list", reply))
  if (reply.status !== 200) return Result.fail(httpError("list", reply, secrets))
  const decoded = decodeJson(ListResponseWire, "list", reply.body)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  return Result.succeed(firstOfEach(decoded.success.sandboxes, (row) => row.id).map(listedOf))
}

/** The `sandbox not known` body sandboxd writes; anything else under a 404 is not proof of absence. */
export const UNKNOWN_SANDBOX = "unknown sandbox"

export const interpretGet = (
  id: ClaimId,
  reply: RawReply,
  secrets: ReadonlyArray<string> = []
): Result.Result<SandboxLookup, SandboxdHttpError | SandboxdDecodeError> => {
  if (reply.status === 404) {
    const json = parseJson(reply.body)
    const decoded = Result.isSuccess(json) ? Schema.decodeUnknownOption(ErrorBodyWire)(json.success) : Option.none()
    return Result.succeed(
      Option.isSome(decoded) && decoded.value.error === UNKNOWN_SANDBOX ? { _tag: "Gone" } : { _tag: "RouteUnknown" }
    )
  }
  // A wrong method on a route this revision lacks.
  if (reply.status === 405) return Result.succeed({ _tag: "RouteUnknown" })
  if (reply.status !== 200) return Result.fail(httpError("get", reply, secrets))
  const decoded = decodeJson(SandboxDetailWire, "get", reply.body)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const row = decoded.success
  if (row.id !== id) {
    return Result.fail(new SandboxdDecodeError({ operation: "get", message: `the by-id read for ${id} answered another id` }))
  }
  const token = row.token ?? ""
  return Result.succeed({
    _tag: "Found",
    sandbox: listedOf(row),
    token: Option.isNone(tokenProblem(token)) ? Option.some(Redacted.make(token)) : Option.none()
  })
}

export const interpretInfo = (
  reply: RawReply,
  secrets: ReadonlyArray<string> = []
): Result.Result<NodeInfo, SandboxdUnauthorized | SandboxdHttpError | SandboxdDecodeError> => {
  if (isRefusal(reply)) return Result.fail(unauthorized("info", reply))
  if (reply.status !== 200) return Result.fail(httpError("info", reply, secrets))
  const decoded = decodeJson(InfoResponseWire, "info", reply.body)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  return Result.succeed({
    pools: firstOfEach(decoded.success.pools, (pool) => JSON.stringify([pool.key.template ?? "", pool.key.net ?? "", pool.key.size ?? ""])).map((pool) => ({
      template: pool.key.template ?? "",
      net: pool.key.net ?? "",
      size: pool.key.size ?? "",
      warm: pool.warm ?? 0,
      target: pool.target ?? 0
    })),
    draining: decoded.success.draining ?? false
  })
}

export const interpretHealthz = (
  reply: RawReply,
  secrets: ReadonlyArray<string> = []
): Result.Result<void, SandboxdHttpError> =>
  reply.status >= 200 && reply.status < 300 ? Result.succeed(undefined) : Result.fail(httpError("healthz", reply, secrets))

