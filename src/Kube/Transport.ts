/**
 * The Kubernetes client's transport: every apiserver request is built and sent here, on undici's
 * `request` over the one pooled dispatcher (`PooledAuthentication.ts`; fetch's per-request WHATWG
 * objects were a tenth of a 2000-Pod burst's CPU). Each call takes a token of its lane's limiter,
 * then runs under a timeout, inside a span `KubeApi.<op>`. Lanes: the Pods' limiter
 * (`--kube-api-qps`); none for the node's liveness calls, with a shorter timeout (NODE-5 —
 * heartbeats do not wait behind Pod work; NODE-6 — a heartbeat call gives up within one renew
 * interval); a small limiter of their own for the kubelet port's reviews (KAPI-5 — reviews wait on
 * their own limiter).
 */
import type { HttpMethod, KubeConfig } from "@kubernetes/client-node"
import { Duration, Effect, type Scope } from "effect"
import type { Dispatcher } from "undici"
import { dropNulls } from "../Schemas/Pod/Decode.ts"
import { redactCause } from "../Schemas/UrlRedaction.ts"
import { type KubeError, KubeUnavailable } from "../Services/KubeApi.ts"
import { bodyText } from "./Body.ts"
import * as PooledAuthentication from "./PooledAuthentication.ts"
import { describe, errorFromResponse, notJson, timedOut, transportError } from "./Status.ts"
import * as TokenBucket from "./TokenBucket.ts"

export interface ClientOptions {
  /** The limiter of every call but the node's liveness calls (`--kube-api-qps`). */
  readonly qps: number
  /** Its burst (`--kube-api-burst`). */
  readonly burst: number
  /** Per call, limiter wait excluded; for a watch, until the response headers. */
  readonly callTimeout: Duration.Input
  /**
   * Per call on the node's liveness path (NODE-6), instead of `callTimeout`; `callTimeout` when
   * absent. The Lease is renewed every 10 s and lasts 40 s: a renewal left hanging for 30 s (a
   * dead connection) is retried 10 s after it gave up, 50 s after the last renewal went out.
   */
  readonly livenessCallTimeout?: Duration.Input
  /** A watch that delivers no byte for this long is failed (a dead connection); the server is asked to end it sooner. */
  readonly watchIdleTimeout: Duration.Input
  /** `timeoutSeconds` sent with a watch: the server ends it cleanly after this. */
  readonly watchTimeoutSeconds: number
  /** Sent as `User-Agent`, so the apiserver's audit log and metrics name the daemon. */
  readonly userAgent?: string
}

export const defaultOptions = {
  callTimeout: "30 seconds",
  livenessCallTimeout: "10 seconds",
  watchIdleTimeout: "330 seconds",
  watchTimeoutSeconds: 300
} as const

/**
 * The limiter of the kubelet port's reviews (KAPI-5): with their caches, the clients that belong
 * there (a metrics scraper, the apiserver's log and exec proxy) need a few reviews a minute.
 */
export const reviewQps = 5
export const reviewBurst = 20

export interface RawRequest {
  readonly method: HttpMethod
  readonly path: string
  readonly query?: Readonly<Record<string, string>>
  readonly body?: unknown
  readonly contentType?: string
  /** Parse the reply with the apiserver's `null`s left out. */
  readonly dropNulls?: boolean
  /** A watch: its reply is a stream, and is not asked for gzip. */
  readonly stream?: boolean
  /** A call on the node's liveness path: it takes no token of the limiter (NODE-5), and times out sooner (NODE-6). */
  readonly liveness?: boolean
  /** A review for the kubelet port: a token of the review limiter, not the Pods' (KAPI-5). */
  readonly review?: boolean
}

