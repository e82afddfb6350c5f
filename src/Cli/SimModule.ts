/**
 * What `vk-sandbox sim` needs from the simulators' command module (`testkit/Sim.ts`, which is
 * checked against this type). The product never imports testkit/; Root.ts loads it by path.
 */
import type { NodeServices } from "@effect/platform-node/NodeServices"
import type { Effect } from "effect"
import type { Environment } from "./ParseConfig.ts"

export interface SimModule {
  /** Runs `sim` with the arguments after it; its typed errors end the process through the runtime. */
  readonly runSim: (args: ReadonlyArray<string>, env: Environment) => Effect.Effect<void, Error, NodeServices>
}

export const isSimModule = (module: unknown): module is SimModule =>
  typeof module === "object" && module !== null && "runSim" in module && typeof module.runSim === "function"
