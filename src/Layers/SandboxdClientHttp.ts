/**
 * The live `SandboxdClient`: node:http with one keep-alive agent, a Semaphore bounding the
 * requests in flight to `--sandboxd-max-concurrency`, and a whole-request `--sandboxd-timeout`.
 *
 * node:http is used directly (not effect/http) because the contract needs byte-exact control of
 * the reply body: error bodies are read up to 64 KiB, success bodies are capped at 16 MiB with an
 * explicit failure, and an aborted request must tear its socket down.
 *
 * The status → result mapping lives in the `interpret*` functions below, shared with the
 * simulator-backed test layer (`testkit/Layers/SandboxdClientSim.ts`) so both speak the same contract.
 */
import { parseJsonQuietly } from "../Schemas/Json.ts"
import * as Http from "node:http"
import * as Https from "node:https"
import { Cause, Duration, Effect, Exit, Layer, Option, Redacted, Result, Schema, Semaphore, Stream } from "effect"
import type { Scope } from "effect"
import { AppConfig } from "../Services/Config.ts"
import { DependencyRecovery } from "../Services/DependencyRecovery.ts"
import { KnownSecrets } from "../Services/KnownSecrets.ts"
import type { ClaimId } from "../Schemas/Ids.ts"
import {
  claimRequestBody,
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
import { redactUrlUserinfo } from "../Schemas/UrlRedaction.ts"
import {
  type ClaimResult,
  type ClaimSpec,
  type ListedSandbox,
  type NodeInfo,
  NoWarmCapacity,
  type ReleaseOutcome,
  type RootReleaseOutcome,
  type SandboxLookup,
  SandboxdClient,
  SandboxdDecodeError,
  SandboxdHttpError,
  SandboxdListError,
  type SandboxdTransportError,
  SandboxdTimeout,
  SandboxdUnauthorized,
  SandboxdUnreachable
} from "../Services/SandboxdClient.ts"
import { SandboxdToken } from "../Services/SandboxdToken.ts"

/** Error replies are read up to this many bytes; the rest is discarded. */
export const ERROR_BODY_LIMIT = 64 * 1024
/** Success bodies (the list above all) beyond this are refused with a decode error. */
export const SUCCESS_BODY_LIMIT = 16 * 1024 * 1024

/** A reply as read off the wire (or produced by the simulator model directly). */
export interface RawReply {
  readonly status: number
  readonly body: string
}

// ---- shared interpretation ---------------------------------------------------------------------

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
const isRefusal = (reply: RawReply) => reply.status === 401 || reply.status === 403
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
    id: id as ClaimId,
    token: Redacted.make(body?.token ?? ""),
    ownerAddr,
    deadline: parseDeadline(deadlineText)
  })
}

export const interpretRelease = (
  reply: RawReply,
  secrets: ReadonlyArray<string> = []
): Result.Result<ReleaseOutcome, SandboxdHttpError> => {
  if (reply.status === 204) return Result.succeed("Released")
  if (reply.status === 404) return Result.succeed("AlreadyGone")
  return Result.fail(httpError("release", reply, secrets))
}

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

/** A root release: only a 204 proves it (a 404 is also what a revision without root release says). */
export const interpretRootRelease = (
  reply: RawReply,
  secrets: ReadonlyArray<string> = []
): Result.Result<RootReleaseOutcome, SandboxdHttpError> => {
  if (reply.status === 204) return Result.succeed("Released")
  if (reply.status === 404) return Result.succeed("NotProven")
  return Result.fail(httpError("release", reply, secrets))
}

const listedOf = (row: ListedSandboxWire): ListedSandbox => {
  const claimedAt = parseDeadline(row.claimed_at)
  return {
    id: row.id as ClaimId,
    claimRef: row.claim_ref ?? "",
    deadline: parseDeadline(row.deadline),
    hibernated: row.hibernated ?? false,
    archived: row.archived ?? false,
    failed: row.failed ?? "",
    key: { template: row.key?.template ?? "", net: row.key?.net ?? "", size: row.key?.size ?? "" },
    ...(Option.isSome(claimedAt) ? { claimedAt: claimedAt.value } : {})
  }
}

