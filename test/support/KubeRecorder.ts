/**
 * A tiny recording HTTP server of our own for the live KubeApi client's wire tests (`test/Kube/`):
 * it records what the client really sends (content types, query parameters, bodies) and answers
 * with the test's handler, raw and odd replies included; from undici's diagnostics channel it also
 * notes each piece of a reply's body that reached the client. The behaviour against a faithful
 * server is in test/Layers/KubeApiClientNode.test.ts.
 */
import { KubeConfig } from "@kubernetes/client-node"
import { Effect } from "effect"
import * as DiagnosticsChannel from "node:diagnostics_channel"
import * as NodeHttp from "node:http"
import * as Zlib from "node:zlib"
import type { AddressInfo } from "node:net"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"
import type { KubeApi } from "../../src/Services/KubeApi.ts"
import { requestOf } from "./Receipts.ts"

export interface Recorded {
  readonly method: string
  readonly url: URL
  readonly headers: NodeHttp.IncomingHttpHeaders
  readonly body: string
}

export interface Reply {
  readonly status: number
  readonly body?: string
  readonly contentType?: string
  /** Keep the response open after writing `body` (a watch); lines may be pushed later. */
  readonly hold?: boolean
  /** Write `body`, then cut the connection without ending the chunked response. */
  readonly reset?: boolean
  /** Send `body` gzipped, with `Content-Encoding: gzip` (as the apiserver answers a client that asks). */
  readonly gzip?: boolean
  /**
   * Send these instead of `body`, one write each a millisecond apart (each flushed through the
   * gzip stream when gzipped), as a server that encodes the reply while it sends it; then end the
   * response, unless `hold`.
   */
  readonly pieces?: ReadonlyArray<Buffer>
}

export type Handler = (request: Recorded) => Reply | "never"

export interface Recorder {
  readonly requests: Array<Recorded>
  readonly closed: Array<string>
  /**
   * The path of each piece of a reply's body that reached the client (undici reports each chunk
   * it reads): the receipt that a reply is being read, headers in and body begun.
   */
  readonly bodyChunks: Array<string>
  setHandler(handler: Handler): void
  readonly port: number
}

export const json = (status: number, value: unknown): Reply => ({ status, body: JSON.stringify(value) })

const bodyChunkReceived = "undici:request:bodyChunkReceived"

/** A loopback server that records every request and answers with the current handler. */
export const recorder = Effect.acquireRelease(
  Effect.callback<{ recorder: Recorder; server: NodeHttp.Server; unsubscribe: () => void }>((resume) => {
    const requests: Array<Recorded> = []
    const closed: Array<string> = []
    const bodyChunks: Array<string> = []
    let handler: Handler = () => json(200, {})
    const server = NodeHttp.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const recorded: Recorded = {
          method: req.method ?? "",
          url: new URL(req.url ?? "/", "http://127.0.0.1"),
          headers: req.headers,
          body: Buffer.concat(chunks).toString("utf8")
        }
        requests.push(recorded)
        res.on("close", () => closed.push(recorded.url.pathname))
        const reply = handler(recorded)
        if (reply === "never") return
        if (reply.pieces !== undefined) {
          res.writeHead(reply.status, {
            "content-type": reply.contentType ?? "application/json",
            ...(reply.gzip === true ? { "content-encoding": "gzip" } : {})
          })
          const gzip = reply.gzip === true ? Zlib.createGzip() : undefined
          gzip?.pipe(res)
          const pieces = [...reply.pieces]
          const next = () => {
            const piece = pieces.shift()
            if (piece === undefined) {
              if (reply.hold !== true) (gzip ?? res).end()
              return
            }
            ;(gzip ?? res).write(piece)
            gzip?.flush()
            setTimeout(next, 1)
          }
          next()
          return
        }
        if (reply.gzip === true) {
          res.writeHead(reply.status, { "content-type": reply.contentType ?? "application/json", "content-encoding": "gzip" })
          res.end(Zlib.gzipSync(reply.body ?? ""))
          return
        }
        res.writeHead(reply.status, { "content-type": reply.contentType ?? "application/json" })
        if (reply.reset === true) {
          res.write(reply.body ?? "", () => setTimeout(() => res.socket?.destroy(), 10))
          return
        }
        if (reply.hold === true) {
          res.write(reply.body ?? "")
          return
        }
        res.end(reply.body ?? "")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      const onChunk = (message: unknown) => {
        const chunk = requestOf(message)
        if (chunk !== undefined && URL.canParse(chunk.origin) && new URL(chunk.origin).port === String(port)) {
          bodyChunks.push(new URL(chunk.path, chunk.origin).pathname)
        }
      }
      DiagnosticsChannel.subscribe(bodyChunkReceived, onChunk)
      resume(Effect.succeed({
        server,
        unsubscribe: () => void DiagnosticsChannel.unsubscribe(bodyChunkReceived, onChunk),
        recorder: { requests, closed, bodyChunks, port, setHandler: (next) => (handler = next) }
      }))
    })
  }),
  ({ server, unsubscribe }) =>
    Effect.callback<void>((resume) => {
      unsubscribe()
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ recorder }) => recorder))

export const kubeConfigFor = (port: number): KubeConfig => {
  const kubeConfig = new KubeConfig()
  kubeConfig.loadFromOptions({
    clusters: [{ name: "recorder", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "u", token: "recorder-token" }],
    contexts: [{ name: "c", cluster: "recorder", user: "u" }],
    currentContext: "c"
  })
  return kubeConfig
}

export const setup = Effect.gen(function*() {
  const rec = yield* recorder
  const kube: KubeApi["Service"] = yield* KubeApiClientNode.make(kubeConfigFor(rec.port), {
    ...KubeApiClientNode.defaultOptions,
    qps: 1000,
    burst: 1000
  })
  return { rec, kube }
})

/** Lets real sockets make progress while the TestClock stands still. */
export { flushIO } from "./Wait.ts"

/** A Pod as the apiserver serves it, `null`s and all ... */
export const served = {
  kind: "Pod",
  metadata: { name: "a", namespace: "x", resourceVersion: "9", deletionTimestamp: null, labels: null },
  spec: { containers: [{ name: "main", image: "python" }], tolerations: null },
  status: { phase: "Running", startTime: null, conditions: [{ type: "Ready", status: "True", lastProbeTime: null }] }
}

/** ... and the slim Pod read from it: every `null` absent. */
export const slim = {
  kind: "Pod",
  metadata: { name: "a", namespace: "x", resourceVersion: "9" },
  spec: { containers: [{ name: "main", image: "python" }] },
  status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] }
}
