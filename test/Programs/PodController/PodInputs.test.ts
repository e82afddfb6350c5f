/**
 * What a Pod carries that reaches sandboxd, over the real wire (the apiserver simulator and the
 * sandboxd simulator on loopback, the live clients, the real provider): its `net` and `size`
 * annotations reach the claim body and pick the pool (CRT-1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { claimIdOf, createPod, eventually, makeWorld, podBody, quiet, running, Template } from "./harness.ts"

describe("what a Pod brings to its claim", () => {
  it.live("the net and size annotations reach sandboxd's claim, and the VM comes from that pool (CRT-1)", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld({
        sim: {
          egress: true,
          pools: [
            { template: Template, net: "none", size: "small", target: 2 },
            { template: Template, net: "egress", size: "large", target: 2 }
          ]
        }
      })
      yield* world.start()
      createPod(world.model, podBody("wide", { annotations: { "sandbox.cocoonstack.io/net": "egress", "sandbox.cocoonstack.io/size": "large" } }))
      yield* eventually("wide Running", () => running(world.model, "wide") !== undefined)
      const bodies = (yield* world.sim.audit).filter((entry) => entry.route === "claim").map((entry) => JSON.parse(entry.body) as unknown)
      assert.deepStrictEqual(bodies, [{ template: Template, net: "egress", size: "large", ttl_seconds: 86400, claim_ref: "default/wide" }])
      const claimed = (yield* world.sim.claims).find((claim) => claim.id === claimIdOf(running(world.model, "wide")!))
      assert.deepStrictEqual(claimed?.key, { template: Template, net: "egress", size: "large" })
    }).pipe(quiet))
})