export const interpretList = (
  reply: RawReply,
  secrets: ReadonlyArray<string> = []
): Result.Result<ReadonlyArray<ListedSandbox>, SandboxdUnauthorized | SandboxdHttpError | SandboxdDecodeError> => {
  if (isRefusal(reply)) return Result.fail(unauthorized("list", reply))
  if (reply.status !== 200) return Result.fail(httpError("list", reply, secrets))
  const json = parseJson(reply.body)
  if (Result.isFailure(json)) return Result.fail(new SandboxdDecodeError({ operation: "list", message: json.failure }))
  const read = readListing(json.success)
  return read !== undefined ? Result.succeed(read) : listingBySchema(json.success)
}

/**
 * The definition of a listing: `ListResponseWire` decoded, one row per id (the first), each as
 * `listedOf` reads it; an undecodable body is a decode error (VER-4).
 */
export const listingBySchema = (json: unknown): Result.Result<ReadonlyArray<ListedSandbox>, SandboxdDecodeError> => {
  const decoded = Schema.decodeUnknownResult(ListResponseWire)(json)
  if (Result.isFailure(decoded)) {
    return Result.fail(new SandboxdDecodeError({ operation: "list", message: `unexpected body: ${decoded.failure.message}` }))
  }
  return Result.succeed(firstOfEach(decoded.success.sandboxes, (row) => row.id).map(listedOf))
}

// A listing of 10,000 sandboxes (the verification pass of a restart) spent most of its decode in
// the Schema walk, then in a copy of every row, a filter and another object per row. For the
// shape sandboxd writes, `readListing` gives the very same rows in one pass with plain type
// checks; anything else (a wrong type, a `__proto__` key) returns undefined and the listing is
// read by `listingBySchema`, which then gives the rows or the error. The two are held to the same
// result in test/Schemas/Sandboxd.test.ts.

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) && !Object.hasOwn(u, "__proto__")

/** A field the Schema reads as optional `null` or string: its string, "" for absent or null; undefined for any other value. */
const optionalText = (value: unknown): string | undefined =>
  value === undefined || value === null ? "" : typeof value === "string" ? value : undefined

const optionalFlag = (value: unknown): boolean | undefined =>
  value === undefined || value === null ? false : typeof value === "boolean" ? value : undefined

/** A listing as `listingBySchema` reads it, when it has the usual shape; undefined otherwise. */
export const readListing = (json: unknown): ReadonlyArray<ListedSandbox> | undefined => {
  if (!isPlainObject(json)) return undefined
  const rows = json["sandboxes"]
  if (!Array.isArray(rows)) return undefined
  const out: Array<ListedSandbox> = []
  const seen = new Set<string>()
  // Rows of one pool share one key object (a listing is read, never changed).
  let lastKey: ListedSandbox["key"] | undefined
  for (let i = 0; i < rows.length; i++) {
    const row: unknown = rows[i]
    if (!isPlainObject(row)) return undefined
    const id = row["id"]
    if (typeof id !== "string" || id === "") return undefined
    const wireKey = row["key"]
    let template = ""
    let net = ""
    let size = ""
    if (wireKey !== undefined && wireKey !== null) {
      if (!isPlainObject(wireKey)) return undefined
      const t = optionalText(wireKey["template"])
      const n = optionalText(wireKey["net"])
      const z = optionalText(wireKey["size"])
      if (t === undefined || n === undefined || z === undefined) return undefined
      template = t
      net = n
      size = z
    }
    const deadline = row["deadline"]
    if (deadline !== undefined && deadline !== null && typeof deadline !== "string") return undefined
    const hibernated = optionalFlag(row["hibernated"])
    const archived = optionalFlag(row["archived"])
    const claimRef = optionalText(row["claim_ref"])
    const failed = optionalText(row["failed"])
    const claimedAtText = row["claimed_at"]
    if (
      hibernated === undefined || archived === undefined || claimRef === undefined || failed === undefined ||
      (claimedAtText !== undefined && claimedAtText !== null && typeof claimedAtText !== "string")
    ) return undefined
    // Every row is checked (a bad row anywhere is the Schema's to judge), only the first of an id kept.
    if (seen.has(id)) continue
    seen.add(id)
    const key = lastKey !== undefined && lastKey.template === template && lastKey.net === net && lastKey.size === size
      ? lastKey
      : (lastKey = { template, net, size })
    const claimedAt = parseDeadline(claimedAtText)
    const listed: ListedSandbox = Option.isSome(claimedAt)
      ? { id: id as ClaimId, claimRef, deadline: parseDeadline(deadline), hibernated, archived, failed, key, claimedAt: claimedAt.value }
      : { id: id as ClaimId, claimRef, deadline: parseDeadline(deadline), hibernated, archived, failed, key }
    out.push(listed)
  }
  return out
}

