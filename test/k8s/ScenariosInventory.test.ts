/**
 * The NodeInventory publisher on the real kube-apiserver with our CRD: forced
 * server-side apply as the daemon's RBAC identity (nodeinventories get/create/patch), entries
 * from the sandboxd simulator's listing over HTTP. The stored object is read back raw as the
 * admin and compared field by field; a released sandbox leaves the next publish (the CRD's lists
 * are atomic, so the apply replaces them whole).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import * as SandboxdClientHttp from "../../src/Layers/SandboxdClientHttp.ts"
import { KnownSecrets } from "../../src/Services/KnownSecrets.ts"
import { type InventorySources, publishOnce, runPublisher } from "../../src/Programs/InventoryPublisher.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import type { ClaimId } from "../../src/Schemas/Ids.ts"
import { KubeApi } from "../../src/Services/KubeApi.ts"
import { SandboxdClient } from "../../src/Services/SandboxdClient.ts"
import { adminGet, daemonGround, eventually, kubeApiOf, quiet, ScenarioFailed } from "./scenarioHarness.ts"

const AGENT = "ghcr.io/acme/agent-runtime:1.4.2"
const BASE = "base:24.04"

interface StoredInventory {
  readonly metadata: {
    readonly name: string
    readonly managedFields?: ReadonlyArray<{ readonly manager?: string; readonly operation?: string }>
  }
  readonly entries?: ReadonlyArray<{ readonly name: string; readonly id?: string }>
  readonly [field: string]: unknown
}

/** A claim made straight against sandboxd over HTTP (as the aggregated apiserver does). */
const directClaim = (sandboxdUrl: string, body: Record<string, unknown>) =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetch(`${sandboxdUrl}/v1/claim`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body)
      })
      return (await response.json()) as { id: string; token: string }
    },
    catch: (cause) => new ScenarioFailed({ message: `direct claim: ${String(cause)}` })
  })

const directRelease = (sandboxdUrl: string, claim: { readonly id: string; readonly token: string }) =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetch(`${sandboxdUrl}/v1/sandboxes/${claim.id}/release`, {
        method: "POST",
        headers: { authorization: `Bearer ${claim.token}` }
      })
      return response.status
    },
    catch: (cause) => new ScenarioFailed({ message: `direct release: ${String(cause)}` })
  })

describe("the NodeInventory publisher on the real kube-apiserver, as the daemon", () => {
  it.live("applies the exact shape; a released sandbox leaves the next publish", () =>
    Effect.scoped(Effect.gen(function*() {
      const { sandboxd, config } = yield* daemonGround("vk-k8s-inventory-", {
        pools: [
          { template: AGENT, net: "none", size: "medium", target: 2 },
          { template: BASE, net: "none", size: "small", target: 4 }
        ],
        // No refill during the test: the published warm counts stay what the listing said.
        refillDelay: "1 hour"
      }, {
        publishInventory: true,
        publishInterval: Duration.millis(300)
      })
      const node = config.nodeName
      const kube = yield* kubeApiOf(config)
      const client = yield* SandboxdClientHttp.make.pipe(Effect.provideService(AppConfig, config), Effect.provide(KnownSecrets.none))
      const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        effect.pipe(
          Effect.provideService(AppConfig, config),
          Effect.provideService(KubeApi, kube),
          Effect.provideService(SandboxdClient, client)
        )

      // two claims of this node (one hibernated), one direct claim with a ref, one without
      const reviewBot = yield* client.claim({ template: AGENT, net: "", size: "medium", ttlSeconds: 86_400, claimRef: "team-a/review-bot-7f3k2" })
      const notebook = yield* client.claim({ template: AGENT, net: "", size: "medium", ttlSeconds: 86_400, claimRef: "team-a/notebook-x9" })
      yield* sandboxd.sim.hibernate(notebook.id)
      const longrunner = yield* directClaim(sandboxd.url, { template: BASE, size: "small", ttl_seconds: 3600, claim_ref: "team-b/longrunner" })
      const sdk = yield* directClaim(sandboxd.url, { template: BASE, size: "small", ttl_seconds: 600 })
      const sources: InventorySources = {
        addressById: Effect.succeed(
          new Map<ClaimId, string>([[reviewBot.id, reviewBot.ownerAddr], [notebook.id, notebook.ownerAddr]]) as ReadonlyMap<ClaimId, string>
        )
      }
      assert.isNotEmpty(reviewBot.ownerAddr)

      yield* provide(publishOnce(sources))
      const path = `/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories/${node}`
      const stored = yield* eventually("the stored NodeInventory", adminGet<StoredInventory>(path))
      const { metadata, ...data } = stored
      assert.strictEqual(metadata.name, node)
      assert.deepStrictEqual(metadata.managedFields?.map((f) => [f.manager, f.operation]), [["vk-sandbox", "Apply"]])
      const pools = yield* sandboxd.sim.pools
      assert.deepStrictEqual(pools.map((p) => [p.template, p.warm, p.target]), [[BASE, 2, 4], [AGENT, 0, 2]])
      assert.deepStrictEqual<unknown>(data, {
        apiVersion: "extensions.agents.x-k8s.io/v1beta1",
        kind: "NodeInventory",
        node,
        address: "10.0.0.5:7777",
        entries: [
          { name: sdk.id, id: sdk.id, phase: "Running", claimRef: sdk.id },
          { name: "team-a/notebook-x9", id: notebook.id, phase: "Hibernated", claimRef: "team-a/notebook-x9", addr: notebook.ownerAddr },
          { name: "team-a/review-bot-7f3k2", id: reviewBot.id, phase: "Running", claimRef: "team-a/review-bot-7f3k2", addr: reviewBot.ownerAddr },
          { name: "team-b/longrunner", id: longrunner.id, phase: "Running", claimRef: "team-b/longrunner" }
        ],
        pools: [
          { template: BASE, net: "none", size: "small", warm: 2, target: 4 },
          { template: AGENT, net: "none", size: "medium", warm: 0, target: 2 }
        ]
      })

      // the publisher's loop: a released sandbox is gone from the next apply
      const publisher = yield* Effect.forkScoped(provide(runPublisher(sources)))
      assert.strictEqual(yield* directRelease(sandboxd.url, longrunner), 204)
      const after = yield* eventually(
        "the inventory without the released sandbox",
        Effect.map(adminGet<StoredInventory>(path), (object) =>
          object !== undefined && !(object.entries ?? []).some((e) => e.id === longrunner.id) ? object : undefined),
        5_000
      )
      assert.deepStrictEqual((after.entries ?? []).map((e) => e.name), [sdk.id, "team-a/notebook-x9", "team-a/review-bot-7f3k2"])
      yield* Fiber.interrupt(publisher)
    }).pipe(quiet)), { timeout: 30_000 })
})
