/**
 * The kubelet HTTPS API on `--listen-addr` (H-01 — kubelet HTTP server): TLS 1.2
 * minimum, HTTP/1.1 only, a 30 s header timeout; client certificates asked for and verified when
 * `--client-ca-file` is set. Every request but `/healthz` passes the gate of `Access.ts`
 * (authentication and authorization through the apiserver's reviews) before it is routed. Upgrade
 * requests (exec, attach, port-forward) reach Node's `upgrade` event; effect's Node server hands
 * them to the same app, and since the app never asks to upgrade they get a plain HTTP answer.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Duration, Effect, Layer, Option } from "effect"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { IncomingMessage } from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import type { Duplex } from "node:stream"
import { TLSSocket } from "node:tls"
import { AppConfig } from "../../Services/Config.ts"
import { KubeApi } from "../../Services/KubeApi.ts"
import { KubeletListenError, KubeletPods, KubeletServer, type KubeletTlsError } from "../../Services/KubeletServer.ts"
import * as Access from "./Access.ts"
import { type Credentials, peerCertificate } from "./Authenticate.ts"
import { type KubeletTlsMaterial, loadKubeletTls } from "./Tls.ts"
import { matchRoute, notFoundBody, notImplementedBody, prometheusContentType } from "./Routes.ts"

export interface KubeletServerOptions {
  /** Port 0 (an ephemeral port) is for tests only. */
  readonly allowEphemeralPort?: boolean
  /** Header timeout in milliseconds; 30 s unless a test needs it shorter. */
  readonly headersTimeoutMillis?: number
  /** How long shutdown lets open connections finish before cutting them; 1 s by default. */
  readonly closeGraceMillis?: number
  /** How long a new connection has to complete its TLS handshake; 10 s by default. */
  readonly handshakeTimeoutMillis?: number
  /** Open connections at most; further ones are closed on accept. 256 by default. */
  readonly maxConnections?: number
  /** How often Node looks for connections past the header timeout; its own 30 s unless a test needs it shorter. */
  readonly connectionsCheckingIntervalMillis?: number
}

/** The server is bound while the layer is built and closed with its scope. */
export const layer = (
  options: KubeletServerOptions = {}
): Layer.Layer<KubeletServer, KubeletTlsError | KubeletListenError, AppConfig | KubeletPods | KubeApi> =>
  Layer.effect(KubeletServer, make(options))

/**
 * The eight TLS 1.2 suites of the Go library's defaults (TLS-01 — kubelet TLS settings), then
 * OpenSSL's TLS 1.3 suites, which stay on as long as the list names them.
 */
export const kubeletCiphers = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-AES128-SHA",
  "ECDHE-RSA-AES128-SHA",
  "ECDHE-ECDSA-AES256-SHA",
  "ECDHE-RSA-AES256-SHA",
  "TLS_AES_128_GCM_SHA256",
  "TLS_AES_256_GCM_SHA384",
  "TLS_CHACHA20_POLY1305_SHA256"
].join(":")

/**
 * The TLS and HTTP settings of the kubelet port (H-01, TLS-01): TLS 1.2 minimum, the Go suites,
 * HTTP/1.1 only, client certificates asked for only with a client CA, and no timeout but the
 * 30 s one for a request's headers.
 */
export const httpsOptions = (
  tls: Pick<KubeletTlsMaterial, "certPem" | "keyPem" | "clientCaPem">,
  options: KubeletServerOptions
): https.ServerOptions => {
  const clientCa = Option.getOrUndefined(tls.clientCaPem)
  return {
    cert: tls.certPem,
    key: tls.keyPem,
    minVersion: "TLSv1.2",
    ciphers: kubeletCiphers,
    honorCipherOrder: true,
    // HTTP/1.1 only: SPDY and WebSocket upgrades do not exist in HTTP/2 (H-01).
    ALPNProtocols: ["http/1.1"],
    // With a client CA a certificate is asked for but not required: a client may use a bearer
    // token instead (KAPI-1 — who a kubelet API request comes from). One that is sent and fails
    // verification is refused by the gate.
    ...(clientCa === undefined
      ? { requestCert: false, rejectUnauthorized: false }
      : { requestCert: true, rejectUnauthorized: false, ca: clientCa }),
    headersTimeout: options.headersTimeoutMillis ?? 30_000,
    // The Go server has no timeout besides the header one (H-01).
    requestTimeout: 0,
    // A TCP connection that never starts (or never finishes) TLS holds a slot: bound it.
    handshakeTimeout: options.handshakeTimeoutMillis ?? 10_000,
    ...(options.connectionsCheckingIntervalMillis === undefined ? {} : { connectionsCheckingInterval: options.connectionsCheckingIntervalMillis })
  }
}

const connectRefusedBody = "CONNECT is not supported by the kubelet API\n"
const badTargetBody = "400 Bad Request: the request target is not a URL path\n"

/** Node's HTTP layer sends a request to its upgrade path when it names a protocol to switch to. */
const isUpgrade = (headers: Readonly<Record<string, string | undefined>>): boolean =>
  headers["upgrade"] !== undefined && /(^|,)\s*upgrade\s*(,|$)/i.test(headers["connection"] ?? "")

