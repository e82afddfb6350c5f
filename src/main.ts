/** The vk-sandbox executable: the daemon, or a subcommand (see `Cli/Root.ts`). */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect } from "effect"
import { runCli } from "./Cli/Root.ts"

runCli(process.argv.slice(2), process.env).pipe(Effect.provide(NodeServices.layer), NodeRuntime.runMain)
