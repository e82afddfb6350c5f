/**
 * `npm run demo` as a user runs it: a separate process, exit 0, every step reported, and no
 * token in the transcript or in the daemon's log (the tokens are read back from the claims file
 * and the token file the demo leaves in its temp directory, which this test then removes).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { runProcess } from "../../support/Process.ts"

const demo = fileURLToPath(new URL("../../../testkit/Demo/main.ts", import.meta.url))

const runDemo = runProcess(process.execPath, [demo], {}, "SIGTERM")

describe("npm run demo", () => {
  it.live("walks the pod contract, exits 0, prints no token", () =>
    Effect.gen(function*() {
      const { code, stderr, stdout } = yield* runDemo
      const dir = /temp directory (\S+) is kept/.exec(stdout)?.[1]
      try {
        assert.strictEqual(code, 0, `${stdout}\n${stderr}`)
        for (let step = 1; step <= 9; step++) assert.include(stdout, `\n[${step}] `)
        assert.include(stdout, "All steps behaved")
        assert.include(stdout, "verdict preserve")
        assert.include(stdout, "verdict release")
        assert.include(stdout, "Pending (ProviderFailed)")
        assert.include(stdout, "Failed (SandboxLeaseExpired)")
        assert.include(stdout, "kind: NodeInventory")
        assert.include(stdout, "<redacted>")
        // Where the metrics, the logs and (when enabled) the traces are.
        assert.match(stdout, /served \/metrics .* on http:\/\/127\.0\.0\.1:\d+/)
        assert.match(stdout, /JSON logs .* are in \S+daemon\.log/)
        assert.include(stdout, "--otlp-endpoint")

        assert.isDefined(dir, stdout)
        const claims = JSON.parse(fs.readFileSync(path.join(dir!, "state", "claims.json"), "utf8")) as {
          claims: Record<string, { token: string }>
        }
        const tokens = [
          ...Object.values(claims.claims).map((row) => row.token),
          fs.readFileSync(path.join(dir!, "sandboxd-token"), "utf8").trim()
        ]
        assert.isAtLeast(tokens.length, 4)
        const log = fs.readFileSync(path.join(dir!, "daemon.log"), "utf8")
        assert.include(log, "claimed hot sandbox")
        // Every daemon line has the one flat shape: time, level, msg first, no nested envelope,
        // and every error as error.tag / error.message (error.cause optional).
        const lines = log.split("\n").filter((line) => line.startsWith("{"))
        assert.isAtLeast(lines.length, 20)
        let errors = 0
        for (const line of lines) {
          const record = JSON.parse(line) as Record<string, unknown>
          assert.deepStrictEqual(Object.keys(record).slice(0, 3), ["time", "level", "msg"], line)
          assert.match(String(record["time"]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, line)
          assert.oneOf(record["level"], ["trace", "debug", "info", "warn", "error", "fatal"], line)
          assert.isString(record["msg"], line)
          for (const [key, value] of Object.entries(record)) {
            assert.notInclude(["annotations", "spans", "fiberId", "message", "err", "error"], key, line)
            assert.isFalse(typeof value === "object" && value !== null && !Array.isArray(value), `${key} is nested: ${line}`)
          }
          if (record["error.tag"] !== undefined || record["error.message"] !== undefined) {
            errors++
            assert.isString(record["error.tag"], line)
            assert.isString(record["error.message"], line)
          }
        }
        assert.isAtLeast(errors, 1, "the demo's failure steps log at least one error")
        for (const token of tokens) {
          assert.notInclude(stdout + stderr, token)
          assert.notInclude(log, token)
        }
      } finally {
        if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
      }
    }), { timeout: 120_000 })
})
