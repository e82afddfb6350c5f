/**
 * The real node's command-line tools (ctr, docker, helm, kubectl, runc): one runner that fails
 * with the command's own output, so a scenario's error says what the tool answered.
 */
import { Effect, Schema } from "effect"
import { runProcess } from "../../../support/Process.ts"

export class NodeStepFailed extends Schema.TaggedError<NodeStepFailed>()("NodeStepFailed", {
  message: Schema.String
}) {}

/** Runs `file args`; its stdout on exit 0, a NodeStepFailed with its output otherwise. */
export const run = (what: string, file: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runProcess(file, args, env).pipe(
    Effect.catchDefect((defect) => Effect.fail(new NodeStepFailed({ message: `${what}: ${file} did not start: ${String(defect)}` }))),
    Effect.flatMap((done) =>
      done.code === 0
        ? Effect.succeed(done.stdout)
        : Effect.fail(
          new NodeStepFailed({ message: `${what}: ${file} ${args.join(" ")} exited ${String(done.code)}:\n${done.output.slice(-4000)}` })
        )
    )
  )

/** A shell pipeline (`set -o pipefail`), for `docker save … | ctr … import -`. */
export const pipeline = (what: string, script: string) => run(what, "bash", ["-c", `set -euo pipefail\n${script}`])

/** A word safe to splice into a shell script. */
export const shellWord = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`
