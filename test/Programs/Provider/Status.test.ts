import { assert, describe, it } from "@effect/vitest"
import { DateTime, Option } from "effect"
import {
  leaseExpiredStatus,
  pendingStatus,
  runningPod,
  runningStatus
} from "../../../src/Programs/Provider/Status.ts"
import { pod, record } from "./harness.ts"

const claimedAt = DateTime.makeUnsafe("2026-07-27T02:15:00.250Z")
const deadline = DateTime.makeUnsafe("2026-07-28T02:15:00.900Z")
const claim = record("sb_0123456789abcdef", { claimedAt, deadline, address: "10.0.0.5:7777" })

describe("status builders (CRT-20, CRT-21, LEASE-3, UPD-4)", () => {
  it("Running: exact fields, nothing else", () => {
    const status = runningStatus(pod("web"), claim, { _tag: "OwnerAddr", ip: "10.0.0.5" })
    assert.deepStrictEqual(status, {
      phase: "Running",
      hostIP: "10.0.0.5",
      podIP: "10.0.0.5",
      podIPs: [{ ip: "10.0.0.5" }],
      startTime: DateTime.toDateUtc(claimedAt),
      // each condition turned True when the claim was made (a workload's minReadySeconds counts from it)
      conditions: [
        { type: "Initialized", status: "True", lastTransitionTime: DateTime.toDateUtc(claimedAt) },
        { type: "Ready", status: "True", lastTransitionTime: DateTime.toDateUtc(claimedAt) },
        { type: "PodScheduled", status: "True", lastTransitionTime: DateTime.toDateUtc(claimedAt) }
      ],
      containerStatuses: [
        {
          name: "main",
          ready: true,
          state: { running: { startedAt: DateTime.toDateUtc(claimedAt) } },
          image: "python:3.12",
          imageID: "sandboxd://sb_0123456789abcdef",
          restartCount: 0
        },
        {
          name: "sidecar",
          ready: true,
          state: { running: { startedAt: DateTime.toDateUtc(claimedAt) } },
          image: "busybox",
          imageID: "sandboxd://sb_0123456789abcdef",
          restartCount: 0
        }
      ]
    })
  })

  it("Running on a VM adopted from an earlier Pod: the conditions date from this Pod's creation, not the claim (CRT-21)", () => {
    const adopter = pod("web")
    const created = new Date("2026-07-27T05:00:00Z")
    adopter.metadata = { ...adopter.metadata, creationTimestamp: created }
    const status = runningStatus(adopter, claim, { _tag: "OwnerAddr", ip: "10.0.0.5" })
    assert.deepStrictEqual(status.conditions?.map((c) => c.lastTransitionTime), [created, created, created])
    assert.deepStrictEqual(status.startTime, DateTime.toDateUtc(claimedAt))
    // A Pod made before its claim (the usual case) keeps the claim time.
    adopter.metadata = { ...adopter.metadata, creationTimestamp: new Date("2026-07-27T02:14:59Z") }
    const usual = runningStatus(adopter, claim, { _tag: "OwnerAddr", ip: "10.0.0.5" })
    assert.deepStrictEqual(usual.conditions?.map((c) => c.lastTransitionTime), Array(3).fill(DateTime.toDateUtc(claimedAt)))
  })

  it("Running without any usable IP: no podIP/podIPs, no hostIP (ST-13)", () => {
    const status = runningStatus(pod("web"), claim, { _tag: "None" })
    assert.isFalse("hostIP" in status, "an empty hostIP is stored as none")
    assert.isUndefined(status.podIP)
    assert.isUndefined(status.podIPs)
  })

  it("the pushed Pod is a copy with the claim-id annotation; the input is untouched", () => {
    const input = pod("web")
    const pushed = runningPod(input, claim, { _tag: "NodeIp", ip: "192.168.1.9" })
    assert.strictEqual(pushed.metadata?.annotations?.["sandbox.cocoonstack.io/claim-id"], claim.id)
    assert.strictEqual(pushed.metadata?.annotations?.["sandbox.cocoonstack.io/template"], "python")
    assert.strictEqual(pushed.status?.podIP, "192.168.1.9")
    assert.isUndefined(input.metadata?.annotations?.["sandbox.cocoonstack.io/claim-id"])
    assert.strictEqual(input.status?.phase, "Pending")
    const bare = runningPod({ metadata: { name: "x", namespace: "y" }, spec: { containers: [] } }, claim, { _tag: "None" })
    assert.deepStrictEqual(bare.metadata?.annotations, { "sandbox.cocoonstack.io/claim-id": claim.id })
  })

  it("Pending keeps the Pod's own status and only forces the phase", () => {
    const input = pod("web")
    input.status = { phase: "Failed", reason: "ProviderFailed", message: "no capacity" }
    assert.deepStrictEqual(pendingStatus(input), { phase: "Pending", reason: "ProviderFailed", message: "no capacity" })
    assert.deepStrictEqual(pendingStatus({ metadata: {} }), { phase: "Pending" })
  })

  it("lease expired: Failed, terminated containers at the deadline, no IPs or conditions; deadline at second precision", () => {
    const status = leaseExpiredStatus(pod("web"), claim)
    assert.strictEqual(status.phase, "Failed")
    assert.strictEqual(status.reason, "SandboxLeaseExpired")
    assert.include(status.message, "2026-07-28T02:15:00Z")
    assert.deepStrictEqual(status.startTime, DateTime.toDateUtc(claimedAt))
    assert.isUndefined(status.conditions)
    assert.isUndefined(status.hostIP)
    assert.isUndefined(status.podIP)
    assert.deepStrictEqual(status.containerStatuses?.[0], {
      name: "main",
      ready: false,
      state: { terminated: { exitCode: 1, reason: "SandboxLeaseExpired", finishedAt: DateTime.toDateUtc(deadline) } },
      image: "python:3.12",
      imageID: "sandboxd://sb_0123456789abcdef",
      restartCount: 0
    })
    assert.isUndefined(status.containerStatuses?.[0]?.state?.terminated?.startedAt)
    const noDeadline = leaseExpiredStatus(pod("web"), { ...claim, deadline: Option.none() })
    assert.isUndefined(noDeadline.containerStatuses?.[0]?.state?.terminated?.finishedAt)
  })
})
