/**
 * The real node's loopback-only check (./Sockets.ts, `loopbackOnly`) can fail: on this process's
 * own sockets it sees a loopback peer (IPv4, and IPv4 as IPv6 sees it) and reports a peer outside
 * 127.0.0.0/8. The outside peer is a UDP socket connected to a documentation address (RFC 5737):
 * connecting a UDP socket only records the peer, no packet leaves the machine.
 */
import { assert, describe, it } from "@effect/vitest"
import { createSocket } from "node:dgram"
import { createConnection, createServer, type Server, type Socket } from "node:net"
import { Effect } from "effect"
import { loopbackOnly } from "./Sockets.ts"

const OutsidePeer = "198.51.100.7"

/** A TCP server on `host` and a client connected to it through 127.0.0.1, closed with the scope. */
const connectedPair = (host: string) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly server: Server; readonly client: Socket }>((resume) => {
      const server = createServer().listen(0, host, () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        const client = createConnection({ host: "127.0.0.1", port }, () => resume(Effect.succeed({ server, client })))
      })
    }),
    ({ client, server }) => Effect.sync(() => (client.destroy(), server.close()))
  )

describe("the loopback-only check", () => {
  it.live("sees loopback peers, over IPv4 and as IPv6 maps them, and reports none outside", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* connectedPair("127.0.0.1")
      yield* connectedPair("::")
      const found = loopbackOnly({ self: process.pid })
      assert.deepStrictEqual(found.outside, [])
      // each pair: the client's socket and the server's accepted one
      assert.isAtLeast(found.peers["self"] ?? 0, 4)
    })))

  it.live("reports a socket whose peer is outside 127.0.0.0/8", () =>
    Effect.scoped(Effect.gen(function*() {
      const socket = yield* Effect.acquireRelease(
        Effect.callback<ReturnType<typeof createSocket>>((resume) => {
          const udp = createSocket("udp4")
          udp.connect(9, OutsidePeer, () => resume(Effect.succeed(udp)))
        }),
        (udp) => Effect.sync(() => udp.close())
      )
      const port = socket.address().port
      const found = loopbackOnly({ self: process.pid })
      assert.deepStrictEqual(
        found.outside.map((s) => ({ process: s.process, protocol: s.protocol, remote: s.remote, local: s.local.endsWith(`:${port}`) })),
        [{ process: "self", protocol: "udp", remote: `${OutsidePeer}:9`, local: true }]
      )
    })))
})
