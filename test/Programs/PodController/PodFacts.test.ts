import type { V1Pod } from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Option, Redacted, Schema } from "effect"
import fc from "fast-check"
import { canonical, sameCanonical } from "../../../src/Programs/PodController/Canonical.ts"
import { ReadinessGatesNotReady, withoutReadiness } from "../../../src/Programs/PodController/Conditions.ts"
import { mergeProviderMap, pushedOf, statusWriteBody as bodyOption, statusWriteIsNoop, wireStatus } from "../../../src/Programs/PodController/StatusBody.ts"
import type { ClaimRecord } from "../../../src/Schemas/Claims.ts"
import type { ClaimId } from "../../../src/Schemas/Ids.ts"
import { decodePod } from "../../../src/Schemas/Pod/Decode.ts"
import { type Pod, PodStatus } from "../../../src/Schemas/Pod/Schema.ts"
import {
  leaseExpiredStatus,
  pendingStatus,
  runningStatus,
  sandboxLostStatus
} from "../../../src/Programs/Provider/Status.ts"

/** The clock's time of the writes below (epoch millis, not a whole second). */
const writeTime = Date.parse("2026-12-01T10:00:00.250Z")

/** The status write body at a fixed clock time (`now`, epoch millis). */
const statusWriteBody = (push: V1Pod, current: Pod, base: Pod | undefined, now = writeTime): Pod =>
  Option.getOrThrow(bodyOption(push, current, base, now))

const pod = (rv: string, labels: Record<string, string>, annotations: Record<string, string>, uid = "u1"): V1Pod => ({
  metadata: { namespace: "default", name: "p", uid, resourceVersion: rv, labels, annotations },
  spec: { containers: [{ name: "main", image: "python:3.12" }] },
  status: { phase: "Pending" }
})

describe("PodFacts status write body", () => {
  it("applies the provider's own changes onto the apiserver's current labels and annotations", () => {
    const base = pod("10", { rev: "0", team: "a" }, { template: "python", note: "x" })
    const push: V1Pod = {
      ...base,
      metadata: { ...base.metadata, annotations: { ...base.metadata!.annotations, "claim-id": "sb_1" } },
      status: { phase: "Running" }
    }
    // since the provider was handed rev 10: a label changed, one removed, an annotation added
    const current = pod("14", { rev: "3" }, { template: "python", note: "x", extra: "y" })
    const body = statusWriteBody(push, current, base)
    assert.deepStrictEqual(body.metadata?.labels, { rev: "3" })
    assert.deepStrictEqual(body.metadata?.annotations, { template: "python", note: "x", extra: "y", "claim-id": "sb_1" })
    assert.strictEqual(body.metadata?.resourceVersion, "14")
    assert.strictEqual(body.status?.phase, "Running")
  })

  it("a key the provider removed is removed; without a known base only missing keys are added", () => {
    const base = pod("10", {}, { a: "1", b: "2" })
    assert.deepStrictEqual(mergeProviderMap(base.metadata!.annotations, { a: "1" }, { a: "1", b: "2", c: "3" }, true), { a: "1", c: "3" })
    assert.deepStrictEqual(mergeProviderMap(undefined, { a: "old", id: "sb_1" }, { a: "new" }, false), { a: "new", id: "sb_1" })
    assert.isUndefined(mergeProviderMap(undefined, undefined, undefined, false))
  })

  it("a base of another generation is not used", () => {
    const base = pod("10", { rev: "0" }, {}, "old-uid")
    const push = pod("10", { rev: "0" }, { "claim-id": "sb_1" })
    const current = pod("12", { rev: "5" }, {})
    const body = statusWriteBody(push, current, base)
    assert.deepStrictEqual(body.metadata?.labels, { rev: "5" })
    assert.deepStrictEqual(body.metadata?.annotations, { "claim-id": "sb_1" })
  })

  it("a push that changes nothing the apiserver has is a no-op", () => {
    const current: V1Pod = { ...pod("12", { rev: "1" }, { "claim-id": "sb_1" }), status: { phase: "Running" } }
    const push: V1Pod = { ...pod("9", { rev: "1" }, { "claim-id": "sb_1" }), status: { phase: "Running" } }
    assert.isTrue(statusWriteIsNoop(current, statusWriteBody(push, current, push)))
    assert.isFalse(statusWriteIsNoop(current, statusWriteBody({ ...push, status: { phase: "Failed" } }, current, push)))
  })

  it("what the server fills in or truncates does not make an unchanged status look changed", () => {
    const startedAt = "2026-11-29T09:00:01Z"
    const current: Pod = {
      metadata: { namespace: "default", name: "p", uid: "u1", resourceVersion: "12", finalizers: ["keep/me"] },
      spec: { containers: [{ name: "main", image: "python:3.12" }] },
      status: {
        phase: "Running",
        qosClass: "BestEffort",
        podIP: "10.0.0.5",
        podIPs: [{ ip: "10.0.0.5" }],
        startTime: new Date(startedAt),
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: new Date(startedAt) }]
      }
    }
    // the provider's push: no qosClass (the server keeps its own), no podIPs, times with milliseconds
    const push: V1Pod = {
      metadata: { namespace: "default", name: "p", uid: "u1", resourceVersion: "9" },
      status: {
        phase: "Running",
        podIP: "10.0.0.5",
        startTime: new Date("2026-11-29T09:00:01.734Z"),
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: new Date("2026-11-29T09:00:01.734Z") }]
      }
    }
    const body = statusWriteBody(push, current, undefined)
    assert.isTrue(statusWriteIsNoop(current, body))
    // the body is written on the current Pod: its finalizers and resourceVersion, the server's QoS class
    assert.deepStrictEqual(body.metadata?.finalizers, ["keep/me"])
    assert.strictEqual(body.metadata?.resourceVersion, "12")
    assert.strictEqual(body.status?.qosClass, "BestEffort")
    // a real change (another second) is still a write
    const later: V1Pod = { ...push, status: { ...push.status, startTime: new Date("2026-11-29T09:00:02.001Z") } }
    assert.isFalse(statusWriteIsNoop(current, statusWriteBody(later, current, undefined)))
  })
})

