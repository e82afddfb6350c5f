/**
 * `sim sandboxd` as a real process: the first stdout line names the bound URL, the live client
 * works against it, the flags take effect, and SIGTERM ends it.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted, Result } from "effect"
import { parseListen, parsePools, parseZone } from "../../../../testkit/Simulators/Sandboxd/Command.ts"
import { claimSpec, clientFor } from "../../../support/Sandboxd.ts"

const fixture = fileURLToPath(new URL("./fixtures/sim-main.ts", import.meta.url))

interface Running {
  readonly child: ChildProcess
  readonly firstLine: string
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Starts the simulator process and waits for its first stdout line (or its exit). */
const startProcess = (args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.callback<Running>((resume) => {
      const child = spawn(process.execPath, [fixture, ...args], { stdio: ["ignore", "pipe", "pipe"] })
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once("exit", (code, signal) => resolve({ code, signal }))
      )
      let stdout = ""
      child.stdout!.on("data", (chunk: Buffer) => {
        stdout += chunk.toString("utf8")
        const newline = stdout.indexOf("\n")
        if (newline >= 0) resume(Effect.succeed({ child, firstLine: stdout.slice(0, newline), exited }))
      })
      void exited.then(() => resume(Effect.succeed({ child, firstLine: stdout, exited })))
    }),
    ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
  )

describe("sim sandboxd command", () => {
  it.live("prints `listening on http://<host>:<port>` first, serves, and stops on SIGTERM", () =>
    Effect.gen(function*() {
      const running = yield* startProcess([
        "--listen",
        "127.0.0.1:0",
        "--token",
        "root-secret",
        "--pools",
        "ghcr.io/acme/agent-runtime:1.4.2/none/medium=1,base:24.04/none/small=2",
        "--max-claims",
        "1"
      ])
      const match = /^listening on (http:\/\/127\.0\.0\.1:(\d+))$/.exec(running.firstLine)
      assert.isNotNull(match, `first line was ${JSON.stringify(running.firstLine)}`)
      const client = yield* clientFor(match![1], { sandboxdToken: Redacted.make("root-secret") })
      yield* client.healthz
      const claim = yield* client.claim(claimSpec())
      assert.strictEqual(claim.ownerAddr, `127.0.0.1:${match![2]}`)
      const refused = yield* Effect.flip(client.claim(claimSpec()))
      assert.strictEqual(refused._tag, "NoWarmCapacity")
      const info = yield* client.info
      assert.deepStrictEqual(info.pools.map((p) => [p.template, p.size, p.warm, p.target]), [
        ["base:24.04", "small", 2, 2],
        ["ghcr.io/acme/agent-runtime:1.4.2", "medium", 0, 1]
      ])
      running.child.kill("SIGTERM")
      const exit = yield* Effect.promise(() => running.exited)
      assert.isNull(exit.signal, "ended by its own SIGTERM handling, not killed")
      const after = yield* Effect.flip(client.healthz)
      assert.strictEqual(after._tag, "SandboxdUnreachable")
    }))

  it.live("--mesh answers warm misses with a redirect", () =>
    Effect.gen(function*() {
      const running = yield* startProcess(["--listen", "127.0.0.1:0", "--mesh"])
      const url = running.firstLine.replace(/^listening on /, "")
      const client = yield* clientFor(url, { sandboxdToken: Redacted.make("") })
      const error = yield* Effect.flip(client.claim(claimSpec({ template: "cold:1" })))
      assert.strictEqual(error._tag, "NoWarmCapacity")
      assert.include(error.message, "127.0.0.1:7778")
    }))

  it.live("refuses a non-loopback --listen without listening", () =>
    Effect.gen(function*() {
      const running = yield* startProcess(["--listen", "0.0.0.0:0"])
      const exit = yield* Effect.promise(() => running.exited)
      assert.notStrictEqual(exit.code, 0)
      assert.notMatch(running.firstLine, /listening on/)
    }))
})

describe("flag parsers", () => {
  it("parses --listen", () => {
    assert.deepStrictEqual(parseListen("127.0.0.1:7777"), Result.succeed({ host: "127.0.0.1", port: 7777 }))
    assert.deepStrictEqual(parseListen("[::1]:0"), Result.succeed({ host: "::1", port: 0 }))
    assert.isTrue(Result.isFailure(parseListen("10.0.0.5:7777")))
    assert.isTrue(Result.isFailure(parseListen(":7777")))
    assert.isTrue(Result.isFailure(parseListen("127.0.0.1:70000")))
  })

  it("parses --pools with templates containing slashes", () => {
    assert.deepStrictEqual(
      parsePools("base:24.04/none/small=4, ghcr.io/acme/rt:1.4.2/egress/medium=2"),
      Result.succeed([
        { template: "base:24.04", net: "none", size: "small", target: 4 },
        { template: "ghcr.io/acme/rt:1.4.2", net: "egress", size: "medium", target: 2 }
      ])
    )
    assert.deepStrictEqual(parsePools(""), Result.succeed([]))
    assert.isTrue(Result.isFailure(parsePools("base/none/small")))
    assert.isTrue(Result.isFailure(parsePools("base/small=2")))
    assert.isTrue(Result.isFailure(parsePools("base/none/small=x")))
  })

  it("parses --zone", () => {
    assert.deepStrictEqual(parseZone("Z"), Result.succeed(0))
    assert.deepStrictEqual(parseZone("+08:00"), Result.succeed(480))
    assert.deepStrictEqual(parseZone("-05:30"), Result.succeed(-330))
    assert.isTrue(Result.isFailure(parseZone("8")))
  })
})
