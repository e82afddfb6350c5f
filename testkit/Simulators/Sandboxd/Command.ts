/**
 * `vk-sandbox sim sandboxd --listen 127.0.0.1:7777 --token <root> [--pools …] [--max-claims N] [--mesh]`:
 * the simulator standalone. Its first stdout line is `listening on http://<host>:<port>`, so
 * `--listen 127.0.0.1:0` is usable from scripts; it then serves until interrupted (SIGTERM).
 */
import { Console, Duration, Effect, Option, Result } from "effect"
import { CliError, Command, Flag } from "effect/cli"
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

const validated = <A>(option: string, parse: (text: string) => Result.Result<A, string>) => (text: string) => {
  const result = parse(text)
  return Result.isSuccess(result)
    ? Effect.succeed(result.success)
    : Effect.fail(new CliError.InvalidValue({ option, value: text, expected: result.failure, kind: "flag" }))
}

const nonNegativeMillis = (option: string) =>
  validated(option, (text) => {
    const n = Number(text)
    return /^\d+$/.test(text) && Number.isSafeInteger(n) ? Result.succeed(n) : Result.fail("milliseconds ≥ 0")
  })

const flags = {
  listen: Flag.String("listen").pipe(
    Flag.withDescription("Loopback host:port to listen on (port 0 picks a free one)"),
    Flag.withDefault("127.0.0.1:7777"),
    Flag.mapEffect(validated("listen", parseListen))
  ),
  token: Flag.String("token").pipe(
    Flag.withDescription("The node root api_token; empty makes an open node"),
    Flag.withDefault("")
  ),
  tenantToken: Flag.String("tenant-token").pipe(
    Flag.withDescription("A tenant token (may claim; 403 on list and info)"),
    Flag.optional
  ),
  pools: Flag.String("pools").pipe(
    Flag.withDescription("Warm pools: template/net/size=count,… e.g. base:24.04/none/small=4"),
    Flag.withDefault(""),
    Flag.mapEffect(validated("pools", parsePools))
  ),
  maxClaims: Flag.Int("max-claims").pipe(
    Flag.withDescription("Node claim quota (429 beyond it); 0 = none"),
    Flag.withDefault(0)
  ),
  mesh: Flag.Boolean("mesh").pipe(
    Flag.withDescription("Answer warm misses with a 200 redirect to --peers instead of provisioning"),
    Flag.withDefault(false)
  ),
  peers: Flag.String("peers").pipe(
    Flag.withDescription("Redirect targets in mesh mode (comma-separated host:port)"),
    Flag.withDefault("127.0.0.1:7778,127.0.0.1:7779")
  ),
  zone: Flag.String("zone").pipe(
    Flag.withDescription("UTC offset deadlines are written in: Z or ±hh:mm"),
    Flag.withDefault("Z"),
    Flag.mapEffect(validated("zone", parseZone))
  ),
  coldProvisionMillis: Flag.String("cold-provision-ms").pipe(
    Flag.withDescription("Delay of a cold provision on a warm miss, in milliseconds"),
    Flag.withDefault("500"),
    Flag.mapEffect(nonNegativeMillis("cold-provision-ms"))
  ),
  refillMillis: Flag.String("refill-ms").pipe(
    Flag.withDescription("Delay before a claimed warm VM is replaced, in milliseconds"),
    Flag.withDefault("1000"),
    Flag.mapEffect(nonNegativeMillis("refill-ms"))
  )
}

export const sandboxdSimCommand = Command.make(
  "sandboxd",
  flags,
  Effect.fn("sim.sandboxd")(function*(options) {
    const sim = yield* Model.make({
      rootToken: options.token,
      tenantTokens: Option.toArray(options.tenantToken),
      pools: options.pools,
      maxClaims: options.maxClaims,
      mesh: options.mesh
        ? { peers: options.peers.split(",").map((s) => s.trim()).filter((s) => s !== "") }
        : undefined,
      zoneOffsetMinutes: options.zone,
      coldProvisionDelay: Duration.millis(options.coldProvisionMillis),
      refillDelay: Duration.millis(options.refillMillis)
    })
    const address = yield* serve(sim, { host: options.listen.host, port: options.listen.port })
    yield* Console.log(`listening on ${address.url}`)
    return yield* Effect.never
  }, Effect.scoped)
).pipe(Command.withDescription("Run the sandboxd simulator on a loopback address until SIGTERM"))
