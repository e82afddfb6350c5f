/**
 * The live `KubeApi` on @kubernetes/client-node 2.0.1, which serves only the kubeconfig, auth and
 * TLS (`Kube/`): every request is built here and its JSON decoded with Schema (`src/Schemas`), so
 * none of client-node's generated API classes or its model serializer are loaded.
 *
 * Every call, watch starts included, goes through `request`: one token from the QPS/burst
 * limiter, then the call under a timeout, inside a span `KubeApi.<op>`. The calls on the node's
 * liveness path (its Lease, its registration and status, its taint) take no token (NODE-5): in
 * the limiter they would wait behind every Pod write, Event and owner read queued before them,
 * and a Lease renewal that waits long enough lets the Lease expire, which makes the node
 * controller mark the node unreachable, taint it and evict its Pods. Only the node controller
 * makes these calls, each on its own schedule, so they are a few per 10 s. The reviews the kubelet
 * port asks for (KAPI-5) take a token of a small limiter of their own instead: they come from
 * whoever reaches that port, and a flood of them must not hold back Pod work. Requests are built here
 * (`raw`, and the watch) and sent with undici's `request` on the one pooled dispatcher
 * (`Kube/PooledAuthentication.ts`), not through fetch: in a burst of 2000 Pods, fetch's
 * per-request WHATWG objects were a tenth of the daemon's CPU. Failures map to the typed errors
 * of `Services/KubeApi.ts` from the HTTP status and the raw Status body.
 */
import { HttpMethod, type KubeConfig, PatchStrategy } from "@kubernetes/client-node"
import { Duration, Effect, Layer, Option, Redacted, Schema, Stream } from "effect"
import { BuildInfo } from "../Services/BuildInfo.ts"
import { AppConfig } from "../Services/Config.ts"
import { decodeEvent, encodeEvent, type Event } from "../Schemas/Event.ts"
import { decodeLease, encodeLease, type Lease } from "../Schemas/Lease.ts"
import { decodeNode, encodeNode, type Node } from "../Schemas/Node.ts"
import { decodePod, dropNulls, encodePod, type Pod, podStatusPatch, type PodStatus, undecodablePod } from "../Schemas/Pod.ts"
import { accessReviewBody, accessVerdict, type NodeAccess, tokenReviewBody, tokenVerdict } from "../Schemas/Reviews.ts"
import { redactCause, redactUrlUserinfo } from "../Schemas/UrlRedaction.ts"
import {
  KubeApi,
  KubeConfigMissing,
  KubeConflict,
  type KubeError,
  KubeForbidden,
  KubeGone,
  KubeInvalid,
  KubeNotFound,
  KubeUnavailable,
  type OwnerObject,
  type OwnerRef,
  type PodList,
  type PodWatchEvent,
  type StatusDetails
} from "../Services/KubeApi.ts"
import * as ListBody from "../Kube/ListBody.ts"
import * as PooledAuthentication from "../Kube/PooledAuthentication.ts"
import * as KubeConfigLoader from "../Kube/KubeConfigLoader.ts"
import * as TokenBucket from "../Kube/TokenBucket.ts"
import type { Dispatcher } from "undici"
import * as NodeStream from "node:stream"
import * as Util from "node:util"
import * as Zlib from "node:zlib"

export const leaseNamespace = "kube-node-lease"
export const fieldManager = "vk-sandbox"
export const nodeInventoryPath = "/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories"
export const tokenReviewsPath = "/apis/authentication.k8s.io/v1/tokenreviews"
export const accessReviewsPath = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

/**
 * The limiter of the kubelet port's reviews (KAPI-5): with their caches, the clients that belong
 * there (a metrics scraper, the apiserver's log and exec proxy) need a few reviews a minute.
 */
export const reviewQps = 5
export const reviewBurst = 20

// ---------------------------------------------------------------------------------------------
// Errors: status code + raw body → typed error
// ---------------------------------------------------------------------------------------------

/** The parts of a `Status` body we read. `kind: "Status"` is required: anything else is not one. */
const K8sStatus = Schema.Struct({
  kind: Schema.Literal("Status"),
  reason: Schema.optionalKey(Schema.String),
  message: Schema.optionalKey(Schema.String),
  code: Schema.optionalKey(Schema.Number),
  details: Schema.optionalKey(Schema.Struct({
    name: Schema.optionalKey(Schema.String),
    group: Schema.optionalKey(Schema.String),
    kind: Schema.optionalKey(Schema.String),
    uid: Schema.optionalKey(Schema.String),
    causes: Schema.optionalKey(Schema.Array(Schema.Struct({
      reason: Schema.optionalKey(Schema.String),
      field: Schema.optionalKey(Schema.String)
    })))
  }))
})
type K8sStatus = typeof K8sStatus.Type

const decodeStatusText = Schema.decodeUnknownOption(Schema.fromJsonString(K8sStatus))
const decodeStatusObject = Schema.decodeUnknownOption(K8sStatus)

