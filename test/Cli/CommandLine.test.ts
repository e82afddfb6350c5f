/**
 * One command line for the whole binary: the daemon, `claims` and every simulator share one
 * parser (Go-style flags, env fallback) and one help style. Every `--help` lists every flag with
 * its environment variable (where one exists) and default; a usage error is one line on stderr
 * and exit 2, whichever command; and the invocations the docs, the chart and the systemd env file
 * use today keep parsing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { claimsFlags } from "../../src/Cli/Claims.ts"
import { daemonFlags, type FlagSpec, tokenize } from "../../src/Cli/Flags.ts"
import { parseInvocation } from "../../src/Cli/ParseConfig.ts"
import { apiserverSimFlags } from "../../testkit/Simulators/Apiserver/Command.ts"
import { sandboxdSimFlags } from "../../testkit/Simulators/Sandboxd/Command.ts"

const binary = fileURLToPath(new URL("../../node_modules/.bin/vk-sandbox", import.meta.url))
const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url))

const run = (args: ReadonlyArray<string>) =>
  Effect.callback<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resume) => {
    const child = spawn(binary, args, { env: { PATH: process.env["PATH"] ?? "" }, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const commands: ReadonlyArray<readonly [string, ReadonlyArray<string>, ReadonlyArray<FlagSpec>]> = [
  ["the daemon", [], daemonFlags],
  ["claims", ["claims"], claimsFlags],
  ["sim sandboxd", ["sim", "sandboxd"], sandboxdSimFlags],
  ["sim apiserver", ["sim", "apiserver"], apiserverSimFlags]
]

describe("one command line", () => {
  it.live("every command's --help lists every flag with its env var and default, in one style", () =>
    Effect.gen(function*() {
      const helps = yield* Effect.forEach(commands, ([, prefix]) => run([...prefix, "--help"]), { concurrency: 2 })
      commands.forEach(([what, , flags], i) => {
        const { code, stdout } = helps[i]!
        assert.strictEqual(code, 0, what)
        assert.include(stdout, "Usage:", what)
        assert.include(stdout, "\nFlags:\n", what)
        for (const spec of flags) {
          const env = spec.env === undefined ? "" : `env ${spec.env}, `
          const shown = spec.kind === "bool" ? spec.defaultText : JSON.stringify(spec.defaultText)
          assert.include(stdout, `  --${spec.name}`, `${what}: --${spec.name}`)
          assert.include(stdout, `${spec.description} (${env}default ${shown})`, `${what}: --${spec.name}`)
        }
      })
    }), { timeout: 60_000 })

  it.live("a usage error is one line on stderr and exit 2, whichever command", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<ReadonlyArray<string>> = [
        ...commands.map(([, prefix]) => [...prefix, "--no-such-flag"]),
        ["sim", "sandboxd", "--max-claims", "-1"],
        ["sim", "sandboxd", "--listen", "0.0.0.0:7777"],
        ["sim", "apiserver", "--listen", "10.0.0.1:6443"],
        ["sim", "nope"],
        ["claims", "--state-path="],
        ["--sandboxd-timeout", "5"]
      ]
      const results = yield* Effect.forEach(cases, run, { concurrency: 2 })
      cases.forEach((args, i) => {
        const { code, stderr, stdout } = results[i]!
        assert.strictEqual(code, 2, `${args.join(" ")}: ${stderr}`)
        assert.match(stderr, /^vk-sandbox: [^\n]+\n$/, `${args.join(" ")}: one line`)
        assert.strictEqual(stdout, "", args.join(" "))
      })
    }), { timeout: 90_000 })

  it("today's documented invocations keep parsing: the docs, the chart's args, the systemd env file", () => {
    // The daemon's flags as the chart renders them (values filled in as the defaults render).
    const chartArgs = [
      "--listen-addr=:10250", "--metrics-addr=:10255", "--state-path=/var/lib/vk-sandbox/claims.json",
      "--node-labels=sandbox.cocoonstack.io/runtime=sandboxd", "--kube-api-qps=200", "--kube-api-burst=400",
      "--sandboxd-timeout=10s", "--sandboxd-max-concurrency=64", "--orphan-scan-interval=60s",
      "--lease-watch-interval=30s", "--claim-verify-interval=15s", "--shutdown-timeout=10s", "--log-level=info",
      "--log-format=json", "--publish-inventory", "--publish-interval=30s", "--client-ca-file=/etc/vk-sandbox/client-ca/ca.crt"
    ]
    const template = fs.readFileSync(root("deploy/helm/vk-sandbox/templates/daemonset.yaml"), "utf8")
    for (const arg of chartArgs) {
      assert.include(template, `- ${arg.split("=")[0]}`, `the chart still passes ${arg.split("=")[0]}`)
    }
    assert.isTrue(Result.isSuccess(parseInvocation(chartArgs, {})), "the chart's daemon command line")

    // The systemd env file: every variable it sets is one the daemon reads, and the values parse.
    const envFile = fs.readFileSync(root("packaging/env.example"), "utf8")
    const env = Object.fromEntries(
      envFile.split("\n").map((l) => l.replace(/^#\s*/, "")).filter((l) => /^[A-Z_]+=/.test(l)).map((l) => {
        const eq = l.indexOf("=")
        return [l.slice(0, eq), l.slice(eq + 1)]
      })
    )
    const known = new Set(daemonFlags.flatMap((spec) => (spec.env === undefined ? [] : [spec.env])))
    for (const name of Object.keys(env)) assert.isTrue(known.has(name), `${name} from packaging/env.example`)
    assert.isTrue(Result.isSuccess(parseInvocation([], env)), "the env file's values")
    assert.isTrue(Result.isSuccess(parseInvocation(["--publish-inventory", "--log-level=debug"], env)), "the systemd drop-in")

    // The simulators and claims as docs/development.md and docs/operations.md show them.
    const documented: ReadonlyArray<readonly [ReadonlyArray<FlagSpec>, ReadonlyArray<string>]> = [
      [sandboxdSimFlags, ["--listen", "127.0.0.1:7777", "--pools", "base:24.04/none/small=4"]],
      [sandboxdSimFlags, ["--listen", "127.0.0.1:0", "--token", "t", "--tenant-token", "x", "--max-claims", "1", "--mesh", "--peers", "127.0.0.1:7778", "--zone", "+08:00", "--cold-provision-ms", "5", "--refill-ms", "10"]],
      [apiserverSimFlags, ["--listen", "127.0.0.1:6443", "--kubeconfig-out", "/tmp/vk-sim.kubeconfig"]],
      [apiserverSimFlags, ["--listen", "127.0.0.1:0", "--token", "tok"]],
      [claimsFlags, ["--state-path", "/var/lib/vk-sandbox/claims.json", "--json"]]
    ]
    for (const [flags, args] of documented) {
      const tokens = tokenize(args, flags)
      assert.isTrue(Result.isSuccess(tokens), args.join(" "))
    }
    const devDocs = fs.readFileSync(root("docs/development.md"), "utf8")
    assert.include(devDocs, "vk-sandbox sim sandboxd --listen 127.0.0.1:7777 --pools base:24.04/none/small=4")
    assert.include(devDocs, "vk-sandbox sim apiserver --listen 127.0.0.1:6443 --kubeconfig-out /tmp/vk-sim.kubeconfig")
  })
})
