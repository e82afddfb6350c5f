import { assert, describe, it } from "@effect/vitest"
import {
  advanceConditions,
  buildNode,
  desiredConditions,
  formatTime,
  goArchitecture,
  kubeletVersion,
  nodeLabels,
  type NodeSnapshot,
  providerTaint,
  retaint,
  SANDBOXD_TAINT_KEY,
  sandboxdTaintOn,
  statusPatch,
  trackedFromServer
} from "../../../src/Programs/Node/NodeObject.ts"
import { renewedLease, newLease } from "../../../src/Programs/Node/NodeLease.ts"
import { testConfig } from "../../../testkit/Config.ts"

const t0 = Date.parse("2026-11-29T10:00:00.750Z")

const snapshotAt = (now: number, reachable = true): NodeSnapshot => {
  const { next } = advanceConditions(
    new Map(),
    desiredConditions(reachable ? { _tag: "Reachable" } : { _tag: "Unavailable", reason: "Unreachable", message: "connection refused" }),
    now
  )
  return {
    config: testConfig({ nodeIp: "10.0.0.5", listenAddr: { host: "", port: 10260 } }),
    version: "0.1.0",
    arch: "x64",
    conditions: next,
    now
  }
}

describe("NodeObject", () => {
  it("labels: defaults, then --node-labels win, and no OS label", () => {
    const labels = nodeLabels(testConfig({ nodeLabels: { type: "custom", "extra/x": "y" } }))
    assert.deepStrictEqual(labels, {
      "type": "custom",
      "kubernetes.io/role": "agent",
      "kubernetes.io/hostname": "vk-sandboxd",
      "extra/x": "y"
    })
    assert.isUndefined(labels["kubernetes.io/os"])
  })

  it("kubeletVersion is semver with a pre-release tag", () => {
    const version = kubeletVersion("0.1.0")
    assert.strictEqual(version, "v1.34.0-vk-sandbox.0.1.0")
    // semver.org's regular expression (the core of it): MAJOR.MINOR.PATCH-PRERELEASE
    assert.match(version.slice(1), /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)$/)
    assert.strictEqual(goArchitecture("x64"), "amd64")
    assert.strictEqual(goArchitecture("arm64"), "arm64")
  })

  it("the created Node carries every field", () => {
    const node = buildNode(snapshotAt(t0))
    assert.strictEqual(node.metadata?.name, "vk-sandboxd")
    assert.deepStrictEqual(node.spec?.taints, [
      { key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" }
    ])
    assert.deepStrictEqual(node.status?.addresses, [
      { type: "InternalIP", address: "10.0.0.5" },
      { type: "Hostname", address: "vk-sandboxd" }
    ])
    assert.deepStrictEqual(node.status?.capacity, { cpu: "4000", memory: "8Ti", pods: "2000" })
    assert.deepStrictEqual(node.status?.allocatable, node.status?.capacity)
    assert.strictEqual(node.status?.daemonEndpoints?.kubeletEndpoint?.Port, 10260)
    assert.strictEqual(node.status?.nodeInfo?.architecture, "amd64")
    assert.strictEqual(node.status?.nodeInfo?.operatingSystem, "linux")
    const byType = new Map(node.status?.conditions?.map((c) => [c.type, c]))
    assert.deepStrictEqual([...byType.keys()].sort(), [
      "DiskPressure",
      "MemoryPressure",
      "NetworkUnavailable",
      "PIDPressure",
      "Ready",
      "SandboxdReachable"
    ])
    assert.strictEqual(byType.get("Ready")?.status, "True")
    assert.strictEqual(byType.get("Ready")?.reason, "KubeletReady")
    for (const type of ["MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"]) {
      assert.strictEqual(byType.get(type)?.status, "False", type)
      assert.notStrictEqual(byType.get(type)?.reason, "", type)
    }
    assert.strictEqual(byType.get("SandboxdReachable")?.status, "True")
  })

  it("no InternalIP address without --node-ip", () => {
    const snapshot = snapshotAt(t0)
    const node = buildNode({ ...snapshot, config: { ...snapshot.config, nodeIp: "" } })
    assert.deepStrictEqual(node.status?.addresses, [{ type: "Hostname", address: "vk-sandboxd" }])
  })

  it("an unreachable sandboxd is its own condition; Ready stays True", () => {
    const conditions = desiredConditions({ _tag: "Unavailable", reason: "Unreachable", message: "connection refused" })
    const byType = new Map(conditions.map((c) => [c.type, c]))
    assert.strictEqual(byType.get("Ready")?.status, "True")
    assert.strictEqual(byType.get("SandboxdReachable")?.status, "False")
    assert.include(byType.get("SandboxdReachable")?.message, "connection refused")
    assert.strictEqual(byType.get("SandboxdReachable")?.reason, "Unreachable")
  })

  it("the taint list: ours is added, its reason changed in place, removed; every other taint is kept", () => {
    const other = { key: "example.com/maintenance", value: "yes", effect: "NoExecute" }
    const ourOtherEffect = { key: SANDBOXD_TAINT_KEY, value: "x", effect: "PreferNoSchedule" }
    const start = [providerTaint, other, ourOtherEffect]
    const added = retaint(start, "Unreachable")
    assert.deepStrictEqual(added, [...start, { key: SANDBOXD_TAINT_KEY, value: "Unreachable", effect: "NoSchedule" }])
    assert.isUndefined(retaint(added!, "Unreachable"))
    const changed = retaint(added!, "Unauthorized")
    assert.deepStrictEqual(changed, [...start, { key: SANDBOXD_TAINT_KEY, value: "Unauthorized", effect: "NoSchedule" }])
    assert.deepStrictEqual(retaint(changed!, undefined), start)
    assert.isUndefined(retaint(start, undefined))
  })

  it("a Node created while sandboxd cannot serve carries the taint from the start", () => {
    const node = buildNode(snapshotAt(t0, false), "Unreachable")
    assert.deepStrictEqual(node.spec?.taints, [providerTaint, { key: SANDBOXD_TAINT_KEY, value: "Unreachable", effect: "NoSchedule" }])
    assert.strictEqual(sandboxdTaintOn(node), "Unreachable")
    assert.deepStrictEqual(buildNode(snapshotAt(t0)).spec?.taints, [providerTaint])
  })

  it("the status patch has no spec, whole-second times and the capital-P Port", () => {
    const patch = statusPatch(snapshotAt(t0)) as {
      spec?: unknown
      metadata: { labels: Record<string, string> }
      status: { conditions: Array<Record<string, string>>; daemonEndpoints: { kubeletEndpoint: Record<string, number> } }
    }
    assert.isUndefined(patch.spec)
    assert.strictEqual(patch.metadata.labels["type"], "virtual-kubelet")
    assert.deepStrictEqual(patch.status.daemonEndpoints.kubeletEndpoint, { Port: 10260 })
    for (const c of patch.status.conditions) {
      assert.strictEqual(c.lastHeartbeatTime, "2026-11-29T10:00:00Z")
      assert.strictEqual(c.lastTransitionTime, "2026-11-29T10:00:00Z")
    }
    assert.strictEqual(formatTime(t0), "2026-11-29T10:00:00Z")
  })

  it("a transition time moves only when the status changes", () => {
    const first = advanceConditions(new Map(), desiredConditions({ _tag: "Reachable" }), t0)
    assert.isTrue(first.statusChanged)
    const same = advanceConditions(first.next, desiredConditions({ _tag: "Reachable" }), t0 + 60_000)
    assert.isFalse(same.statusChanged)
    assert.strictEqual(same.next.get("SandboxdReachable")?.lastTransitionMillis, t0)
    const down = advanceConditions(same.next, desiredConditions({ _tag: "Unavailable", reason: "Failing", message: "x" }), t0 + 90_000)
    assert.isTrue(down.statusChanged)
    assert.strictEqual(down.next.get("SandboxdReachable")?.lastTransitionMillis, t0 + 90_000)
    assert.strictEqual(down.next.get("Ready")?.lastTransitionMillis, t0)
  })

  it("transition times are read back from an existing Node", () => {
    const node = buildNode(snapshotAt(t0))
    const tracked = trackedFromServer(node, ["Ready", "SandboxdReachable"])
    assert.strictEqual(tracked.get("Ready")?.lastTransitionMillis, Date.parse("2026-11-29T10:00:00Z"))
    assert.isUndefined(tracked.get("DiskPressure"))
  })
})

