/**
 * The command tree. No subcommand: the daemon, with Go-style flags (`Flags.ts`, `ParseConfig.ts`).
 * `sim <simulator>`: the simulators, which are effect/cli Commands of their own. A further
 * subcommand (e.g. `claims`) is one more entry in `subcommands`.
 */
import { Console, Effect, Result } from "effect"
import { CliError, Command } from "effect/cli"
import * as Daemon from "../Programs/Daemon.ts"
import { AppConfig } from "../Schemas/Config.ts"
import { ProcessExit } from "./Errors.ts"
import { helpText } from "./Help.ts"
import { parseInvocation } from "./ParseConfig.ts"
import type { Environment } from "./ParseConfig.ts"
import { readSandboxdToken } from "./TokenFile.ts"
import { formatVersion, readBuildInfo } from "./Version.ts"

/** `vk-sandbox sim <simulator> …`: add a simulator's Command to this list. */
export const simCommand = Command.make("sim").pipe(
  Command.withDescription("Run a simulator (sandboxd, Kubernetes API server) for tests, the demo and development"),
  Command.withSubcommands([
  ])
)

/** Print one line on stderr and end the process with `code`. */
const exitWith = (code: number, message: string) =>
  Console.error(`vk-sandbox: ${message}`).pipe(Effect.andThen(Effect.fail(new ProcessExit({ code, message }))))

/**
 * Runs an effect/cli command tree. effect/cli prints its own usage errors (with help); we only
 * turn them into exit status 2, like the daemon's.
 */
const runEffectCli = <Name extends string, Input, ContextInput, E, R>(
  command: Command.Command<Name, Input, ContextInput, E, R>
) =>
(args: ReadonlyArray<string>, env: Environment) =>
  Effect.gen(function*() {
    const info = yield* readBuildInfo(env)
    yield* Command.runWith(command, { version: info.version })(args)
  }).pipe(
    Effect.catchIf(CliError.isCliError, (error) => Effect.fail(new ProcessExit({ code: 2, message: error.message })))
  )

/** Subcommands, chosen by the first argument; anything else is the daemon's command line. */
export const subcommands = [
  { name: "sim", usage: "sim <simulator> ...", summary: "run a simulator (vk-sandbox sim --help lists them)", run: runEffectCli(simCommand) }
] as const

const runDaemon = Effect.fnUntraced(function*(argv: ReadonlyArray<string>, env: Environment) {
  const invocation = parseInvocation(argv, env)
  if (Result.isFailure(invocation)) return yield* exitWith(2, invocation.failure.message)
  switch (invocation.success._tag) {
    case "Help":
      return yield* Console.log(helpText(subcommands))
    case "Version":
      return yield* Console.log(formatVersion(yield* readBuildInfo(env)))
    case "Run": {
      const config = yield* readSandboxdToken(invocation.success.config)
      return yield* Daemon.run.pipe(Effect.provide(AppConfig.layer(config)))
    }
  }
}, Effect.catchTag("StartupError", (error) => exitWith(1, error.message)))

/** The whole command line: argv without the program name. */
export const runCli = (argv: ReadonlyArray<string>, env: Environment) => {
  const subcommand = subcommands.find((candidate) => candidate.name === argv[0])
  return subcommand === undefined ? runDaemon(argv, env) : subcommand.run(argv.slice(1), env)
}