const formatAddress = (host: string, port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`

/** What the request itself says of its sender: the TLS connection's client certificate, and its Authorization header. */
const credentialsOf = (source: unknown, authorization: string | undefined, certificatesAsked: boolean): Credentials => {
  const socket = source instanceof IncomingMessage ? source.socket : undefined
  return {
    certificate: certificatesAsked && socket instanceof TLSSocket ? peerCertificate(socket) : undefined,
    authorization
  }
}

const make = Effect.fnUntraced(function*(options: KubeletServerOptions) {
  const config = yield* AppConfig
  const pods = yield* KubeletPods
  const access = Access.make(yield* KubeApi, config.nodeName)
  const { host, port } = config.listenAddr
  const configured = formatAddress(host, port)
  if (port === 0 && options.allowEphemeralPort !== true) {
    return yield* new KubeletListenError({ address: configured, message: "the kubelet port must not be 0" })
  }
  const tls = yield* loadKubeletTls(config)
  const clientCa = Option.getOrUndefined(tls.clientCaPem)

  const server = https.createServer(httpsOptions(tls, options))
  // The clients are the apiserver and a metrics scraper: a few connections. The cap keeps a
  // flood of idle or half-open ones from exhausting file descriptors the daemon needs.
  server.maxConnections = options.maxConnections ?? 256
  // CONNECT never reaches the request handler (Node emits it separately and, with no listener,
  // drops the connection without a word). The kubelet API proxies nothing: say so and close.
  server.on("connect", (_request, socket: Duplex) => {
    socket.on("error", () => undefined)
    socket.end(`HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: ${connectRefusedBody.length}\r\n\r\n${connectRefusedBody}`)
  })

  const httpServer = yield* NodeHttpServer.make(
    () => server,
    { port, ...(host === "" ? {} : { host }), disablePreemptiveShutdown: true }
  ).pipe(
    Effect.mapError((e) =>
      new KubeletListenError({
        address: configured,
        message: `cannot listen on ${configured}: ${e.cause instanceof Error ? e.cause.message : String(e.cause)}`
      })
    )
  )

  // An upgrade request (exec, attach, port-forward, or an Upgrade header on any path) is answered
  // on a connection that is closed once the answer is sent, since the HTTP layer handed it over
  // for the upgrade that never happens. The answer must say so, or a client that keeps the
  // connection for its next request gets no reply.
  const closingUpgrades = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest
      const response = yield* handler
      return isUpgrade(request.headers) ? HttpServerResponse.setHeader(response, "connection", "close") : response
    })

  const app = Effect.gen(function*() {
    const request = yield* HttpServerRequest
    // A target the URL parser refuses (e.g. `http://[`) has no path to authorize or route.
    const pathname = URL.parse(request.url, "https://kubelet.invalid")?.pathname
    if (pathname === undefined) return HttpServerResponse.text(badTargetBody, { status: 400 })
    const gate = yield* access.check({
      method: request.method,
      pathname,
      credentials: credentialsOf(request.source, request.headers["authorization"], clientCa !== undefined)
    })
    if (gate._tag === "Refuse") return HttpServerResponse.text(gate.body, { status: gate.status })
    const route = matchRoute(request.method, pathname)
    switch (route._tag) {
      case "Healthz":
        return HttpServerResponse.text("ok")
      case "NotImplemented":
        return HttpServerResponse.text(notImplementedBody, { status: 501 })
      case "StatsSummary":
        return yield* HttpServerResponse.json({ node: { nodeName: config.nodeName, startTime: null }, pods: [] })
      case "MetricsResource":
        return HttpServerResponse.text("", { contentType: prometheusContentType })
      case "Pods": {
        const items = yield* pods.getPods
        return yield* HttpServerResponse.json({ kind: "PodList", apiVersion: "v1", metadata: {}, items })
      }
      case "MethodNotAllowed":
        return HttpServerResponse.empty({ status: 405, headers: { allow: route.allow.join(", ") } })
      case "NotFound":
        return HttpServerResponse.text(notFoundBody, { status: 404 })
    }
  })
  yield* httpServer.serve(closingUpgrades(app))
  // server.close() waits for every open connection, and one stuck mid-request (a slow client,
  // up to the header timeout) would hold shutdown past its bound: a short grace, then cut them.
  // Registered after serve, so it runs before the library's own (then immediate) close.
  yield* Effect.addFinalizer(() =>
    Effect.callback<void>((resume) => {
      if (!server.listening) return resume(Effect.void)
      server.close(() => resume(Effect.void))
    }).pipe(
      Effect.timeoutOrElse({
        duration: Duration.millis(options.closeGraceMillis ?? 1_000),
        orElse: () => Effect.sync(() => server.closeAllConnections())
      })
    )
  )

  const bound = server.address() as AddressInfo
  yield* Effect.logInfo("kubelet API listening").pipe(
    Effect.annotateLogs({ address: formatAddress(bound.address, bound.port), tls: tls.source })
  )
  return KubeletServer.of({
    host: bound.address,
    port: bound.port,
    tls: { source: tls.source, certPem: tls.certPem },
    clientCertificatesAccepted: clientCa !== undefined
  })
})
