/**
 * The whole daemon (`daemonLayer`, as `vk-sandbox run` builds it, on the daemon's scheduler: Q-06 —
 * the event loop is shared in turns) in this process, so a test runs this checkout's code rather
 * than the installed binary; in a scope of its own, whose closing is the daemon's shutdown.
 */
import { Effect, Exit, Layer, Scope } from "effect"
import { daemonLayer, onDaemonScheduler } from "../../src/Daemon.ts"
import type { AppConfigShape } from "../../src/Schemas/Config.ts"
import { BuildInfo } from "../../src/Services/BuildInfo.ts"

export const startDaemon = (config: AppConfigShape) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* onDaemonScheduler(Layer.buildWithScope(
      daemonLayer(config).pipe(Layer.provide(Layer.succeed(BuildInfo, { version: "test", revision: "test", builtAt: "test" }))),
      scope
    ))
    return { stop: Scope.close(scope, Exit.void) }
  })
