/**
 * Error mapping on the wire: each HTTP status becomes its typed error, and a 404's details are
 * the server's own, never filled in from the request.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { errorFromResponse, notJson } from "../../src/Kube/Status.ts"
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

describe("Kube error text from outside", () => {
  const token = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dmsifQ.c2lnbmF0dXJlc2lnbmF0dXJl"

  it("a proxy's error page echoing the request's bearer token: the message quotes it scrubbed", () => {
    const error = errorFromResponse("getPod", 502, `bad gateway: upstream refused (Authorization: Bearer ${token})\n<html>`)
    assert.notInclude(error.message, token)
    assert.include(error.message, "bad gateway: upstream refused")
  })

  it("a list or watch body that is not one: the quoted head carries no credential-shaped field", () => {
    const head = `{"kind":"PodList","items":[{"metadata":{"name":"p","annotations":{"example.com/api_token":"tok-${"a".repeat(12)}","sig":"${token}"}}}],"metadata":7}`
    const error = notJson("listPods", 200, head)
    assert.notInclude(error.message, token)
    assert.notInclude(error.message, `tok-${"a".repeat(12)}`)
    assert.include(error.message, `"kind":"PodList"`)
  })
})
