/**
 * The real executable (`node_modules/.bin/vk-sandbox`, Node 24 on src/main.ts): exit statuses and
 * what reaches stdout/stderr. The cases run concurrently in one test to keep process spawns cheap.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { daemonFlags } from "../../src/Cli/Flags.ts"
import { generateSelfSigned } from "../../src/Programs/Kubelet/SelfSigned.ts"
import packageJson from "../../package.json" with { type: "json" }
import { binary, type Finished, runBinary } from "../support/Process.ts"

/** Runs the binary with only PATH from our environment (plus `env`) and waits for it to exit. */
const run = runBinary

const lines = (text: string): ReadonlyArray<string> => text.split("\n").filter((line) => line !== "")

/** Exit 2 (or `code`) with exactly one stderr line mentioning `text`, nothing on stdout, no stack. */
const assertOneLineFailure = (label: string, finished: Finished, code: number, text: string) => {
  assert.strictEqual(finished.code, code, `${label}: exit status (stderr: ${finished.stderr})`)
  assert.strictEqual(lines(finished.stderr).length, 1, `${label}: one stderr line, got: ${finished.stderr}`)
  assert.include(finished.stderr, text, label)
  assert.notMatch(finished.stderr, /\bat .*:\d+:\d+/, `${label}: no stack trace`)
  assert.strictEqual(finished.stdout, "", `${label}: nothing on stdout`)
}