export const parseStatus = (body: unknown): Option.Option<K8sStatus> =>
  typeof body === "string" ? decodeStatusText(body) : decodeStatusObject(body)

/** Only the keys the server wrote; an empty `details: {}` counts as no details. */
const detailsOf = (status: K8sStatus | undefined): StatusDetails | undefined => {
  const details = status?.details
  if (details === undefined) return undefined
  const out: { -readonly [K in keyof StatusDetails]: StatusDetails[K] } = {}
  if (details.name !== undefined) out.name = details.name
  if (details.group !== undefined) out.group = details.group
  if (details.kind !== undefined) out.kind = details.kind
  if (details.uid !== undefined) out.uid = details.uid
  return Object.keys(out).length === 0 ? undefined : out
}

/**
 * A 504 asking for a resourceVersion newer than the server has ("Too large resource version",
 * cause ResourceVersionTooLarge): the server went backwards, and only a relist helps.
 */
const isTooLargeResourceVersion = (code: number, status: K8sStatus | undefined): boolean =>
  code === 504 &&
  ((status?.details?.causes ?? []).some((cause) => cause.reason === "ResourceVersionTooLarge") ||
    (status?.message ?? "").includes("Too large resource version"))

const firstLine = (text: string): string => text.trim().split("\n")[0]!.slice(0, 300)

/** Maps an HTTP failure. `body` is the response text (or a decoded Status from a watch ERROR event). */
export const errorFromResponse = (operation: string, code: number, body: unknown): KubeError => {
  const status = Option.getOrUndefined(parseStatus(body))
  const message = status?.message ??
    (typeof body === "string" && body.trim() !== "" ? firstLine(body) : `HTTP ${code}`)
  switch (code) {
    case 404: {
      const details = detailsOf(status)
      return new KubeNotFound({ operation, message, ...(details === undefined ? {} : { details }) })
    }
    case 409:
      return new KubeConflict({ operation, message, reason: status?.reason ?? "Conflict" })
    case 410:
      return new KubeGone({ operation, message })
    case 504:
      return isTooLargeResourceVersion(code, status)
        ? new KubeGone({ operation, message })
        : new KubeUnavailable({ operation, status: code, message })
    case 403:
      return new KubeForbidden({ operation, message })
    case 400:
    case 422: {
      const fields = (status?.details?.causes ?? []).flatMap((cause) => cause.field === undefined ? [] : [cause.field])
      return new KubeInvalid({ operation, message, ...(fields.length === 0 ? {} : { fields }) })
    }
    default:
      return new KubeUnavailable({ operation, status: code, message })
  }
}

/** A transport error can quote the request URL, and a kubeconfig `server` may carry a password. */
const describe = (cause: unknown): string => redactUrlUserinfo(cause instanceof Error ? cause.message : String(cause))

// ---------------------------------------------------------------------------------------------
// The service
// ---------------------------------------------------------------------------------------------

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

const WatchEnvelope = Schema.Struct({ type: Schema.String, object: Schema.Unknown })
const decodeWatchEnvelope = Schema.decodeUnknownOption(WatchEnvelope)

// `null`s allowed: a list is decoded without the `dropNulls` copy of its items (`decodePod` skips them).
const ListMetadata = Schema.NullOr(Schema.Struct({ resourceVersion: Schema.optionalKey(Schema.NullOr(Schema.String)) }))
const decodeListMetadata = Schema.decodeUnknownOption(ListMetadata)
const PodListBody = Schema.Struct({
  metadata: Schema.optionalKey(ListMetadata),
  items: Schema.Array(Schema.Unknown)
})
const decodePodListBody = Schema.decodeUnknownOption(PodListBody)

/** JSON text → value, `null`s as sent (`decodePod` reads them as absent); None when not JSON. */
const parseJson = (text: string): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(text))
  } catch {
    return Option.none()
  }
}

const ObjectName = Schema.Struct({ metadata: Schema.Struct({ name: Schema.String }) })
const decodeObjectName = Schema.decodeUnknownOption(ObjectName)

const OwnerBody = Schema.Struct({
  metadata: Schema.Struct({
    uid: Schema.String,
    name: Schema.optionalKey(Schema.NullOr(Schema.String)),
    deletionTimestamp: Schema.optionalKey(Schema.NullOr(Schema.String))
  })
})
const decodeOwnerBody = Schema.decodeUnknownOption(OwnerBody)

const BookmarkObject = Schema.Struct({ metadata: Schema.Struct({ resourceVersion: Schema.String }) })
const decodeBookmark = Schema.decodeUnknownOption(BookmarkObject)

/** A Pod's metadata without its deletion grace (what a status PUT must not send, see there). */
const withoutGrace = <M extends { readonly deletionGracePeriodSeconds?: number | undefined }>(metadata: M): Omit<M, "deletionGracePeriodSeconds"> => {
  const { deletionGracePeriodSeconds: _grace, ...kept } = metadata
  return kept
}

