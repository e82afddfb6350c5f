import { assert, describe, it } from "@effect/vitest"
import {
  bindPod,
  dropEmptyStatusStrings,
  isIP,
  keepOnStatusWrite,
  podDefaults,
  podErrors,
  podGracePeriod,
  podUpdateErrors,
  syncPodIPs,
  truncatePodTimes
} from "../../../../testkit/Simulators/Apiserver/Pods.ts"
import type { JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"

const container = { name: "agent", image: "img:1" }

describe("pod strategy", () => {
  it("create: spec defaults under the given spec, status reset to Pending with the QoS class", () => {
    const pod: JsonObject = { spec: { containers: [container], restartPolicy: "Never" }, status: { phase: "Running" } }
    podDefaults(pod)
    assert.strictEqual((pod["spec"] as JsonObject)["restartPolicy"], "Never")
    assert.strictEqual((pod["spec"] as JsonObject)["terminationGracePeriodSeconds"], 30)
    assert.deepStrictEqual(pod["status"], { phase: "Pending", qosClass: "BestEffort" })
    const sized: JsonObject = { spec: { containers: [{ ...container, resources: { limits: { cpu: "1" } } }] } }
    podDefaults(sized)
    assert.deepStrictEqual(sized["status"], { phase: "Pending", qosClass: "Burstable" })
  })

  it("validation: a container, IPs that are IPs, hostIPs starting with hostIP", () => {
    assert.isTrue(isIP("10.0.0.1") && isIP("fe80::1") && isIP("::ffff:10.0.0.1"))
    assert.isFalse(isIP("10.0.0.256") || isIP("host") || isIP("1::2::3"))
    assert.deepStrictEqual(podErrors({ spec: {} }).map((e) => e.field), ["spec.containers"])
    const status = { podIPs: [{ ip: "10.0.0.1" }, { ip: "nope" }], hostIP: "10.1.0.1", hostIPs: [{ ip: "10.1.0.2" }] }
    assert.deepStrictEqual(podErrors({ spec: { containers: [container] }, status }).map((e) => e.field), ["status.podIPs[1]", "status.hostIPs[0].ip"])
  })

  it("update: only images, activeDeadlineSeconds, tolerations and the grace period may change in the spec", () => {
    const old = { spec: { containers: [container], nodeName: "n1" } }
    assert.deepStrictEqual(podUpdateErrors({ spec: { containers: [{ ...container, image: "img:2" }], nodeName: "n1", activeDeadlineSeconds: 5 } }, old), [])
    assert.deepStrictEqual(podUpdateErrors({ spec: { containers: [container], nodeName: "n2" } }, old).map((e) => e.field), ["spec"])
  })

  it("podIP and podIPs[0] agree after decoding (podIP wins); status times keep whole seconds", () => {
    const a: JsonObject = { status: { podIP: "10.0.0.2", podIPs: [{ ip: "10.0.0.1" }] } }
    syncPodIPs(a)
    assert.deepStrictEqual(a["status"], { podIP: "10.0.0.2", podIPs: [{ ip: "10.0.0.2" }] })
    const b: JsonObject = { status: { podIPs: [{ ip: "10.0.0.3" }] } }
    syncPodIPs(b)
    assert.strictEqual((b["status"] as JsonObject)["podIP"], "10.0.0.3")
    const c: JsonObject = { status: { startTime: "2026-07-27T02:00:00.999Z", conditions: [{ lastTransitionTime: "2026-07-27T02:00:01.5+02:00", message: "x.5Z" }] } }
    truncatePodTimes(c)
    assert.deepStrictEqual(c["status"], { startTime: "2026-07-27T02:00:00Z", conditions: [{ lastTransitionTime: "2026-07-27T00:00:01Z", message: "x.5Z" }] })
  })

  it("a top-level status string written as \"\" is served as absent (omitempty); non-empty strings and other fields stay", () => {
    const pod: JsonObject = {
      status: { phase: "Running", hostIP: "", podIP: "", message: "", reason: "", nominatedNodeName: "", qosClass: "", conditions: [{ type: "Ready", status: "True" }] }
    }
    dropEmptyStatusStrings(pod)
    assert.deepStrictEqual(pod["status"], { phase: "Running", conditions: [{ type: "Ready", status: "True" }] })
  })

  it("grace period: as asked, else the pod's; 0 when never scheduled or terminal; negative means 1", () => {
    const bound = { spec: { nodeName: "n1", terminationGracePeriodSeconds: 20 }, status: { phase: "Running" } }
    assert.strictEqual(podGracePeriod(bound, undefined), 20)
    assert.strictEqual(podGracePeriod(bound, 5), 5)
    assert.strictEqual(podGracePeriod(bound, -3), 1)
    assert.strictEqual(podGracePeriod({ spec: { nodeName: "n1" } }, undefined), 30)
    assert.strictEqual(podGracePeriod({ spec: {} }, 20), 0)
    assert.strictEqual(podGracePeriod({ ...bound, status: { phase: "Succeeded" } }, 20), 0)
  })

  it("a status write keeps the stored ownerReferences and QoS class", () => {
    const stored = { metadata: { ownerReferences: [{ uid: "u" }] }, status: { qosClass: "Burstable" } }
    const next: JsonObject = { metadata: { ownerReferences: [{ uid: "forged" }], labels: { a: "1" } }, status: { phase: "Running", qosClass: "Guaranteed" } }
    keepOnStatusWrite(next, stored)
    assert.deepStrictEqual(next, { metadata: { ownerReferences: [{ uid: "u" }], labels: { a: "1" } }, status: { phase: "Running", qosClass: "Burstable" } })
    const noRefs: JsonObject = { metadata: { ownerReferences: [{ uid: "x" }] } }
    keepOnStatusWrite(noRefs, { metadata: {} })
    assert.deepStrictEqual(noRefs, { metadata: {} })
  })

  it("binding: sets spec.nodeName once; an assigned or deleting pod is 409 on pods/binding", () => {
    const bound = bindPod({ metadata: { name: "p" }, spec: { containers: [container] } }, "p", "n1")
    assert.strictEqual(bound._tag === "Bound" ? (bound.pod["spec"] as JsonObject)["nodeName"] : undefined, "n1")
    const again = bindPod({ metadata: {}, spec: { nodeName: "n1" } }, "p", "n2")
    assert.strictEqual(again._tag === "Refused" ? again.error.message : "", "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n1\"")
    const deleting = bindPod({ metadata: { deletionTimestamp: "2026-07-27T02:00:00Z" }, spec: {} }, "p", "n1")
    assert.strictEqual(deleting._tag === "Refused" ? deleting.error.code : 0, 409)
  })
})
