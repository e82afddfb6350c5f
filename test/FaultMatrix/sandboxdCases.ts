/**
 * The fault matrix, sandboxd side: each fault between the daemon and sandboxd, over the wire (a
 * proxy in front of the simulator), then convergence and the invariants of ./world.ts. A fault
 * the proxy answers itself never reaches sandboxd; one that breaks the reply after the request
 * went through (a cut body, a reply that never ends, a gateway's 5xx) leaves a VM whose token
 * never arrived, which the daemon must find again (adopt or release) and never claim twice
 * (CRT-23 — what a failed claim says about its VM).
 */
import { assert } from "@effect/vitest"
import { Effect, Option } from "effect"
import { nodeInventory } from "../../testkit/Demo/Harness.ts"
import type { FaultAction, ProxiedRequest } from "../support/FaultProxy.ts"
import { Pass } from "../support/FaultProxy.ts"
import { allOf, counted, having, pathOf } from "./receipts.ts"
import type { FaultCase, Receipt } from "./world.ts"

const isRead = (request: ProxiedRequest) => request.method === "GET" && (request.url.startsWith("/v1/sandboxes") || request.url.startsWith("/v1/info"))
const isListing = (request: ProxiedRequest) => request.method === "GET" && request.url.startsWith("/v1/sandboxes")

/** The daemon counted a failed sandboxd call of `operation` (a label value of the metric). */
const failed = (operation: string, what: string): Receipt =>
  counted(`${what} failed`, "vk_sandbox_sandboxd_errors_total", having(`operation="${operation}"`))

/** The fresh Pod's claim and the bare Pod's release, both made while the fault lasts. */
const claimFailed = failed("claim", "a claim")
const claimAndRelease = allOf(claimFailed, failed("release", "a release"))

const onEveryRequest = (action: FaultAction): FaultCase => ({
  arm: (world) => Effect.sync(() => world.sandboxd.setRule(() => action)),
  disarm: (world) => Effect.sync(() => world.sandboxd.clear()),
  met: claimAndRelease
})

const onReads = (action: FaultAction): FaultCase => ({
  arm: (world) => Effect.sync(() => world.sandboxd.setRule((request) => (isRead(request) ? action : Pass))),
  // a reply held open ends only with its connection
  disarm: (world) => Effect.sync(() => {
    world.sandboxd.clear()
    world.sandboxd.resetAll()
  }),
  met: counted("a read (listing, sandbox, info) failed", "vk_sandbox_sandboxd_errors_total", (labels) => /operation="(list|get|info)"/.test(labels))
})

/** Only claims are faulted. */
const onClaims = (action: FaultAction): Pick<FaultCase, "arm" | "met"> => ({
  arm: (world) => Effect.sync(() => world.sandboxd.setRule((request) => (request.url.startsWith("/v1/claim") ? action : Pass))),
  met: claimFailed
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

const isWholeListing = (request: ProxiedRequest) => pathOf(request) === "/v1/sandboxes"

/**
 * A listing left out the held claims; after it, the daemon asked sandboxd for one sandbox by id
 * (the claim verifier looking up a claim the listing lacked).
 */
const askedAfterListing: Receipt = {
  expectation: "after a listing without its claims, the daemon asked sandboxd for a sandbox by id",
  start: (world) =>
    Effect.sync(() => {
      const from = world.sandboxd.faulted.length
      return Effect.sync(() => {
        const listing = world.sandboxd.faulted.slice(from).find(isWholeListing)
        if (listing === undefined) return false
        const seen = world.sandboxd.seen
        return seen.slice(seen.indexOf(listing) + 1).some((r) => r.method === "GET" && pathOf(r).startsWith("/v1/sandboxes/"))
      })
    })
}

/**
 * The daemon published its NodeInventory twice after a rewritten listing went out: the second
 * publish listed after the first one ended, so after the fault was armed (the first may have
 * listed before it).
 */
const publishedAfterListing: Receipt = {
  expectation: "the daemon published its NodeInventory twice after a rewritten listing",
  start: (world) =>
    Effect.sync(() => {
      const from = world.sandboxd.faulted.length
      let after: number | undefined
      return Effect.sync(() => {
        if (after === undefined) {
          if (!world.sandboxd.faulted.slice(from).some(isWholeListing)) return false
          after = world.apiserver.seen.length
        }
        const publishes = world.apiserver.seen.slice(after).filter((r) => r.method === "PATCH" && pathOf(r).includes("/nodeinventories"))
        return publishes.length >= 2
      })
    })
}

/** The listing as sandboxd sent it, rows rewritten. */
const rewriteListing = (rows: (rows: Array<unknown>) => Array<unknown>, met: Receipt): FaultCase => ({
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
  disarm: (world) => Effect.sync(() => world.sandboxd.clear()),
  met
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
    ...onClaims({ _tag: "Reply", status: 200, body: JSON.stringify({ redirect: ["10.0.0.6:7777"], require_promoted: true }) }),
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
    disarm: (world) => Effect.sync(() => world.sandboxd.clear()),
    met: failed("list", "a listing")
  }],
  ["claims: the whole reply, then it never ends (a timeout after the body: the VM exists, the daemon never read its token)", {
    ...onClaims({ _tag: "HangAfterBody" }),
    disarm: (world) =>
      Effect.sync(() => {
        world.sandboxd.clear()
        world.sandboxd.resetAll()
      })
  }],
  ["claims: the reply cut short after sandboxd made the VM", {
    ...onClaims({ _tag: "Truncate", bytes: 20 }),
    disarm: (world) => Effect.sync(() => world.sandboxd.clear())
  }],
  ["claims: sandboxd made the VM, a proxy answered 503 for it (an upstream reset after forwarding: CRT-23)", {
    ...onClaims({ _tag: "Rewrite", rewrite: () => ({ status: 503, body: "upstream connect error or disconnect/reset before headers" }) }),
    disarm: (world) => Effect.sync(() => world.sandboxd.clear())
  }],
  ["listing: every held claim missing", rewriteListing(() => [], askedAfterListing)],
  ["listing: every row twice", {
    ...rewriteListing((rows) => [...rows, ...rows], publishedAfterListing),
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