describe("PodFacts status writes keep other writers' conditions (ST-12)", () => {
  const since = new Date("2026-11-29T09:00:01Z")
  const ours = [
    { type: "Initialized", status: "True", lastTransitionTime: since },
    { type: "Ready", status: "True", lastTransitionTime: since },
    { type: "PodScheduled", status: "True", lastTransitionTime: since }
  ]
  const gate = { type: "example.com/gate", status: "True", lastTransitionTime: new Date("2026-11-29T09:00:05Z") }
  const disruption = { type: "DisruptionTarget", status: "True", reason: "EvictionByEvictionAPI" }
  const apiPod = (conditions: NonNullable<NonNullable<Pod["status"]>["conditions"]>): Pod => ({
    metadata: { namespace: "default", name: "p", uid: "u1", resourceVersion: "20", annotations: { "claim-id": "sb_1" } },
    spec: { containers: [{ name: "main", image: "python:3.12" }] },
    status: { phase: "Running", podIP: "10.0.0.5", podIPs: [{ ip: "10.0.0.5" }], conditions: [...conditions] }
  })
  const push: V1Pod = {
    metadata: { namespace: "default", name: "p", uid: "u1", resourceVersion: "9", annotations: { "claim-id": "sb_1" } },
    status: { phase: "Running", podIP: "10.0.0.5", conditions: ours.map((condition) => ({ ...condition })) }
  }

  it("the body keeps a condition of a type the push does not set, after the push's own, in the current Pod's order", () => {
    const current = apiPod([disruption, ...ours, gate])
    const body = statusWriteBody(push, current, undefined)
    assert.deepStrictEqual(body.status?.conditions, [...ours, disruption, gate])
  })

  it("a status that differs only by a foreign condition, or by where one stands, is no write", () => {
    assert.isTrue(statusWriteIsNoop(apiPod([...ours, gate]), statusWriteBody(push, apiPod([...ours, gate]), undefined)))
    assert.isTrue(statusWriteIsNoop(apiPod([gate, ...ours]), statusWriteBody(push, apiPod([gate, ...ours]), undefined)))
  })

  it("a condition the provider sets is still the provider's: a changed Ready is written back, the foreign one kept", () => {
    const current = apiPod([ours[0]!, { type: "Ready", status: "False", reason: "SomeoneElse" }, ours[2]!, gate])
    const body = statusWriteBody(push, current, undefined)
    assert.isFalse(statusWriteIsNoop(current, body))
    assert.deepStrictEqual(body.status?.conditions, [...ours, gate])
  })

  it("a push without conditions (a Failed status) removes the node agent's conditions but keeps the foreign ones", () => {
    const current = apiPod([...ours, { type: "ContainersReady", status: "True" }, gate])
    const failed: V1Pod = { ...push, status: { phase: "Failed", reason: "SandboxLeaseExpired" } }
    const body = statusWriteBody(failed, current, undefined)
    assert.deepStrictEqual(body.status?.conditions, [gate])
    assert.isFalse(statusWriteIsNoop(current, body))
    // no foreign condition: the status is the push's, no empty list added
    assert.isUndefined(statusWriteBody(failed, apiPod(ours), undefined).status?.conditions)
  })
})

