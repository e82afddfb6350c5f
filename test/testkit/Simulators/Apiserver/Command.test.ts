import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestConsole } from "effect/testing"
import { parseListen, runApiserverSim } from "../../../../testkit/Simulators/Apiserver/Command.ts"
import { request } from "./http.ts"
import { flushIO } from "../../../support/Wait.ts"

// real I/O (listen, file write) happens outside Effect time: give the event loop a real turn

describe("sim apiserver command", () => {
  it.effect("parses loopback listen addresses and refuses others", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* parseListen("127.0.0.1:0"), { host: "127.0.0.1", port: 0 })
      assert.deepStrictEqual(yield* parseListen("[::1]:6443"), { host: "::1", port: 6443 })
      const outside = yield* Effect.exit(parseListen("0.0.0.0:6443"))
      assert.isTrue(Exit.isFailure(outside))
      const garbage = yield* Effect.exit(parseListen("localhost"))
      assert.isTrue(Exit.isFailure(garbage))
    }))

  it.effect("prints `listening on http://<host>:<port>` first, writes the kubeconfig and serves until interrupted", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "apiserver-cmd-"))),
        (d) => Effect.promise(() => fs.rm(d, { recursive: true, force: true }))
      )
      const kubeconfig = path.join(dir, "kubeconfig")
      const run = (args: ReadonlyArray<string>) => runApiserverSim(args, {})
      const fiber = yield* run(["--listen", "127.0.0.1:0", "--kubeconfig-out", kubeconfig, "--token", "tok"]).pipe(
        Effect.provide(NodeServices.layer),
        Effect.forkChild({ startImmediately: true })
      )
      let lines: ReadonlyArray<unknown> = []
      for (let i = 0; i < 2000 && lines.length === 0; i++) {
        yield* flushIO
        lines = yield* TestConsole.logLines
      }
      assert.match(String(lines[0]), /^listening on http:\/\/127\.0\.0\.1:\d+$/)
      const url = String(lines[0]).slice("listening on ".length)
      const text = yield* Effect.promise(() => fs.readFile(kubeconfig, "utf8"))
      assert.include(text, `server: ${url}`)
      assert.include(text, "insecure-skip-tls-verify: true")
      const r = yield* request(`${url}/api/v1/namespaces/default`, { token: "tok" })
      assert.strictEqual(r.status, 200)
      yield* Fiber.interrupt(fiber)
      const after = yield* Effect.promise(() => fetch(`${url}/healthz`).then(() => "up", () => "down"))
      assert.strictEqual(after, "down")
    }))
})
