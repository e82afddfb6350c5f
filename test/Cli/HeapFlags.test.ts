/**
 * The heap setting the daemon applies to itself (src/Cli/HeapFlags.ts), seen from outside: the
 * real executable's process is asked, as it exits, for V8's code-cache version tag, which is a
 * hash of every V8 flag that differs from its default. A daemon start that got as far as running
 * the daemon (here it stops at an unsafe state directory, before talking to anyone) must end with
 * the tag of `node --heap-growing-percent=50`: the flag is set, with that value. `--version` sets
 * nothing, and a value given on node's command line is kept.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Option, Ref } from "effect"
import { TestClock } from "effect/testing"
import { execFileSync, spawnSync } from "node:child_process"
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { applyDaemonHeapFlags, applyOnceStarted, DAEMON_HEAP_FLAGS } from "../../src/Cli/HeapFlags.ts"
import { spawnDaemon, startCluster, waitFor } from "../../testkit/Demo/Harness.ts"

const root = resolve(import.meta.dirname, "..", "..")
const node = join(root, "node_modules", ".bin", "node")
const env = { PATH: process.env["PATH"] ?? "" }

/** The tag of a bare `node <flags>`. */
const tagOf = (flags: ReadonlyArray<string>): string =>
  execFileSync(node, [...flags, "-p", "require('node:v8').cachedDataVersionTag()"], { env, encoding: "utf8" }).trim()

/** Runs src/main.ts with `args` under node `flags`; the tag V8 had when the process exited. */
const tagAtExit = (flags: ReadonlyArray<string>, args: ReadonlyArray<string>) => {
  const report = `data:text/javascript,import v8 from "node:v8";process.on("exit",()=>process.stderr.write("\\nTAG "+v8.cachedDataVersionTag()+"\\n"))`
  const run = spawnSync(node, ["--import", report, ...flags, join(root, "src", "main.ts"), ...args], { env, encoding: "utf8" })
  return { status: run.status, stderr: run.stderr, tag: /^TAG (\d+)$/m.exec(run.stderr)?.[1] ?? "" }
}

describe("the daemon's heap setting", () => {
  it("is V8's --heap-growing-percent=50 (a flag that changes the code-cache tag)", () => {
    assert.deepStrictEqual(DAEMON_HEAP_FLAGS, ["--heap-growing-percent=50"])
    assert.notStrictEqual(tagOf(DAEMON_HEAP_FLAGS), tagOf([]))
  })

  it("is not applied over a value on node's command line (either spelling)", () => {
    assert.deepStrictEqual(applyDaemonHeapFlags(["--max-semi-space-size=2", "--heap-growing-percent=30"]), [])
    assert.deepStrictEqual(applyDaemonHeapFlags(["--heap_growing_percent=30"]), [])
  })

  it.effect("is applied once the daemon has started, not before, and once", () =>
    Effect.gen(function*() {
      const started = yield* Ref.make(false)
      const applied = yield* Ref.make(0)
      yield* applyOnceStarted(Ref.get(started), Ref.update(applied, (n) => n + 1), Duration.millis(100)).pipe(Effect.forkChild)
      yield* TestClock.adjust(Duration.seconds(5))
      assert.strictEqual(yield* Ref.get(applied), 0, "not while the start is running")
      yield* Ref.set(started, true)
      yield* TestClock.adjust(Duration.millis(100))
      assert.strictEqual(yield* Ref.get(applied), 1)
      yield* TestClock.adjust(Duration.seconds(5))
      assert.strictEqual(yield* Ref.get(applied), 1, "once")
    }))

  // When it is applied (only once the start is over) is the unit test's above (applyOnceStarted).
  it.live("a running daemon has it after its start", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* startCluster()
      // the child reports its tag every 50 ms
      const report = `data:text/javascript,import v8 from "node:v8";setInterval(()=>process.stderr.write("\\nTAG "+v8.cachedDataVersionTag()+"\\n"),50).unref()`
      const daemon = yield* spawnDaemon(cluster, { command: [node, "--import", report, "--max-semi-space-size=2", join(root, "src", "main.ts")] })
      const expected = tagOf(["--max-semi-space-size=2", ...DAEMON_HEAP_FLAGS])
      yield* waitFor(
        "heap flags",
        "the daemon's tag with --heap-growing-percent=50",
        Effect.sync(() => (daemon.output().includes(`TAG ${expected}\n`) ? Option.some(true) : Option.none())),
        { timeout: "60 seconds", describe: daemon.output }
      )
      assert.include(daemon.output(), "pod controller synced")
    })), { timeout: 120_000 })

  it("a daemon that stops before it has started does not set it; --version does not; a command-line value is kept", () => {
    const dir = mkdtempSync(join(tmpdir(), "vk-heapflags-"))
    try {
      // the daemon runs and stops at once: its state directory is writable by others (exit 1)
      const shared = join(dir, "shared")
      mkdirSync(shared)
      chmodSync(shared, 0o1777)
      writeFileSync(join(dir, "token"), "t", { mode: 0o600 })
      writeFileSync(
        join(dir, "kubeconfig"),
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n" +
          "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n"
      )
      const daemon = ["--state-path", join(shared, "claims.json"), "--sandboxd-token-file", join(dir, "token"), "--kubeconfig", join(dir, "kubeconfig")]

      const stopped = tagAtExit(["--max-semi-space-size=2"], daemon)
      assert.strictEqual(stopped.status, 1, stopped.stderr)
      assert.include(stopped.stderr, "StateDirUnsafe")
      assert.strictEqual(stopped.tag, tagOf(["--max-semi-space-size=2"]))

      const given = tagAtExit(["--heap-growing-percent=30"], daemon)
      assert.strictEqual(given.status, 1, given.stderr)
      assert.strictEqual(given.tag, tagOf(["--heap-growing-percent=30"]))

      const version = tagAtExit([], ["--version"])
      assert.strictEqual(version.status, 0, version.stderr)
      assert.strictEqual(version.tag, tagOf([]))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
