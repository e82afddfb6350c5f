import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Redacted } from "effect"
import { readSandboxdToken } from "../../src/Cli/TokenFile.ts"
import { testConfig } from "../../testkit/Config.ts"

const withTempDir = <A, E, R>(use: (dir: string) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped()
    return yield* use(dir)
  }).pipe(Effect.scoped, Effect.provide(NodeServices.layer))

describe("readSandboxdToken (CFG-10)", () => {
  it.effect("an empty path means an empty token, without touching the disk", () =>
    Effect.gen(function*() {
      const config = yield* readSandboxdToken(testConfig({ sandboxdTokenFile: "" }))
      assert.strictEqual(Redacted.value(config.sandboxdToken), "")
    }).pipe(Effect.provide(FileSystem.layerNoop({}))))

  it.effect("reads the file once, trimmed at both ends, as a Redacted", () =>
    withTempDir((dir) =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const path = `${dir}/token`
        yield* fs.writeFileString(path, "\n  s3cret-token \t\n")
        const config = yield* readSandboxdToken(testConfig({ sandboxdTokenFile: path }))
        assert.isTrue(Redacted.isRedacted(config.sandboxdToken))
        assert.strictEqual(Redacted.value(config.sandboxdToken), "s3cret-token")
        assert.notInclude(String(config.sandboxdToken), "s3cret")
        assert.notInclude(JSON.stringify(config), "s3cret")
        // Rotating the file does not change the configuration already read.
        yield* fs.writeFileString(path, "rotated")
        assert.strictEqual(Redacted.value(config.sandboxdToken), "s3cret-token")
      })
    ))

  it.effect("a missing file is a StartupError naming the flag and the path", () =>
    withTempDir((dir) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(readSandboxdToken(testConfig({ sandboxdTokenFile: `${dir}/missing` })))
        assert.strictEqual(error._tag, "StartupError")
        assert.include(error.message, "--sandboxd-token-file")
        assert.include(error.message, `${dir}/missing`)
      })
    ))

  it.effect("a directory is unreadable as a token file", () =>
    withTempDir((dir) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(readSandboxdToken(testConfig({ sandboxdTokenFile: dir })))
        assert.strictEqual(error._tag, "StartupError")
      })
    ))

  it.effect("an empty or whitespace-only file is a StartupError naming the file (an open node leaves the flag unset)", () =>
    withTempDir((dir) =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        for (const [name, contents] of [["empty", ""], ["blank", " \n\t \n"]] as const) {
          const path = `${dir}/${name}`
          yield* fs.writeFileString(path, contents)
          const error = yield* Effect.flip(readSandboxdToken(testConfig({ sandboxdTokenFile: path })))
          assert.strictEqual(error._tag, "StartupError")
          assert.include(error.message, `--sandboxd-token-file "${path}" is empty`)
          assert.notInclude(error.message, "\n")
        }
      })
    ))
})