describe("PodFacts no-op comparison against the served Pod (ST-13)", () => {
  const claim: ClaimRecord = {
    id: "sb_1" as ClaimId,
    token: Redacted.make("t"),
    address: "sandboxd-node-7.internal:7000",
    podUID: "u1",
    claimedAt: Option.some(DateTime.makeUnsafe("2026-11-29T09:00:01.734Z")),
    deadline: Option.none()
  }
  const handed: V1Pod = {
    metadata: { namespace: "default", name: "p", uid: "u1", resourceVersion: "9", annotations: { "claim-id": "sb_1" } },
    spec: { containers: [{ name: "main", image: "python:3.12" }] },
    status: { phase: "Pending" }
  }
  /**
   * The Pod the apiserver serves after storing `status`: its JSON read back, with what the server
   * adds (the QoS class) and what it drops (an `omitempty` string written as "", served absent).
   */
  const served = (status: object): Pod => {
    const json = JSON.parse(JSON.stringify({ ...handed, metadata: { ...handed.metadata, resourceVersion: "12" }, status })) as {
      status: Record<string, unknown>
    }
    for (const field of ["phase", "reason", "message", "hostIP", "podIP", "qosClass"]) {
      if (json.status[field] === "") delete json.status[field]
    }
    json.status["qosClass"] = "BestEffort"
    if (json.status["startTime"] !== undefined) json.status["startTime"] = "2026-11-29T09:00:01Z" // whole seconds
    return Option.getOrThrow(decodePod(json))
  }

  it("an IP-less Running status compares equal to the Pod served for it: the push is no write", () => {
    const push: V1Pod = { ...handed, status: runningStatus(handed, claim, { _tag: "None" }) }
    const current = served(push.status ?? {})
    assert.isUndefined(current.status?.hostIP, "the server serves no empty hostIP")
    assert.isTrue(statusWriteIsNoop(current, statusWriteBody(push, current, handed)))
  })

  it("empty omitempty strings in any push compare as absent; a real value still differs", () => {
    const status = { phase: "Pending", hostIP: "", podIP: "", message: "", reason: "", qosClass: "" }
    const push: V1Pod = { ...handed, status }
    const current = served(status)
    const body = statusWriteBody(push, current, handed)
    assert.isTrue(statusWriteIsNoop(current, body))
    assert.deepStrictEqual(body.status, { phase: "Pending", qosClass: "BestEffort" }, "the server's QoS class, not the empty one")
    assert.isFalse(statusWriteIsNoop(current, statusWriteBody({ ...push, status: { ...status, message: "starting" } }, current, handed)))
  })
})

