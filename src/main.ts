/** The vk-sandbox executable: the daemon, or a subcommand (see `Cli/Root.ts`). */
// Module paths, not the package index: the index loads every platform module (~1 s of startup).
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Cause, Effect, Exit, Runtime } from "effect"
import { runCli } from "./Cli/Root.ts"

// CFG-18 — signals end cleanly: ending because of SIGINT/SIGTERM is a clean exit (0), not the
// runtime's 130.
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

// The file system is all the command line and the daemon ask of the platform; `sim` provides the
// rest itself (Cli/Root.ts), so a start loads none of Node's child_process, dgram or readline.
runCli(process.argv.slice(2), process.env).pipe(Effect.provide(NodeFileSystem.layer), NodeRuntime.runMain({ teardown }))