/** The `sandbox not known` body sandboxd writes; anything else under a 404 is not proof of absence. */
const UNKNOWN_SANDBOX = "unknown sandbox"

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

/** Wraps a list/info/get failure so it can never be mistaken for an empty answer. */
export const asListError = (operation: "list" | "info" | "get") => (reason: SandboxdTransportError | SandboxdUnauthorized) =>
  new SandboxdListError({ operation, reason, message: `sandboxd ${operation}: ${reason.message}` })

/** The listing path, asking newer servers to filter by `claim_ref` (older ones ignore it). */
export const listPath = (claimRef: string): string =>
  claimRef === "" ? "/v1/sandboxes" : `/v1/sandboxes?claim_ref=${encodeURIComponent(claimRef)}`

/** Keeps only rows for `claimRef`, whatever the server did with the query. */
export const onlyClaimRef = (claimRef: string) => (rows: ReadonlyArray<ListedSandbox>) =>
  rows.filter((row) => row.claimRef === claimRef)

/** The secrets a reply to a request carrying `bearer` must not repeat. */
export const secretsOf = (...tokens: ReadonlyArray<Redacted.Redacted<string> | undefined>): ReadonlyArray<string> =>
  tokens.flatMap((token) => {
    const value = token === undefined ? "" : Redacted.value(token)
    return value === "" ? [] : [value]
  })

// ---- transport ---------------------------------------------------------------------------------

interface Exchange {
  readonly operation: string
  readonly method: "GET" | "POST"
  readonly path: string
  readonly token: Redacted.Redacted<string> | undefined
  readonly body?: string
  /** Bodies of this status are success bodies: capped with a failure, not truncated. */
  readonly successStatus: number
}

/**
 * The release route for `id`, path-escaped. An id that is not valid text (a lone UTF-16 surrogate,
 * which JSON can carry) cannot be escaped: a local error, never a thrown URIError.
 */
export const releasePath = (id: ClaimId): Result.Result<string, SandboxdHttpError> =>
  Result.map(sandboxPath("release", id), (path) => `${path}/release`)

/** `/v1/sandboxes/{id}`, path-escaped; the same local errors as `releasePath`. */
export const sandboxPath = (operation: string, id: ClaimId): Result.Result<string, SandboxdHttpError> => {
  if (id === "") {
    return Result.fail(new SandboxdHttpError({ operation, status: 0, message: `${operation} requires a sandbox id` }))
  }
  try {
    return Result.succeed(`/v1/sandboxes/${encodeURIComponent(id)}`)
  } catch {
    return Result.fail(
      new SandboxdHttpError({ operation, status: 0, message: `${operation}: the sandbox id is not valid text` })
    )
  }
}

/** Strips trailing slashes so `http://h:7777/` and `http://h:7777` address the same routes. */
export const normalizeBaseUrl = (url: string): string => url.replace(/\/+$/, "")

export type SandboxdClientShape = SandboxdClient["Service"]