describe("PodFacts wireStatus", () => {
  /** What the apiserver would read back: the status's JSON, `null`s left out, decoded. */
  const viaJson = (status: unknown) => {
    const dropNulls = (value: unknown): unknown =>
      Array.isArray(value)
        ? value.map(dropNulls)
        : value !== null && typeof value === "object"
        ? Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null).map(([k, v]) => [k, dropNulls(v)]))
        : value
    return Schema.decodeUnknownOption(PodStatus)(dropNulls(JSON.parse(JSON.stringify(status))))
  }

  it("reads a status as its JSON would be read back, whether it holds Dates, times as text, nulls or unknown fields", () => {
    const claim: ClaimRecord = {
      id: "sb_1" as ClaimId,
      token: Redacted.make("t"),
      address: "10.0.0.9:7000",
      podUID: "u1",
      claimedAt: Option.some(DateTime.makeUnsafe("2026-11-29T09:00:01.734Z")),
      deadline: Option.some(DateTime.makeUnsafe("2026-11-30T09:00:00Z"))
    }
    const handed: V1Pod = {
      metadata: { namespace: "default", name: "p", uid: "u1" },
      spec: { containers: [{ name: "main", image: "python" }, { name: "side", image: "busybox" }] },
      status: { phase: "Running", startTime: new Date("2026-11-29T09:00:01.734Z"), qosClass: "BestEffort" }
    }
    const odd: ReadonlyArray<unknown> = [
      // times as text (a provider that formats its own), a null the wire drops, a field the slim status lacks
      { phase: "Running", startTime: "2026-11-29T09:00:01Z", nominatedNodeName: "x", message: null },
      { phase: "Pending", conditions: [{ type: "Ready", status: "False", lastProbeTime: null }] },
      { phase: "Pending", reason: undefined },
      undefined
    ]
    const statuses: ReadonlyArray<unknown> = [
      runningStatus(handed, claim, { _tag: "OwnerAddr", ip: "10.0.0.9" }),
      runningStatus(handed, claim, { _tag: "None" }),
      leaseExpiredStatus(handed, claim),
      sandboxLostStatus(handed, "sb_1", claim.claimedAt),
      pendingStatus(handed),
      ...odd
    ]
    for (const status of statuses) {
      const read = wireStatus(status)
      assert.isTrue(Option.isSome(read))
      assert.deepStrictEqual(read, viaJson(status ?? {}))
    }
    // not a status at all
    assert.isTrue(Option.isNone(wireStatus({ phase: 7 })))
  })
})

describe("PodFacts pushed facts", () => {
  it("of a push, the status writer keeps only UID, resourceVersion, labels, annotations and the status read back from the wire", () => {
    const push: V1Pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        namespace: "default",
        name: "p",
        uid: "u1",
        resourceVersion: "7",
        labels: { app: "web" },
        annotations: { "claim-id": "sb_1" },
        ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "o1" }],
        finalizers: ["keep"]
      },
      spec: { nodeName: "n", containers: [{ name: "main", image: "python", env: [{ name: "A", value: "1" }] }] },
      status: {
        phase: "Running",
        podIP: "10.0.0.1",
        startTime: new Date("2026-11-29T09:00:01.500Z"),
        // not a field of the slim status: not kept
        nominatedNodeName: "elsewhere"
      }
    }
    const pushed = Option.getOrThrow(pushedOf(push))
    assert.deepStrictEqual(Object.keys(pushed).sort(), ["annotations", "labels", "resourceVersion", "status", "uid"])
    assert.deepStrictEqual(
      { uid: pushed.uid, resourceVersion: pushed.resourceVersion, labels: pushed.labels, annotations: pushed.annotations },
      { uid: "u1", resourceVersion: "7", labels: { app: "web" }, annotations: { "claim-id": "sb_1" } }
    )
    assert.deepStrictEqual(Object.keys(pushed.status).sort(), ["phase", "podIP", "startTime"])
  })

  it("a push without a readable status has no facts to keep", () => {
    assert.isTrue(Option.isNone(pushedOf({ metadata: { uid: "u1" }, status: { phase: 3 } as unknown as NonNullable<V1Pod["status"]> })))
  })
})

