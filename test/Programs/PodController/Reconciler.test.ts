import type { V1Pod } from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import { decide, failureEvent, failureReason, isNoWarmCapacity } from "../../../src/Programs/PodController/Reconciler.ts"
import type { Pod } from "../../../src/Schemas/Pod/Schema.ts"
import { ClaimFailed, MissingTemplate, SandboxLost } from "../../../src/Services/ProviderErrors.ts"
import { NoWarmCapacity, SandboxdUnreachable } from "../../../src/Services/SandboxdClient.ts"

const pod = (overrides: { uid?: string; image?: string; deleting?: boolean; running?: boolean; phase?: string } = {}): Pod => ({
  metadata: {
    namespace: "default",
    name: "p",
    uid: overrides.uid ?? "u1",
    resourceVersion: "5",
    ...(overrides.deleting === true ? { deletionTimestamp: new Date("2026-11-29T09:00:00Z") } : {})
  },
  spec: { containers: [{ name: "main", image: overrides.image ?? "python:3.12" }] },
  status: {
    phase: overrides.phase ?? (overrides.running === true ? "Running" : "Pending"),
    ...(overrides.running === true
      ? { containerStatuses: [{ name: "main", ready: true, restartCount: 0, image: "python:3.12", imageID: "x", state: { running: {} } }] }
      : {})
  }
})

const held = (p: Pod): Option.Option<V1Pod> => Option.some(p)

describe("Reconciler.decide", () => {
  it("maps (cached Pod, provider state) to one action", () => {
    const cases: ReadonlyArray<readonly [string, Option.Option<Pod>, Option.Option<V1Pod>, boolean, string]> = [
      ["gone, not tracked", Option.none(), Option.none(), false, "Forget"],
      ["gone, tracked", Option.none(), held(pod()), false, "Release"],
      ["deleting, nothing runs (a claim in doubt may still need settling)", Option.some(pod({ deleting: true })), held(pod()), false, "DeleteThenRemove"],
      ["deleting, running", Option.some(pod({ deleting: true, running: true })), held(pod()), false, "DeleteThenRemove"],
      ["terminal", Option.some(pod({ phase: "Failed" })), Option.none(), false, "Terminal"],
      ["tracked as is", Option.some(pod()), held(pod()), false, "LeaveAlone"],
      ["tracked, image changed", Option.some(pod({ image: "python:3.13" })), held(pod()), false, "Update"],
      ["tracked, last create failed", Option.some(pod()), held(pod()), true, "Create"],
      ["tracked under another UID", Option.some(pod({ uid: "u2" })), held(pod()), false, "Create"],
      ["new", Option.some(pod()), Option.none(), false, "Create"]
    ]
    for (const [what, cached, provider, failed, expected] of cases) {
      assert.strictEqual(decide(cached, provider, failed)._tag, expected, what)
    }
  })

  it("INF-1: a Pod there in a version the informer cannot decode is not gone: what the provider holds stays", () => {
    assert.strictEqual(decide(Option.none(), held(pod()), false, true)._tag, "LeaveAlone")
    assert.strictEqual(decide(Option.none(), Option.none(), false, true)._tag, "LeaveAlone", "nothing to settle for a Pod that is there")
    // with a last good Pod cached, that Pod is reconciled as before
    assert.strictEqual(decide(Option.some(pod()), held(pod()), false, true)._tag, "LeaveAlone")
    assert.strictEqual(decide(Option.some(pod({ image: "python:3.13" })), held(pod()), false, true)._tag, "Update")
    // but no VM is claimed from a last good version: the newest may say otherwise
    assert.strictEqual(decide(Option.some(pod()), Option.none(), false, true)._tag, "LeaveAlone", "new, unreadable now")
    assert.strictEqual(decide(Option.some(pod()), held(pod()), true, true)._tag, "LeaveAlone", "last create failed, unreadable now")
    assert.strictEqual(decide(Option.some(pod({ uid: "u2" })), held(pod()), false, true)._tag, "LeaveAlone", "another UID, unreadable now")
    // its deletion and its ending still run
    assert.strictEqual(decide(Option.some(pod({ deleting: true })), Option.none(), false, true)._tag, "DeleteThenRemove")
    assert.strictEqual(decide(Option.some(pod({ phase: "Failed" })), Option.none(), false, true)._tag, "Terminal")
  })

  it("NoWarmCapacity is found by its tag in the typed cause, nowhere else", () => {
    const noWarm = new ClaimFailed({ pod: "default/p", template: "python", cause: new NoWarmCapacity({ message: "none" }), message: "no warm" })
    const unreachable = new ClaimFailed({
      pod: "default/p",
      template: "python",
      cause: new SandboxdUnreachable({ operation: "claim", message: "refused" }),
      message: "refused"
    })
    assert.isTrue(isNoWarmCapacity(noWarm))
    assert.isFalse(isNoWarmCapacity(unreachable))
    assert.isFalse(isNoWarmCapacity(new MissingTemplate({ pod: "default/p", annotation: "sandbox.cocoonstack.io/template", message: "no template" })))
  })
})

describe("Reconciler: what a lost sandbox's create failure writes and records", () => {
  it("LEASE-10: a Lost row whose lease had run out is lease-expired (reason and Event), one lost early SandboxLost", () => {
    const lost = (podReason: "SandboxLost" | "SandboxLeaseExpired") =>
      new SandboxLost({ pod: "default/web", claimId: "sb_1", podReason, message: "gone" })
    assert.strictEqual(failureReason(lost("SandboxLeaseExpired")), "SandboxLeaseExpired")
    assert.deepStrictEqual(failureEvent(lost("SandboxLeaseExpired")), {
      reason: "LeaseExpired",
      message: "sandbox sb_1 lease ended; the microVM is reaped at the deadline"
    })
    assert.strictEqual(failureReason(lost("SandboxLost")), "SandboxLost")
    assert.deepStrictEqual(failureEvent(lost("SandboxLost")), {
      reason: "SandboxLost",
      message: "sandbox sb_1 is gone (sandboxd confirmed it); the pod is not given another"
    })
  })
})
