/**
 * `vk-sandbox sim <simulator> …`: the simulators, with the daemon's own flag parser and help style
 * (`src/Cli/Flags.ts`, `src/Cli/Help.ts`). Loaded by path only when the first argument is `sim`
 * (see src/Cli/Root.ts), so the daemon never loads simulator code and the production build does
 * not contain it. `runSim` has the shape `src/Cli/SimModule.ts` expects. A new simulator is one
 * more entry in `simulators`.
 */
import { Console, Effect } from "effect"
import { exitWith } from "../src/Cli/Errors.ts"
import { quote } from "../src/Cli/Flags.ts"
import type { Environment } from "../src/Cli/ParseConfig.ts"
import type { SimModule } from "../src/Cli/SimModule.ts"
import { runApiserverSim } from "./Simulators/Apiserver/Command.ts"
import { runSandboxdSim } from "./Simulators/Sandboxd/Command.ts"

const simulators = [
  { name: "sandboxd", summary: "the sandboxd simulator (warm pools, claims, faults)", run: runSandboxdSim },
  { name: "apiserver", summary: "the in-memory Kubernetes API server", run: runApiserverSim }
] as const

export const simHelp = [
  "vk-sandbox sim: run a simulator for tests, the demo and development (loopback only)",
  "",
  "Usage:",
  ...simulators.map((sim) => `  vk-sandbox sim ${sim.name.padEnd(10)} [flags]   ${sim.summary}`),
  "",
  "vk-sandbox sim <simulator> --help lists its flags."
].join("\n")

/** Runs `sim` with its arguments (after `sim`). */
export const runSim: SimModule["runSim"] = (args: ReadonlyArray<string>, env: Environment) => {
  const [name, ...rest] = args
  if (name === undefined || name === "--help" || name === "-help" || name === "-h" || name === "--h") {
    return Console.log(simHelp)
  }
  const simulator = simulators.find((candidate) => candidate.name === name)
  return simulator === undefined
    ? exitWith(2, `unknown simulator ${quote(name)} (vk-sandbox sim --help lists them)`)
    : simulator.run(rest, env)
}
