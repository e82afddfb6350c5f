/** Running the real executable (or another Node entry) as a child process and collecting what it printed. */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

/** The executable as a development install links it (`npm ci` links the package's own bin). */
export const binary = fileURLToPath(new URL("../../node_modules/.bin/vk-sandbox", import.meta.url))

export interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  /** stdout and stderr as they arrived, interleaved */
  readonly output: string
}

/**
 * Runs `command` with only PATH from our environment (plus `env`) and waits for it to exit.
 * Interrupting the effect kills the child with `killSignal`.
 */
export const runProcess = (
  command: string,
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  killSignal: NodeJS.Signals = "SIGKILL"
) =>
  Effect.callback<Finished>((resume) => {
    const child = spawn(command, args, { env: { PATH: process.env["PATH"] ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    let output = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      output += chunk
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
      output += chunk
    })
    child.on("error", (error) => resume(Effect.die(error)))
    child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr, output })))
    return Effect.sync(() => child.kill(killSignal))
  })

/** Runs `vk-sandbox` with `args`. */
export const runBinary = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => runProcess(binary, args, env)
