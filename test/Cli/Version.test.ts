import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { formatVersion, readBuildInfo } from "../../src/Cli/Version.ts"
import packageJson from "../../package.json" with { type: "json" }

describe("version", () => {
  it("formats exactly as CFG-6", () => {
    assert.strictEqual(
      formatVersion({ version: "1.2.3", revision: "abc123", builtAt: "2026-01-02T03:04:05" }),
      "vk-sandbox 1.2.3 (rev=abc123 built=2026-01-02T03:04:05)"
    )
  })

  it.effect("takes the version from package.json and rev/built from the environment", () =>
    Effect.gen(function*() {
      const info = yield* readBuildInfo({ VK_SANDBOX_REVISION: "deadbeef", VK_SANDBOX_BUILT_AT: "2026-11-29T10:00:00" })
      assert.deepStrictEqual(info, { version: packageJson.version, revision: "deadbeef", builtAt: "2026-11-29T10:00:00" })
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("says unknown when nothing stamps the build (empty env vars count as unset)", () =>
    Effect.gen(function*() {
      const info = yield* readBuildInfo({ VK_SANDBOX_REVISION: "", VK_SANDBOX_BUILT_AT: "" })
      // build-info.json is written only by image builds; a checkout has none.
      assert.deepStrictEqual(info, { version: packageJson.version, revision: "unknown", builtAt: "unknown" })
    }).pipe(Effect.provide(NodeServices.layer)))
})
