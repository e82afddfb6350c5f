/**
 * Free loopback ports for the daemons and servers the tooling starts. They are chosen below the
 * kernel's ephemeral range, so neither an outgoing connection's local port nor another `listen(0)`
 * can take one between our release and the daemon's bind; each is bound to prove it free, and all
 * are held until every one is.
 */
import { Effect, Option, Schema } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"

/** No free port was found below the ephemeral range within the attempts. */
export class NoFreePort extends Schema.TaggedError<NoFreePort>()("NoFreePort", {
  message: Schema.String
}) {}

/** Ports are chosen in [floor, the ephemeral range's low end); k8s' own fixed ports lie below. */
const floor = 20_000
const attempts = 200

/** The low end of `ip_local_port_range` (Linux's default when it cannot be read). */
export const ephemeralLow = (): number => {
  try {
    const low = Number(fs.readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0])
    return Number.isInteger(low) && low > 0 ? low : 32_768
  } catch {
    return 32_768
  }
}

/** A server bound on loopback `port`, or none when the port is taken. */
export const bind = (port: number): Effect.Effect<Option.Option<net.Server>> =>
  Effect.callback<Option.Option<net.Server>>((resume) => {
    const server = net.createServer()
    server.once("error", () => resume(Effect.succeed(Option.none())))
    server.listen(port, "127.0.0.1", () => resume(Effect.succeed(Option.some(server))))
  })

export const release = (server: net.Server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))

const portOf = (server: net.Server): number => {
  const address = server.address()
  return typeof address === "object" && address !== null ? address.port : 0
}

/** One port held until the scope closes: random picks below the ephemeral range, bound to prove them free. */
const holdOne = (low: number) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      // a range squeezed below the floor leaves nothing to pick from: the kernel's choice, as before
      const span = low - floor
      for (let i = 0; i < attempts; i++) {
        const port = span > 0 ? floor + Math.floor(Math.random() * span) : 0
        const bound = yield* bind(port)
        if (Option.isSome(bound)) return bound.value
      }
      return yield* new NoFreePort({ message: `no free loopback port in [${floor}, ${low}) after ${attempts} tries` })
    }),
    release
  )

/**
 * `count` free loopback TCP ports, all different: each is bound, and all are held until every one
 * is, then released for the caller to bind.
 */
export const freePorts = (count: number): Effect.Effect<ReadonlyArray<number>, NoFreePort> =>
  Effect.suspend(() => {
    const low = ephemeralLow()
    return Effect.scoped(Effect.forEach(Array.from({ length: count }), () => Effect.map(holdOne(low), portOf)))
  })

/** One free loopback TCP port (see `freePorts`). */
export const freePort: Effect.Effect<number, NoFreePort> = Effect.map(freePorts(1), (ports) => ports[0] ?? 0)
