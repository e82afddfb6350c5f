import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { jsonMergePatch, jsonPatch, strategicMerge } from "../../../../testkit/Simulators/Apiserver/Patch.ts"
import { parseFieldSelector, parseLabelSelector } from "../../../../testkit/Simulators/Apiserver/Selectors.ts"
import { ok, refused } from "./fixtures.ts"

describe("strategic merge patch", () => {
  it.effect("maps merge, null deletes, finalizers merge as a set, ownerReferences merge by uid", () =>
    Effect.gen(function*() {
      const original = {
        metadata: {
          labels: { a: "1", b: "2" },
          finalizers: ["x"],
          ownerReferences: [{ uid: "u1", name: "one" }, { uid: "u2", name: "two" }]
        },
        spec: { tolerations: [{ key: "k1" }, { key: "k2" }] }
      }
      const out = ok(strategicMerge(original, {
        metadata: {
          labels: { a: null, c: "3" },
          finalizers: ["y", "x"],
          ownerReferences: [{ uid: "u2", name: "TWO" }, { uid: "u1", "$patch": "delete" }],
          "$deleteFromPrimitiveList/finalizers": ["x"]
        },
        spec: { tolerations: [{ key: "k3" }] }
      }))
      assert.deepStrictEqual(out, {
        metadata: { labels: { b: "2", c: "3" }, finalizers: ["y"], ownerReferences: [{ uid: "u2", name: "TWO" }] },
        spec: { tolerations: [{ key: "k3" }] } // no merge key: replaced whole
      })
    }))

  it.effect("$patch: replace on a map and $retainKeys", () =>
    Effect.gen(function*() {
      const original = { status: { capacity: { cpu: "1", pods: "10" }, nodeInfo: { a: "1", b: "2" } } }
      const out = ok(strategicMerge(original, {
        status: { capacity: { pods: "20", "$patch": "replace" }, nodeInfo: { "$retainKeys": ["b"], b: "3" } }
      }))
      assert.deepStrictEqual(out, { status: { capacity: { pods: "20" }, nodeInfo: { b: "3" } } })
    }))

  it.effect("a patch that is not an object is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(refused(strategicMerge({}, [1])).code, 400)
    }))
})

describe("JSON merge patch and JSON patch", () => {
  it.effect("merge patch replaces lists and deletes with null", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(jsonMergePatch({ a: [1, 2], b: { c: 1, d: 2 } }, { a: [3], b: { c: null } }), { a: [3], b: { d: 2 } })
    }))

  it.effect("add, remove, replace, test, move, copy; failures are 422", () =>
    Effect.gen(function*() {
      const doc = { a: { b: [1, 2] }, c: "x" }
      const out = ok(jsonPatch(doc, [
        { op: "add", path: "/a/b/-", value: 3 },
        { op: "remove", path: "/a/b/0" },
        { op: "replace", path: "/c", value: "y" },
        { op: "test", path: "/c", value: "y" },
        { op: "copy", from: "/c", path: "/d" },
        { op: "move", from: "/d", path: "/e~1f" }
      ]))
      assert.deepStrictEqual(out, { a: { b: [2, 3] }, c: "y", "e/f": "y" })
      assert.deepStrictEqual(doc, { a: { b: [1, 2] }, c: "x" }) // the input is not touched
      assert.strictEqual(refused(jsonPatch(doc, [{ op: "test", path: "/c", value: "nope" }])).code, 422)
      assert.strictEqual(refused(jsonPatch(doc, [{ op: "replace", path: "/missing", value: 1 }])).code, 422)
      assert.strictEqual(refused(jsonPatch(doc, { op: "add" })).code, 400)
    }))
})

describe("selectors", () => {
  it.effect("label selector syntax errors and field selector operators", () =>
    Effect.gen(function*() {
      assert.strictEqual(refused(parseLabelSelector("a in (b")).code, 400)
      assert.strictEqual(refused(parseLabelSelector("=x")).code, 400)
      assert.deepStrictEqual(ok(parseLabelSelector(" a = b , !c ")), [{ op: "=", key: "a", value: "b" }, { op: "!exists", key: "c" }])
      assert.deepStrictEqual(ok(parseFieldSelector("spec.nodeName==n1,metadata.name!=x", ["spec.nodeName", "metadata.name"])), [
        { field: "spec.nodeName", op: "=", value: "n1" },
        { field: "metadata.name", op: "!=", value: "x" }
      ])
      assert.strictEqual(ok(parseFieldSelector("spec.nodeName=", ["spec.nodeName"]))[0].value, "")
    }))
})
