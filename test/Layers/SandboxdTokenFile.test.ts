/**
 * Token rotation without a restart: the node token file is replaced the way a mounted Secret is
 * (a new directory, then an atomic rename of the `..data` symlink), and the client follows it.
 * The re-read is driven by TestClock; the requests go over HTTP to the sandboxd simulator.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SandboxdClientHttp from "../../src/Layers/SandboxdClientHttp.ts"
import * as SandboxdTokenFile from "../../src/Layers/SandboxdTokenFile.ts"
import { testConfig } from "../../testkit/Config.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import { KnownSecrets } from "../../src/Services/KnownSecrets.ts"
import { SandboxdToken } from "../../src/Services/SandboxdToken.ts"
import { startSim } from "../support/Sandboxd.ts"

/** A Secret volume: `<dir>/token` → `..data/token`, `..data` → the current version directory. */
const secretVolume = (token: string) => {
  const dir = mkdtempSync(join(tmpdir(), "vk-token-"))
  let version = 0
  const publish = (value: string) => {
    version++
    const versionDir = join(dir, `..v${version}`)
    mkdirSync(versionDir)
    writeFileSync(join(versionDir, "token"), value)
    symlinkSync(`..v${version}`, join(dir, "..data_tmp"))
    renameSync(join(dir, "..data_tmp"), join(dir, "..data"))
  }
  publish(token)
  symlinkSync(join("..data", "token"), join(dir, "token"))
  return { path: join(dir, "token"), swap: publish, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

const withVolume = (token: string) =>
  Effect.acquireRelease(Effect.sync(() => secretVolume(token)), (volume) => Effect.sync(volume.remove))

const tokenSource = (path: string, startupToken: string) =>
  SandboxdTokenFile.make.pipe(
    Effect.provideService(AppConfig, testConfig({ sandboxdTokenFile: path, sandboxdToken: Redacted.make(startupToken) }))
  )

describe("SandboxdTokenFile", () => {
  it.effect("a symlink swap is picked up once the last read is a second old; an empty file mid-swap keeps the token", () =>
    Effect.gen(function*() {
      const volume = yield* withVolume("first")
      const tokens = yield* tokenSource(volume.path, "first")
      volume.swap("second")
      assert.strictEqual(Redacted.value(yield* tokens.current), "first", "read less than a second ago")
      yield* TestClock.adjust("1 second")
      assert.strictEqual(Redacted.value(yield* tokens.current), "second")

      volume.swap(" \n")
      yield* TestClock.adjust("1 second")
      assert.strictEqual(Redacted.value(yield* tokens.current), "second", "an empty file is never a rotation to no token")
      volume.swap("third\n")
      assert.isTrue(yield* tokens.reload, "a forced re-read does not wait for the second")
      assert.strictEqual(Redacted.value(yield* tokens.current), "third")
      assert.isFalse(yield* tokens.reload, "unchanged")
    }).pipe(Effect.scoped))

  it.effect("without a token file, the startup token is used and never re-read", () =>
    Effect.gen(function*() {
      const tokens = yield* tokenSource("", "")
      assert.strictEqual(Redacted.value(yield* tokens.current), "")
      assert.isFalse(yield* tokens.reload)
    }))

  it.effect("a 401 re-reads the file at once and sends the request again with the new token", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim({ rootToken: "rotated-token" })
      const volume = yield* withVolume("stale-token")
      const config = testConfig({ sandboxdUrl: url, sandboxdTokenFile: volume.path, sandboxdToken: Redacted.make("stale-token") })
      const tokens = yield* SandboxdTokenFile.make.pipe(Effect.provideService(AppConfig, config))
      const client = yield* SandboxdClientHttp.make.pipe(
        Effect.provideService(AppConfig, config),
        Effect.provideService(SandboxdToken, tokens),
        Effect.provide(KnownSecrets.none)
      )
      // The file still holds the refused token: one request, then the typed refusal.
      const before = (yield* sim.stats).requests
      const refused = yield* Effect.flip(client.info)
      assert.strictEqual(refused.reason._tag, "SandboxdUnauthorized")
      assert.strictEqual((yield* sim.stats).requests - before, 1)

      // Rotated (well within the second, so only the 401 can make it look): the refused request
      // is sent again at once with the new token and succeeds.
      volume.swap("rotated-token")
      const between = (yield* sim.stats).requests
      const info = yield* client.info
      assert.isFalse(info.draining)
      assert.strictEqual((yield* sim.stats).requests - between, 2)
      const claimed = yield* client.claim({ template: "base:24.04", net: "", size: "small", ttlSeconds: 0, claimRef: "ns/a" })
      assert.match(claimed.id, /^sb_/)
    }).pipe(Effect.scoped))
})
