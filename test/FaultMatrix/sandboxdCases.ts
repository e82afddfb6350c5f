/**
 * The fault matrix, sandboxd side: each fault between the daemon and sandboxd, over the wire
 * (a proxy in front of the simulator), then convergence and the invariants of ./world.ts.
 *
 * A fault that answers on the proxy's own (a status, a body) never reaches sandboxd, so a claim
 * it answers was never made. Faults that let the request through and break the reply (a cut
 * body, a reply that never ends) leave a claim whose outcome the daemon cannot know: sandboxd
 * made the VM, the token never arrived. The invariants then say the daemon found it again
 * (adopted with its token, or released), and never claimed a second VM beside it. So does a
 * gateway's 5xx in front of sandboxd after the request went through (CRT-23 — what a failed claim
 * says about its VM).
 */
import { assert } from "@effect/vitest"
import { Effect, Option } from "effect"
import { nodeInventory } from "../../testkit/Demo/Harness.ts"
import type { FaultAction, ProxiedRequest } from "../support/FaultProxy.ts"
import { Pass } from "../support/FaultProxy.ts"
import type { FaultCase } from "./world.ts"

const isRead = (request: ProxiedRequest) => request.method === "GET" && (request.url.startsWith("/v1/sandboxes") || request.url.startsWith("/v1/info"))
const isListing = (request: ProxiedRequest) => request.method === "GET" && request.url.startsWith("/v1/sandboxes")

const onEveryRequest = (action: FaultAction): FaultCase => ({
  arm: (world) => Effect.sync(() => world.sandboxd.setRule(() => action)),
  disarm: (world) => Effect.sync(() => world.sandboxd.clear())
})

const onReads = (action: FaultAction, millis?: number): FaultCase => ({
  arm: (world) => Effect.sync(() => world.sandboxd.setRule((request) => (isRead(request) ? action : Pass))),
  // a reply held open ends only with its connection
  disarm: (world) => Effect.sync(() => {
    world.sandboxd.clear()
    world.sandboxd.resetAll()
  }),
  ...(millis === undefined ? {} : { millis })
})

const errorBody = (message: string) => JSON.stringify({ error: message })

const parseOr = (body: string): { sandboxes?: unknown } | undefined => {
  try {
    const value: unknown = JSON.parse(body)
    return typeof value === "object" && value !== null ? value : undefined
  } catch {
    return undefined
  }
}

/** The listing as sandboxd sent it, rows rewritten. */
const rewriteListing = (rows: (rows: Array<unknown>) => Array<unknown>): FaultCase => ({
  arm: (world) =>
    Effect.sync(() =>
      world.sandboxd.setRule((request) =>
        isListing(request)
          ? {
            _tag: "Rewrite",
            rewrite: ({ status, body }) => {
              // Only a listing is rewritten: an error reply (a slow sandboxd under load) passes as sent.
              const parsed = parseOr(body)
              if (parsed === undefined || !Array.isArray(parsed.sandboxes)) return { status, body }
              return { status, body: JSON.stringify({ ...parsed, sandboxes: rows(parsed.sandboxes) }) }
            }
          }
          : Pass
      )
    ),
  disarm: (world) => Effect.sync(() => world.sandboxd.clear())
})