export interface Transport {
  /** The parsed JSON body on 2xx (undefined when empty), the typed error from the raw body otherwise. */
  readonly raw: (operation: string, spec: RawRequest) => Effect.Effect<unknown, KubeError>
  /**
   * One request under its lane: `read` consumes the response (reads its body or destroys it) and
   * `interpret` turns what it read into the answer. An interruption aborts the request and body.
   */
  readonly call: <A, B>(
    operation: string,
    spec: RawRequest,
    read: (response: Dispatcher.ResponseData) => Promise<A>,
    interpret: (read: A) => Effect.Effect<B, KubeError>
  ) => Effect.Effect<B, KubeError>
  /**
   * A streamed reply (a watch): the 200 response once its headers are in (the timeout covers that
   * much), its body left to the caller; the request is aborted when the scope closes.
   */
  readonly open: (operation: string, spec: RawRequest) => Effect.Effect<Dispatcher.ResponseData, KubeError, Scope.Scope>
  readonly options: ClientOptions
}

/** Which limiter a call waits on: the Pods' (`--kube-api-qps`), none (NODE-5), or the reviews' (KAPI-5). */
type Lane = "limited" | "liveness" | "review"

const laneOf = (spec: RawRequest): Lane => spec.liveness === true ? "liveness" : spec.review === true ? "review" : "limited"

/** Whether a server URL holds user info, which is never sent (basic auth belongs in the kubeconfig's user). */
export const carriesCredentials = (url: URL): boolean => url.username !== "" || url.password !== ""

const spanned = (operation: string) => Effect.withSpan(`KubeApi.${operation}`)
type Spanned = ReturnType<typeof spanned>

const isSuccess = (status: number) => status >= 200 && status <= 299

/**
 * The span of each operation, made once: `Effect.withSpan` captures a stack trace each time it is
 * called (for the span's code location), which per request was a measurable share of a burst's CPU.
 */
const spanCache = () => {
  const spans = new Map<string, Spanned>()
  return (operation: string): Spanned => {
    const known = spans.get(operation)
    if (known !== undefined) return known
    const made = spanned(operation)
    spans.set(operation, made)
    return made
  }
}

/**
 * One request on the pooled dispatcher with undici's `request` (no fetch: no WHATWG Request,
 * Headers and Response objects per call). The caller reads or destroys the body; `signal` aborts
 * the request and the body. A server behind a path prefix (a proxy's /k8s/clusters/<id>): every
 * path goes under it.
 */
const sender = (auth: PooledAuthentication.PooledAuthentication, serverUrl: URL, userAgent: string) => {
  const origin = serverUrl.origin
  const basePath = serverUrl.pathname.replace(/\/+$/, "")
  return async (spec: RawRequest, signal: AbortSignal): Promise<Dispatcher.ResponseData> => {
    const query = spec.query === undefined ? "" : `?${new URLSearchParams(spec.query).toString()}`
    const path = `${basePath}${spec.path}${query}`
    const { dispatcher, headers } = await auth.authenticate(`${origin}${path}`, spec.method)
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body)
    return dispatcher.request({
      origin,
      path,
      method: spec.method,
      headers: {
        ...headers,
        Accept: "application/json",
        "User-Agent": userAgent,
        // A large reply (a node's Pod list) gzipped is a fraction of its size on the wire, as the
        // apiserver compresses replies to clients that ask; a watch is read as a stream and is not asked.
        ...(spec.stream === true ? {} : { "Accept-Encoding": "gzip" }),
        ...(body === undefined ? {} : { "Content-Type": spec.contentType ?? "application/json" })
      },
      ...(body === undefined ? {} : { body }),
      signal
    })
  }
}