describe("vk-sandbox binary", () => {
  it.effect("--version, --help, usage errors (exit 2) and startup errors (exit 1)", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "vk-sandbox-cli-"))
      const [version, versionStamped, help, badDuration, unknownFlag, badEnv, emptyStatePath, tokenMissing, simBadFlag, badFailpoint] = yield* Effect.all(
        [
          run(["--version"], { VK_NODE_CPU: "abc" }),
          run(["-version"], { VK_SANDBOX_REVISION: "0123abc", VK_SANDBOX_BUILT_AT: "2026-11-29T10:00:00" }),
          run(["--help"]),
          run(["--orphan-scan-interval=abc"]),
          run(["--no-such-flag"]),
          run([], { VK_NODE_MEMORY: "8TB" }),
          run(["--state-path="]),
          run(["--state-path", join(dir, "claims.json"), "--sandboxd-token-file", join(dir, "missing-token")]),
          run(["sim", "sandboxd", "--no-such-flag"]),
          run(["--state-path", join(dir, "claims.json")], { VK_SANDBOX_FAILPOINTS: "claim-after-sent=crash" })
        ],
        { concurrency: "unbounded" }
      )

      // CFG-6 — --version does nothing else: exactly one line, exit 0, no other startup work (a bad
      // VK_NODE_CPU is not even looked at).
      assert.strictEqual(version.code, 0, version.stderr)
      assert.strictEqual(version.stdout, `vk-sandbox ${packageJson.version} (rev=unknown built=unknown)\n`)
      assert.strictEqual(version.stderr, "")
      assert.strictEqual(versionStamped.stdout, `vk-sandbox ${packageJson.version} (rev=0123abc built=2026-11-29T10:00:00)\n`)

      assert.strictEqual(help.code, 0, help.stderr)
      for (const spec of daemonFlags) {
        assert.include(help.stdout, `--${spec.name}`)
        if (spec.env !== undefined) assert.include(help.stdout, `env ${spec.env}`)
        assert.include(help.stdout, `default ${spec.kind === "bool" ? spec.defaultText : JSON.stringify(spec.defaultText)}`)
      }
      assert.include(help.stdout, "vk-sandbox sim")

      assertOneLineFailure("bad duration", badDuration, 2, `--orphan-scan-interval: not a Go duration`)
      assertOneLineFailure("unknown flag", unknownFlag, 2, "--no-such-flag")
      assertOneLineFailure("bad env var", badEnv, 2, "--node-memory (from $VK_NODE_MEMORY)")
      assertOneLineFailure("empty state path", emptyStatePath, 2, "--state-path: must not be empty")
      assertOneLineFailure("unreadable token file", tokenMissing, 1, "--sandboxd-token-file")
      // A mistyped failpoint stops the start instead of passing as an inert one.
      assertOneLineFailure("unknown failpoint", badFailpoint, 1, `VK_SANDBOX_FAILPOINTS: unknown failpoint "claim-after-sent"`)
      // The simulators share the daemon's parser: the same one-line usage error.
      assertOneLineFailure("sim unknown flag", simBadFlag, 2, "--no-such-flag")
    }))

  it.effect("the state directory shared (mode 1777, like /tmp) or the state file invalid: exit 1, one stderr line, nothing changed", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "vk-sandbox-cli-"))
      const shared = join(dir, "tmp")
      mkdirSync(shared)
      chmodSync(shared, 0o1777)
      const own = join(dir, "own")
      mkdirSync(own, { mode: 0o700 })
      const row = `{"id":"sb_1","token":"tok_secret_4f9a","podUID":""}`
      const invalid = `{"claims":{\n"ns/a":${row},\n"ns/b":${row}}}`
      writeFileSync(join(own, "claims.json"), invalid)
      writeFileSync(join(dir, "token"), "t", { mode: 0o600 })
      // Parsed, never contacted: the state is refused before the daemon talks to anyone.
      writeFileSync(
        join(dir, "kubeconfig"),
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n" +
          "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n"
      )
      const daemon = (statePath: string) =>
        run(["--state-path", statePath, "--sandboxd-token-file", join(dir, "token"), "--kubeconfig", join(dir, "kubeconfig")])
      const [inShared, twoKeys] = yield* Effect.all([daemon(join(shared, "claims.json")), daemon(join(own, "claims.json"))], {
        concurrency: "unbounded"
      })
      assert.strictEqual(inShared.code, 1, inShared.stderr)
      assert.strictEqual(lines(inShared.stderr).length, 1, inShared.stderr)
      assert.include(inShared.stderr, `StateDirUnsafe: state directory ${shared} is writable by group or others, sticky`)
      assert.strictEqual(statSync(shared).mode & 0o7777, 0o1777, "the shared directory keeps its mode")
      assert.deepStrictEqual(readdirSync(shared), [])

      assert.strictEqual(twoKeys.code, 1, twoKeys.stderr)
      assert.strictEqual(lines(twoKeys.stderr).length, 1, twoKeys.stderr)
      assert.include(twoKeys.stderr, `row "ns/b" (line 3 column 1): claim id "sb_1" is already the claim of row "ns/a"`)
      assert.notInclude(twoKeys.stderr + twoKeys.stdout, "tok_secret_4f9a")
      assert.strictEqual(readFileSync(join(own, "claims.json"), "utf8"), invalid, "the file is left as it is")
      rmSync(dir, { recursive: true, force: true })
    }))

  it.effect("bad configuration: each case one stderr line and its exit status, before any other work", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "vk-sandbox-badconf-"))
      const statePath = join(dir, "state", "claims.json")
      const one = yield* generateSelfSigned("one", "")
      const other = yield* generateSelfSigned("other", "")
      writeFileSync(join(dir, "tls.crt"), one.certPem)
      writeFileSync(join(dir, "tls.key"), one.keyPem)
      writeFileSync(join(dir, "other.key"), other.keyPem)
      writeFileSync(join(dir, "empty-token"), "")
      writeFileSync(join(dir, "blank-token"), "  \n\t\n")
      const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, number, string]> = [
        ["empty token file", ["--sandboxd-token-file", join(dir, "empty-token")], 1, `--sandboxd-token-file "${join(dir, "empty-token")}" is empty`],
        ["blank token file", ["--sandboxd-token-file", join(dir, "blank-token")], 1, `--sandboxd-token-file "${join(dir, "blank-token")}" is empty`],
        ["cert without key", ["--tls-cert", join(dir, "tls.crt")], 2, "--tls-cert needs --tls-key"],
        ["key without cert", ["--tls-key", join(dir, "tls.key")], 2, "--tls-key needs --tls-cert"],
        ["unreadable pair", ["--tls-cert", join(dir, "absent.crt"), "--tls-key", join(dir, "tls.key")], 1, `KubeletTlsError: cannot read the kubelet certificate ${join(dir, "absent.crt")}`],
        ["mismatched pair", ["--tls-cert", join(dir, "tls.crt"), "--tls-key", join(dir, "other.key")], 1, "KubeletTlsError: cannot use the key pair"]
      ]
      const finished = yield* Effect.all(cases.map(([, args]) => run(["--state-path", statePath, ...args])), { concurrency: "unbounded" })
      cases.forEach(([label, , code, text], i) => assertOneLineFailure(label, finished[i]!, code, text))
      // Nothing was started: not even the state directory was made.
      assert.isFalse(existsSync(join(dir, "state")))
    }), { timeout: 60_000 })

  it.effect("a subcommand ended by SIGTERM exits 0 (CFG-18)", () =>
    Effect.callback<{ readonly firstLine: string; readonly code: number | null }>((resume) => {
      const child = spawn(binary, ["sim", "sandboxd", "--listen", "127.0.0.1:0", "--token", "t"], {
        env: { PATH: process.env["PATH"] ?? "" },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stdout = ""
      let firstLine: string | undefined
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk
        if (firstLine === undefined && stdout.includes("\n")) {
          firstLine = stdout.slice(0, stdout.indexOf("\n"))
          child.kill("SIGTERM")
        }
      })
      child.on("error", (error) => resume(Effect.die(error)))
      child.on("close", (code) => resume(Effect.succeed({ firstLine: firstLine ?? "", code })))
      return Effect.sync(() => child.kill("SIGKILL"))
    }).pipe(
      Effect.map(({ code, firstLine }) => {
        assert.match(firstLine, /^listening on http:\/\/127\.0\.0\.1:\d+$/)
        assert.strictEqual(code, 0)
      })
    ))
})
