/**
 * Error mapping on the wire: each HTTP status becomes its typed error, and a 404's details are
 * the server's own, never filled in from the request.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { json, setup } from "../support/KubeRecorder.ts"

describe("Kube status mapping on the wire", () => {
  it.effect("a 404 carries the server's details, never the requested name", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({ status: 404, body: "nope", contentType: "text/plain" }))
      const plain = yield* Effect.flip(kube.getPod("ns", "p"))
      assert.strictEqual(plain._tag, "KubeNotFound")
      assert.isFalse("details" in plain)
      rec.setHandler(() =>
        json(404, { kind: "Status", reason: "NotFound", code: 404, message: "pods \"q\" not found", details: { name: "q", kind: "pods" } })
      )
      const other = yield* Effect.flip(kube.getPod("ns", "p"))
      assert.deepStrictEqual(other._tag === "KubeNotFound" ? other.details : undefined, { name: "q", kind: "pods" })
    }))

  it.effect("status codes map to typed errors; 401 and 5xx are KubeUnavailable with the status", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const cases: ReadonlyArray<readonly [number, string]> = [
        [409, "KubeConflict"],
        [410, "KubeGone"],
        [403, "KubeForbidden"],
        [422, "KubeInvalid"],
        [400, "KubeInvalid"],
        [401, "KubeUnavailable"],
        [429, "KubeUnavailable"],
        [503, "KubeUnavailable"]
      ]
      for (const [code, tag] of cases) {
        rec.setHandler(() => json(code, { kind: "Status", code, reason: "AlreadyExists", message: `m${code}` }))
        const error = yield* Effect.flip(kube.getNode("vk"))
        assert.strictEqual(error._tag, tag, `HTTP ${code}`)
        if (error._tag === "KubeUnavailable") assert.strictEqual(error.status, code)
        if (error._tag === "KubeConflict") assert.strictEqual(error.reason, "AlreadyExists")
      }
    }))
})
