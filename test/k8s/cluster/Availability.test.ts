/**
 * The real Deployment controller counts the daemon's Pods available (CRT-21 — the Running status).
 * A workload with `minReadySeconds` counts a Pod available only once its Ready condition has a
 * `lastTransitionTime` at least that old; the daemon's conditions had none, so such a Deployment's
 * `availableReplicas` stayed 0 and its rollout never finished.
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Effect } from "effect"
import { kube } from "../fixture/Kube.ts"
import { admin, adminGet, eventually, quiet } from "../scenarioHarness.ts"
import { createReadyNamespace, sandboxPodSet, startVirtualNode, useClusterPlane } from "./harness.ts"

useClusterPlane()

interface DeploymentState {
  readonly status?: { readonly availableReplicas?: number; readonly readyReplicas?: number; readonly updatedReplicas?: number }
}

interface PodTimes {
  readonly metadata: { readonly name: string; readonly resourceVersion: string }
  readonly status?: {
    readonly phase?: string
    readonly startTime?: string
    readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string; readonly lastTransitionTime?: string }>
  }
}

describe("workload controllers and the daemon's Pods", () => {
  it.live("a Deployment with minReadySeconds: 1 counts its sandbox Pods available: availableReplicas reaches the replica count", () =>
    Effect.scoped(Effect.gen(function*() {
      const node = yield* startVirtualNode()
      const namespace = yield* createReadyNamespace("avail")
      const apps = (yield* admin).config.makeApiClient(k8s.AppsV1Api)
      const set = sandboxPodSet("web", namespace, 2, node.pool)
      yield* kube("create deployment", () =>
        apps.createNamespacedDeployment({ namespace, body: { ...set, spec: { ...set.spec, minReadySeconds: 1 } } }))
      const deployment = `/apis/apps/v1/namespaces/${namespace}/deployments/web`
      const status = yield* eventually(
        "the Deployment's availableReplicas 2",
        Effect.map(adminGet<DeploymentState>(deployment), (d) => (d?.status?.availableReplicas === 2 ? d.status : undefined)),
        60_000
      )
      assert.strictEqual(status.readyReplicas, 2)
      assert.strictEqual(status.updatedReplicas, 2)

      // what it counted from: each Pod's Ready since its claim (startTime), at whole seconds
      const pods = yield* Effect.map(
        adminGet<{ readonly items: ReadonlyArray<PodTimes> }>(`/api/v1/namespaces/${namespace}/pods`),
        (list) => list?.items ?? []
      )
      assert.strictEqual(pods.length, 2)
      for (const pod of pods) {
        assert.strictEqual(pod.status?.phase, "Running", pod.metadata.name)
        const ready = pod.status?.conditions?.find((c) => c.type === "Ready")
        assert.strictEqual(ready?.status, "True", pod.metadata.name)
        assert.match(ready?.lastTransitionTime ?? "", /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
        assert.strictEqual(ready?.lastTransitionTime, pod.status?.startTime, pod.metadata.name)
      }
    }).pipe(quiet)), { timeout: 150_000 })
})
