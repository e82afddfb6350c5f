/**
 * The controller-manager's garbage collector and namespace controller delete the Pods; the daemon's
 * delete verdict decides each VM's fate. Owner deleted with background propagation → the GC deletes
 * the Pod after the owner is gone (OwnerGone: release); foreground → the Pod is deleted while the
 * owner waits with a deletionTimestamp (OwnerTerminating: release); orphan → the Pod loses its
 * owner reference and keeps running on its VM. A namespace deletion removes everything, and each
 * VM ends as its Pod's verdict says.
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Effect, Option } from "effect"
import { httpGet } from "../../../testkit/Demo/Harness.ts"
import { kube } from "../fixture/Kube.ts"
import { admin, claimIdOf, createSandbox, eventually, getPod, quiet, runningPod, SandboxApiVersion } from "../scenarioHarness.ts"
import {
  claimsFileRows,
  createReadyNamespace,
  createSandboxPod,
  heldIds,
  listPods,
  releasedIds,
  sandboxPodSet,
  startVirtualNode,
  useClusterPlane,
  type VirtualNode
} from "./harness.ts"

useClusterPlane()

const sandboxes = { group: "agents.x-k8s.io", version: "v1beta1", plural: "sandboxes" } as const

const deleteSandboxWith = (namespace: string, name: string, propagationPolicy: "Background" | "Foreground" | "Orphan") =>
  Effect.gen(function*() {
    const { custom } = yield* admin
    yield* kube(`delete sandbox ${name} (${propagationPolicy})`, () =>
      custom.deleteNamespacedCustomObject({ ...sandboxes, namespace, name, propagationPolicy }))
  })

/** The daemon's delete verdicts so far (`Release(BarePod)`, ...), read from its /metrics. */
const verdictsCounted = (node: VirtualNode) =>
  Effect.map(httpGet(`${node.daemon().metricsUrl}/metrics`), (reply) => {
    const seen = new Set<string>()
    const body = Option.isSome(reply) ? reply.value.body : ""
    for (const line of body.split("\n")) {
      if (!line.startsWith("vk_sandbox_delete_verdicts_total{")) continue
      const verdict = /verdict="(\w+)"/.exec(line)?.[1]
      const reason = /reason="(\w+)"/.exec(line)?.[1]
      if (verdict !== undefined && reason !== undefined && !line.trimEnd().endsWith(" 0")) seen.add(`${verdict}(${reason})`)
    }
    return seen
  })

const gone = (namespace: string, name: string) => Effect.map(getPod(namespace, name), (pod) => pod === undefined)

/** A Sandbox and its Pod (blocking the owner's foreground deletion, as a controller sets it), Running. */
const ownedPod = (node: VirtualNode, namespace: string, name: string) =>
  Effect.gen(function*() {
    const uid = yield* createSandbox(namespace, name)
    yield* createSandboxPod(namespace, name, { pool: node.pool }, {
      apiVersion: SandboxApiVersion,
      kind: "Sandbox",
      name,
      uid,
      blockOwnerDeletion: true
    })
    return claimIdOf(yield* eventually(`${name} Running`, runningPod(namespace, name), 30_000))
  })

