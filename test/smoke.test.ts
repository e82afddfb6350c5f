import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { testConfig } from "../src/Schemas/Config.ts"
import { AppConfig } from "../src/Services/Config.ts"

describe("toolchain", () => {
  it.effect("builds the config service directly", () =>
    Effect.gen(function*() {
      const config = yield* AppConfig
      assert.strictEqual(config.nodeName, "vk-sandboxd")
    }).pipe(Effect.provide(AppConfig.layer(testConfig()))))
})
