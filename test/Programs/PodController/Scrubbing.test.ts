/**
 * No secret from upstream text, over the real wire: sandboxd (or a proxy in front of it) answers
 * with error bodies that repeat the node root token and the claim token. The Pods' statuses, the
 * Events, the log lines and /metrics must carry neither, while the failure stays visible.
 * Real clock, like the other pod controller tests (every step is a socket round trip).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger, Redacted, References } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { CoreEvents, Pods } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import { SimFault } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { claimIdOf, eventually, eventuallyEffect, makeWorld, NS, peekPod, podBody, releaseRequests, running, type World } from "./harness.ts"

const ROOT = "n0de-r00t-t0ken-7f3k2"

const lines: Array<string> = []
const capture = Logger.make((options) => {
  lines.push(
    JSON.stringify({
      message: Array.isArray(options.message) ? options.message.map(String) : String(options.message),
      annotations: options.fiber.getRef(References.CurrentLogAnnotations),
      cause: String(options.cause)
    })
  )
})

/** sandboxd answers the next two claims with `first`, then `second`; "web" is created and goes ProviderFailed. */
const claimFailsTwice = (world: World, first: SimFault, second: SimFault) =>
  Effect.gen(function*() {
    yield* world.sim.injectFault("claim", first, { times: 1 })
    yield* world.sim.injectFault("claim", second, { times: 1 })
    world.model.create(Pods, NS, podBody("web"))
    return yield* eventually("web ProviderFailed", () => {
      const pod = peekPod(world.model, "web")
      return pod?.status?.reason === "ProviderFailed" ? pod : undefined
    })
  })

describe("no secret from upstream text", () => {
  it.live("error bodies that echo the root and claim tokens: no token in Pods, Events, logs or metrics", () =>
    Effect.gen(function*() {
      lines.length = 0
      const world = yield* makeWorld({ sim: { rootToken: ROOT }, config: { sandboxdToken: Redacted.make(ROOT) } })
      yield* world.start()
      // Claims: a JSON 401 quoting the bearer, then a proxy's HTML 403 quoting the header.
      const failed = yield* claimFailsTwice(
        world,
        SimFault.status(401, `invalid api token: Bearer ${ROOT}`),
        SimFault.body(403, `<html><body>denied: Authorization: Bearer ${ROOT}\r\nX-Token: ${ROOT}</body></html>`, "text/html")
      )
      assert.include(failed.status?.message ?? "", "401", "the failure stays visible")
      const web = yield* eventually("web Running", () => running(world.model, "web"))
      const claimId = claimIdOf(web)
      const claimToken = (yield* world.sim.claims).find((c) => c.id === claimId)!.token

      // Release: a 403 that repeats the claim token, twice, then the release goes through.
      yield* world.sim.injectFault("release", SimFault.status(403, `token ${claimToken} may not release`), { times: 2 })
      world.model.delete(Pods, NS, "web", { gracePeriodSeconds: 30 })
      yield* eventuallyEffect("three releases", Effect.map(releaseRequests(world.sim), (paths) => paths.length >= 3))
      yield* eventually("web removed", () => peekPod(world.model, "web") === undefined)

      // Events are written in the background: wait until the release failures are recorded.
      const eventText = yield* eventually("the ReleaseFailed event", () => {
        const text = JSON.stringify(world.model.list(CoreEvents, NS))
        return text.includes("ReleaseFailed") && text.includes("CreateFailed") ? text : undefined
      })
      const metrics = yield* PrometheusMetrics.format()
      const everything: ReadonlyArray<[string, string]> = [
        ["pod status", JSON.stringify(failed)],
        ["events", eventText],
        ["logs", lines.join("\n")],
        ["metrics", metrics]
      ]
      assert.isAbove(lines.length, 0, "the log capture sees the daemon's lines")
      assert.isTrue(lines.some((l) => l.includes("create failed")), "the create failure is logged")
      for (const [where, text] of everything) {
        assert.notInclude(text, ROOT, `no root token in ${where}`)
        assert.notInclude(text, claimToken, `no claim token in ${where}`)
      }
    }).pipe(Effect.provide(Logger.layer([capture]))), { timeout: 30_000 })

  it.live("an error body that quotes another Pod's claim token (not hex-shaped): the token is removed by name", () =>
    Effect.gen(function*() {
      lines.length = 0
      // Letters beyond f and short of 40 characters: no credential pattern matches it, only its name.
      const OTHER = "quorum-vortex-glyph-zwy"
      const world = yield* makeWorld({ sim: { rootToken: ROOT }, config: { sandboxdToken: Redacted.make(ROOT) } })
      yield* world.start()
      // Another Pod's claim, answered (by a proxy that rewrites replies, say) with such a token.
      yield* world.sim.injectFault(
        "claim",
        SimFault.body(200, JSON.stringify({ id: "sb_00000000000000aa", token: OTHER, deadline: "0001-01-01T00:00:00Z" })),
        { times: 1 }
      )
      world.model.create(Pods, NS, podBody("other"))
      yield* eventually("other Running", () => running(world.model, "other"))
      // A JSON 409 and a proxy's HTML 502 that both quote it.
      const failed = yield* claimFailsTwice(
        world,
        SimFault.status(409, `sandbox held by ${OTHER}`),
        SimFault.body(502, `<html><body>upstream ${OTHER} refused</body></html>`, "text/html")
      )
      assert.include(failed.status?.message ?? "", "409", "the failure stays visible")
      assert.include(failed.status?.message ?? "", "[redacted]")
      const eventText = yield* eventually("the CreateFailed event", () => {
        const text = JSON.stringify(world.model.list(CoreEvents, NS))
        return text.includes("CreateFailed") ? text : undefined
      })
      const metrics = yield* PrometheusMetrics.format()
      const everything: ReadonlyArray<[string, string]> = [
        ["pod status", JSON.stringify(failed)],
        ["events", eventText],
        ["logs", lines.join("\n")],
        ["metrics", metrics]
      ]
      assert.isTrue(lines.some((l) => l.includes("create failed")), "the create failure is logged")
      for (const [where, text] of everything) assert.notInclude(text, OTHER, `no other Pod's claim token in ${where}`)
    }).pipe(Effect.provide(Logger.layer([capture]))), { timeout: 30_000 })
})
