/**
 * `vk-sandbox sim <simulator> …`: the simulators, as effect/cli Commands. Loaded by path only when
 * the first argument is `sim` (see src/Cli/Root.ts), so the daemon never loads simulator code and
 * the production build does not contain it. `runSim` has the shape `src/Cli/SimModule.ts` expects.
 * A new simulator is one more entry in the `withSubcommands` list below.
 */
import { Effect } from "effect"
import { CliError, Command } from "effect/cli"
import { ProcessExit } from "../src/Cli/Errors.ts"
import type { Environment } from "../src/Cli/ParseConfig.ts"
import type { SimModule } from "../src/Cli/SimModule.ts"
import { readBuildInfo } from "../src/Cli/Version.ts"
import { apiserverSimCommand } from "./Simulators/Apiserver/Command.ts"
import { sandboxdSimCommand } from "./Simulators/Sandboxd/Command.ts"

export const simCommand = Command.make("sim").pipe(
  Command.withDescription("Run a simulator (sandboxd, Kubernetes API server) for tests, the demo and development"),
  Command.withSubcommands([
    sandboxdSimCommand,
    apiserverSimCommand
  ])
)

/**
 * Runs `sim` with its arguments (after `sim`). effect/cli prints its own usage errors (with help);
 * we only turn them into exit status 2, like the daemon's.
 */
export const runSim: SimModule["runSim"] = (args: ReadonlyArray<string>, env: Environment) =>
  Effect.gen(function*() {
    const info = yield* readBuildInfo(env)
    yield* Command.runWith(simCommand, { version: info.version })(args)
  }).pipe(
    Effect.catchIf(CliError.isCliError, (error) => Effect.fail(new ProcessExit({ code: 2, message: error.message })))
  )