/** Socket errors raised before any connection exists: the request cannot have reached sandboxd. */
const NEVER_SENT_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL"
])

/**
 * The sandboxd client over HTTP, scoped: its keep-alive agent is destroyed with the scope. Error
 * text is scrubbed of the node token, the request's token and every claim token `KnownSecrets`
 * holds when the reply arrives.
 */
export const make: Effect.Effect<SandboxdClientShape, never, AppConfig | KnownSecrets | Scope.Scope> = Effect.gen(function*() {
  const config = yield* AppConfig
  const knownSecrets = yield* KnownSecrets
  const baseUrl = normalizeBaseUrl(config.sandboxdUrl)
  const maxInFlight = Math.max(1, config.sandboxdMaxConcurrency)
  const timeoutMillis = Duration.toMillis(config.sandboxdTimeout)
  const secure = baseUrl.startsWith("https:")
  // Idle keep-alive sockets are closed after 90 s, as the reference's transport does.
  const agentOptions = { keepAlive: true, maxSockets: maxInFlight, maxFreeSockets: maxInFlight, timeout: 90_000 }
  const agent = yield* Effect.acquireRelease(
    Effect.sync(() => secure ? new Https.Agent(agentOptions) : new Http.Agent(agentOptions)),
    (agent) => Effect.sync(() => agent.destroy())
  )
  const permits = yield* Semaphore.make(maxInFlight)
  const request = secure ? Https.request : Http.request

  const roundTrip = (exchange: Exchange) =>
    Effect.callback<RawReply, SandboxdUnreachable | SandboxdDecodeError | SandboxdHttpError>((resume) => {
      const { operation } = exchange
      let url: URL
      try {
        url = new URL(baseUrl + exchange.path)
      } catch {
        resume(Effect.fail(new SandboxdUnreachable({ operation, message: `invalid sandboxd URL ${redactUrlUserinfo(baseUrl)}` })))
        return
      }
      const headers: Record<string, string> = {}
      const token = exchange.token === undefined ? "" : Redacted.value(exchange.token)
      if (token !== "") headers.authorization = `Bearer ${token}`
      if (exchange.body !== undefined) {
        headers["content-type"] = "application/json"
        headers["content-length"] = String(Buffer.byteLength(exchange.body))
      }
      let settled = false
      const settle = (effect: Effect.Effect<RawReply, SandboxdUnreachable | SandboxdDecodeError | SandboxdHttpError>) => {
        if (settled) return
        settled = true
        resume(effect)
      }
      const unreachable = (cause: unknown) => {
        const code = cause instanceof Error && "code" in cause ? String(cause.code) : ""
        settle(Effect.fail(
          new SandboxdUnreachable({
            operation,
            message: `${exchange.method} ${url.pathname}: ${cause instanceof Error ? cause.message : String(cause)}`,
            // These fail before a connection exists, so sandboxd never saw the request.
            ...(NEVER_SENT_CODES.has(code) ? { requestSent: false } : {})
          })
        ))
      }
      let req: Http.ClientRequest
      try {
        req = request(url, { method: exchange.method, agent, headers }, (res) => {
          const status = res.statusCode ?? 0
          const isSuccessBody = status === exchange.successStatus
          const limit = isSuccessBody ? SUCCESS_BODY_LIMIT : ERROR_BODY_LIMIT
          const chunks: Array<Buffer> = []
          let size = 0
          const finish = () => settle(Effect.succeed({ status, body: Buffer.concat(chunks).toString("utf8") }))
          res.on("data", (chunk: Buffer) => {
            if (settled) return
            const room = limit - size
            if (chunk.length <= room) {
              chunks.push(chunk)
              size += chunk.length
              return
            }
            if (isSuccessBody) {
              settle(Effect.fail(
                new SandboxdDecodeError({
                  operation,
                  message: `${operation} reply body exceeds the ${limit / (1024 * 1024)} MiB limit`
                })
              ))
            } else {
              chunks.push(chunk.subarray(0, room))
              size = limit
              finish()
            }
            // Stop reading: the rest of an oversize body is not worth draining.
            res.destroy()
          })
          res.on("end", finish)
          res.on("error", unreachable)
          res.on("close", () => {
            if (!res.complete) unreachable(new Error("connection closed before the reply was complete"))
          })
        })
      } catch (cause) {
        // node:http validates headers synchronously: a token holding a character HTTP cannot carry
        // (a control character, say) throws here. Node's message can quote a header value, so
        // only its code is kept; the request was never sent.
        const code = cause instanceof Error && "code" in cause ? String(cause.code) : "unknown error"
        settle(Effect.fail(
          new SandboxdHttpError({
            operation,
            status: 0,
            message: `${exchange.method} ${url.pathname}: the request could not be sent (${code})`
          })
        ))
        return
      }
      req.on("error", unreachable)
      req.end(exchange.body)
      return Effect.sync(() => {
        settled = true
        req.destroy()
      })
    })

  // Q-08: every exchange is reported, so the first answer after a failure can wake what waits on sandboxd.
  const recovery = yield* Effect.serviceOption(DependencyRecovery)
  const noteExchange = Option.match(recovery, {
    onNone: () => (_answered: boolean) => Effect.void,
    onSome: (service) => (answered: boolean) => service.note("sandboxd", answered)
  })

  /** One bounded exchange: waits for a permit, then the timeout covers the request itself. */
  const exchange = (exchange: Exchange) =>
    roundTrip(exchange).pipe(
      Effect.timeoutOrElse({
        duration: config.sandboxdTimeout,
        orElse: () =>
          Effect.fail(
            new SandboxdTimeout({
              operation: exchange.operation,
              timeoutMillis,
              message: `${exchange.method} ${exchange.path} took longer than ${timeoutMillis} ms`
            })
          )
      }),
      // A reply is an answer unless it is a 5xx; no reply (unreachable, timed out) is none.
      Effect.onExit((exit) =>
        Exit.isSuccess(exit) ? noteExchange(exit.value.status < 500) : Cause.hasInterruptsOnly(exit.cause) ? Effect.void : noteExchange(false)
      ),
      permits.withPermits(1)
    )

  // The node token as of each request: re-read from its file when that changed (see
  // SandboxdToken); without that service, the token read at startup.
  const tokens = Option.getOrElse(
    yield* Effect.serviceOption(SandboxdToken),
    () =>
      SandboxdToken.of({
        current: Effect.succeed(config.sandboxdToken),
        reload: Effect.succeed(false),
        noteReply: () => Effect.void,
        acceptedAgain: Stream.empty
      })
  )

  /**
   * An exchange carrying the node token. A refusal (401/403) re-reads the token file at once and,
   * when the token changed, sends the request once more with the new one: a refused request made
   * nothing, so sending it again is safe. The reply comes with the secrets it must not repeat.
   */
  const withNodeToken = (request: Omit<Exchange, "token">) =>
    Effect.gen(function*() {
      const token = yield* tokens.current
      const reply = yield* exchange({ ...request, token })
      if (!isRefusal(reply) || !(yield* tokens.reload)) {
        yield* tokens.noteReply(isRefusal(reply))
        return { reply, secrets: secretsOf(token) }
      }
      const fresh = yield* tokens.current
      const again = yield* exchange({ ...request, token: fresh })
      yield* tokens.noteReply(isRefusal(again))
      return { reply: again, secrets: secretsOf(token, fresh) }
    })

  /**
   * `interpret(reply)` scrubbed of the request's own secrets; when that fails (its message may
   * quote sandboxd), interpreted again scrubbed of every claim token held now as well. Only the
   * error path reads the claim table, and the whole text is scrubbed before any excerpt is cut.
   */
  const interpretScrubbed = <A, E>(
    own: ReadonlyArray<string>,
    interpret: (secrets: ReadonlyArray<string>) => Result.Result<A, E>
  ): Effect.Effect<A, E> => {
    const first = interpret(own)
    return Result.isSuccess(first)
      ? Effect.succeed(first.success)
      : Effect.flatMap(knownSecrets.current, (tokens) => Effect.fromResult(interpret([...own, ...secretsOf(...tokens)])))
  }

  const claim = Effect.fn("SandboxdClient.claim")(function*(spec: ClaimSpec) {
    const { reply, secrets } = yield* withNodeToken({
      operation: "claim",
      method: "POST",
      path: "/v1/claim",
      body: JSON.stringify(claimRequestBody(spec)),
      successStatus: 200
    })
    return yield* interpretScrubbed(secrets, (all) => interpretClaim(reply, all))
  })

  const release = Effect.fn("SandboxdClient.release")(
    function*(id: ClaimId, claimToken: Redacted.Redacted<string>) {
      const path = yield* Effect.fromResult(releasePath(id))
      const reply = yield* exchange({
        operation: "release",
        method: "POST",
        path,
        token: claimToken,
        successStatus: 204
      })
      return yield* interpretScrubbed(
        secretsOf(yield* tokens.current, claimToken),
        (secrets) => interpretRelease(reply, secrets)
      )
    }
  )

  const releaseAsRoot = Effect.fn("SandboxdClient.releaseAsRoot")(function*(id: ClaimId) {
    const path = yield* Effect.fromResult(releasePath(id))
    const { reply, secrets } = yield* withNodeToken({ operation: "release", method: "POST", path, successStatus: 204 })
    return yield* interpretScrubbed(secrets, (all) => interpretRootRelease(reply, all))
  })

  const list = (claimRef: string) =>
    withNodeToken({
      operation: "list",
      method: "GET",
      path: listPath(claimRef),
      successStatus: 200
    }).pipe(
      Effect.flatMap(({ reply, secrets }) => interpretScrubbed(secrets, (all) => interpretList(reply, all))),
      Effect.mapError(asListError("list"))
    )

  const listSandboxes = list("").pipe(Effect.withSpan("SandboxdClient.listSandboxes"))

  const listByClaimRef = (claimRef: string) =>
    list(claimRef).pipe(Effect.map(onlyClaimRef(claimRef)), Effect.withSpan("SandboxdClient.listByClaimRef"))

  const getSandbox = (id: ClaimId) =>
    Effect.fromResult(sandboxPath("get", id)).pipe(
      Effect.flatMap((path) => withNodeToken({ operation: "get", method: "GET", path, successStatus: 200 })),
      Effect.flatMap(({ reply, secrets }) => interpretScrubbed(secrets, (all) => interpretGet(id, reply, all))),
      Effect.mapError(asListError("get")),
      Effect.withSpan("SandboxdClient.getSandbox")
    )

  const info = withNodeToken({ operation: "info", method: "GET", path: "/v1/info", successStatus: 200 })
    .pipe(
      Effect.flatMap(({ reply, secrets }) => interpretScrubbed(secrets, (all) => interpretInfo(reply, all))),
      Effect.mapError(asListError("info")),
      Effect.withSpan("SandboxdClient.info")
    )

  const healthz = exchange({
    operation: "healthz",
    method: "GET",
    path: "/healthz",
    token: undefined,
    successStatus: 200
  }).pipe(
    // The probe carries no token, but a proxy in front of sandboxd may still quote the node's.
    Effect.flatMap((reply) =>
      Effect.flatMap(tokens.current, (token) =>
        interpretScrubbed(secretsOf(token), (secrets) => interpretHealthz(reply, secrets)))
    ),
    Effect.withSpan("SandboxdClient.healthz")
  )

  return SandboxdClient.of({ claim, release, releaseAsRoot, listSandboxes, listByClaimRef, getSandbox, info, healthz })
})

/**
 * Requires `AppConfig` and the `KnownSecrets` its error text is scrubbed of; the daemon also
 * provides `SandboxdToken` (token-file rotation).
 */
export const layer: Layer.Layer<SandboxdClient, never, AppConfig | KnownSecrets> = Layer.effect(SandboxdClient, make)