describe("PodFacts sameCanonical", () => {
  const time = fc.date({ min: new Date("1990-01-01T00:00:00Z"), max: new Date("2090-01-01T00:00:00Z"), noInvalidDate: true })
  const value = fc.oneof(
    fc.anything({ withDate: true, withSparseArray: true, withNullPrototype: true }),
    time,
    time.map((d) => d.toISOString()),
    time.map((d) => d.toISOString().replace(/\.\d+Z$/, "Z")),
    fc.constantFrom(NaN, Infinity, -0, 0, null, undefined, "t1700000000", "2026-02-30T00:00:00Z")
  )
  /** Values `canonical` holds equal to `a` and others it does not: its JSON read back, a shuffled copy, or anything. */
  const pair = value.chain((a) =>
    fc.oneof(
      fc.constant([a, a] as const),
      fc.constant([a, a === undefined ? undefined : JSON.parse(JSON.stringify(a) ?? "null")] as const),
      fc.tuple(fc.constant(a), value)
    )
  )

  it("agrees with comparing the canonical strings", () => {
    fc.assert(
      fc.property(pair, ([a, b]) => {
        assert.strictEqual(sameCanonical(a, b), canonical(a) === canonical(b))
      }),
      { numRuns: 3000 }
    )
    // times compare at whole seconds, as text or as Date; keys in any order; undefined members left out
    assert.isTrue(sameCanonical({ t: new Date("2026-11-29T09:00:01.734Z"), a: 1 }, { a: 1, t: "2026-11-29T09:00:01Z", u: undefined }))
    assert.isFalse(sameCanonical({ t: new Date("2026-11-29T09:00:02.001Z") }, { t: "2026-11-29T09:00:01Z" }))
    assert.isTrue(sameCanonical([undefined], [null]))
    assert.isFalse(sameCanonical({ a: undefined }, { a: null }))
  })
})

