/** The vk-sandbox executable: the daemon, or a subcommand (see `Cli/Root.ts`). */
// Module paths, not the package index: the index loads every platform module (~1 s of startup).
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect } from "effect"
import { runCli } from "./Cli/Root.ts"

runCli(process.argv.slice(2), process.env).pipe(Effect.provide(NodeServices.layer), NodeRuntime.runMain)
