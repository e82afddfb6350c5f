/**
 * `freePorts`: ports below the kernel's ephemeral range (where no outgoing connection can take one
 * between the release and the daemon's bind), all different, each free when handed over.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { bind, ephemeralLow, freePorts, release } from "../../testkit/Ports.ts"

/** True when loopback `port` can be bound now (and is let go again). */
const canBind = (port: number) =>
  Effect.flatMap(bind(port), Option.match({ onNone: () => Effect.succeed(false), onSome: (server) => Effect.as(release(server), true) }))

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