describe("PodFacts readiness gates: Ready only when the containers and every gate are (ST-14)", () => {
  const claimedAt = new Date("2026-11-29T09:00:01Z")
  /** The write's time as the apiserver stores it (whole seconds). */
  const flippedAt = new Date("2026-12-01T10:00:00Z")
  const gateType = "example.com/lb"
  const otherType = "example.com/dns"
  const gatedPod = (conditions: NonNullable<NonNullable<Pod["status"]>["conditions"]>, gates = [gateType]): Pod => ({
    metadata: { namespace: "default", name: "p", uid: "u1", resourceVersion: "20", annotations: { "claim-id": "sb_1" } },
    spec: { containers: [{ name: "main", image: "python:3.12" }], readinessGates: gates.map((conditionType) => ({ conditionType })) },
    status: { phase: "Running", podIP: "10.0.0.5", podIPs: [{ ip: "10.0.0.5" }], conditions: [...conditions] }
  })
  const push: V1Pod = {
    metadata: { namespace: "default", name: "p", uid: "u1", resourceVersion: "9", annotations: { "claim-id": "sb_1" } },
    status: {
      phase: "Running",
      podIP: "10.0.0.5",
      conditions: [
        { type: "Initialized", status: "True", lastTransitionTime: claimedAt },
        { type: "Ready", status: "True", lastTransitionTime: claimedAt },
        { type: "PodScheduled", status: "True", lastTransitionTime: claimedAt }
      ]
    }
  }
  const readyOf = (pod: Pod) => pod.status?.conditions?.find((c) => c.type === "Ready")
  const statusOf = (pod: Pod, type: string) => pod.status?.conditions?.find((c) => c.type === type)?.status
  /** The Pod the apiserver holds once `body` was written (what the next check compares with). */
  const stored = (body: Pod, foreign: ReadonlyArray<{ type: string; status: string }> = []): Pod => ({
    ...body,
    status: {
      ...body.status,
      conditions: [...(body.status?.conditions ?? []).filter((c) => !foreign.some((f) => f.type === c.type)), ...foreign]
    }
  })

  it("a gate whose condition is missing or not True keeps Ready False, naming the gate; ContainersReady says the containers are ready", () => {
    for (const gate of [[], [{ type: gateType, status: "False" }], [{ type: gateType, status: "Unknown" }]]) {
      const body = statusWriteBody(push, gatedPod(gate), undefined)
      const ready = readyOf(body)
      assert.strictEqual(ready?.status, "False", JSON.stringify(gate))
      assert.strictEqual(ready?.reason, ReadinessGatesNotReady)
      assert.include(ready?.message ?? "", gateType)
      assert.strictEqual(statusOf(body, "ContainersReady"), "True")
      // the gate's condition is its controller's: kept as it is, never added or changed
      assert.deepStrictEqual(body.status?.conditions?.filter((c) => c.type === gateType), gate)
    }
  })

  it("every gate True: Ready True; of two gates, the message names only the one not ready", () => {
    const both = [gateType, otherType]
    const allTrue = statusWriteBody(push, gatedPod([{ type: gateType, status: "True" }, { type: otherType, status: "True" }], both), undefined)
    assert.deepStrictEqual(readyOf(allTrue), { type: "Ready", status: "True", lastTransitionTime: flippedAt })
    assert.strictEqual(statusOf(allTrue, "ContainersReady"), "True")
    const one = statusWriteBody(push, gatedPod([{ type: gateType, status: "True" }], both), undefined)
    assert.strictEqual(readyOf(one)?.status, "False")
    assert.include(readyOf(one)?.message ?? "", otherType)
    assert.notInclude(readyOf(one)?.message ?? "", gateType)
  })

  it("no write war: what a write stored compares equal to the next body until a gate changes, and a gate turning True is one write", () => {
    const first = statusWriteBody(push, gatedPod([]), undefined)
    const missing = stored(first)
    assert.isTrue(statusWriteIsNoop(missing, statusWriteBody(push, missing, undefined)), "the same push again: no write")
    // the gate's controller adds its condition False: Ready stays False, the message unchanged, no write
    const gateFalse = stored(first, [{ type: gateType, status: "False" }])
    assert.isTrue(statusWriteIsNoop(gateFalse, statusWriteBody(push, gateFalse, undefined)))
    // what a write stored, kept as the key's last push (`keptAs`), builds the same body: the
    // derivation reads ContainersReady, not the Ready it set False itself
    const keptPush: V1Pod = { ...push, status: missing.status as NonNullable<V1Pod["status"]> }
    assert.isTrue(statusWriteIsNoop(gateFalse, statusWriteBody(keptPush, gateFalse, undefined)))
    // the gate turns True: one write of Ready True, the gate kept
    const gateTrue = stored(first, [{ type: gateType, status: "True" }])
    for (const from of [push, keptPush]) {
      const body = statusWriteBody(from, gateTrue, undefined)
      assert.isFalse(statusWriteIsNoop(gateTrue, body))
      assert.deepStrictEqual(readyOf(body), { type: "Ready", status: "True", lastTransitionTime: flippedAt })
      assert.strictEqual(statusOf(body, gateType), "True")
      // and once written, nothing more to write
      assert.isTrue(statusWriteIsNoop(stored(body), statusWriteBody(from, stored(body), undefined)))
      assert.isTrue(statusWriteIsNoop(stored(body), statusWriteBody(keptPush, stored(body), undefined)))
    }
  })

  it("a Pod without readiness gates keeps the Running status as pushed (no ContainersReady added); a push without Ready gets none", () => {
    const ungated: Pod = { ...gatedPod([]), spec: { containers: [{ name: "main", image: "python:3.12" }] } }
    const body = statusWriteBody(push, ungated, undefined)
    assert.deepStrictEqual(body.status?.conditions, push.status?.conditions)
    const failed: V1Pod = { ...push, status: { phase: "Failed", reason: "SandboxLeaseExpired" } }
    assert.isUndefined(statusWriteBody(failed, gatedPod([]), undefined).status?.conditions)
    assert.deepStrictEqual(
      statusWriteBody(failed, gatedPod([{ type: gateType, status: "True" }]), undefined).status?.conditions,
      [{ type: gateType, status: "True" }]
    )
  })

  it("containers not ready: Ready False whatever the gates say", () => {
    const notReady: V1Pod = {
      ...push,
      status: { ...push.status, conditions: [{ type: "Ready", status: "False", reason: "ContainersNotReady" }] }
    }
    const body = statusWriteBody(notReady, gatedPod([{ type: gateType, status: "True" }]), undefined)
    assert.strictEqual(readyOf(body)?.status, "False")
    assert.strictEqual(statusOf(body, "ContainersReady"), "False")
  })

  it("a foreign condition's observedGeneration is read from the served Pod and written back as it is", () => {
    const served = Option.getOrThrow(decodePod({
      metadata: { namespace: "default", name: "p", uid: "u1", resourceVersion: "20" },
      spec: { containers: [{ name: "main", image: "python:3.12" }], readinessGates: [{ conditionType: gateType }] },
      status: { phase: "Running", conditions: [{ type: gateType, status: "True", observedGeneration: 3 }] }
    }))
    assert.deepStrictEqual(served.spec?.readinessGates, [{ conditionType: gateType }])
    const body = statusWriteBody(push, served, undefined)
    assert.deepStrictEqual(body.status?.conditions?.find((c) => c.type === gateType), { type: gateType, status: "True", observedGeneration: 3 })
  })
})

