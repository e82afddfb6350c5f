import { assert, describe, it } from "@effect/vitest"
import { goesNow, markForDeletion, preconditionConflict } from "../../../../testkit/Simulators/Apiserver/Deletion.ts"
import { Leases, Pods } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"

const now = () => Date.parse("2026-07-27T02:00:00Z")
const metaOf = (o: JsonObject) => o["metadata"] as Record<string, unknown>
const marked = (mark: ReturnType<typeof markForDeletion>) => {
  if (mark._tag !== "Marked") assert.fail(`expected Marked, got ${mark._tag}`)
  return metaOf(mark.next)
}
const boundPod = { metadata: { name: "p", uid: "u1", resourceVersion: "5", generation: 1 }, spec: { nodeName: "n1", terminationGracePeriodSeconds: 30 } }

describe("deletion", () => {
  it("preconditions: uid first, then resourceVersion, each a 409 naming the Kind", () => {
    assert.isUndefined(preconditionConflict(Pods, "p", boundPod, { uid: "u1", resourceVersion: "5" }))
    const uid = preconditionConflict(Pods, "p", boundPod, { uid: "u2", resourceVersion: "4" })
    assert.strictEqual(uid?.message, "Operation cannot be fulfilled on Pod \"p\": the UID in the precondition (u2) does not match the UID in record (u1). The object might have been deleted and then recreated")
    assert.match(preconditionConflict(Pods, "p", boundPod, { resourceVersion: "4" })?.message ?? "", /the ResourceVersion in the precondition \(4\)/)
  })

  it("a pod is always marked first: deletionTimestamp now + grace, the grace, generation bumped (grace 0 too)", () => {
    const m = marked(markForDeletion(Pods, boundPod, undefined, now))
    assert.strictEqual(m["deletionTimestamp"], "2026-07-27T02:00:30Z")
    assert.strictEqual(m["deletionGracePeriodSeconds"], 30)
    assert.strictEqual(m["generation"], 2)
    assert.strictEqual(marked(markForDeletion(Pods, boundPod, 0, now))["deletionGracePeriodSeconds"], 0)
    assert.strictEqual(marked(markForDeletion(Pods, boundPod, -7, now))["deletionGracePeriodSeconds"], 1)
  })

  it("a pod being deleted: only a shorter grace moves the deadline, computed from the original start", () => {
    const deleting = { ...boundPod, metadata: { ...boundPod.metadata, deletionTimestamp: "2026-07-27T02:00:30Z", deletionGracePeriodSeconds: 30 } }
    assert.strictEqual(markForDeletion(Pods, deleting, undefined, now)._tag, "Unchanged")
    assert.strictEqual(markForDeletion(Pods, deleting, 30, now)._tag, "Unchanged")
    const shorter = marked(markForDeletion(Pods, deleting, 10, now))
    assert.strictEqual(shorter["deletionTimestamp"], "2026-07-27T02:00:10Z")
    assert.strictEqual(shorter["deletionGracePeriodSeconds"], 10)
  })

  it("other resources: marked with grace 0 only while finalizers hold them, else not marked", () => {
    assert.strictEqual(markForDeletion(Leases, { metadata: { name: "l" } }, 30, now)._tag, "Unmarked")
    const held = marked(markForDeletion(Leases, { metadata: { name: "l", finalizers: ["x"] } }, 30, now))
    assert.strictEqual(held["deletionTimestamp"], "2026-07-27T02:00:00Z")
    assert.strictEqual(held["deletionGracePeriodSeconds"], 0)
  })

  it("goes now: no finalizer and no grace left", () => {
    assert.isTrue(goesNow({ metadata: {} }))
    assert.isTrue(goesNow({ metadata: { deletionGracePeriodSeconds: 0 } }))
    assert.isFalse(goesNow({ metadata: { deletionGracePeriodSeconds: 30 } }))
    assert.isFalse(goesNow({ metadata: { deletionGracePeriodSeconds: 0, finalizers: ["x"] } }))
  })
})
