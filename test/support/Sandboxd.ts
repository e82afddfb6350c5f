/** Shared set-up for the sandboxd contract tests: a simulator on a loopback port and live clients. */
import { Effect, Redacted } from "effect"
import type { Scope } from "effect"
import * as SandboxdClientHttp from "../../src/Layers/SandboxdClientHttp.ts"
import type { AppConfigShape } from "../../src/Schemas/Config.ts"
import { testConfig } from "../../testkit/Config.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import { KnownSecrets } from "../../src/Services/KnownSecrets.ts"
import * as Model from "../../testkit/Simulators/Sandboxd/Model.ts"
import { serve } from "../../testkit/Simulators/Sandboxd/Server.ts"

export const ROOT_TOKEN = "0d4c9a17e2b85f36a1c07be94d2f6e58"
export const TEMPLATE = "ghcr.io/acme/agent-runtime:1.4.2"

export const defaultSimOptions: Model.SandboxdSimOptions = {
  rootToken: ROOT_TOKEN,
  tenantTokens: ["tenant-token"],
  pools: [{ template: TEMPLATE, net: "none", size: "medium", target: 2 }, {
    template: "base:24.04",
    net: "none",
    size: "small",
    target: 4
  }]
}

/** A simulator model served over HTTP on 127.0.0.1:<free port>, for the life of the scope. */
export const startSim = (options: Partial<Model.SandboxdSimOptions> = {}) =>
  Effect.gen(function*() {
    const sim = yield* Model.make({ ...defaultSimOptions, ...options })
    const address = yield* serve(sim, { host: "127.0.0.1", port: 0 })
    return { sim, url: address.url, address }
  })

/**
 * A live HTTP client against `url` with the root token unless overridden, knowing the claim
 * tokens in `known` (none unless given) as the daemon's claim table would.
 */
export const clientFor = (
  url: string,
  overrides: Partial<AppConfigShape> = {},
  known: ReadonlyArray<string> = []
): Effect.Effect<SandboxdClientHttp.SandboxdClientShape, never, Scope.Scope> =>
  SandboxdClientHttp.make.pipe(
    Effect.provideService(
      AppConfig,
      testConfig({ sandboxdUrl: url, sandboxdToken: Redacted.make(ROOT_TOKEN), ...overrides })
    ),
    Effect.provideService(KnownSecrets, KnownSecrets.of({ current: Effect.succeed(known.map((token) => Redacted.make(token))) }))
  )

export const claimSpec = (overrides: Partial<{
  template: string
  net: string
  size: string
  ttlSeconds: number
  claimRef: string
}> = {}) => ({
  template: TEMPLATE,
  net: "",
  size: "medium",
  ttlSeconds: 86_400,
  claimRef: "team-a/review-bot-7f3k2",
  ...overrides
})
