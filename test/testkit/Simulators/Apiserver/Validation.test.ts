import { assert, describe, it } from "@effect/vitest"
import { CoreEvents, Leases, Namespaces, Nodes, Pods } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import type { StatusBody } from "../../../../testkit/Simulators/Apiserver/Status.ts"
import {
  admitNamespace,
  checkKind,
  decodeCheck,
  microTimeError,
  ownerReferenceErrors,
  validate,
  validateName
} from "../../../../testkit/Simulators/Apiserver/Validation.ts"

const ref = (name: string, controller?: boolean) => ({ apiVersion: "apps/v1", kind: "ReplicaSet", name, uid: `uid-${name}`, ...(controller === undefined ? {} : { controller }) })
const causes = (status: StatusBody | undefined) => status?.details?.causes?.map((c) => c.field)

describe("decoding checks", () => {
  it("a body's apiVersion and kind must be the resource's; missing ones are filled in", () => {
    const body: Record<string, unknown> = {}
    assert.isUndefined(checkKind(Pods, body))
    assert.deepStrictEqual(body, { apiVersion: "v1", kind: "Pod" })
    assert.strictEqual(checkKind(Pods, { apiVersion: "apps/v1" })?.message, "the API version in the data (apps/v1) does not match the expected API version (v1)")
    assert.strictEqual(checkKind(Pods, { kind: "Node" })?.code, 400)
  })

  it("MicroTime takes exactly six fractional digits; anything else is a 400 decode error on leases and events", () => {
    assert.isUndefined(microTimeError("2026-07-27T02:00:00.123456Z"))
    assert.isUndefined(microTimeError("2026-07-27T02:00:00.123456+02:00"))
    assert.match(microTimeError("2026-07-27T02:00:00Z") ?? "", /cannot parse "Z" as ".000000"/)
    assert.match(microTimeError("2026-07-27T02:00:00.123Z") ?? "", /cannot parse ".123Z" as ".000000"/)
    assert.match(microTimeError("yesterday") ?? "", /as "2006"/)
    assert.strictEqual(decodeCheck(Leases, { spec: { renewTime: "2026-07-27T02:00:00Z" } })?.code, 400)
    assert.isUndefined(decodeCheck(Leases, { spec: { renewTime: null } }))
    assert.match(decodeCheck(CoreEvents, { eventTime: 5 })?.message ?? "", /cannot unmarshal number/)
    assert.isUndefined(decodeCheck(Pods, { spec: { renewTime: "bad" } }))
  })
})

describe("admission and validation", () => {
  it("names: a DNS subdomain for objects, a DNS label for namespaces", () => {
    assert.isUndefined(validateName(Nodes, "node.example.com"))
    assert.strictEqual(validateName(Namespaces, "a.b")?.code, 422)
    assert.strictEqual(validateName(Pods, "Upper")?.code, 422)
    assert.strictEqual(validateName(Pods, "a".repeat(254))?.code, 422)
  })

  it("NamespaceLifecycle: 404 for a missing namespace, 403 for one being deleted, nothing for cluster scope", () => {
    assert.strictEqual(admitNamespace(Pods, undefined, "gone", "a")?.code, 404)
    assert.strictEqual(admitNamespace(Pods, { metadata: { deletionTimestamp: "2026-07-27T02:00:00Z" } }, "ending", "a")?.code, 403)
    assert.isUndefined(admitNamespace(Pods, { metadata: {} }, "default", "a"))
    assert.isUndefined(admitNamespace(Nodes, undefined, "", "n"))
  })

  it("ownerReferences: each names apiVersion, kind, name and uid; a second controller is refused with both named", () => {
    assert.deepStrictEqual(ownerReferenceErrors([ref("a", true), ref("b", false)]), [])
    const two = ownerReferenceErrors([ref("a", true), ref("b", true)])
    assert.strictEqual(two.length, 1)
    assert.strictEqual(two[0].field, "metadata.ownerReferences")
    assert.strictEqual(two[0].detail, "Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and ReplicaSet/b")
    assert.deepStrictEqual(ownerReferenceErrors([{}]).map((e) => e.field), [
      "metadata.ownerReferences.apiVersion",
      "metadata.ownerReferences.kind",
      "metadata.ownerReferences.name",
      "metadata.ownerReferences.uid"
    ])
  })

  it("validate reports every error in one 422, metadata first, and forbids a new finalizer on an object being deleted", () => {
    const bad = validate(Pods, { metadata: { name: "p", ownerReferences: [ref("a", true), ref("b", true)] }, spec: {} }, undefined)
    assert.strictEqual(bad?.code, 422)
    assert.deepStrictEqual(causes(bad?.status), ["metadata.ownerReferences", "spec.containers"])
    const deleting = { metadata: { name: "n", deletionTimestamp: "2026-07-27T02:00:00Z", finalizers: ["a"] } }
    const added = validate(Nodes, { metadata: { ...deleting.metadata, finalizers: ["a", "b", "c"] } }, deleting)
    assert.deepStrictEqual(causes(added?.status), ["metadata.finalizers"])
    assert.strictEqual(
      added?.message,
      "Node \"n\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"b\", \"c\"}"
    )
    assert.isUndefined(validate(Nodes, { metadata: { ...deleting.metadata, finalizers: [] } }, deleting))
  })
})
