/**
 * The TCP fault proxy: bytes pass untouched (a TLS handshake and request included), and each
 * fault breaks the path as it says. Everything waits for receipts (a reply, an `end`, an error),
 * never for time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as https from "node:https"
import * as net from "node:net"
import { generatePki } from "../k8s/fixture/Pki.ts"
import * as TcpFaultProxy from "./TcpFaultProxy.ts"

/** An echo server on loopback that logs what happens to it, in order; closed with the scope. */
const echoServer = Effect.acquireRelease(
  Effect.callback<{ readonly server: net.Server; readonly port: number; readonly log: Array<string> }>((resume) => {
    const log: Array<string> = []
    const server = net.createServer((socket) => {
      log.push("connection")
      socket.on("data", (chunk) => {
        log.push(`data:${chunk.toString()}`)
        socket.write(chunk)
      })
      socket.on("end", () => log.push("end"))
      socket.on("error", () => undefined)
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, port: (server.address() as net.AddressInfo).port, log })))
  }),
  ({ server }) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
)

interface Client {
  readonly socket: net.Socket
  readonly received: () => string
  /** Resolves with what ended the connection for the client: "end" (a FIN), or an error code. */
  readonly ended: Deferred.Deferred<string>
  readonly echoed: (text: string) => Effect.Effect<void>
}

const connect = (port: number) =>
  Effect.gen(function*() {
    const ended = yield* Deferred.make<string>()
    const socket = net.connect({ host: "127.0.0.1", port })
    let received = ""
    const waiting: Array<{ text: string; done: () => void }> = []
    socket.on("data", (chunk) => {
      received += chunk.toString()
      for (const wait of waiting.splice(0)) {
        if (received.includes(wait.text)) wait.done()
        else waiting.push(wait)
      }
    })
    socket.on("end", () => Deferred.doneUnsafe(ended, Effect.succeed("end")))
    socket.on("error", (e: NodeJS.ErrnoException) => Deferred.doneUnsafe(ended, Effect.succeed(e.code ?? e.message)))
    yield* Effect.addFinalizer(() => Effect.sync(() => socket.destroy()))
    const echoed = (text: string) =>
      Effect.callback<void>((resume) => {
        if (received.includes(text)) return resume(Effect.void)
        waiting.push({ text, done: () => resume(Effect.void) })
      })
    return { socket, received: () => received, ended, echoed } satisfies Client
  })

describe("TCP fault proxy", () => {
  it.live("passes bytes both ways; a delay keeps them in order", () =>
    Effect.scoped(Effect.gen(function*() {
      const echo = yield* echoServer
      const proxy = yield* TcpFaultProxy.make(echo.port)
      const client = yield* connect(proxy.port)
      client.socket.write("one")
      yield* client.echoed("one")
      proxy.setFault({ _tag: "Delay", millis: 50 })
      client.socket.write("two")
      proxy.setFault(undefined)
      client.socket.write("three")
      yield* client.echoed("three")
      assert.strictEqual(client.received(), "onetwothree", "the undelayed chunk did not overtake the delayed one")
    })))

  it.live("a blackhole holds the bytes and new connections until it ends, then everything flows", () =>
    Effect.scoped(Effect.gen(function*() {
      const echo = yield* echoServer
      const proxy = yield* TcpFaultProxy.make(echo.port)
      const first = yield* connect(proxy.port)
      first.socket.write("before")
      yield* first.echoed("before")
      assert.strictEqual(proxy.setFault({ _tag: "Blackhole" }), 1)
      first.socket.write("held")
      const second = yield* connect(proxy.port)
      second.socket.write("late")
      // Round trips through a clear path to the same server: by their end, bytes the blackholed
      // path let through would have arrived.
      const clear = yield* TcpFaultProxy.make(echo.port)
      const witness = yield* connect(clear.port)
      for (const ping of ["p1", "p2", "p3"]) {
        witness.socket.write(ping)
        yield* witness.echoed(ping)
      }
      echo.log.push("lifted")
      proxy.setFault(undefined)
      yield* first.echoed("held")
      yield* second.echoed("late")
      const lifted = echo.log.indexOf("lifted")
      assert.isAbove(echo.log.indexOf("data:held"), lifted, echo.log.join(" "))
      assert.strictEqual(echo.log.slice(0, lifted).filter((e) => e === "connection").length, 2, "no upstream for a new connection (the witness's only)")
    })))

  it.live("reset: open connections and new ones are reset; half-close: the client gets a FIN", () =>
    Effect.scoped(Effect.gen(function*() {
      const echo = yield* echoServer
      const proxy = yield* TcpFaultProxy.make(echo.port)
      const open = yield* connect(proxy.port)
      open.socket.write("x")
      yield* open.echoed("x")
      proxy.setFault({ _tag: "Reset" })
      assert.strictEqual(yield* Deferred.await(open.ended), "ECONNRESET")
      const fresh = yield* connect(proxy.port)
      assert.strictEqual(yield* Deferred.await(fresh.ended), "ECONNRESET")

      proxy.setFault(undefined)
      const kept = yield* connect(proxy.port)
      kept.socket.write("y")
      yield* kept.echoed("y")
      proxy.setFault({ _tag: "HalfClose" })
      assert.strictEqual(yield* Deferred.await(kept.ended), "end")
      const refused = yield* connect(proxy.port)
      assert.strictEqual(yield* Deferred.await(refused.ended), "end")
    })))

  it.live("a TLS server is reached through it as it is (handshake, request, reply); the upstream may move", () =>
    Effect.scoped(Effect.gen(function*() {
      const pki = yield* generatePki
      const server = yield* Effect.acquireRelease(
        Effect.callback<https.Server>((resume) => {
          const s = https.createServer({ cert: pki.servingCertPem, key: pki.servingKeyPem }, (_req, res) => res.end("tls ok"))
          s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
        }),
        (s) => Effect.callback<void>((resume) => void s.close(() => resume(Effect.void)))
      )
      const echo = yield* echoServer
      const proxy = yield* TcpFaultProxy.make(echo.port)
      proxy.setUpstream((server.address() as net.AddressInfo).port)
      const body = yield* Effect.callback<string>((resume) => {
        const req = https.get({ host: "127.0.0.1", port: proxy.port, path: "/", ca: pki.caCertPem, agent: false }, (res) => {
          let text = ""
          res.on("data", (chunk: Buffer) => (text += chunk.toString()))
          res.on("end", () => resume(Effect.succeed(text)))
        })
        req.on("error", (e) => resume(Effect.succeed(`error: ${e.message}`)))
      })
      assert.strictEqual(body, "tls ok")
    })))
})
