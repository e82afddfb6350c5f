/**
 * The fault matrix: one daemon (a child process) against both simulators behind fault-injecting
 * proxies, every sandboxd fault (./sandboxdCases.ts) then every apiserver fault
 * (./apiserverCases.ts), one after the other; after each, convergence and the invariants of
 * ./world.ts. One world for all cases keeps the suite's load to one extra daemon.
 */
import { describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { apiserverCases, restoreCases } from "./apiserverCases.ts"
import { sandboxdCases } from "./sandboxdCases.ts"
import { invariants, runCase, startWorld, type World } from "./world.ts"

class FaultWorld extends Context.Service<FaultWorld, World>()("test/FaultMatrix/FaultWorld") {}

// excludeTestServices: real time for the world and every case (the daemon runs on its own clock)
layer(Layer.effect(FaultWorld, startWorld), { timeout: "60 seconds", excludeTestServices: true })("fault matrix", (it) => {
  it.effect("before any fault: the invariants hold", () => Effect.flatMap(FaultWorld, invariants))
  for (const [title, cases] of [["sandboxd", sandboxdCases], ["apiserver", apiserverCases]] as const) {
    describe(`${title}: each fault clears, and the daemon converges with its invariants intact`, () => {
      for (const [name, fault] of cases) {
        it.effect(name, () => Effect.flatMap(FaultWorld, (world) => runCase(world, fault)), 60_000)
      }
    })
  }
  // last: they replace the apiserver's whole store
  describe("apiserver restores: the daemon notices the resourceVersion went backwards, relists and converges", () => {
    for (const [name, flow] of restoreCases) {
      it.effect(name, () => Effect.flatMap(FaultWorld, flow), 60_000)
    }
  })
})
