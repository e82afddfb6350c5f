/**
 * The route table both ways: every path the client builds is read back by the simulator as the
 * same route and id, whatever the id holds, and a listing's claim_ref comes back as sent.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import {
  authorizationOf,
  bearerOf,
  CLAIM_PATH,
  claimRefOf,
  HEALTHZ_PATH,
  INFO_PATH,
  listPath,
  releasePath,
  routeOf,
  sandboxPath
} from "../../src/Sandboxd/Routes.ts"
import type { ClaimId } from "../../src/Schemas/Ids.ts"

/** Ids of any text: slashes, percent signs, query characters, multi-byte characters. */
const id = fc.oneof(fc.string({ minLength: 1 }), fc.string({ unit: "grapheme", minLength: 1 }), fc.constantFrom("a/b", "%2F", "x?y", "..", "sb_0123456789abcdef"))

describe("sandboxd routes", () => {
  it("a by-id path and a release path read back as their route and the same id", () =>
    fc.assert(
      fc.property(id, (raw) => {
        const claimId = raw as ClaimId
        const get = Result.getOrThrow(sandboxPath("get", claimId))
        assert.deepStrictEqual(routeOf("GET", get), { route: "get", id: raw, allowed: true })
        assert.deepStrictEqual(routeOf("POST", get), { route: "get", id: raw, allowed: false })
        const release = Result.getOrThrow(releasePath(claimId))
        assert.deepStrictEqual(routeOf("POST", release), { route: "release", id: raw, allowed: true })
      }),
      { numRuns: 500 }
    ))

  it("a listing path reads back as the listing, with the claim_ref it asked for", () =>
    fc.assert(
      fc.property(fc.string(), (claimRef) => {
        const path = listPath(claimRef)
        assert.deepStrictEqual(routeOf("GET", path), { route: "list", id: "", allowed: true })
        assert.strictEqual(claimRefOf(path), claimRef === "" ? undefined : claimRef)
      }),
      { numRuns: 500 }
    ))

  it("the fixed routes, each with its one method; anything else is unknown", () => {
    assert.deepStrictEqual(routeOf("POST", CLAIM_PATH), { route: "claim", id: "", allowed: true })
    assert.deepStrictEqual(routeOf("GET", CLAIM_PATH), { route: "claim", id: "", allowed: false })
    assert.deepStrictEqual(routeOf("GET", INFO_PATH), { route: "info", id: "", allowed: true })
    assert.deepStrictEqual(routeOf("GET", HEALTHZ_PATH), { route: "healthz", id: "", allowed: true })
    assert.deepStrictEqual(routeOf("POST", "/v1/sandboxes/x/wake"), { route: "wake", id: "x", allowed: true })
    for (const path of ["/", "/v1", "/v1/sandboxes/", "/v1/sandboxes/a/b", "/v1/sandboxes/a/delete", "/v1/sandboxes/%E0%A4%A"]) {
      assert.strictEqual(routeOf("GET", path).route, "unknown", path)
    }
  })

  it("an id that is not valid text is a local error, and an empty id is refused", () => {
    assert.isTrue(Result.isFailure(sandboxPath("get", "\ud800" as ClaimId)))
    assert.isTrue(Result.isFailure(releasePath("" as ClaimId)))
  })

  it("the bearer token sent is the one read, and no header is sent without a token", () =>
    fc.assert(
      fc.property(fc.string(), (token) => {
        const header = authorizationOf(token)
        assert.strictEqual(header === undefined ? undefined : bearerOf(header), token === "" ? undefined : token)
        assert.isUndefined(bearerOf(token.startsWith("Bearer ") ? "" : token))
      }),
      { numRuns: 300 }
    ))
})