describe("PodFacts condition transition times: kept while a status holds, set when it changes (CRT-21)", () => {
  const claimedAt = "2026-11-29T09:00:01.734Z"
  const claim: ClaimRecord = {
    id: "sb_1" as ClaimId,
    token: Redacted.make("t"),
    address: "10.0.0.5:7000",
    podUID: "u1",
    claimedAt: Option.some(DateTime.makeUnsafe(claimedAt)),
    deadline: Option.none()
  }
  const scheduledAt = "2026-11-29T08:59:58Z"
  type Conditions = NonNullable<NonNullable<Pod["status"]>["conditions"]>
  /** The Pod the apiserver serves, from its JSON (times as the server prints them: whole seconds). */
  const served = (status: object, gates: ReadonlyArray<string> = []): Pod =>
    Option.getOrThrow(decodePod(JSON.parse(JSON.stringify({
      metadata: { namespace: "default", name: "p", uid: "u1", resourceVersion: "12", annotations: { "claim-id": "sb_1" } },
      spec: { containers: [{ name: "main", image: "python:3.12" }], readinessGates: gates.map((conditionType) => ({ conditionType })) },
      status
    }), (key, value: unknown) => (typeof value === "string" && /(Time|At)$/.test(key) ? value.replace(/\.\d+Z$/, "Z") : value))))
  const handed = served({ phase: "Pending", conditions: [{ type: "PodScheduled", status: "True", lastTransitionTime: scheduledAt }] })
  const push: V1Pod = { ...handed, status: runningStatus(handed, claim, { _tag: "OwnerAddr", ip: "10.0.0.5" }) }
  const timeOf = (conditions: Conditions | undefined, type: string) =>
    conditions?.find((c) => c.type === type)?.lastTransitionTime?.toISOString()
  const whole = (iso: string) => new Date(Math.floor(Date.parse(iso) / 1000) * 1000).toISOString()

  it("the Running status written on a Pending Pod: Ready and Initialized since the claim, PodScheduled keeps the scheduler's time", () => {
    const body = statusWriteBody(push, handed, handed)
    const conditions = body.status?.conditions
    // at the claim's whole second, as the apiserver stores it: Ready has a non-zero time, so a
    // workload's minReadySeconds counts from the claim
    assert.strictEqual(whole(timeOf(conditions, "Ready") ?? ""), whole(claimedAt))
    assert.strictEqual(whole(timeOf(conditions, "Initialized") ?? ""), whole(claimedAt))
    assert.strictEqual(timeOf(conditions, "PodScheduled"), new Date(scheduledAt).toISOString(), "True already: its time is kept")
    for (const condition of conditions ?? []) assert.isDefined(condition.lastTransitionTime, condition.type)
    // once stored, the same push (a restart's re-attach, a resync) at a later clock is no write
    const stored = served(body.status ?? {})
    assert.isTrue(statusWriteIsNoop(stored, statusWriteBody(push, stored, handed, writeTime + 3_600_000)))
  })

  it("a condition whose status holds keeps the Pod's time, whatever the push says: no write", () => {
    const earlier = "2026-11-29T08:00:00Z"
    const current = served({
      ...push.status,
      conditions: ["Initialized", "Ready", "PodScheduled"].map((type) => ({ type, status: "True", lastTransitionTime: earlier }))
    })
    const body = statusWriteBody(push, current, handed)
    for (const type of ["Initialized", "Ready", "PodScheduled"]) assert.strictEqual(timeOf(body.status?.conditions, type), new Date(earlier).toISOString())
    assert.isTrue(statusWriteIsNoop(current, body))
  })

  it("a Pod written without times (by an earlier daemon) is written once to add them, then never again", () => {
    const current = served({ ...push.status, conditions: ["Initialized", "Ready", "PodScheduled"].map((type) => ({ type, status: "True" })) })
    const body = statusWriteBody(push, current, handed)
    assert.isFalse(statusWriteIsNoop(current, body))
    assert.strictEqual(whole(timeOf(body.status?.conditions, "Ready") ?? ""), whole(claimedAt))
    const stored = served(body.status ?? {})
    assert.isTrue(statusWriteIsNoop(stored, statusWriteBody(push, stored, handed, writeTime + 60_000)))
  })

  it("Ready turned back True after another writer set it False: a change, written with the push's time", () => {
    const current = served({
      ...push.status,
      conditions: [{ type: "Ready", status: "False", reason: "SomeoneElse", lastTransitionTime: "2026-11-30T00:00:00Z" }]
    })
    const body = statusWriteBody(push, current, handed)
    assert.isFalse(statusWriteIsNoop(current, body))
    assert.strictEqual(timeOf(body.status?.conditions, "Ready"), new Date(claimedAt).toISOString())
  })

  it("a readiness gate turning True sets Ready's time to the write's; ContainersReady stays at the claim; nothing after (ST-14)", () => {
    const gate = "example.com/lb"
    const first = statusWriteBody(push, served(handed.status ?? {}, [gate]), handed)
    assert.strictEqual(first.status?.conditions?.find((c) => c.type === "Ready")?.status, "False")
    assert.strictEqual(whole(timeOf(first.status?.conditions, "Ready") ?? ""), whole(new Date(writeTime).toISOString()))
    const waiting = served(first.status ?? {}, [gate])
    const flip = writeTime + 90_000
    const gateTrue = served({
      ...first.status,
      conditions: [...(first.status?.conditions ?? []), { type: gate, status: "True", lastTransitionTime: "2026-12-01T10:01:00Z" }]
    }, [gate])
    const body = statusWriteBody(push, gateTrue, handed, flip)
    assert.isFalse(statusWriteIsNoop(gateTrue, body))
    assert.strictEqual(timeOf(body.status?.conditions, "Ready"), whole(new Date(flip).toISOString()), "the time it changed")
    assert.strictEqual(whole(timeOf(body.status?.conditions, "ContainersReady") ?? ""), whole(claimedAt))
    assert.strictEqual(timeOf(body.status?.conditions, gate), "2026-12-01T10:01:00.000Z", "the gate's own time is its controller's")
    // a gate that stays not True: nothing to write, its time unchanged
    assert.isTrue(statusWriteIsNoop(waiting, statusWriteBody(push, waiting, handed, flip)))
    // stored: later events and resyncs, from the raw push or the stored status kept as the push, write nothing
    const stored = served(body.status ?? {}, [gate])
    const keptPush: V1Pod = { ...push, status: stored.status as NonNullable<V1Pod["status"]> }
    for (const from of [push, keptPush]) assert.isTrue(statusWriteIsNoop(stored, statusWriteBody(from, stored, handed, flip + 600_000)))
  })

  it("a create failure turning Ready False sets the failure's time; shown again, the status is left as it is (CU-05)", () => {
    const ready = served({ ...push.status }).status ?? {}
    const failedAt = Date.parse("2026-12-01T11:00:00.900Z")
    const failed = withoutReadiness(ready, "ProviderFailed", failedAt)
    const readyAfter = failed.conditions?.find((c) => c.type === "Ready")
    assert.deepStrictEqual(readyAfter, {
      type: "Ready",
      status: "False",
      reason: "ProviderFailed",
      lastTransitionTime: new Date("2026-12-01T11:00:00Z")
    })
    assert.strictEqual(withoutReadiness(failed, "ProviderFailed", failedAt + 60_000), failed)
  })
})
