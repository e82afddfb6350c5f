/**
 * The NodeInventory apply on the wire: a server-side apply with fieldManager vk-sandbox, forced.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { json, setup } from "../../support/KubeRecorder.ts"

describe("Kube NodeInventory endpoint on the wire", () => {
  it.effect("applyNodeInventory is a server-side apply with fieldManager and force", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { kind: "NodeInventory", metadata: { name: "n1" } }))
      const inventory = {
        apiVersion: "extensions.agents.x-k8s.io/v1beta1",
        kind: "NodeInventory",
        metadata: { name: "n1" },
        spec: { entries: [] }
      }
      const applied = yield* kube.applyNodeInventory(inventory)
      const sent = rec.requests[0]!
      assert.strictEqual(sent.method, "PATCH")
      assert.strictEqual(sent.url.pathname, "/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories/n1")
      assert.strictEqual(sent.url.searchParams.get("fieldManager"), "vk-sandbox")
      assert.strictEqual(sent.url.searchParams.get("force"), "true")
      assert.strictEqual(sent.headers["content-type"], "application/apply-patch+yaml")
      assert.deepStrictEqual(JSON.parse(sent.body), inventory)
      assert.deepStrictEqual(applied, { kind: "NodeInventory", metadata: { name: "n1" } })
    }))
})