describe("NodeLease bodies", () => {
  const node = { name: "vk-sandboxd", uid: "uid-1" }

  it("a new lease: holder, 40 s, owner reference without controller fields", () => {
    const lease = newLease(node, t0)
    assert.strictEqual(lease.metadata?.namespace, "kube-node-lease")
    assert.strictEqual(lease.spec?.holderIdentity, "vk-sandboxd")
    assert.strictEqual(lease.spec?.leaseDurationSeconds, 40)
    assert.deepStrictEqual(lease.metadata?.ownerReferences, [
      { apiVersion: "v1", kind: "Node", name: "vk-sandboxd", uid: "uid-1" }
    ])
    assert.strictEqual(lease.spec?.renewTime, "2026-11-29T10:00:00.750000Z")
    assert.isUndefined(lease.spec?.acquireTime)
    assert.isUndefined(lease.spec?.leaseTransitions)
  })

  it("a renewal points the owner reference at a re-created Node and keeps the holder", () => {
    const stale = { ...newLease(node, t0), spec: { ...newLease(node, t0).spec, holderIdentity: "someone" } }
    const renewed = renewedLease(stale, { name: "vk-sandboxd", uid: "uid-2" }, t0 + 10_000)
    assert.deepStrictEqual(renewed.metadata?.ownerReferences?.map((o) => o.uid), ["uid-2"])
    assert.strictEqual(renewed.spec?.holderIdentity, "someone")
    assert.strictEqual(Date.parse(renewed.spec?.renewTime ?? ""), t0 + 10_000)
  })
})
