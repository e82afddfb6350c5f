/**
 * `freePorts`: ports below the kernel's ephemeral range (where no outgoing connection can take one
 * between the release and the daemon's bind), all different, each free when handed over.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as net from "node:net"
import { ephemeralLow, freePorts } from "../../testkit/Ports.ts"

const canBind = (port: number) =>
  Effect.callback<boolean>((resume) => {
    const server = net.createServer()
    server.once("error", () => resume(Effect.succeed(false)))
    server.listen(port, "127.0.0.1", () => server.close(() => resume(Effect.succeed(true))))
  })

describe("freePorts", () => {
  it.live("hands over distinct ports below the ephemeral range, each one bindable", () =>
    Effect.gen(function*() {
      const low = ephemeralLow()
      const ports = yield* freePorts(40)
      assert.strictEqual(new Set(ports).size, 40)
      for (const port of ports) {
        assert.isTrue(port >= 1024 && port < low, `port ${port} is outside [1024, ${low})`)
        assert.isTrue(yield* canBind(port), `port ${port} was handed over but cannot be bound`)
      }
    }))
})