const segment = encodeURIComponent

const spanned = (operation: string) => Effect.withSpan(`KubeApi.${operation}`)
type Spanned = ReturnType<typeof spanned>

const gunzip = Util.promisify(Zlib.gunzip)

/** A reply's text, unzipped when the server gzipped it (off the event loop, in zlib's thread pool). */
const bodyText = async (response: Dispatcher.ResponseData): Promise<string> =>
  response.headers["content-encoding"] === "gzip"
    ? (await gunzip(Buffer.from(await response.body.arrayBuffer()))).toString("utf8")
    : response.body.text()

/**
 * A reply's bytes as they arrive, unzipped likewise as they arrive (zlib's thread pool inflates
 * one chunk while the caller reads the one before). Destroying the returned stream destroys the
 * response body with it, which frees the connection.
 */
const bodyStream = (response: Dispatcher.ResponseData): NodeStream.Readable =>
  response.headers["content-encoding"] === "gzip"
    ? NodeStream.pipeline(response.body, Zlib.createGunzip({ chunkSize: 64 * 1024 }), () => {})
    : response.body

/** Bytes of a body read in one turn of the event loop before the next turn is let in (a few ms of a list's decode). */
const BODY_BYTES_PER_TURN = 256 * 1024

/**
 * Hands each chunk of `body` to `push` as it arrives, until the body ends or `push` returns false
 * (the rest is not wanted: the body is destroyed). The stream flows, so each chunk is handed over
 * as it came: an async iterator's `read()` instead joins the chunks waiting into a new buffer, a
 * copy of most of an 18 MB list in 128 KB pieces. After every `BODY_BYTES_PER_TURN` bytes handed
 * over the body is paused until the next turn of the event loop, so the event loop and the fiber
 * scheduler's turns (Q-06) run between, rather than after as much as the socket had buffered. A
 * defect in `push` fails the read (the body destroyed), not the process: on a gzipped reply the
 * chunk comes from zlib's callback, where a throw would be uncaught.
 */
const readBody = (body: NodeStream.Readable, push: (chunk: Buffer) => boolean): Promise<void> =>
  new Promise((resolve, reject) => {
    let bytesThisTurn = 0
    let settled = false
    const settle = (error?: unknown) => {
      if (settled) return
      settled = true
      body.off("data", onData)
      if (error === undefined) resolve()
      else reject(error)
    }
    const onData = (chunk: Buffer) => {
      if (settled) return
      let more: boolean
      try {
        more = push(chunk)
      } catch (defect) {
        settle(defect)
        body.destroy()
        return
      }
      if (!more) {
        settle()
        body.destroy()
        return
      }
      bytesThisTurn += chunk.length
      if (bytesThisTurn >= BODY_BYTES_PER_TURN) {
        body.pause()
        setImmediate(() => {
          bytesThisTurn = 0
          if (!settled) body.resume()
        })
      }
    }
    NodeStream.finished(body, (error) => settle(error ?? undefined))
    body.on("data", onData)
  })

/** A response body's bytes as they arrive (undici's body is a Node stream of Buffers). */
async function* chunksOf(body: AsyncIterable<Buffer>): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) yield chunk
}

/** Which limiter a call waits on: the Pods' (`--kube-api-qps`), none (NODE-5), or the reviews' (KAPI-5). */
type Lane = "limited" | "liveness" | "review"

/** Whether a server URL holds user info, which is never sent (basic auth belongs in the kubeconfig's user). */
const carriesCredentials = (url: URL): boolean => url.username !== "" || url.password !== ""

