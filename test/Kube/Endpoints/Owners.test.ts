/**
 * The owner GET on the wire: AUTH-3 — owner GET, a quorum read with no query; AUTH-4 — what counts
 * as gone: a 404's details kept only from a Status about the resource asked for.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { json, setup } from "../../support/KubeRecorder.ts"

describe("Kube owner endpoint on the wire", () => {
  it.effect("getOwner: details only from a Status body; plain text and other shapes have none", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const ref = { group: "apps", version: "v1", plural: "replicasets", namespace: "ns", name: "rs" }
      rec.setHandler(() => ({ status: 404, body: "404 page not found\n", contentType: "text/plain" }))
      const plain = yield* Effect.flip(kube.getOwner(ref))
      assert.strictEqual(plain._tag, "KubeNotFound")
      assert.isFalse("details" in plain)
      assert.strictEqual(plain.message, "404 page not found")
      assert.strictEqual(rec.requests[0]!.url.pathname, "/apis/apps/v1/namespaces/ns/replicasets/rs")

      rec.setHandler(() => json(404, { kind: "Status", status: "Failure", reason: "NotFound", code: 404, details: {} }))
      const emptyDetails = yield* Effect.flip(kube.getOwner(ref))
      assert.isFalse("details" in emptyDetails)

      // a body with details that is not a Status is not trusted
      rec.setHandler(() => json(404, { kind: "Other", details: { name: "rs" } }))
      const otherShape = yield* Effect.flip(kube.getOwner(ref))
      assert.isFalse("details" in otherShape)

      rec.setHandler(() =>
        json(404, {
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          reason: "NotFound",
          code: 404,
          message: "replicasets.apps \"rs\" not found",
          details: { name: "rs", group: "apps", kind: "replicasets", causes: [] }
        })
      )
      const structured = yield* Effect.flip(kube.getOwner(ref))
      assert.strictEqual(structured._tag, "KubeNotFound")
      assert.deepStrictEqual(structured._tag === "KubeNotFound" ? structured.details : undefined, {
        name: "rs",
        group: "apps",
        kind: "replicasets"
      })

      // a Status about another resource, even one naming the requested name, is not the owner's NotFound
      const foreign = [
        { name: "rs", group: "apps", kind: "deployments" },
        { name: "rs", group: "other.example.com", kind: "replicasets" },
        { name: "rs", kind: "replicasets" },
        { name: "rs", group: "apps" }
      ]
      for (const details of foreign) {
        rec.setHandler(() => json(404, { kind: "Status", status: "Failure", reason: "NotFound", code: 404, message: "not found", details }))
        const other = yield* Effect.flip(kube.getOwner(ref))
        assert.strictEqual(other._tag, "KubeNotFound")
        assert.isFalse("details" in other, JSON.stringify(details))
      }
      // the core group is omitted from details by the real server
      rec.setHandler(() => json(404, { kind: "Status", reason: "NotFound", code: 404, message: "not found", details: { name: "rc", kind: "replicationcontrollers" } }))
      const core = yield* Effect.flip(kube.getOwner({ group: "", version: "v1", plural: "replicationcontrollers", namespace: "ns", name: "rc" }))
      assert.deepStrictEqual(core._tag === "KubeNotFound" ? core.details : undefined, { name: "rc", kind: "replicationcontrollers" })

      rec.setHandler(() => json(200, { metadata: { uid: "u-1", deletionTimestamp: "2026-11-29T09:00:00Z" }, spec: {} }))
      const owner = yield* kube.getOwner({ group: "", version: "v1", plural: "replicationcontrollers", namespace: "ns", name: "rc" })
      assert.strictEqual(rec.requests.at(-1)!.url.pathname, "/api/v1/namespaces/ns/replicationcontrollers/rc")
      assert.strictEqual(owner.uid, "u-1")
      assert.strictEqual(owner.deletionTimestamp, "2026-11-29T09:00:00Z")
      assert.deepStrictEqual(owner.raw, { metadata: { uid: "u-1", deletionTimestamp: "2026-11-29T09:00:00Z" }, spec: {} })
      // AUTH-3: every owner read is a quorum read: no resourceVersion (with one, even "0", the
      // server may answer from its watch cache, an owner deleted a moment ago still alive).
      assert.isAbove(rec.requests.length, 5)
      for (const request of rec.requests) assert.strictEqual(request.url.search, "", request.url.pathname)
    }))
})
