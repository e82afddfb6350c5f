/**
 * What a Pod carries that reaches sandboxd, over the real wire (the apiserver simulator and the
 * sandboxd simulator on loopback, the live clients, the real provider): its `net` and `size`
 * annotations reach the claim body and pick the pool (CRT-1 — annotation keys), and its environment
 * references are never resolved, so a Pod naming a Secret, ConfigMap or Service that does not exist
 * gets its VM and the daemon asks the apiserver for none of them (ENV-05 — environment references
 * are not resolved).
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

  it.live("environment references are not resolved: a Pod naming a missing Secret, ConfigMap and Service links gets its VM (ENV-05)", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      yield* world.start()
      const base = podBody("env-refs")
      const spec = base["spec"] as Record<string, unknown>
      createPod(world.model, {
        ...base,
        spec: {
          ...spec,
          enableServiceLinks: true,
          containers: [{
            name: "main",
            image: "python:3.12",
            env: [
              { name: "PASSWORD", valueFrom: { secretKeyRef: { name: "no-such-secret", key: "password" } } },
              { name: "MODE", valueFrom: { configMapKeyRef: { name: "no-such-config", key: "mode" } } },
              { name: "URL", value: "http://$(API_SERVICE_HOST):$(API_SERVICE_PORT)" }
            ],
            envFrom: [{ secretRef: { name: "no-such-secret" } }, { configMapRef: { name: "no-such-config" } }]
          }]
        }
      })
      yield* eventually("env-refs Running", () => running(world.model, "env-refs") !== undefined)
      assert.notStrictEqual(claimIdOf(running(world.model, "env-refs")!), "")
      for (const resource of ["secrets", "configmaps", "services"]) {
        assert.isFalse(world.model.resourcesAsked.has(resource), `${resource} asked for`)
      }
      assert.isTrue(world.model.resourcesAsked.has("pods"), "the recording sees the daemon's requests")
    }).pipe(quiet))
})
