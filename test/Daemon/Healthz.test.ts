/**
 * HZ-1 — a stopped part fails liveness at the composition root: these fail if `src/Daemon.ts`
 * stops wiring the pod controller's and the loops' `stopped` parts into `/healthz`. The whole
 * `daemonLayer` runs in this process against both simulators over loopback. A part is stopped
 * as a bug stops it, by a defect in its fiber, thrown by the test's logger on a line only that
 * part logs, so no seam is added to the daemon.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Logger } from "effect"
import { SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { createPod, eventually, eventuallyEffect, podBody, running } from "../Programs/PodController/harness.ts"
import { startDaemon, world } from "./harness.ts"

const STOPPED = "pod controller part stopped; /healthz fails from now on"

/** A logger that throws (a defect in the logging fiber) on `line`, and records every message. */
const dyingOn = (line: string) => {
  const messages: Array<string> = []
  const logger = Logger.make((options) => {
    const message = Array.isArray(options.message) ? options.message.map(String).join(" ") : String(options.message)
    messages.push(message)
    if (message === line) throw new Error(`a bug, on "${line}"`)
  })
  return { messages, layer: Logger.layer([logger]) }
}

describe("Daemon: /healthz names the parts that stopped (HZ-1)", () => {
  it.live("the pod controller's informer dies: /healthz answers 503 naming it", () => {
    // The informer's own line, logged inside its fiber once the first list is applied.
    const logs = dyingOn("pod controller synced")
    return Effect.gen(function*() {
      const { config } = yield* world()
      const daemon = yield* startDaemon(config)
      // The line is logged as the part ends, a moment before its fiber is done.
      yield* eventuallyEffect("unhealthy", Effect.map(daemon.healthz, (answer) => answer.status === 503))
      assert.deepStrictEqual(yield* daemon.healthz, { status: 503, body: "not ok: informer\n" })
      assert.include(logs.messages, STOPPED)
      yield* daemon.stop
    }).pipe(Effect.provide(logs.layer))
  }, { timeout: 30_000 })

  it.live("a background loop that must run dies: /healthz answers 503 naming it, after answering ok", () => {
    // The lease watch's line when sandboxd's listing fails (it lists once it watches a claim),
    // logged inside the loop's fiber.
    const logs = dyingOn("sandboxd list failed; deferring lease-expiry publication")
    return Effect.gen(function*() {
      const w = yield* world({ leaseWatchInterval: Duration.millis(200) })
      const daemon = yield* startDaemon(w.config)
      createPod(w.model, podBody("p"))
      yield* eventually("p Running", () => running(w.model, "p"))
      yield* eventuallyEffect("healthy", Effect.map(daemon.healthz, (answer) => answer.status === 200 && answer.body === "ok\n"))
      yield* w.sim.injectFault("list", SimFault.status(503, "restarting"))
      yield* eventuallyEffect("unhealthy", Effect.map(daemon.healthz, (answer) => answer.status === 503))
      assert.deepStrictEqual(yield* daemon.healthz, { status: 503, body: "not ok: lease-watch\n" })
      yield* daemon.stop
    }).pipe(Effect.provide(logs.layer))
  }, { timeout: 30_000 })
})
