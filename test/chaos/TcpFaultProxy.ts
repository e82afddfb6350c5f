/**
 * A fault proxy at the TCP level, on loopback: it copies bytes between a client and an upstream
 * without reading them (so TLS passes) and breaks the path the ways a network does: `Fault` lists
 * them. One fault at a time per proxy; the upstream may move (`setUpstream`), as a restarted
 * server on another port is the same path for the client.
 */
import { Effect, type Scope } from "effect"
import * as net from "node:net"

/**
 * - Blackhole: nothing moves either way; the sockets stop reading, so a sender's window fills as
 *   against a dead path, and a new connection is accepted but gets no upstream; when it ends,
 *   everything held flows again (TCP would have retransmitted it) unless a side gave up;
 * - Delay: every chunk, each way, waits this long (in order);
 * - Reset: every open connection is reset (RST to the client), and each new one while it lasts;
 * - HalfClose: every open connection gets a FIN toward the client and nothing more from
 *   upstream; each new one too, before any byte.
 */
export type TcpFault =
  | { readonly _tag: "Blackhole" }
  | { readonly _tag: "Delay"; readonly millis: number }
  | { readonly _tag: "Reset" }
  | { readonly _tag: "HalfClose" }

export interface TcpFaultProxy {
  readonly port: number
  /** The fault now (undefined: bytes pass); returns how many open connections it touched. */
  readonly setFault: (fault: TcpFault | undefined) => number
  readonly setUpstream: (port: number) => void
  /** Connections accepted so far. */
  readonly accepted: () => number
}

interface Connection {
  readonly client: net.Socket
  upstream: net.Socket | undefined
  /** The earliest time the next chunk each way may be written (delays keep the order). */
  toUpstreamAt: number
  toClientAt: number
  halfClosed: boolean
}

/** A proxy on 127.0.0.1 (a free port) to 127.0.0.1:`upstreamPort`, closed with the scope. */
export const make = (upstreamPort: number): Effect.Effect<TcpFaultProxy, never, Scope.Scope> =>
  Effect.gen(function*() {
    let upstream = upstreamPort
    let fault: TcpFault | undefined = undefined
    let count = 0
    const open = new Set<Connection>()
    /** Accepted during a blackhole: connected upstream when it ends. */
    const held = new Set<Connection>()

    const drop = (conn: Connection) => {
      open.delete(conn)
      held.delete(conn)
      conn.client.destroy()
      conn.upstream?.destroy()
    }

    const reset = (conn: Connection) => {
      open.delete(conn)
      held.delete(conn)
      if (!conn.client.destroyed) conn.client.resetAndDestroy()
      conn.upstream?.destroy()
    }

    /** FIN toward the client; what it still sends goes on (or, with no upstream yet, nowhere) until it closes. */
    const halfClose = (conn: Connection) => {
      conn.halfClosed = true
      conn.client.end()
      conn.client.resume()
    }

    /** Copies `from` to `to`, waiting out the delay in force and pausing with `to`'s buffer. */
    const pipe = (conn: Connection, from: net.Socket, to: () => net.Socket | undefined, toClient: boolean) => {
      from.on("data", (chunk: Buffer) => {
        if (toClient && conn.halfClosed) return
        const delay = fault?._tag === "Delay" ? fault.millis : 0
        const now = Date.now()
        const key = toClient ? "toClientAt" : "toUpstreamAt"
        const at = Math.max(conn[key], now + delay)
        conn[key] = at
        const write = () => {
          const target = to()
          if (target === undefined || target.destroyed || (toClient && conn.halfClosed)) return
          if (!target.write(chunk)) {
            from.pause()
            target.once("drain", () => {
              if (fault?._tag !== "Blackhole") from.resume()
            })
          }
        }
        if (at <= now) write()
        else setTimeout(write, at - now)
      })
      from.on("end", () => {
        const target = to()
        const at = toClient ? conn.toClientAt : conn.toUpstreamAt
        const wait = Math.max(0, at - Date.now())
        setTimeout(() => {
          if (target !== undefined && !target.destroyed && !(toClient && conn.halfClosed)) target.end()
        }, wait)
      })
    }

    const connectUpstream = (conn: Connection) => {
      const socket = net.connect({ host: "127.0.0.1", port: upstream })
      conn.upstream = socket
      socket.on("error", () => reset(conn))
      socket.on("close", () => {
        if (!conn.client.destroyed) conn.client.destroy()
        open.delete(conn)
      })
      socket.on("connect", () => {
        pipe(conn, conn.client, () => conn.upstream, false)
        pipe(conn, socket, () => conn.client, true)
        conn.client.resume()
      })
    }

    const server = net.createServer({ pauseOnConnect: true, allowHalfOpen: true }, (client) => {
      count++
      const conn: Connection = { client, upstream: undefined, toUpstreamAt: 0, toClientAt: 0, halfClosed: false }
      open.add(conn)
      client.on("error", () => drop(conn))
      client.on("close", () => drop(conn))
      switch (fault?._tag) {
        case "Reset":
          return reset(conn)
        case "HalfClose":
          return halfClose(conn)
        case "Blackhole":
          held.add(conn)
          return
        default:
          return connectUpstream(conn)
      }
    })

    const setFault = (next: TcpFault | undefined): number => {
      const previous = fault
      fault = next
      const touched = [...open]
      if (previous?._tag === "Blackhole" && next?._tag !== "Blackhole") {
        for (const conn of touched) {
          if (held.has(conn)) {
            held.delete(conn)
            connectUpstream(conn)
          } else {
            conn.client.resume()
            conn.upstream?.resume()
          }
        }
      }
      switch (next?._tag) {
        case "Blackhole":
          for (const conn of touched) {
            conn.client.pause()
            conn.upstream?.pause()
          }
          return touched.length
        case "Reset":
          for (const conn of touched) reset(conn)
          return touched.length
        case "HalfClose":
          for (const conn of touched) halfClose(conn)
          return touched.length
        default:
          return 0
      }
    }

    const port = yield* Effect.acquireRelease(
      Effect.callback<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as net.AddressInfo).port)))
      }),
      () =>
        Effect.callback<void>((resume) => {
          for (const conn of [...open]) drop(conn)
          server.close(() => resume(Effect.void))
        })
    )

    return {
      port,
      setFault,
      setUpstream: (next) => {
        upstream = next
      },
      accepted: () => count
    }
  })
