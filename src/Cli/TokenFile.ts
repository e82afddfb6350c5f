/**
 * The one piece of startup I/O the CLI owns: reading the sandboxd token file (CFG-10). Read once,
 * trimmed at both ends, held as `Redacted` from here on. An empty path means no token (no
 * Authorization header); a set but unreadable file is an environment failure (exit 1).
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
  return { ...config, sandboxdToken: Redacted.make(contents.trim()) }
})