/** Builds the live service on an already-loaded kubeconfig. */
export const make = (kubeConfig: KubeConfig, options: ClientOptions): Effect.Effect<KubeApi["Service"], KubeUnavailable> =>
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
    const origin = serverUrl.origin
    // A server behind a path prefix (a proxy's /k8s/clusters/<id>): every path goes under it.
    const basePath = serverUrl.pathname.replace(/\/+$/, "")
    const serverHasCredentials = carriesCredentials(serverUrl)
    const callTimeout = Duration.fromInputUnsafe(options.callTimeout)
    const livenessCallTimeout = Duration.fromInputUnsafe(options.livenessCallTimeout ?? options.callTimeout)

    const timedOut = (operation: string, timeout: Duration.Duration) => () =>
      Effect.fail(
        new KubeUnavailable({ operation, status: 0, message: `no response within ${Duration.format(timeout)}` })
      )

    /**
     * The span of each operation, made once: `Effect.withSpan` captures a stack trace each time it
     * is called (for the span's code location, here always `request`), which per request was a
     * measurable share of a burst's CPU.
     */
    const spans = new Map<string, Spanned>()
    const spanOf = (operation: string): Spanned => {
      const known = spans.get(operation)
      if (known !== undefined) return known
      const made = spanned(operation)
      spans.set(operation, made)
      return made
    }

    /**
     * Token, then the request under the call timeout, all inside the span; a call on the node's
     * liveness path takes no token (NODE-5) and has its own, shorter timeout (NODE-6); a review
     * for the kubelet port takes a token of the review limiter (KAPI-5).
     */
    const request = <A>(
      operation: string,
      effect: Effect.Effect<A, KubeError>,
      lane: Lane = "limited"
    ): Effect.Effect<A, KubeError> => {
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

    interface RawRequest {
      readonly method: HttpMethod
      readonly path: string
      readonly query?: Readonly<Record<string, string>>
      readonly body?: unknown
      readonly contentType?: string
      /** Parse the reply with the apiserver's `null`s left out (Pods). */
      readonly dropNulls?: boolean
      /** A watch: its reply is a stream, and is not asked for gzip. */
      readonly stream?: boolean
      /** A call on the node's liveness path: it takes no token of the limiter (NODE-5), and times out sooner (NODE-6). */
      readonly liveness?: boolean
      /** A review for the kubelet port: a token of the review limiter, not the Pods' (KAPI-5). */
      readonly review?: boolean
    }

    const userAgent = options.userAgent ?? "vk-sandbox"

    /**
     * One request on the pooled dispatcher with undici's `request` (no fetch: no WHATWG Request,
     * Headers and Response objects per call). The caller reads or destroys the body; `signal`
     * aborts the request and the body.
     */
    const send = async (spec: RawRequest, signal: AbortSignal): Promise<Dispatcher.ResponseData> => {
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

    const transport = (operation: string) => (cause: unknown) =>
      new KubeUnavailable({ operation, status: 0, message: describe(cause), cause: redactCause(cause) })

    /**
     * As fetch did: the user info of a server URL is never sent, so a request to such a server is
     * refused rather than sent without it (basic auth belongs in the kubeconfig's user).
     */
    const refusedForCredentials = (operation: string, spec: RawRequest): Effect.Effect<never, KubeError> =>
      Effect.fail(
        new KubeUnavailable({
          operation,
          status: 0,
          message: describe(`the server URL carries credentials, which are never sent: ${server}${spec.path}`)
        })
      )

    /**
     * A request built here: on 2xx its status and the body as `read` gives it, the typed error
     * from the raw body otherwise.
     */
    const exchange = <A>(
      operation: string,
      spec: RawRequest,
      read: (response: Dispatcher.ResponseData) => Promise<A>,
      text: (body: A) => string
    ): Effect.Effect<{ readonly status: number; readonly body: A }, KubeError> =>
      serverHasCredentials ? refusedForCredentials(operation, spec) : request(
        operation,
        Effect.tryPromise({
          try: async (signal) => {
            const response = await send(spec, signal)
            return { status: response.statusCode, body: await read(response) }
          },
          catch: transport(operation)
        }).pipe(
          Effect.flatMap((reply) =>
            reply.status < 200 || reply.status > 299
              ? Effect.fail(errorFromResponse(operation, reply.status, text(reply.body)))
              : Effect.succeed(reply)
          )
        ),
        spec.liveness === true ? "liveness" : spec.review === true ? "review" : "limited"
      )

    const notJson = (operation: string, status: number, text: string) =>
      new KubeUnavailable({ operation, status, message: `response is not JSON: ${firstLine(text)}` })

    /** A request built here: the parsed JSON body on 2xx, the typed error from the raw body otherwise. */
    const raw = (operation: string, spec: RawRequest): Effect.Effect<unknown, KubeError> =>
      exchange(operation, spec, bodyText, (text) => text).pipe(
        Effect.flatMap(({ body: text, status }) =>
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

    const invalid = (operation: string, message: string) => Effect.fail(new KubeInvalid({ operation, message }))

    // ---- pods --------------------------------------------------------------------------------

    const nodeSelector = (nodeName: string) => `spec.nodeName=${nodeName}`

    const unreadablePod = (operation: string) =>
      Effect.fail(new KubeUnavailable({ operation, status: 200, message: "the server sent a pod this client cannot read" }))

    /** A served Pod → the slim Pod, or the typed error naming the operation. */
    const slim = (operation: string) => (json: unknown): Effect.Effect<Pod, KubeError> =>
      Option.match(decodePod(json), { onNone: () => unreadablePod(operation), onSome: Effect.succeed })

    /** The first bytes of a list body, for the error that says it is not JSON. */
    const LIST_HEAD_BYTES = 4096

    /**
     * The body is read one Pod at a time as its bytes arrive (`Kube/ListBody.ts`): each Pod is
     * parsed, projected to the slim Pod and dropped as soon as its last byte is in, while the rest
     * of the list is still on its way, so only the slim Pods and the bytes of the one Pod not yet
     * complete are held, never the whole body. A Pod the slim Pod refuses is left out of the items
     * and named in `undecodable` (INF-1). Once the outcome is known (bytes that are not a list)
     * the rest is not read: the body is destroyed, and the
     * connection with it. The read is under the call timeout, and an interruption aborts it.
     */
    const listPods = (nodeName: string): Effect.Effect<PodList, KubeError> => {
      const operation = "listPods"
      const spec: RawRequest = { method: HttpMethod.GET, path: "/api/v1/pods", query: { fieldSelector: nodeSelector(nodeName) } }
      if (serverHasCredentials) return refusedForCredentials(operation, spec)
      return request(
        operation,
        Effect.tryPromise({
          try: async (signal) => {
            const response = await send(spec, signal)
            const status = response.statusCode
            if (status < 200 || status > 299) return { status, failed: await bodyText(response) } as const
            const reader = ListBody.listReader(decodePod, undecodablePod)
            const head = Buffer.allocUnsafe(LIST_HEAD_BYTES)
            let headLength = 0
            await readBody(bodyStream(response), (bytes) => {
              if (headLength < LIST_HEAD_BYTES) headLength += bytes.copy(head, headLength, 0, LIST_HEAD_BYTES - headLength)
              return reader.push(bytes)
            })
            return { status, read: reader.end(), head: head.toString("utf8", 0, headLength) } as const
          },
          catch: transport(operation)
        })
      ).pipe(
        Effect.flatMap((reply): Effect.Effect<PodList, KubeError> => {
          if ("failed" in reply) return Effect.fail(errorFromResponse(operation, reply.status, reply.failed))
          const { head, read, status } = reply
          if (read._tag === "Malformed") return Effect.fail(notJson(operation, status, head))
          const metadata = read.metadata === undefined ? Option.some(null) : parseJson(read.metadata).pipe(Option.flatMap(decodeListMetadata))
          if (Option.isNone(metadata)) return Effect.fail(notJson(operation, status, head))
          if (!read.hasItems) {
            return Effect.fail(new KubeUnavailable({ operation, status: 200, message: "the pod list has no items" }))
          }
          return Effect.succeed({
            items: read.items,
            undecodable: read.undecodable,
            resourceVersion: metadata.value?.resourceVersion ?? ""
          })
        })
      )
    }

    const podsResourceVersion = (nodeName: string) =>
      raw("podsResourceVersion", {
        method: HttpMethod.GET,
        path: "/api/v1/pods",
        query: { fieldSelector: nodeSelector(nodeName), limit: "1" }
      }).pipe(
        Effect.flatMap((body) =>
          Option.match(decodePodListBody(body), {
            onNone: () =>
              Effect.fail(new KubeUnavailable({ operation: "podsResourceVersion", status: 200, message: "the pod list has no items" })),
            onSome: (list) => Effect.succeed(list.metadata?.resourceVersion ?? "")
          })
        )
      )

    const watchEvent = (operation: string) => (line: string): Effect.Effect<ReadonlyArray<PodWatchEvent>, KubeError> => {
      const envelope = parseJson(line).pipe(Option.flatMap(decodeWatchEnvelope))
      if (Option.isNone(envelope)) {
        return Effect.fail(
          new KubeUnavailable({ operation, status: 0, message: `undecodable watch event: ${firstLine(line)}` })
        )
      }
      const { object, type } = envelope.value
      switch (type) {
        case "ADDED":
        case "MODIFIED":
        case "DELETED": {
          // A Pod the slim Pod refuses ends nothing (INF-1): the informer is told what is known of it.
          const pod = decodePod(object)
          return Effect.succeed([
            Option.isSome(pod) ? { type, object: pod.value } : { type: "UNDECODABLE", change: type, pod: undecodablePod(object) }
          ])
        }
        case "BOOKMARK": {
          const bookmark = decodeBookmark(object)
          return Option.isNone(bookmark)
            ? Effect.fail(new KubeUnavailable({ operation, status: 0, message: "BOOKMARK without metadata.resourceVersion" }))
            : Effect.succeed([{ type, resourceVersion: bookmark.value.metadata.resourceVersion }])
        }
        case "ERROR": {
          // A Status: its unset fields may be sent as `null`, which its Schema reads as absent only when left out.
          const status = Option.getOrUndefined(parseStatus(dropNulls(object)))
          const message = status?.message ?? "watch ERROR event"
          return Effect.fail(
            status?.code === 410 || isTooLargeResourceVersion(status?.code ?? 0, status)
              ? new KubeGone({ operation, message })
              : new KubeUnavailable({ operation, status: status?.code ?? 0, message })
          )
        }
        default:
          return Effect.succeed([]) // a type this client does not know: skip it
      }
    }

    const watchPods = (nodeName: string, resourceVersion: string): Stream.Stream<PodWatchEvent, KubeError> => {
      const operation = "watchPods"
      const spec: RawRequest = {
        method: HttpMethod.GET,
        path: "/api/v1/pods",
        query: {
          watch: "true",
          fieldSelector: nodeSelector(nodeName),
          // "" = from the current state; sent only when the caller holds one
          ...(resourceVersion === "" ? {} : { resourceVersion }),
          allowWatchBookmarks: "true",
          timeoutSeconds: String(options.watchTimeoutSeconds)
        },
        stream: true
      }
      const start = Effect.gen(function*() {
        if (serverHasCredentials) return yield* refusedForCredentials(operation, spec)
        // The request is aborted when the stream's scope closes: consumer done, interrupted, or failed.
        const controller = yield* Effect.acquireRelease(
          Effect.sync(() => new AbortController()),
          (controller) => Effect.sync(() => controller.abort())
        )
        const response = yield* request(
          operation,
          Effect.tryPromise({
            try: () => send(spec, controller.signal),
            catch: transport(operation)
          }).pipe(
            Effect.flatMap((response) =>
              response.statusCode === 200
                ? Effect.succeed(response)
                : Effect.tryPromise({ try: () => response.body.text(), catch: transport(operation) }).pipe(
                  Effect.flatMap((text) => Effect.fail(errorFromResponse(operation, response.statusCode, text)))
                )
            )
          )
        )
        return Stream.fromAsyncIterable(chunksOf(response.body), transport(operation)).pipe(
          Stream.timeoutOrElse({
            duration: options.watchIdleTimeout,
            orElse: () =>
              Stream.fail(
                new KubeUnavailable({
                  operation,
                  status: 0,
                  message: `watch idle for ${Duration.format(Duration.fromInputUnsafe(options.watchIdleTimeout))}`
                })
              )
          }),
          Stream.decodeText,
          Stream.splitLines,
          Stream.filter((line) => line.trim() !== ""),
          Stream.mapEffect(watchEvent(operation)),
          Stream.flattenIterable
        )
      })
      return Stream.unwrap(start)
    }

    const podPath = (namespace: string, name: string) => `/api/v1/namespaces/${segment(namespace)}/pods/${segment(name)}`

    const getPod = (namespace: string, name: string) =>
      raw("getPod", { method: HttpMethod.GET, path: podPath(namespace, name) }).pipe(
        Effect.flatMap(slim("getPod"))
      )

    const replacePodStatus = (pod: Pod) => {
      const name = pod.metadata?.name
      const namespace = pod.metadata?.namespace
      if (name === undefined || namespace === undefined) {
        return invalid("replacePodStatus", "pod without metadata.name/namespace")
      }
      // Without the spec or the deletion grace: a status write keeps the stored ones whatever the
      // body says, and an int64 in them past 2^53 (a toleration's tolerationSeconds, a delete's
      // gracePeriodSeconds: the apiserver takes both up to int64's largest) comes back from a
      // double as another number, which the server refuses (400 past int64, else 422: the grace
      // of a Pod being deleted cannot change).
      const { spec: _spec, ...rest } = pod
      const written = rest.metadata?.deletionGracePeriodSeconds === undefined
        ? rest
        : { ...rest, metadata: withoutGrace(rest.metadata) }
      const body = encodePod({ apiVersion: "v1", kind: "Pod", ...written })
      if (Option.isNone(body)) return invalid("replacePodStatus", "pod that cannot be encoded")
      return raw("replacePodStatus", {
        method: HttpMethod.PUT,
        path: `${podPath(namespace, name)}/status`,
        body: body.value
      }).pipe(Effect.flatMap(slim("replacePodStatus")))
    }

    const patchPodStatus = (namespace: string, name: string, uid: string, status: PodStatus, removedConditions: ReadonlyArray<string>) =>
      encoded("patchPodStatus", "status", podStatusPatch(uid, status, removedConditions)).pipe(
        Effect.flatMap((body) =>
          raw("patchPodStatus", {
            method: HttpMethod.PATCH,
            path: `${podPath(namespace, name)}/status`,
            body,
            contentType: PatchStrategy.StrategicMergePatch
          })
        ),
        // the reply is the whole Pod, maybe one the slim Pod refuses: nothing of it is needed
        Effect.asVoid
      )

    const deletePod = (namespace: string, name: string, uid: string) =>
      raw("deletePod", {
        method: HttpMethod.DELETE,
        path: podPath(namespace, name),
        body: { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 0, preconditions: { uid } }
      }).pipe(Effect.asVoid)

    /** A served object → its Schema shape, or the typed error naming the operation. */
    const decoded = <A>(operation: string, what: string, decode: (json: unknown) => Option.Option<A>) =>
    (json: unknown): Effect.Effect<A, KubeError> =>
      Option.match(decode(json), {
        onNone: () =>
          Effect.fail(new KubeUnavailable({ operation, status: 200, message: `the server sent a ${what} this client cannot read` })),
        onSome: Effect.succeed
      })

    /** The body of a write, or a KubeInvalid when the object does not encode. */
    const encoded = (operation: string, what: string, body: Option.Option<unknown>): Effect.Effect<unknown, KubeError> =>
      Option.match(body, { onNone: () => invalid(operation, `${what} that cannot be encoded`), onSome: Effect.succeed })

    // ---- nodes -------------------------------------------------------------------------------
    // Every Node and Lease call is on the node's liveness path (`liveness`: no limiter token,
    // NODE-5): registration, the status heartbeat, the Node's re-creation and the sandboxd taint
    // as much as the Lease renewals, which read and re-create the Node when the Lease is missing.

    const nodePath = (name: string) => `/api/v1/nodes/${segment(name)}`
    const node = (operation: string) => decoded(operation, "node", decodeNode)

    const getNode = (name: string) =>
      raw("getNode", { method: HttpMethod.GET, path: nodePath(name), dropNulls: true, liveness: true }).pipe(Effect.flatMap(node("getNode")))
    const createNode = (body: Node) =>
      encoded("createNode", "node", encodeNode(body)).pipe(
        Effect.flatMap((json) => raw("createNode", { method: HttpMethod.POST, path: "/api/v1/nodes", body: json, dropNulls: true, liveness: true })),
        Effect.flatMap(node("createNode"))
      )
    const patchNodeStatus = (name: string, patch: object) =>
      raw("patchNodeStatus", {
        method: HttpMethod.PATCH,
        path: `${nodePath(name)}/status`,
        body: patch,
        contentType: PatchStrategy.StrategicMergePatch,
        dropNulls: true,
        liveness: true
      }).pipe(Effect.flatMap(node("patchNodeStatus")))
    const patchNode = (name: string, patch: object) =>
      raw("patchNode", {
        method: HttpMethod.PATCH,
        path: nodePath(name),
        body: patch,
        contentType: PatchStrategy.StrategicMergePatch,
        dropNulls: true,
        liveness: true
      }).pipe(Effect.flatMap(node("patchNode")))

    // ---- leases ------------------------------------------------------------------------------

    const leasesPath = `/apis/coordination.k8s.io/v1/namespaces/${leaseNamespace}/leases`
    const lease = (operation: string) => decoded(operation, "lease", decodeLease)

    const getLease = (name: string) =>
      raw("getLease", { method: HttpMethod.GET, path: `${leasesPath}/${segment(name)}`, dropNulls: true, liveness: true }).pipe(
        Effect.flatMap(lease("getLease"))
      )
    const createLease = (body: Lease) =>
      encoded("createLease", "lease", encodeLease(body)).pipe(
        Effect.flatMap((json) => raw("createLease", { method: HttpMethod.POST, path: leasesPath, body: json, dropNulls: true, liveness: true })),
        Effect.flatMap(lease("createLease"))
      )
    const replaceLease = (body: Lease) => {
      const name = body.metadata?.name
      if (name === undefined) return invalid("replaceLease", "lease without metadata.name")
      return encoded("replaceLease", "lease", encodeLease(body)).pipe(
        Effect.flatMap((json) =>
          raw("replaceLease", {
            method: HttpMethod.PUT,
            path: `${leasesPath}/${segment(name)}`,
            body: json,
            dropNulls: true,
            liveness: true
          })
        ),
        Effect.flatMap(lease("replaceLease"))
      )
    }

    // ---- events (core/v1) --------------------------------------------------------------------

    const eventsPath = (namespace: string) => `/api/v1/namespaces/${segment(namespace)}/events`
    const event = (operation: string) => decoded(operation, "event", decodeEvent)

    const createEvent = (body: Event) => {
      const namespace = body.metadata?.namespace ?? body.involvedObject?.namespace
      if (namespace === undefined || namespace === "") return invalid("createEvent", "event without a namespace")
      return encoded("createEvent", "event", encodeEvent(body)).pipe(
        Effect.flatMap((json) => raw("createEvent", { method: HttpMethod.POST, path: eventsPath(namespace), body: json, dropNulls: true })),
        Effect.flatMap(event("createEvent"))
      )
    }
    // Strategic merge, as client-go's event recorder patches repeats; on an Event's scalar
    // fields (count, lastTimestamp, message) it is the same as a JSON merge patch.
    const patchEvent = (namespace: string, name: string, patch: object) =>
      raw("patchEvent", {
        method: HttpMethod.PATCH,
        path: `${eventsPath(namespace)}/${segment(name)}`,
        body: patch,
        contentType: PatchStrategy.StrategicMergePatch,
        dropNulls: true
      }).pipe(Effect.flatMap(event("patchEvent")))

    // ---- owners ------------------------------------------------------------------------------

    const ownerPath = (ref: OwnerRef): string => {
      const base = ref.group === "" ? `/api/${segment(ref.version)}` : `/apis/${segment(ref.group)}/${segment(ref.version)}`
      const scope = ref.namespace === "" ? "" : `/namespaces/${segment(ref.namespace)}`
      return `${base}${scope}/${segment(ref.plural)}/${segment(ref.name)}`
    }

    /**
     * An object-level 404 names the resource it is about (`details.group`, omitted for the core
     * group, and `details.kind`, the plural). A Status about any other resource, or one without a
     * kind, is not a NotFound of the requested owner: its details are dropped, so a matching
     * `details.name` cannot make it look like one (the caller then treats the 404 as ambiguous).
     */
    const ownNotFound = (ref: OwnerRef) => (error: KubeError): KubeError => {
      if (error._tag !== "KubeNotFound" || error.details === undefined) return error
      const { group, kind } = error.details
      if ((group ?? "") === ref.group && kind === ref.plural) return error
      return new KubeNotFound({
        operation: error.operation,
        message: `404 about another resource (${kind ?? "no kind"}${group ? `.${group}` : ""}): ${error.message}`
      })
    }

    const getOwner = (ref: OwnerRef): Effect.Effect<OwnerObject, KubeError> =>
      raw("getOwner", { method: HttpMethod.GET, path: ownerPath(ref) }).pipe(
        Effect.mapError(ownNotFound(ref)),
        Effect.flatMap((body) => {
          const owner = decodeOwnerBody(body)
          if (Option.isNone(owner)) {
            return Effect.fail(
              new KubeUnavailable({ operation: "getOwner", status: 200, message: "owner body without metadata.uid" })
            )
          }
          const deletionTimestamp = owner.value.metadata.deletionTimestamp ?? undefined
          return Effect.succeed({
            name: owner.value.metadata.name ?? undefined,
            uid: owner.value.metadata.uid,
            deletionTimestamp,
            raw: body
          })
        })
      )

    // ---- NodeInventory -----------------------------------------------------------------------

    const applyNodeInventory = (inventory: object) => {
      const named = decodeObjectName(inventory)
      if (Option.isNone(named)) return invalid("applyNodeInventory", "inventory without metadata.name")
      return raw("applyNodeInventory", {
        method: HttpMethod.PATCH,
        path: `${nodeInventoryPath}/${segment(named.value.metadata.name)}`,
        query: { fieldManager, force: "true" },
        body: inventory,
        contentType: PatchStrategy.ServerSideApply
      })
    }

    // ---- reviews for the kubelet port (KAPI-1, KAPI-2) -------------------------------------------

    const reviewToken = (token: Redacted.Redacted<string>) =>
      raw("reviewToken", { method: HttpMethod.POST, path: tokenReviewsPath, body: tokenReviewBody(Redacted.value(token)), review: true }).pipe(
        Effect.flatMap(decoded("reviewToken", "token review", tokenVerdict))
      )

    const reviewAccess = (access: NodeAccess) =>
      raw("reviewAccess", { method: HttpMethod.POST, path: accessReviewsPath, body: accessReviewBody(access), review: true }).pipe(
        Effect.flatMap(decoded("reviewAccess", "subject access review", accessVerdict))
      )

    return KubeApi.of({
      listPods,
      podsResourceVersion,
      watchPods,
      getPod,
      replacePodStatus,
      patchPodStatus,
      deletePod,
      getNode,
      createNode,
      patchNodeStatus,
      patchNode,
      getLease,
      createLease,
      replaceLease,
      createEvent,
      patchEvent,
      getOwner,
      applyNodeInventory,
      reviewToken,
      reviewAccess
    })
  })

/** The current cluster's server URL (as a URL writes it) when it holds a user name or password. */
const serverWithCredentials = (kubeConfig: KubeConfig): string | undefined => {
  const server = kubeConfig.getCurrentCluster()?.server
  if (server === undefined || !URL.canParse(server)) return undefined
  const url = new URL(server)
  return carriesCredentials(url) ? url.href : undefined
}

/** The live layer: kubeconfig per `AppConfig.kubeconfig` (else in-cluster, else $KUBECONFIG), limiter per qps/burst. */
export const layer = Layer.effect(
  KubeApi,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const { kubeConfig } = yield* KubeConfigLoader.load(config.kubeconfig)
    // Refused at start, not at each request: the user info of a server URL is never sent, and
    // every call would fail the same way while the daemon waited for an apiserver that answers
    // (node registration waits for one, CHK-08).
    const server = serverWithCredentials(kubeConfig)
    if (server !== undefined) {
      return yield* new KubeConfigMissing({
        message: `the kubeconfig's server URL carries credentials, which are never sent (basic auth belongs in the kubeconfig's user): ${redactUrlUserinfo(server)}`
      })
    }
    const build = yield* Effect.serviceOption(BuildInfo)
    const userAgent = Option.match(build, { onNone: () => "vk-sandbox", onSome: (info) => `vk-sandbox/${info.version}` })
    return yield* make(kubeConfig, { ...defaultOptions, qps: config.kubeApiQps, burst: config.kubeApiBurst, userAgent }).pipe(
      // only a kubeconfig without a usable cluster gets here (the loader checks for one)
      Effect.mapError((error) => new KubeConfigMissing({ message: error.message }))
    )
  })
)
