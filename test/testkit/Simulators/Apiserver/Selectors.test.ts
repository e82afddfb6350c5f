import { assert, describe, it } from "@effect/vitest"
import { CoreEvents, Nodes, Pods } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import { fieldValue, parseSelection, selects, selectsAll } from "../../../../testkit/Simulators/Apiserver/Selectors.ts"
import { ok, refused } from "./fixtures.ts"

const pod = { metadata: { name: "a", namespace: "default", labels: { app: "web" } }, spec: { nodeName: "n1", hostNetwork: false } }

describe("selection of stored objects", () => {
  it("a bad label selector or a field the resource does not index is 400, label selector first", () => {
    assert.strictEqual(refused(parseSelection(Pods, { labelSelector: "a b (", fieldSelector: "nope=1" })).message, "unable to parse requirement: found 'a b (', expected: identifier")
    assert.strictEqual(refused(parseSelection(Nodes, { fieldSelector: "spec.nodeName=n1" })).message, "field label not supported: spec.nodeName")
  })

  it("selects by namespace (none or \"\": all), labels and fields together", () => {
    const both = ok(parseSelection(Pods, { labelSelector: "app=web", fieldSelector: "spec.nodeName=n1" }))
    assert.isTrue(selects(Pods, pod, "default", both))
    assert.isTrue(selects(Pods, pod, undefined, both))
    assert.isTrue(selects(Pods, pod, "", both))
    assert.isFalse(selects(Pods, pod, "other", both))
    assert.isFalse(selects(Pods, pod, "default", ok(parseSelection(Pods, { labelSelector: "app=db" }))))
    assert.isFalse(selects(Pods, pod, "default", ok(parseSelection(Pods, { fieldSelector: "spec.nodeName!=n1" }))))
    assert.isTrue(selectsAll(ok(parseSelection(Pods, {}))))
    assert.isFalse(selectsAll(both))
  })

  it("field values: booleans and numbers as text, an event's source is source.component, a missing field is empty", () => {
    assert.strictEqual(fieldValue(pod, "spec.hostNetwork"), "false")
    assert.strictEqual(fieldValue({ spec: { n: 3 } }, "spec.n"), "3")
    assert.strictEqual(fieldValue({ source: { component: "kubelet" } }, "source"), "kubelet")
    assert.strictEqual(fieldValue(pod, "status.phase"), "")
    assert.isTrue(selects(CoreEvents, { metadata: {}, source: { component: "kubelet" } }, undefined, ok(parseSelection(CoreEvents, { fieldSelector: "source=kubelet" }))))
  })
})
