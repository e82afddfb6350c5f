/**
 * `npm run demo`: the pod contract, live. Both simulators run in this process; the real daemon
 * runs as a child process against them over HTTP. Every step checks its own outcome and the demo
 * exits non-zero naming the first step that did not behave. Tokens are never printed.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Console, Effect } from "effect"
import { ProcessExit } from "../../src/Cli/Errors.ts"
import { runScenario } from "./Scenario.ts"

const program = runScenario.pipe(
  Effect.catchTag("StepFailed", (failure) =>
    Console.error(`\nDEMO FAILED at step "${failure.step}": ${failure.message}`).pipe(
      Effect.andThen(Effect.fail(new ProcessExit({ code: 1, message: failure.message })))
    ))
)

program.pipe(Effect.provide(NodeServices.layer), NodeRuntime.runMain)
