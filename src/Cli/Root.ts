/**
 * The command tree: no subcommand runs the daemon (Go-style flags, `Flags.ts`, `ParseConfig.ts`);
 * `sim <simulator>` runs a simulator from `testkit/Sim.ts` with the same flag tables.
 * The daemon and the simulators are imported on demand, so `--version`, `--help` and usage errors
 * load neither (CFG-6 — --version does nothing else). The simulators are test tooling, not shipped:
 * `sim` finds them by a path computed at run time and says so in one line (exit 2) when absent.
 */
import { fileURLToPath } from "node:url"
import { Console, Effect, Result } from "effect"
import { BuildInfo } from "../Services/BuildInfo.ts"
import { AppConfig } from "../Services/Config.ts"
import { Failpoints } from "../Services/Failpoints.ts"
import { TuningOff } from "../Services/Tuning.ts"
import { exitWith, StartupError } from "./Errors.ts"
import { FAILPOINTS_ENV, failpointsFromEnvironment } from "./Failpoints.ts"
import { helpText } from "./Help.ts"
import { parseInvocation } from "./ParseConfig.ts"
import type { Environment } from "./ParseConfig.ts"
import { isSimModule } from "./SimModule.ts"
import { readSandboxdToken } from "./TokenFile.ts"
import { TUNING_OFF_ENV, tuningOffFromEnvironment } from "./Tuning.ts"
import { formatVersion, readBuildInfo } from "./Version.ts"


/**
 * `testkit/Sim.ts` beside `src/` (from `src/Cli/Root.ts` in a checkout, `dist/Cli/Root.js` when
 * built). A computed specifier: neither tsc nor the build follows it into testkit/.
 */
const simModuleUrl = new URL("../../testkit/Sim.ts", import.meta.url)

/** Only the simulators' own module missing means "not installed"; any other load failure is a bug. */
const isSimModuleMissing = (error: unknown) =>
  error instanceof Error && "code" in error && error.code === "ERR_MODULE_NOT_FOUND" &&
  error.message.includes(fileURLToPath(simModuleUrl))

const loadSimulators = Effect.tryPromise({ try: () => import(simModuleUrl.href), catch: (error) => error }).pipe(
  Effect.flatMap((module: unknown) =>
    isSimModule(module) ? Effect.succeed(module) : Effect.die(new Error(`${simModuleUrl.href} does not export runSim`))
  ),
  Effect.catch((error) =>
    isSimModuleMissing(error)
      ? exitWith(2, "simulators are not installed (a production install has no testkit/; use a development checkout)")
      : Effect.die(error)
  )
)

/**
 * The platform services the simulators ask for (child processes, a terminal, stdio, the file
 * system): loaded for `sim` only. The daemon and the other commands need the file system alone
 * (main.ts), and the rest would load Node's child_process, dgram and readline into every start.
 */
const loadNodeServices = Effect.promise(() => import("@effect/platform-node/NodeServices"))

/** Subcommands, chosen by the first argument; anything else is the daemon's command line. */
export const subcommands = [
  {
    name: "sim",
    usage: "sim <simulator> ...",
    summary: "run a simulator (vk-sandbox sim --help lists them)",
    run: (args: ReadonlyArray<string>, env: Environment) =>
      Effect.all([loadSimulators, loadNodeServices]).pipe(
        Effect.flatMap(([Sim, NodeServices]) => Sim.runSim(args, env).pipe(Effect.provide(NodeServices.layer)))
      )
  },
  {
    name: "claims",
    usage: "claims [flags]",
    summary: "list the claims file, tokens redacted (read-only; works while the daemon runs)",
    run: (args: ReadonlyArray<string>, env: Environment) =>
      Effect.promise(() => import("./Claims.ts")).pipe(Effect.flatMap((Claims) => Claims.runClaims(args, env)))
  }
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
      const failpoints = failpointsFromEnvironment(env)
      if (Result.isFailure(failpoints)) return yield* exitWith(1, `${FAILPOINTS_ENV}: ${failpoints.failure}`)
      const tuningOff = tuningOffFromEnvironment(env)
      if (Result.isFailure(tuningOff)) return yield* exitWith(1, `${TUNING_OFF_ENV}: ${tuningOff.failure}`)
      const config = yield* readSandboxdToken(invocation.success.config)
      // A given kubelet key pair is checked now, before the daemon touches the state file or the
      // apiserver: one that cannot be read or does not match ends startup here (exit 1).
      if (config.tlsCert !== "") {
        const Tls = yield* Effect.promise(() => import("../Programs/Kubelet/Tls.ts"))
        yield* Tls.loadKeyPair(config.tlsCert, config.tlsKey).pipe(
          Effect.mapError((error) => new StartupError({ message: `${error._tag}: ${error.message}` }))
        )
      }
      const Daemon = yield* Effect.promise(() => import("../Daemon.ts"))
      return yield* Daemon.run.pipe(
        Effect.provide(AppConfig.layer(config)),
        Effect.provideService(BuildInfo, yield* readBuildInfo(env)),
        Effect.provideService(Failpoints, failpoints.success),
        Effect.provideService(TuningOff, tuningOff.success)
      )
    }
  }
}, Effect.catchTag("StartupError", (error) => exitWith(1, error.message)))

/** The whole command line: argv without the program name. */
export const runCli = (argv: ReadonlyArray<string>, env: Environment) => {
  const subcommand = subcommands.find((candidate) => candidate.name === argv[0])
  return subcommand === undefined ? runDaemon(argv, env) : subcommand.run(argv.slice(1), env)
}
