import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { createServer, type Server } from "node:net"
import type { AddressInfo } from "node:net"
import * as HealthServer from "../../../src/Programs/Observability/HealthServer.ts"

const checks: HealthServer.HealthChecks = {
  unhealthy: Effect.succeed([]),
  notReady: Effect.succeed([]),
  beforeScrape: Effect.void
}

/** A loopback port held by another listener for the test's scope. */
const busyPort = Effect.acquireRelease(
  Effect.callback<Server>((resume) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
).pipe(Effect.map((server) => (server.address() as AddressInfo).port))

describe("HealthServer", () => {
  it.live("a busy --metrics-addr is a startup error naming the flag, the address and the reason", () =>
    Effect.scoped(Effect.gen(function*() {
      const port = yield* busyPort
      const error = yield* Effect.flip(Layer.build(HealthServer.layer({ host: "127.0.0.1", port }, checks)))
      assert.strictEqual(error._tag, "MetricsListenError")
      assert.include(error.message, `--metrics-addr 127.0.0.1:${port}`)
      assert.include(error.message, "EADDRINUSE")
    })))
})
