/**
 * `vk-sandbox sim sandboxd --listen 127.0.0.1:7777 --token <root> [--pools …] [--max-claims N] [--mesh]`:
 * the simulator standalone. Its first stdout line is `listening on http://<host>:<port>`, so
 * `--listen 127.0.0.1:0` is usable from scripts; it then serves until interrupted (SIGTERM).
 */
import { Console, Duration, Effect, Result } from "effect"
import { exitWith } from "../../../src/Cli/Errors.ts"
import { bool, type FlagSpec, flagReader, tokenize, value } from "../../../src/Cli/Flags.ts"
import { commandHelp } from "../../../src/Cli/Help.ts"
import type { Environment } from "../../../src/Cli/ParseConfig.ts"
import * as Model from "./Model.ts"
import { isLoopbackHost, serve } from "./Server.ts"

export interface ListenAddress {
  readonly host: string
  readonly port: number
}


/** `host:port` or `[v6]:port`; loopback hosts only (the simulator never listens elsewhere). */
export const parseListen = (text: string): Result.Result<ListenAddress, string> => {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text)
  if (m === null) return Result.fail("expected host:port, e.g. 127.0.0.1:7777")
  const host = m[1] ?? m[2]
  const port = Number(m[3])
  if (port > 65535) return Result.fail(`port ${port} out of range`)
  if (!isLoopbackHost(host)) return Result.fail(`host ${host} is not a loopback address (127.0.0.0/8 or ::1)`)
  return Result.succeed({ host, port })
}

/**
 * `template/net/size=count,…`, e.g. `base:24.04/none/small=4,ghcr.io/acme/rt:1.4.2/none/medium=2`.
 * The template may itself contain `/`: net and size are the last two segments.
 */
export const parsePools = (text: string): Result.Result<ReadonlyArray<Model.SimPool>, string> => {
  const pools: Array<Model.SimPool> = []
  for (const item of text.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const eq = item.lastIndexOf("=")
    const spec = eq < 0 ? item : item.slice(0, eq)
    const countText = eq < 0 ? "" : item.slice(eq + 1)
    const parts = spec.split("/")
    if (eq < 0 || !/^\d+$/.test(countText) || parts.length < 3) {
      return Result.fail(`pool ${JSON.stringify(item)}: expected template/net/size=count`)
    }
    const size = parts.pop()!
    const net = parts.pop()!
    const template = parts.join("/")
    if (template === "" || net === "" || size === "") {
      return Result.fail(`pool ${JSON.stringify(item)}: template, net and size must not be empty`)
    }
    pools.push({ template, net, size, target: Number(countText) })
  }
  return Result.succeed(pools)
}

/** `Z`, `+08:00`, `-05:30` → minutes east of UTC. */
export const parseZone = (text: string): Result.Result<number, string> => {
  if (text === "Z" || text === "UTC") return Result.succeed(0)
  const m = /^([+-])(\d{2}):(\d{2})$/.exec(text)
  if (m === null || Number(m[2]) > 23 || Number(m[3]) > 59) return Result.fail("expected Z or ±hh:mm")
  return Result.succeed((m[1] === "-" ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])))
}

const nonNegativeMillis = (text: string): Result.Result<number, string> => {
  const n = Number(text)
  return /^\d+$/.test(text) && Number.isSafeInteger(n) ? Result.succeed(n) : Result.fail("milliseconds ≥ 0")
}

const nonNegativeInt = (text: string): Result.Result<number, string> => {
  const n = Number(text)
  return /^\d+$/.test(text) && Number.isSafeInteger(n) ? Result.succeed(n) : Result.fail("an integer ≥ 0")
}

/** The flags, in the daemon's table form: one parser and one help style for every command. */
export const sandboxdSimFlags: ReadonlyArray<FlagSpec> = [
  value("listen", "host:port", "127.0.0.1:7777", "loopback host:port to listen on (port 0 picks a free one)"),
  value("token", "string", "", "the node root api_token; empty makes an open node"),
  value("tenant-token", "string", "", "a tenant token (may claim; 403 on list and info); none when empty"),
  value("pools", "template/net/size=count,...", "", "warm pools, e.g. base:24.04/none/small=4"),
  value("max-claims", "int", "0", "node claim quota (429 beyond it); 0 = none"),
  bool("mesh", "answer warm misses with a 200 redirect to --peers instead of provisioning"),
  value("peers", "host:port,...", "127.0.0.1:7778,127.0.0.1:7779", "redirect targets in mesh mode"),
  value("zone", "offset", "Z", "UTC offset deadlines are written in: Z or ±hh:mm"),
  value("cold-provision-ms", "int", "500", "delay of a cold provision on a warm miss, in milliseconds"),
  value("refill-ms", "int", "1000", "delay before a claimed warm VM is replaced, in milliseconds")
]

export const sandboxdSimHelp = commandHelp({
  summary: "vk-sandbox sim sandboxd: run the sandboxd simulator on a loopback address until SIGTERM",
  usage: ["vk-sandbox sim sandboxd [flags]"],
  flags: sandboxdSimFlags
})

/** `sim sandboxd` with its arguments: help, a one-line usage error (exit 2), or the running simulator. */
export const runSandboxdSim = (args: ReadonlyArray<string>, env: Environment) =>
  Effect.gen(function*() {
    const tokens = tokenize(args, sandboxdSimFlags)
    if (Result.isFailure(tokens)) return yield* exitWith(2, tokens.failure.message)
    if (tokens.success.help) return yield* Console.log(sandboxdSimHelp)
    const { field, text } = flagReader(tokens.success, env, sandboxdSimFlags)
    const parsed = Result.all({
      listen: field("listen", parseListen),
      pools: field("pools", parsePools),
      maxClaims: field("max-claims", nonNegativeInt),
      zone: field("zone", parseZone),
      coldProvisionMillis: field("cold-provision-ms", nonNegativeMillis),
      refillMillis: field("refill-ms", nonNegativeMillis)
    })
    if (Result.isFailure(parsed)) return yield* exitWith(2, parsed.failure.message)
    const options = parsed.success
    const tenantToken = text("tenant-token")
    yield* Effect.scoped(Effect.gen(function*() {
      const sim = yield* Model.make({
        rootToken: text("token"),
        tenantTokens: tenantToken === "" ? [] : [tenantToken],
        pools: options.pools,
        maxClaims: options.maxClaims,
        mesh: text("mesh") === "true"
          ? { peers: text("peers").split(",").map((s) => s.trim()).filter((s) => s !== "") }
          : undefined,
        zoneOffsetMinutes: options.zone,
        coldProvisionDelay: Duration.millis(options.coldProvisionMillis),
        refillDelay: Duration.millis(options.refillMillis)
      })
      const address = yield* serve(sim, { host: options.listen.host, port: options.listen.port })
      yield* Console.log(`listening on ${address.url}`)
      return yield* Effect.never
    }))
  })
