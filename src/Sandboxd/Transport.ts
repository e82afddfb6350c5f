/**
 * One sandboxd request over node:http with a keep-alive agent, read to a `RawReply`. node:http
 * rather than effect/http for byte-exact control of the body: an error body is cut at 64 KiB, a
 * success body past 16 MiB is a decode error, and an interrupted request tears its socket down.
 */
import * as Http from "node:http"
import * as Https from "node:https"
import { Effect, Redacted } from "effect"
import type { Scope } from "effect"
import { redactUrlUserinfo } from "../Schemas/UrlRedaction.ts"
import { SandboxdDecodeError, SandboxdHttpError, SandboxdUnreachable } from "../Services/SandboxdClient.ts"
import { ERROR_BODY_LIMIT, type RawReply, SUCCESS_BODY_LIMIT } from "./Replies.ts"
import { authorizationOf } from "./Routes.ts"

/** One request as the client asks for it. */
export interface Exchange {
  readonly operation: string
  readonly method: "GET" | "POST"
  readonly path: string
  readonly token: Redacted.Redacted<string> | undefined
  readonly body?: string
  /** Bodies of this status are success bodies: capped with a failure, not truncated. */
  readonly successStatus: number
}

/** Sends one exchange and reads its reply; no timeout and no bound of its own (`Client.ts` adds both). */
export type RoundTrip = (exchange: Exchange) => Effect.Effect<RawReply, SandboxdUnreachable | SandboxdDecodeError | SandboxdHttpError>

/** Strips trailing slashes so `http://h:7777/` and `http://h:7777` address the same routes. */
export const normalizeBaseUrl = (url: string): string => url.replace(/\/+$/, "")

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

const codeOf = (cause: unknown): string | undefined => (cause instanceof Error && "code" in cause ? String(cause.code) : undefined)

/**
 * The round trip to `sandboxdUrl` with at most `maxInFlight` sockets, scoped: the keep-alive agent
 * is destroyed with the scope.
 */
export const httpRoundTrip = (sandboxdUrl: string, maxInFlight: number): Effect.Effect<RoundTrip, never, Scope.Scope> =>
  Effect.gen(function*() {
    const baseUrl = normalizeBaseUrl(sandboxdUrl)
    const secure = baseUrl.startsWith("https:")
    // Idle keep-alive sockets are closed after 90 s, as the reference's transport does.
    const agentOptions = { keepAlive: true, maxSockets: maxInFlight, maxFreeSockets: maxInFlight, timeout: 90_000 }
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() => secure ? new Https.Agent(agentOptions) : new Http.Agent(agentOptions)),
      (agent) => Effect.sync(() => agent.destroy())
    )
    const request = secure ? Https.request : Http.request
    return (exchange) => send(request, agent, baseUrl, exchange)
  })

type Outcome = Effect.Effect<RawReply, SandboxdUnreachable | SandboxdDecodeError | SandboxdHttpError>

const send = (request: typeof Http.request, agent: Http.Agent, baseUrl: string, exchange: Exchange): Outcome =>
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
    const authorization = authorizationOf(exchange.token === undefined ? "" : Redacted.value(exchange.token))
    if (authorization !== undefined) headers.authorization = authorization
    if (exchange.body !== undefined) {
      headers["content-type"] = "application/json"
      headers["content-length"] = String(Buffer.byteLength(exchange.body))
    }
    let settled = false
    const settle = (effect: Outcome) => {
      if (settled) return
      settled = true
      resume(effect)
    }
    const unreachable = (cause: unknown) =>
      settle(Effect.fail(
        new SandboxdUnreachable({
          operation,
          message: `${exchange.method} ${url.pathname}: ${cause instanceof Error ? cause.message : String(cause)}`,
          // These fail before a connection exists, so sandboxd never saw the request.
          ...(NEVER_SENT_CODES.has(codeOf(cause) ?? "") ? { requestSent: false } : {})
        })
      ))
    let req: Http.ClientRequest
    try {
      req = request(url, { method: exchange.method, agent, headers }, (res) => readReply(res, exchange, { settle, unreachable, settled: () => settled }))
    } catch (cause) {
      // node:http validates headers synchronously: a token holding a character HTTP cannot carry
      // (a control character, say) throws here. Node's message can quote a header value, so
      // only its code is kept; the request was never sent.
      settle(Effect.fail(
        new SandboxdHttpError({
          operation,
          status: 0,
          message: `${exchange.method} ${url.pathname}: the request could not be sent (${codeOf(cause) ?? "unknown error"})`
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

/** How a reply's reading ends the request: `settle` once; `settled` once it has (or was interrupted). */
interface Settle {
  readonly settle: (outcome: Outcome) => void
  readonly unreachable: (cause: unknown) => void
  readonly settled: () => boolean
}

/** Reads the reply body under its cap: a success body past it fails, an error body is cut there. */
const readReply = (res: Http.IncomingMessage, exchange: Exchange, { settle, settled, unreachable }: Settle) => {
  const status = res.statusCode ?? 0
  const isSuccessBody = status === exchange.successStatus
  const limit = isSuccessBody ? SUCCESS_BODY_LIMIT : ERROR_BODY_LIMIT
  const chunks: Array<Buffer> = []
  let size = 0
  const finish = () => settle(Effect.succeed({ status, body: Buffer.concat(chunks).toString("utf8") }))
  res.on("data", (chunk: Buffer) => {
    if (settled()) return
    const room = limit - size
    if (chunk.length <= room) {
      chunks.push(chunk)
      size += chunk.length
      return
    }
    if (isSuccessBody) {
      settle(Effect.fail(
        new SandboxdDecodeError({
          operation: exchange.operation,
          message: `${exchange.operation} reply body exceeds the ${limit / (1024 * 1024)} MiB limit`
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
}
