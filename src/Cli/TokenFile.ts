/**
 * The one piece of startup I/O the CLI owns: reading the sandboxd token file (CFG-10 — token file).
 * Trimmed at both ends, held as `Redacted` from here on (the daemon then follows the file for
 * rotations, see `Layers/SandboxdTokenFile.ts`). An empty path means no token (no Authorization
 * header); a set but unreadable or empty file is an environment failure (exit 1).
 */
import { Effect, FileSystem, Redacted } from "effect"
import type { AppConfigShape } from "../Schemas/Config.ts"
import { StartupError } from "./Errors.ts"

export const readSandboxdToken = Effect.fnUntraced(function*(config: AppConfigShape) {
  if (config.sandboxdTokenFile === "") return { ...config, sandboxdToken: Redacted.make("") }
  const fs = yield* FileSystem.FileSystem
  const contents = yield* fs.readFileString(config.sandboxdTokenFile).pipe(
    Effect.mapError((error) =>
      new StartupError({
        message: `cannot read --sandboxd-token-file "${config.sandboxdTokenFile}": ${error.message}`
      })
    )
  )
  const token = contents.trim()
  // An open sandboxd is configured by leaving the flag unset; an empty file is a mistake (a
  // Secret mounted before it was filled, say), and sending no token would hide it.
  if (token === "") {
    return yield* new StartupError({
      message: `--sandboxd-token-file "${config.sandboxdTokenFile}" is empty; leave the flag unset for a sandboxd without a token`
    })
  }
  return { ...config, sandboxdToken: Redacted.make(token) }
})
