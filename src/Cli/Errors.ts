/**
 * How the command line ends the process. A usage error (a bad flag or value, found before any I/O)
 * exits 2; a startup error (the environment: an unreadable token file, …) exits 1. Both print one
 * line on stderr; neither prints a stack trace.
 */
import { Console, Effect, Runtime, Schema } from "effect"

/** A bad flag, flag value or argument. `flag` is the flag's name without dashes ("" when none). */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  flag: Schema.String,
  message: Schema.String
}) {
  override readonly [Runtime.errorExitCode] = 2
}

/** The configuration is valid but the environment does not allow starting. */
export class StartupError extends Schema.TaggedError<StartupError>()("StartupError", {
  message: Schema.String
}) {
  override readonly [Runtime.errorExitCode] = 1
}

/**
 * The process should end with `code`; whatever had to be said has been printed already, so the
 * runtime must not log it again.
 */
export class ProcessExit extends Schema.TaggedError<ProcessExit>()("ProcessExit", {
  code: Schema.Number,
  message: Schema.String
}) {
  override get [Runtime.errorExitCode](): number {
    return this.code
  }
  override readonly [Runtime.errorReported] = false
}

/** Prints `vk-sandbox: <message>` on stderr and ends the process with `code` (2: usage, 1: startup). */
export const exitWith = (code: number, message: string): Effect.Effect<never, ProcessExit> =>
  Console.error(`vk-sandbox: ${message}`).pipe(Effect.andThen(Effect.fail(new ProcessExit({ code, message }))))
