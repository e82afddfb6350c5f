import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import { controllerRefsOf, ownerGvrOf, pluralOf } from "../../../src/Programs/Authorization/OwnerGvr.ts"

describe("pluralOf (AUTH-5)", () => {
  const vectors: ReadonlyArray<readonly [string, string]> = [
    ["Sandbox", "sandboxes"],
    ["CocoonSet", "cocoonsets"],
    ["ReplicaSet", "replicasets"],
    ["Policy", "policies"],
    ["Gateway", "gateways"],
    ["Batch", "batches"],
    ["Class", "classes"],
    ["Mesh", "meshes"],
    ["Quiz", "quizes"],
    ["Y", "ys"],
    ["Day", "days"]
  ]
  for (const [kind, plural] of vectors) {
    it(`${kind} → ${plural}`, () => assert.strictEqual(pluralOf(kind), plural))
  }
})

describe("ownerGvrOf (AUTH-1 rule 3)", () => {
  const ref = (apiVersion: string, kind: string): V1OwnerReference => ({ apiVersion, kind, name: "o", uid: "u" })
  it("splits group/version", () =>
    assert.deepStrictEqual(
      ownerGvrOf(ref("agents.x-k8s.io/v1beta1", "Sandbox")),
      Option.some({ group: "agents.x-k8s.io", version: "v1beta1", plural: "sandboxes" })
    ))
  it("a bare version is the core group", () =>
    assert.deepStrictEqual(ownerGvrOf(ref("v1", "Pod")), Option.some({ group: "", version: "v1", plural: "pods" })))
  it("more than one slash is unresolvable", () => assert.isTrue(Option.isNone(ownerGvrOf(ref("a/b/c", "Sandbox")))))
  it("an empty kind is unresolvable", () => assert.isTrue(Option.isNone(ownerGvrOf(ref("apps/v1", "")))))
  it("an empty group or version is unresolvable", () => {
    assert.isTrue(Option.isNone(ownerGvrOf(ref("/v1", "Sandbox"))))
    assert.isTrue(Option.isNone(ownerGvrOf(ref("apps/", "Sandbox"))))
    assert.isTrue(Option.isNone(ownerGvrOf(ref("", "Sandbox"))))
  })
})

describe("controllerRefsOf", () => {
  const pod = (refs: ReadonlyArray<V1OwnerReference>): V1Pod => ({ metadata: { name: "p", ownerReferences: [...refs] } })
  it("takes every controller reference, in order", () => {
    const found = controllerRefsOf(pod([
      { apiVersion: "v1", kind: "A", name: "a", uid: "1" },
      { apiVersion: "v1", kind: "B", name: "b", uid: "2", controller: true },
      { apiVersion: "v1", kind: "C", name: "c", uid: "3", controller: true }
    ]))
    assert.deepStrictEqual(found.map((ref) => ref.name), ["b", "c"])
  })
  it("non-controller references only → bare", () =>
    assert.deepStrictEqual(controllerRefsOf(pod([{ apiVersion: "v1", kind: "A", name: "a", uid: "1", controller: false }])), []))
  it("no references → bare", () => assert.deepStrictEqual(controllerRefsOf({ metadata: { name: "p" } }), []))
})
