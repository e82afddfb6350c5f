/**
 * The daemon program. A stub until the node runtime is wired in: the CLI calls it with a
 * validated configuration.
 */
import { Effect } from "effect"
import { AppConfig } from "../Schemas/Config.ts"

export const run: Effect.Effect<void, never, AppConfig> = Effect.gen(function*() {
  const config = yield* AppConfig
  yield* Effect.logInfo("vk-sandbox daemon not wired yet").pipe(Effect.annotateLogs({ node: config.nodeName }))
})
