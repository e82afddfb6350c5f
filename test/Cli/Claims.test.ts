/**
 * `vk-sandbox claims`: the real executable on files in the reference's exact format (PER-1 — claims
 * file format; PER-2 — timestamps at second precision), the table and `--json`, no token ever
 * printed, and a malformed file refused with the very line the daemon prints for it (both binaries
 * run on the same file).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { formatTimeLeft } from "../../src/Cli/Claims.ts"
import { decodeClaimsFile } from "../../src/Schemas/ClaimsFile/Decode.ts"
import { encodeClaimsFile } from "../../src/Schemas/ClaimsFile/Encode.ts"
import { runBinary } from "../support/Process.ts"

const run = runBinary

const tokens = ["tok-AAAA-first-secret", "tok-BBBB-<second>&", "tok-CCCC-third"]

// The reference's bytes: compact, keys sorted, fields in order id, token, address, podUID,
// claimedAt, deadline; address omitted when empty, podUID always, whole-second UTC times.
const referenceFile = `{"claims":{` +
  `"team-a/p1":{"id":"sb_0001","token":"tok-AAAA-first-secret","address":"10.1.2.3:9090","podUID":"3f1c-uid-1","claimedAt":"2026-07-27T02:15:00Z","deadline":"2099-01-01T00:00:00Z"},` +
  `"team-a/p2":{"id":"sb_0002","token":"tok-BBBB-\\u003csecond\\u003e\\u0026","podUID":"","claimedAt":"2026-07-27T02:16:30Z","deadline":"2020-01-01T00:00:00Z"},` +
  `"team-b/p3":{"id":"sb_0003","token":"tok-CCCC-third","podUID":"3f1c-uid-3","claimedAt":"2026-07-27T02:17:00Z"}` +
  `}}`

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "vk-sandbox-claims-"))

// Each test starts real processes at once (up to eight), and a loaded machine starts each in
// seconds: the limit only ends a hang, it measures nothing.
const processes = { timeout: 120_000 }

describe("vk-sandbox claims", () => {
  it.effect("the fixture is in the reference's exact format", () =>
    Effect.gen(function*() {
      const rows = yield* decodeClaimsFile(referenceFile)
      assert.strictEqual(encodeClaimsFile(rows), referenceFile)
      assert.deepStrictEqual([...rows.values()].map((r) => Redacted.value(r.token)), tokens)
    }))

  it.effect("lists the table and --json with tokens redacted; reads VK_STATE_PATH", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const file = path.join(dir, "claims.json")
      fs.writeFileSync(file, referenceFile, { mode: 0o600 })
      const [table, json, fromEnv, missing] = yield* Effect.all([
        run(["claims", "--state-path", file]),
        run(["claims", `--state-path=${file}`, "--json"]),
        run(["claims"], { VK_STATE_PATH: file }),
        run(["claims", "--state-path", path.join(dir, "absent.json"), "--json"])
      ], { concurrency: "unbounded" })

      assert.strictEqual(table.code, 0, table.stderr)
      assert.strictEqual(table.stderr, "")
      const lines = table.stdout.trimEnd().split("\n")
      assert.strictEqual(lines.length, 4, table.stdout)
      assert.match(lines[0]!, /^POD\s+CLAIM ID\s+ADDRESS\s+POD UID\s+CLAIMED AT\s+DEADLINE\s+TIME LEFT\s+TOKEN$/)
      assert.match(lines[1]!, /^team-a\/p1\s+sb_0001\s+10\.1\.2\.3:9090\s+3f1c-uid-1\s+2026-07-27T02:15:00Z\s+2099-01-01T00:00:00Z\s+\d+h\d\dm\d\ds\s+<redacted>$/)
      assert.match(lines[2]!, /^team-a\/p2\s+sb_0002\s+-\s+-\s+2026-07-27T02:16:30Z\s+2020-01-01T00:00:00Z\s+expired \d+h\d\dm\d\ds ago\s+<redacted>$/)
      assert.match(lines[3]!, /^team-b\/p3\s+sb_0003\s+-\s+3f1c-uid-3\s+2026-07-27T02:17:00Z\s+-\s+-\s+<redacted>$/)
      assert.strictEqual(fromEnv.code, 0, fromEnv.stderr)
      assert.deepStrictEqual(
        fromEnv.stdout.trimEnd().split("\n").map((line) => line.split(/\s+/)[1]),
        ["CLAIM", "sb_0001", "sb_0002", "sb_0003"]
      )

      assert.strictEqual(json.code, 0, json.stderr)
      const parsed = JSON.parse(json.stdout) as {
        path: string
        claims: Array<Record<string, unknown>>
      }
      assert.strictEqual(parsed.path, file)
      assert.deepStrictEqual(parsed.claims.map((c) => c["pod"]), ["team-a/p1", "team-a/p2", "team-b/p3"])
      assert.deepInclude(parsed.claims[0]!, {
        id: "sb_0001",
        token: "<redacted>",
        address: "10.1.2.3:9090",
        podUID: "3f1c-uid-1",
        claimedAt: "2026-07-27T02:15:00Z",
        deadline: "2099-01-01T00:00:00Z"
      })
      assert.isAbove(parsed.claims[0]!["secondsLeft"] as number, 0)
      assert.isBelow(parsed.claims[1]!["secondsLeft"] as number, 0)
      assert.deepInclude(parsed.claims[2]!, { address: "", deadline: null, secondsLeft: null })

      for (const out of [table, json, fromEnv]) {
        for (const token of tokens) {
          assert.notInclude(out.stdout + out.stderr, token)
          assert.notInclude(out.stdout + out.stderr, token.slice(0, 9))
        }
      }
      // The file is left exactly as it was (read-only).
      assert.strictEqual(fs.readFileSync(file, "utf8"), referenceFile)

      // A missing file is an empty table, as for the daemon (PER-8 — loading the file).
      assert.strictEqual(missing.code, 0, missing.stderr)
      assert.deepStrictEqual((JSON.parse(missing.stdout) as { claims: Array<unknown> }).claims, [])
    }), processes)

  it.effect("refuses a malformed or unreadable file with the daemon's own message, exit 1", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const tokenFile = path.join(dir, "token")
      fs.writeFileSync(tokenFile, "root\n")
      // The daemon stops at the claims load, before any connection to this server is made.
      const kubeconfig = path.join(dir, "kubeconfig")
      fs.writeFileSync(
        kubeconfig,
        [
          "apiVersion: v1",
          "kind: Config",
          "clusters: [{name: c, cluster: {server: \"http://127.0.0.1:9\", insecure-skip-tls-verify: true}}]",
          "users: [{name: u, user: {token: t}}]",
          "contexts: [{name: x, context: {cluster: c, user: u}}]",
          "current-context: x",
          ""
        ].join("\n")
      )
      const cases: Array<readonly [string, (file: string) => void]> = [
        ["truncated", (f) => fs.writeFileSync(f, referenceFile.slice(0, 60))],
        ["bad timestamp", (f) => fs.writeFileSync(f, referenceFile.replace("2026-07-27T02:15:00Z", "yesterday"))],
        ["wrong shape", (f) => fs.writeFileSync(f, `{"claims":{"team-a/p1":{"id":7,"token":"tok-AAAA-first-secret"}}}`)],
        ["a directory", (f) => fs.mkdirSync(f)]
      ]
      yield* Effect.forEach(cases, ([label, make]) => Effect.gen(function*() {
        const caseDir = path.join(dir, label.replace(/ /g, "-"))
        fs.mkdirSync(caseDir)
        const file = path.join(caseDir, "claims.json")
        make(file)
        const [cli, daemon] = yield* Effect.all([
          run(["claims", "--state-path", file]),
          run([
            "--kubeconfig", kubeconfig,
            "--sandboxd-token-file", tokenFile,
            "--state-path", file,
            "--listen-addr", "127.0.0.1:1",
            "--metrics-addr", "127.0.0.1:0"
          ])
        ], { concurrency: "unbounded" })
        assert.strictEqual(cli.code, 1, `${label}: ${cli.stderr}`)
        assert.strictEqual(daemon.code, 1, `${label}: ${daemon.stderr}`)
        assert.strictEqual(cli.stdout, "", label)
        assert.match(cli.stderr, /^vk-sandbox: ClaimsLoadError: cannot (decode|read) /, label)
        assert.strictEqual(cli.stderr, daemon.stderr, `${label}: the daemon's message`)
        for (const token of tokens) assert.notInclude(cli.stderr, token, label)
      }), { concurrency: "unbounded" })
    }), processes)

  it.effect("a dangling symlink (a volume not mounted) is refused like the daemon refuses it, never \"no claims\"", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const file = path.join(dir, "claims.json")
      fs.symlinkSync(path.join(dir, "unmounted", "claims.json"), file)
      const [table, json] = yield* Effect.all([
        run(["claims", "--state-path", file]),
        run(["claims", "--state-path", file, "--json"])
      ], { concurrency: "unbounded" })
      for (const out of [table, json]) {
        assert.strictEqual(out.code, 1, out.stderr)
        assert.strictEqual(out.stdout, "")
        assert.strictEqual(
          out.stderr,
          `vk-sandbox: StateDirUnsafe: state file ${file} is a symbolic link to ${path.join(dir, "unmounted", "claims.json")}, ` +
            `which does not exist (a volume not mounted?): refusing to start with an empty claims table\n`
        )
      }
    }), processes)

  it.effect("usage errors exit 2", () =>
    Effect.gen(function*() {
      const [unknown, noValue] = yield* Effect.all([run(["claims", "--bogus"]), run(["claims", "--state-path"])], {
        concurrency: "unbounded"
      })
      assert.strictEqual(unknown.code, 2)
      assert.include(unknown.stderr, "--bogus")
      assert.strictEqual(noValue.code, 2)
      assert.include(noValue.stderr, "--state-path")
    }), processes)

  it("formats the time left", () => {
    assert.strictEqual(formatTimeLeft(null), "-")
    assert.strictEqual(formatTimeLeft(0), "0s")
    assert.strictEqual(formatTimeLeft(45), "45s")
    assert.strictEqual(formatTimeLeft(125), "2m05s")
    assert.strictEqual(formatTimeLeft(3723), "1h02m03s")
    assert.strictEqual(formatTimeLeft(-12), "expired 12s ago")
  })
})
