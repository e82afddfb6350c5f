/**
 * Delete authorization with Sandbox owners on the real kube-apiserver: the live owner
 * resolver reads owners through the live KubeApi as the daemon's RBAC identity, so every verdict
 * below rests on the real server's answers (its NotFound Status, its deletionTimestamp, its UIDs,
 * its 403 for a resource the ClusterRole does not grant).
 */
import { assert, describe, it } from "@effect/vitest"
import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node"
import { Context, Effect, Layer } from "effect"
import * as OwnerResolverKube from "../../src/Programs/Authorization/OwnerResolverKube.ts"
import type { DeleteVerdict } from "../../src/Schemas/DeleteVerdict.ts"
import { KubeApi } from "../../src/Services/KubeApi.ts"
import { OwnerResolver } from "../../src/Services/OwnerResolver.ts"
import { uniqueName } from "./fixture/Kube.ts"
import {
  createNamespace,
  createSandbox,
  deleteSandbox,
  kubeApiOf,
  kubeconfigPath,
  SandboxApiVersion,
  sandboxOwnerRef,
  scenarioConfig
} from "./scenarioHarness.ts"

const clientsAs = (variable: "VK_K8S_ADMIN_KUBECONFIG" | "VK_K8S_DAEMON_KUBECONFIG") =>
  Effect.gen(function*() {
    const api = yield* kubeApiOf(scenarioConfig(yield* kubeconfigPath(variable), "http://127.0.0.1:1", "/nonexistent"))
    const context = yield* Layer.build(OwnerResolverKube.layer.pipe(Layer.provide(Layer.succeed(KubeApi, api))))
    return { api, resolver: Context.get(context, OwnerResolver) }
  })

const podOwnedBy = (namespace: string, refs: ReadonlyArray<V1OwnerReference>): V1Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { namespace, name: "agent", uid: "pod-uid", ownerReferences: [...refs] },
  spec: { containers: [{ name: "main", image: "python:3.12" }] }
})

const summary = (verdict: DeleteVerdict) => `${verdict._tag}(${verdict.reason})`

describe("delete authorization against the real kube-apiserver, as the daemon", () => {
  it.live("Sandbox owner alive, deleted, terminating, recreated; bare Pod", () =>
    Effect.scoped(Effect.gen(function*() {
      const { api, resolver } = yield* clientsAs("VK_K8S_DAEMON_KUBECONFIG")
      const namespace = yield* createNamespace("auth")
      const verdictFor = (refs: ReadonlyArray<V1OwnerReference>) => resolver.verdictFor(podOwnedBy(namespace, refs))

      // alive (also with an empty ref uid)
      const aliveUid = yield* createSandbox(namespace, "alive-bot")
      assert.strictEqual(summary(yield* verdictFor([sandboxOwnerRef("alive-bot", aliveUid)])), "Preserve(OwnerAlive)")
      assert.strictEqual(summary(yield* verdictFor([sandboxOwnerRef("alive-bot", "")])), "Preserve(OwnerAlive)")

      // deleted: the real server's object-level 404 names the owner
      const goneUid = yield* createSandbox(namespace, "gone-bot")
      yield* deleteSandbox(namespace, "gone-bot")
      const notFound = yield* api.getOwner({ group: "agents.x-k8s.io", version: "v1beta1", plural: "sandboxes", namespace, name: "gone-bot" })
        .pipe(Effect.flip)
      assert.strictEqual(notFound._tag, "KubeNotFound")
      assert.strictEqual(notFound._tag === "KubeNotFound" ? notFound.details?.name : undefined, "gone-bot")
      assert.strictEqual(summary(yield* verdictFor([sandboxOwnerRef("gone-bot", goneUid)])), "Release(OwnerGone)")

      // terminating: a finalizer holds it with a deletionTimestamp
      const heldUid = yield* createSandbox(namespace, "held-bot", ["example.com/hold"])
      yield* deleteSandbox(namespace, "held-bot")
      const held = yield* api.getOwner({ group: "agents.x-k8s.io", version: "v1beta1", plural: "sandboxes", namespace, name: "held-bot" })
      assert.isDefined(held.deletionTimestamp)
      assert.strictEqual(summary(yield* verdictFor([sandboxOwnerRef("held-bot", heldUid)])), "Release(OwnerTerminating)")

      // recreated under the same name: a new UID
      const firstUid = yield* createSandbox(namespace, "again-bot")
      yield* deleteSandbox(namespace, "again-bot")
      const secondUid = yield* createSandbox(namespace, "again-bot")
      assert.notStrictEqual(secondUid, firstUid)
      assert.strictEqual(summary(yield* verdictFor([sandboxOwnerRef("again-bot", firstUid)])), "Release(OwnerUidRotated)")
      assert.strictEqual(summary(yield* verdictFor([sandboxOwnerRef("again-bot", secondUid)])), "Preserve(OwnerAlive)")

      // only non-controller references, or none: a bare Pod
      assert.strictEqual(summary(yield* verdictFor([])), "Release(BarePod)")
      assert.strictEqual(
        summary(yield* verdictFor([{ ...sandboxOwnerRef("alive-bot", aliveUid), controller: false }])),
        "Release(BarePod)"
      )
    })), { timeout: 30_000 })

  it.live("a wrong plural or an unregistered resource: 403 for the daemon → Preserve(OwnerQueryFailed); 404 without a name for the admin → Preserve(AmbiguousNotFound)", () =>
    Effect.scoped(Effect.gen(function*() {
      const daemon = yield* clientsAs("VK_K8S_DAEMON_KUBECONFIG")
      const adminClients = yield* clientsAs("VK_K8S_ADMIN_KUBECONFIG")
      const namespace = yield* createNamespace("auth")
      const name = uniqueName("bot")
      const uid = yield* createSandbox(namespace, name)
      const refs: ReadonlyArray<readonly [string, V1OwnerReference]> = [
        // kind "Sandboxs" → plural "sandboxses": the group exists, that resource does not
        ["wrong plural", { apiVersion: SandboxApiVersion, kind: "Sandboxs", name, uid, controller: true }],
        ["unregistered resource", { apiVersion: SandboxApiVersion, kind: "Widget", name, uid, controller: true }],
        ["unregistered group", { apiVersion: "widgets.example.com/v1", kind: "Widget", name, uid, controller: true }]
      ]
      for (const [what, ref] of refs) {
        // RBAC is decided before routing: the daemon, granted only sandboxes, gets a 403.
        const asDaemon = yield* daemon.resolver.verdictFor(podOwnedBy(namespace, [ref]))
        assert.strictEqual(summary(asDaemon), "Preserve(OwnerQueryFailed)", `${what} as the daemon: ${asDaemon.detail}`)
        // An identity allowed everything meets the endpoint-level 404, which names nothing.
        const asAdmin = yield* adminClients.resolver.verdictFor(podOwnedBy(namespace, [ref]))
        assert.strictEqual(summary(asAdmin), "Preserve(AmbiguousNotFound)", `${what} as the admin: ${asAdmin.detail}`)
      }
    })), { timeout: 30_000 })
})
