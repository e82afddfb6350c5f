/**
 * One Pod's endpoints on the wire: a read and a status PUT (no spec, no deletion grace, ST-06 —
 * status write shape), and a delete with grace 0 and the UID precondition.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { json, served, setup, slim } from "../../support/KubeRecorder.ts"

describe("Kube Pod endpoints on the wire", () => {
  it.effect("a read and a status write's reply carrying the apiserver's nulls read them as absent; the PUT has no spec, no deletion grace", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, served))
      assert.deepStrictEqual(yield* kube.getPod("x", "a"), slim)
      assert.deepStrictEqual(yield* kube.replacePodStatus(slim), slim)
      // ST-06: the PUT carries metadata and status, no spec (the server keeps the stored one)
      const put = rec.requests.at(-1)!
      assert.strictEqual(put.method, "PUT")
      assert.deepStrictEqual(Object.keys(JSON.parse(put.body)).sort(), ["apiVersion", "kind", "metadata", "status"])
      // ... and no deletion grace (int64, past 2^53 not a double's): the server keeps the stored one
      const deleting = {
        ...slim,
        metadata: { ...slim.metadata, deletionTimestamp: new Date("2026-01-02T03:04:05Z"), deletionGracePeriodSeconds: 2 ** 53 }
      }
      yield* kube.replacePodStatus(deleting)
      const graced = JSON.parse(rec.requests.at(-1)!.body) as { readonly metadata: Record<string, unknown> }
      assert.deepStrictEqual(graced.metadata, { name: "a", namespace: "x", resourceVersion: "9", deletionTimestamp: "2026-01-02T03:04:05Z" })
    }))

  it.effect("deletePod sends grace 0 and the UID precondition in DeleteOptions", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { apiVersion: "v1", kind: "Pod", metadata: { name: "p" } }))
      yield* kube.deletePod("ns", "p", "uid-1")
      const sent = rec.requests[0]!
      assert.strictEqual(sent.method, "DELETE")
      assert.strictEqual(sent.url.pathname, "/api/v1/namespaces/ns/pods/p")
      assert.deepStrictEqual(JSON.parse(sent.body), {
        apiVersion: "v1",
        kind: "DeleteOptions",
        gracePeriodSeconds: 0,
        preconditions: { uid: "uid-1" }
      })
    }))
})