describe("the garbage collector deletes, the verdict decides", () => {
  it.live("background and foreground cascades release the VM; orphan keeps the Pod and its VM", () =>
    Effect.scoped(Effect.gen(function*() {
      const node = yield* startVirtualNode()
      const namespace = yield* createReadyNamespace("gc")
      const background = yield* ownedPod(node, namespace, "background")
      const foreground = yield* ownedPod(node, namespace, "foreground")
      const orphan = yield* ownedPod(node, namespace, "orphan")

      yield* deleteSandboxWith(namespace, "background", "Background")
      yield* eventually("the GC's deletion of the background Pod", gone(namespace, "background"), 60_000)
      yield* eventually("background released", Effect.map(releasedIds(node), (ids) => ids.includes(background)), 30_000)

      yield* deleteSandboxWith(namespace, "foreground", "Foreground")
      yield* eventually("the GC's deletion of the foreground Pod", gone(namespace, "foreground"), 60_000)
      yield* eventually("foreground released", Effect.map(releasedIds(node), (ids) => ids.includes(foreground)), 30_000)
      yield* eventually(
        "the foreground owner gone once its dependent is",
        Effect.gen(function*() {
          const { custom } = yield* admin
          return yield* kube("get sandbox", () => custom.getNamespacedCustomObject({ ...sandboxes, namespace, name: "foreground" })).pipe(
            Effect.as(false),
            Effect.catchTag("KubeCallFailed", (e) => Effect.succeed(e.status === 404))
          )
        }),
        60_000
      )

      yield* deleteSandboxWith(namespace, "orphan", "Orphan")
      const orphaned = yield* eventually(
        "the orphan Pod without its owner reference",
        Effect.map(listPods(namespace), (pods) =>
          pods.find((p) => p.metadata.name === "orphan" && (p.metadata.ownerReferences ?? []).length === 0)),
        60_000
      )
      assert.isUndefined(orphaned.metadata.deletionTimestamp, "orphan propagation deletes no dependent")
      const stillRunning = yield* getPod(namespace, "orphan")
      assert.strictEqual(stillRunning?.status?.phase, "Running")
      assert.strictEqual(claimIdOf(stillRunning!), orphan)
      assert.isTrue((yield* heldIds(node)).has(orphan), "the orphan's VM is kept")
      assert.deepStrictEqual([...(yield* releasedIds(node))].sort(), [background, foreground].sort())
      const rows = yield* claimsFileRows(node.statePath)
      assert.deepStrictEqual([...rows.values()], [orphan], "only the orphan's claim is on disk")
    }).pipe(quiet)), { timeout: 170_000 })

  it.live("a namespace deletion with Running Pods of several owners completes; each VM ends as its verdict says", () =>
    Effect.scoped(Effect.gen(function*() {
      const node = yield* startVirtualNode()
      const namespace = yield* createReadyNamespace("nsdel")
      const { core } = yield* admin
      const apps = (yield* admin).config.makeApiClient(k8s.AppsV1Api)

      // A Sandbox-owned Pod, a bare Pod, and a ReplicaSet's Pod (the RBAC the daemon ships with
      // cannot read ReplicaSets, so that owner query is refused: preserve).
      const owned = yield* ownedPod(node, namespace, "owned")
      yield* createSandboxPod(namespace, "bare", { pool: node.pool })
      const bare = claimIdOf(yield* eventually("bare Running", runningPod(namespace, "bare"), 30_000))
      yield* kube("create replicaset", () =>
        apps.createNamespacedReplicaSet({
          namespace,
          body: sandboxPodSet("workers", namespace, 1, node.pool)
        }))
      const worker = yield* eventually(
        "the ReplicaSet's Pod Running",
        Effect.map(listPods(namespace), (pods) =>
          pods.find((p) => p.metadata.name.startsWith("workers-") && p.status?.phase === "Running")),
        30_000
      )
      const workerClaim = worker.metadata.annotations?.["sandbox.cocoonstack.io/claim-id"] ?? ""
      assert.notStrictEqual(workerClaim, "")

      yield* kube("delete namespace", () => core.deleteNamespace({ name: namespace }))
      yield* eventually(
        "the namespace gone",
        Effect.gen(function*() {
          return yield* kube("get namespace", () => core.readNamespace({ name: namespace })).pipe(
            Effect.as(false),
            Effect.catchTag("KubeCallFailed", (e) => Effect.succeed(e.status === 404))
          )
        }),
        120_000
      )

      // The Sandbox's Pod may be deleted before or after its Sandbox (the namespace controller
      // picks the order): owner gone or terminating → released at once; owner still there →
      // preserved, and released once the Sandbox is gone too (AUTH-9 — a preserved VM is released
      // once its owner goes: the owner is asked again at the next lease-watch tick). Either way the
      // VM ends released, on an owner's verdict.
      yield* eventually("the Sandbox's VM released", Effect.map(releasedIds(node), (ids) => ids.includes(owned)), 30_000)
      const released = yield* releasedIds(node)
      const held = yield* heldIds(node)
      assert.isTrue(released.includes(bare) && !held.has(bare), "the bare Pod → released")
      assert.isTrue(held.has(workerClaim) && !released.includes(workerClaim), "the ReplicaSet's Pod: owner query refused → preserved")
      assert.isFalse(held.has(owned), "the Sandbox's VM released")
      // Each outcome is the one its verdict gives (a verdict may be counted more than once: a
      // delete is retried until its final removal succeeds).
      const verdicts = yield* verdictsCounted(node)
      assert.isTrue(verdicts.has("Release(BarePod)"), [...verdicts].join(", "))
      assert.isTrue(verdicts.has("Preserve(OwnerQueryFailed)"), [...verdicts].join(", "))
      assert.isTrue(verdicts.has("Release(OwnerGone)") || verdicts.has("Release(OwnerTerminating)"), [...verdicts].join(", "))
      // The claims file and sandboxd agree: exactly the preserved VMs are held and recorded.
      const rows = yield* claimsFileRows(node.statePath)
      assert.deepStrictEqual([...rows.values()].sort(), [...held].sort())
    }).pipe(quiet)), { timeout: 200_000 })
})
