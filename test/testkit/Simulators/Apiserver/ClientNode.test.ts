// Smoke test: @kubernetes/client-node 2.x against the simulator through the kubeconfig it writes.
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions, Watch } from "@kubernetes/client-node"
import { Effect } from "effect"
import { ClusterModel } from "../../../../testkit/Simulators/Apiserver/Model.ts"
import { Pods } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import { serve } from "../../../../testkit/Simulators/Apiserver/Server.ts"
import { tempDir } from "../../../support/TempDir.ts"
import { node, ok, pod } from "./fixtures.ts"

const simDir = tempDir("apiserver-sim-")

describe("@kubernetes/client-node against the simulator", () => {
  it.effect("loads the written kubeconfig and lists, reads, writes status and watches pods", () =>
    Effect.gen(function*() {
      const dir = yield* simDir
      const kubeconfigPath = path.join(dir, "kubeconfig")
      const model = new ClusterModel()
      ok(model.create(Pods, "default", pod("p1", "vk-sandboxd")))
      ok(model.create(Pods, "default", pod("p2", "elsewhere")))
      const server = yield* serve(model, { token: "sim-secret", kubeconfigPath, bookmarkIntervalMs: 0 })
      const mode = (yield* Effect.promise(() => fs.stat(kubeconfigPath))).mode & 0o777
      assert.strictEqual(mode, 0o600)
      const result = yield* Effect.promise(async () => {
        const kc = new KubeConfig()
        kc.loadFromFile(kubeconfigPath)
        const core = kc.makeApiClient(CoreV1Api)
        const all = await core.listPodForAllNamespaces({ fieldSelector: "spec.nodeName=vk-sandboxd" })
        const ns = await core.listNamespacedPod({ namespace: "default" })
        const missing = await core.readNamespacedPod({ namespace: "default", name: "nope" }).then(
          () => undefined,
          (e: unknown) => (e instanceof ApiException ? { code: e.code, body: String(e.body) } : { code: 0, body: String(e) })
        )
        const p1 = await core.readNamespacedPod({ namespace: "default", name: "p1" })
        p1.metadata = { ...p1.metadata, annotations: { "sandbox.cocoonstack.io/claim-id": "sb_1" } }
        p1.status = { phase: "Running", podIP: "10.0.0.7", podIPs: [{ ip: "10.0.0.7" }] }
        const written = await core.replaceNamespacedPodStatus({ namespace: "default", name: "p1", body: p1 })
        await core.createNode({ body: node("vk-sandboxd") as never })
        const patched = await core.patchNodeStatus(
          { name: "vk-sandboxd", body: { status: { conditions: [{ type: "Ready", status: "False", reason: "Test" }] } } },
          setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch)
        )
        const custom = kc.makeApiClient(CustomObjectsApi)
        const owner = await custom
          .getNamespacedCustomObject({ group: "agents.x-k8s.io", version: "v1beta1", namespace: "default", plural: "sandboxes", name: "gone" })
          .then(() => undefined, (e: unknown) => (e instanceof ApiException ? { code: e.code, body: String(e.body) } : undefined))
        const events: Array<string> = []
        const watch = new Watch(kc)
        const done = new Promise<void>((resolve) => {
          void watch.watch(
            "/api/v1/pods",
            { fieldSelector: "spec.nodeName=vk-sandboxd", resourceVersion: written.metadata?.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 1 },
            (type, obj: { metadata?: { name?: string } }) => void events.push(`${type} ${obj.metadata?.name ?? ""}`.trim()),
            () => resolve()
          )
        })
        await core.deleteNamespacedPod({ namespace: "default", name: "p1", body: { gracePeriodSeconds: 0 } })
        await done
        return { all, ns, missing, written, patched, owner, events }
      })
      assert.deepStrictEqual(result.all.items.map((p) => p.metadata?.name), ["p1"])
      assert.strictEqual(result.ns.items.length, 2)
      assert.strictEqual(result.missing?.code, 404)
      assert.deepStrictEqual(JSON.parse(result.missing?.body ?? "{}").details, { name: "nope", kind: "pods" })
      assert.deepStrictEqual(result.written.metadata?.annotations, { "sandbox.cocoonstack.io/claim-id": "sb_1" })
      assert.strictEqual(result.written.status?.podIP, "10.0.0.7")
      assert.deepStrictEqual(result.patched.status?.conditions?.map((c) => `${c.type}=${c.status}`), ["Ready=False", "MemoryPressure=False"])
      assert.strictEqual(result.owner?.code, 404)
      assert.deepStrictEqual(JSON.parse(result.owner?.body ?? "{}").details, { name: "gone", group: "agents.x-k8s.io", kind: "sandboxes" })
      // a grace-0 delete of a pod is two writes: the deletion marks (MODIFIED), then the removal
      assert.deepStrictEqual(result.events, ["MODIFIED p1", "DELETED p1"])
      assert.strictEqual(server.kubeconfigPath, kubeconfigPath)
    }))
})
