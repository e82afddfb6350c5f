/**
 * The HTTP face of the sandboxd simulator: a loopback node:http server that hands every request
 * to the model and writes its answer (or drops/truncates/hangs as a fault asks).
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Exit, Layer, Schema } from "effect"
import type { Scope } from "effect"
import { REQUEST_BODY_LIMIT, SandboxdSim, type SandboxdSimShape, type SimResponse } from "./Model.ts"

export class SimServerError extends Schema.TaggedError<SimServerError>()("SimServerError", {
  message: Schema.String
}) {}

export interface SimServerAddress {
  readonly host: string
  readonly port: number
  /** `http://<host>:<port>` (IPv6 hosts bracketed). */
  readonly url: string
}

export interface ListenOptions {
  /** A loopback address: 127.0.0.1 or ::1. */
  readonly host: string
  /** 0 picks a free port. */
  readonly port: number
}

/** The simulators never listen beyond the machine. */
export const isLoopbackHost = (host: string): boolean =>
  host === "::1" || host === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)

const urlOf = (host: string, port: number) => `http://${host.includes(":") ? `[${host}]` : host}:${port}`

const writeResponse = (req: Http.IncomingMessage, res: Http.ServerResponse, response: SimResponse) => {
  switch (response._tag) {
    case "Drop":
      req.socket.destroy()
      return
    case "Truncate":
    case "Stall": {
      const bytes = Buffer.from(response.body)
      res.writeHead(response.status, {
        "content-type": response.contentType,
        // Promise more than is sent, so the client sees the connection die (or hang) mid-body.
        "content-length": String(bytes.length + 1024)
      })
      if (response._tag === "Truncate") res.write(bytes, () => req.socket.destroy())
      else res.write(bytes)
      return
    }
    case "Reply": {
      const headers: Record<string, string> = { ...response.headers }
      if (response.contentType !== undefined) headers["content-type"] = response.contentType
      // encoded once, for its length and to send (a 10,000-row listing is ~2 MB)
      const body = response.status === 204 ? undefined : Buffer.from(response.body)
      if (body !== undefined) headers["content-length"] = String(body.length)
      res.writeHead(response.status, headers)
      res.end(body)
      return
    }
  }
}

/** Starts the server on `options.host:options.port` for the life of the scope. */
export const serve = (
  sim: SandboxdSimShape,
  options: ListenOptions
): Effect.Effect<SimServerAddress, SimServerError, Scope.Scope> =>
  Effect.gen(function*() {
    if (!isLoopbackHost(options.host)) {
      return yield* new SimServerError({ message: `refusing to listen on ${options.host}: loopback addresses only` })
    }
    // The model's effects must run with this fiber's services (its Clock above all, so a
    // TestClock drives the simulator); node:http calls us back outside any fiber, so each
    // request is started with the captured context.
    const context = yield* Effect.context<never>()
    const run = Effect.runCallbackWith(context)

    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      let size = 0
      let tooLarge = false
      req.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size > REQUEST_BODY_LIMIT) tooLarge = true
        else chunks.push(chunk)
      })
      req.on("end", () => {
        const header = (name: string) => {
          const value = req.headers[name]
          return Array.isArray(value) ? value.join(", ") : value
        }
        const interrupt = run(
          sim.handle({
            method: req.method ?? "GET",
            path: req.url ?? "/",
            authorization: header("authorization"),
            contentType: header("content-type"),
            body: tooLarge ? "" : Buffer.concat(chunks).toString("utf8"),
            bodyTooLarge: tooLarge
          }),
          {
            onExit: (exit) => {
              if (Exit.isSuccess(exit) && !res.destroyed) writeResponse(req, res, exit.value)
            }
          }
        )
        // A client that goes away (timeout, hung reply) interrupts the model's work for it.
        res.on("close", () => {
          if (!res.writableFinished) interrupt()
        })
      })
    })
    server.keepAliveTimeout = 90_000

    const address = yield* Effect.callback<AddressInfo, SimServerError>((resume) => {
      const onError = (error: Error) =>
        resume(Effect.fail(
          new SimServerError({ message: `cannot listen on ${options.host}:${options.port}: ${error.message}` })
        ))
      server.once("error", onError)
      server.listen(options.port, options.host, () => {
        server.off("error", onError)
        resume(Effect.succeed(server.address() as AddressInfo))
      })
    })
    yield* Effect.addFinalizer(() =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        // Hung replies and idle keep-alive sockets would otherwise hold close() open.
        server.closeAllConnections()
      })
    )
    const advertised = address.address.includes(":") ? `[${address.address}]` : address.address
    yield* sim.adoptListenAddr(`${advertised}:${address.port}`)
    return { host: address.address, port: address.port, url: urlOf(address.address, address.port) }
  })

/** The bound address of a running simulator server. */
export class SandboxdSimServer extends Context.Service<SandboxdSimServer, SimServerAddress>()(
  "vk-sandbox/SandboxdSimServer"
) {
  /** Serves the `SandboxdSim` in context; the address is known once the layer is built. */
  static readonly layer = (options: ListenOptions): Layer.Layer<SandboxdSimServer, SimServerError, SandboxdSim> =>
    Layer.effect(
      SandboxdSimServer,
      Effect.gen(function*() {
        return yield* serve(yield* SandboxdSim, options)
      })
    )
}
