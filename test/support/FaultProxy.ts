/**
 * A fault-injecting HTTP proxy for tests: it sits on loopback in front of a simulator (the
 * sandboxd simulator, the in-memory apiserver) and, per request, forwards it untouched, rewrites
 * the reply, answers on its own, or breaks the connection in one of the ways a network does.
 * Streaming replies (watches) are piped, so a passed-through watch stays a watch.
 *
 * `refuse()` closes the listening socket (new connections are refused, the port stays reserved
 * for `accept()`); `blackHole()` accepts connections and never reads them.
 */
import { Effect, type Scope } from "effect"
import * as http from "node:http"
import type { AddressInfo, Socket } from "node:net"

export interface ProxiedRequest {
  readonly method: string
  /** path and query, as the client sent them */
  readonly url: string
  readonly headers: http.IncomingHttpHeaders
}

export type FaultAction =
  | { readonly _tag: "Pass" }
  /** forward, then replace the reply (status and body; the headers keep the content type) */
  | { readonly _tag: "Rewrite"; readonly rewrite: (reply: { status: number; body: string }) => { status: number; body: string } }
  /** answer without asking upstream */
  | {
    readonly _tag: "Reply"
    readonly status: number
    readonly body: string | Buffer
    readonly headers?: Readonly<Record<string, string>>
  }
  /** destroy the connection before any byte of a reply */
  | { readonly _tag: "Reset" }
  /** read the request, never answer (the client's own timeout must end it) */
  | { readonly _tag: "Hang" }
  /** forward; send the upstream headers and the first `bytes` of the body, then destroy the connection */
  | { readonly _tag: "Truncate"; readonly bytes: number }
  /** forward; send the headers and the whole body but never end the reply */
  | { readonly _tag: "HangAfterBody" }

export const Pass: FaultAction = { _tag: "Pass" }

export interface FaultProxy {
  readonly url: string
  readonly port: number
  /** decides each request; Pass by default */
  setRule(rule: (request: ProxiedRequest) => FaultAction): void
  /** back to passing everything through */
  clear(): void
  /** requests seen (all of them, whatever the rule did) */
  readonly seen: ReadonlyArray<ProxiedRequest>
  /** the requests of `seen` the rule did not pass through: a test's receipt that the fault met its client */
  readonly faulted: ReadonlyArray<ProxiedRequest>
  /** stop listening and drop every open connection: new connections are refused */
  refuse(): Effect.Effect<void>
  /** listen again on the same port */
  accept(): Effect.Effect<void>
  /** drop every open connection (watches included); the listener stays */
  resetAll(): void
}

const hopByHop = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te", "trailer"])

const forwardHeaders = (headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders => {
  const out: http.OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(headers)) {
    if (!hopByHop.has(name) && value !== undefined) out[name] = value
  }
  return out
}

/** A proxy in front of `upstream` (an http:// base URL on loopback), closed with the scope. */
export const make = (upstream: string): Effect.Effect<FaultProxy, never, Scope.Scope> =>
  Effect.gen(function*() {
    const target = new URL(upstream)
    const sockets = new Set<Socket>()
    const seen: Array<ProxiedRequest> = []
    const faulted: Array<ProxiedRequest> = []
    let rule: (request: ProxiedRequest) => FaultAction = () => Pass
    const agent = new http.Agent({ keepAlive: false })

    const forward = (
      req: http.IncomingMessage,
      body: Buffer,
      onReply: (upstreamRes: http.IncomingMessage) => void,
      res: http.ServerResponse
    ) => {
      const out = http.request({
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...forwardHeaders(req.headers), "content-length": String(body.length) },
        agent
      }, onReply)
      out.on("error", () => res.destroy())
      res.on("close", () => out.destroy())
      out.end(body)
    }

    const handle = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => {
      const request: ProxiedRequest = { method: req.method ?? "GET", url: req.url ?? "/", headers: req.headers }
      seen.push(request)
      const action = rule(request)
      if (action._tag !== "Pass") faulted.push(request)
      switch (action._tag) {
        case "Reset":
          return void req.socket.destroy()
        case "Hang":
          return
        case "Reply": {
          const payload = typeof action.body === "string" ? Buffer.from(action.body) : action.body
          res.writeHead(action.status, { "content-type": "application/json", "content-length": payload.length, ...action.headers })
          return void res.end(payload)
        }
        case "Pass":
          return forward(req, body, (up) => {
            res.writeHead(up.statusCode ?? 502, forwardHeaders(up.headers))
            res.flushHeaders()
            up.pipe(res)
          }, res)
        case "Rewrite":
          return forward(req, body, (up) => {
            const chunks: Array<Buffer> = []
            up.on("data", (c: Buffer) => chunks.push(c))
            up.on("end", () => {
              const next = action.rewrite({ status: up.statusCode ?? 502, body: Buffer.concat(chunks).toString("utf8") })
              const headers = forwardHeaders(up.headers)
              delete headers["content-length"]
              res.writeHead(next.status, { ...headers, "content-length": Buffer.byteLength(next.body) })
              res.end(next.body)
            })
          }, res)
        case "Truncate":
          return forward(req, body, (up) => {
            const chunks: Array<Buffer> = []
            up.on("data", (c: Buffer) => chunks.push(c))
            up.on("end", () => {
              const whole = Buffer.concat(chunks)
              const headers = forwardHeaders(up.headers)
              res.writeHead(up.statusCode ?? 502, { ...headers, "content-length": whole.length })
              res.write(whole.subarray(0, Math.min(action.bytes, whole.length)), () => req.socket.destroy())
            })
          }, res)
        case "HangAfterBody":
          return forward(req, body, (up) => {
            const chunks: Array<Buffer> = []
            up.on("data", (c: Buffer) => chunks.push(c))
            up.on("end", () => {
              const headers = forwardHeaders(up.headers)
              delete headers["content-length"]
              res.writeHead(up.statusCode ?? 502, headers)
              res.write(Buffer.concat(chunks))
            })
          }, res)
      }
    }

    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => handle(req, res, Buffer.concat(chunks)))
    })
    server.on("connection", (socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
    })
    server.on("clientError", (_error, socket) => socket.destroy())

    const listen = (port: number) =>
      Effect.callback<number>((resume) => {
        server.listen(port, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      })
    const resetAll = () => {
      for (const socket of sockets) socket.destroy()
      sockets.clear()
    }
    const stop = Effect.callback<void>((resume) => {
      resetAll()
      if (!server.listening) return resume(Effect.void)
      server.close(() => resume(Effect.void))
    })

    const port = yield* Effect.acquireRelease(listen(0), () =>
      Effect.andThen(stop, Effect.sync(() => agent.destroy())))

    return {
      url: `http://127.0.0.1:${port}`,
      port,
      setRule: (next) => {
        rule = next
      },
      clear: () => {
        rule = () => Pass
      },
      seen,
      faulted,
      refuse: () => stop,
      accept: () => Effect.asVoid(listen(port)),
      resetAll
    }
  })