export const sandboxdCases: ReadonlyArray<readonly [string, FaultCase]> = [
  ["429 Too Many Requests on every request", onEveryRequest({ _tag: "Reply", status: 429, body: errorBody("rate limited"), headers: { "retry-after": "1" } })],
  ["503 on every request", onEveryRequest({ _tag: "Reply", status: 503, body: errorBody("draining") })],
  ["500 with a non-JSON body on every request", onEveryRequest({ _tag: "Reply", status: 500, body: "<html>oops</html>", headers: { "content-type": "text/html" } })],
  ["401 on every request", onEveryRequest({ _tag: "Reply", status: 401, body: errorBody("unauthorized") })],
  ["403 on every request", onEveryRequest({ _tag: "Reply", status: 403, body: errorBody("forbidden") })],
  ["307 redirect on every request (not followed)", {
    ...onEveryRequest({ _tag: "Reply", status: 307, body: "", headers: { location: "/elsewhere" } }),
    check: (world) =>
      Effect.sync(() => assert.isFalse(world.sandboxd.seen.some((r) => r.url.startsWith("/elsewhere")), "the redirect was not followed"))
  }],
  ["a claim answered with a redirect body (no sandbox handed over)", {
    arm: (world) =>
      Effect.sync(() =>
        world.sandboxd.setRule((request) =>
          request.url.startsWith("/v1/claim")
            ? { _tag: "Reply", status: 200, body: JSON.stringify({ redirect: ["10.0.0.6:7777"], require_promoted: true }) }
            : Pass
        )
      ),
    disarm: (world) => Effect.sync(() => world.sandboxd.clear())
  }],
  ["no answer within --sandboxd-timeout (black hole before the reply)", { ...onEveryRequest({ _tag: "Hang" }), disarm: (world) => Effect.sync(() => {
    world.sandboxd.clear()
    world.sandboxd.resetAll()
  }) }],
  ["connection reset before any reply", onEveryRequest({ _tag: "Reset" })],
  ["a 200 with a non-JSON body on every request", onEveryRequest({ _tag: "Reply", status: 200, body: "not json at all" })],
  ["a 200 with the wrong types on every request", onEveryRequest({ _tag: "Reply", status: 200, body: JSON.stringify({ id: 7, token: [], sandboxes: "many", pools: {} }) })],
  ["reads: the body cut short", onReads({ _tag: "Truncate", bytes: 10 })],
  ["reads: the whole body, then the reply never ends", onReads({ _tag: "HangAfterBody" })],
  ["reads: a body over 16 MiB", onReads({ _tag: "Reply", status: 200, body: Buffer.alloc(17 * 1024 * 1024, 0x20) })],
  ["listing: {} (no sandboxes array)", {
    arm: (world) => Effect.sync(() => world.sandboxd.setRule((request) => (isListing(request) ? { _tag: "Reply", status: 200, body: "{}" } : Pass))),
    disarm: (world) => Effect.sync(() => world.sandboxd.clear())
  }],
  ["claims: the whole reply, then it never ends (a timeout after the body: the VM exists, the daemon never read its token)", {
    arm: (world) =>
      Effect.sync(() => world.sandboxd.setRule((request) => (request.url.startsWith("/v1/claim") ? { _tag: "HangAfterBody" } : Pass))),
    disarm: (world) =>
      Effect.sync(() => {
        world.sandboxd.clear()
        world.sandboxd.resetAll()
      }),
    millis: 1_500
  }],
  ["claims: the reply cut short after sandboxd made the VM", {
    arm: (world) =>
      Effect.sync(() => world.sandboxd.setRule((request) => (request.url.startsWith("/v1/claim") ? { _tag: "Truncate", bytes: 20 } : Pass))),
    disarm: (world) => Effect.sync(() => world.sandboxd.clear())
  }],
  ["claims: sandboxd made the VM, a proxy answered 503 for it (an upstream reset after forwarding: CRT-23)", {
    arm: (world) =>
      Effect.sync(() =>
        world.sandboxd.setRule((request) =>
          request.url.startsWith("/v1/claim")
            ? { _tag: "Rewrite", rewrite: () => ({ status: 503, body: "upstream connect error or disconnect/reset before headers" }) }
            : Pass
        )
      ),
    disarm: (world) => Effect.sync(() => world.sandboxd.clear())
  }],
  ["listing: every held claim missing", rewriteListing(() => [])],
  ["listing: every row twice", {
    ...rewriteListing((rows) => [...rows, ...rows]),
    check: (world) =>
      Effect.gen(function*() {
        // the inventory published from such a listing has one entry per id
        const inventory = nodeInventory(world.cluster)
        assert.isTrue(Option.isSome(inventory), "a NodeInventory is published")
        const entries = Option.getOrElse(Option.map(inventory, (i) => (i["entries"] ?? []) as Array<{ id: string }>), () => [])
        const ids = entries.map((e) => e.id)
        assert.strictEqual(new Set(ids).size, ids.length, `no duplicate entries: ${JSON.stringify(ids)}`)
        assert.isAbove(ids.length, 0)
      })
  }]
]