/** The transport of an already-loaded kubeconfig. */
export const make = (kubeConfig: KubeConfig, options: ClientOptions): Effect.Effect<Transport, KubeUnavailable> =>
  Effect.gen(function*() {
    const cluster = kubeConfig.getCurrentCluster()
    if (cluster === null) {
      return yield* new KubeUnavailable({ operation: "connect", status: 0, message: "the kubeconfig has no current cluster" })
    }
    const server = cluster.server.replace(/\/+$/, "")
    const limiter = yield* TokenBucket.make(options.qps, options.burst)
    const reviewLimiter = yield* TokenBucket.make(reviewQps, reviewBurst)
    // Every request authenticates through one connection pool.
    const auth = PooledAuthentication.make(kubeConfig)
    const serverUrl = yield* Effect.try({
      try: () => new URL(server),
      catch: (cause) => new KubeUnavailable({ operation: "connect", status: 0, message: describe(cause), cause: redactCause(cause) })
    })
    const serverHasCredentials = carriesCredentials(serverUrl)
    const callTimeout = Duration.fromInputUnsafe(options.callTimeout)
    const livenessCallTimeout = Duration.fromInputUnsafe(options.livenessCallTimeout ?? options.callTimeout)

    const spanOf = spanCache()

    /** Token of the lane's limiter, then the request under the lane's timeout, all inside the span. */
    const request = <A>(operation: string, effect: Effect.Effect<A, KubeError>, lane: Lane): Effect.Effect<A, KubeError> => {
      if (lane === "liveness") {
        return effect.pipe(
          Effect.timeoutOrElse({ duration: livenessCallTimeout, orElse: timedOut(operation, livenessCallTimeout) }),
          spanOf(operation)
        )
      }
      return (lane === "review" ? reviewLimiter : limiter).take.pipe(
        Effect.andThen(effect.pipe(Effect.timeoutOrElse({ duration: callTimeout, orElse: timedOut(operation, callTimeout) }))),
        spanOf(operation)
      )
    }

    const send = sender(auth, serverUrl, options.userAgent ?? "vk-sandbox")

    /**
     * As fetch did: the user info of a server URL is never sent, so a request to such a server is
     * refused rather than sent without it (the layer refuses such a kubeconfig at start already).
     */
    const refusedForCredentials = (operation: string, spec: RawRequest): Effect.Effect<never, KubeError> =>
      Effect.fail(
        new KubeUnavailable({
          operation,
          status: 0,
          message: describe(`the server URL carries credentials, which are never sent: ${server}${spec.path}`)
        })
      )

    const call = <A, B>(
      operation: string,
      spec: RawRequest,
      read: (response: Dispatcher.ResponseData) => Promise<A>,
      interpret: (read: A) => Effect.Effect<B, KubeError>
    ): Effect.Effect<B, KubeError> =>
      serverHasCredentials ? refusedForCredentials(operation, spec) : request(
        operation,
        Effect.tryPromise({
          try: async (signal) => read(await send(spec, signal)),
          catch: transportError(operation)
        }).pipe(Effect.flatMap(interpret)),
        laneOf(spec)
      )

    const readText = async (response: Dispatcher.ResponseData) => ({ status: response.statusCode, text: await bodyText(response) })

    const raw = (operation: string, spec: RawRequest): Effect.Effect<unknown, KubeError> =>
      call(operation, spec, readText, (reply) =>
        isSuccess(reply.status)
          ? Effect.succeed(reply)
          : Effect.fail(errorFromResponse(operation, reply.status, reply.text))).pipe(
          Effect.flatMap(({ status, text }) =>
            Effect.try({
              try: (): unknown => {
                if (text === "") return undefined
                const parsed: unknown = JSON.parse(text)
                return spec.dropNulls === true ? dropNulls(parsed) : parsed
              },
              catch: () => notJson(operation, status, text)
            })
          )
        )

    const open = (operation: string, spec: RawRequest): Effect.Effect<Dispatcher.ResponseData, KubeError, Scope.Scope> =>
      Effect.gen(function*() {
        if (serverHasCredentials) return yield* refusedForCredentials(operation, spec)
        // The request is aborted when the scope closes: consumer done, interrupted, or failed.
        const controller = yield* Effect.acquireRelease(
          Effect.sync(() => new AbortController()),
          (controller) => Effect.sync(() => controller.abort())
        )
        return yield* request(
          operation,
          Effect.tryPromise({
            try: () => send(spec, controller.signal),
            catch: transportError(operation)
          }).pipe(
            Effect.flatMap((response) =>
              response.statusCode === 200
                ? Effect.succeed(response)
                : Effect.tryPromise({ try: () => response.body.text(), catch: transportError(operation) }).pipe(
                  Effect.flatMap((text) => Effect.fail(errorFromResponse(operation, response.statusCode, text)))
                )
            )
          ),
          laneOf(spec)
        )
      })

    return { raw, call, open, options }
  })
