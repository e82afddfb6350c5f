/**
 * `vk-sandbox sim apiserver --listen 127.0.0.1:0 --kubeconfig-out <file>`: the in-memory apiserver
 * standalone, for the demo and local development. Prints `listening on http://<host>:<port>` as its
 * first stdout line and serves until interrupted (SIGTERM/SIGINT under NodeRuntime.runMain).
 */
import { Console, Effect, Result, Schema } from "effect"
import { exitWith } from "../../../src/Cli/Errors.ts"
import { type FlagSpec, flagReader, tokenize, value } from "../../../src/Cli/Flags.ts"
import { commandHelp } from "../../../src/Cli/Help.ts"
import type { Environment } from "../../../src/Cli/ParseConfig.ts"
import { ClusterModel } from "./Model.ts"
import { defaultToken, serve } from "./Server.ts"

export class ListenAddressInvalid extends Schema.TaggedError<ListenAddressInvalid>()("ListenAddressInvalid", {
  message: Schema.String
}) {}

/** `127.0.0.1:0`, `[::1]:6443`, `localhost:8080`; loopback only. */
export const parseListen = (listen: string): Effect.Effect<{ host: string; port: number }, ListenAddressInvalid> => {
  const m = listen.match(/^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/)
  const host = m?.[1] ?? m?.[2]
  const port = m === null ? Number.NaN : Number(m[3])
  if (host === undefined || !Number.isInteger(port) || port < 0 || port > 65535) {
    return Effect.fail(new ListenAddressInvalid({ message: `--listen ${listen}: expected <host>:<port>` }))
  }
  if (host !== "127.0.0.1" && host !== "::1" && host !== "localhost") {
    return Effect.fail(new ListenAddressInvalid({ message: `--listen ${listen}: only loopback addresses are allowed` }))
  }
  return Effect.succeed({ host: host === "localhost" ? "127.0.0.1" : host, port })
}

export const apiserverSimFlags: ReadonlyArray<FlagSpec> = [
  value("listen", "host:port", "127.0.0.1:0", "loopback address to listen on (port 0 picks a free one)"),
  value("kubeconfig-out", "path", "", "write a kubeconfig for this server to this file (none when empty)"),
  value("token", "string", defaultToken, "bearer token clients must send (and the kubeconfig carries)")
]

export const apiserverSimHelp = commandHelp({
  summary: "vk-sandbox sim apiserver: run the in-memory Kubernetes API server on loopback until SIGTERM",
  usage: ["vk-sandbox sim apiserver [flags]"],
  flags: apiserverSimFlags
})

/** `sim apiserver` with its arguments: help, a one-line usage error (exit 2), or the running server. */
export const runApiserverSim = (args: ReadonlyArray<string>, env: Environment) =>
  Effect.gen(function*() {
    const tokens = tokenize(args, apiserverSimFlags)
    if (Result.isFailure(tokens)) return yield* exitWith(2, tokens.failure.message)
    if (tokens.success.help) return yield* Console.log(apiserverSimHelp)
    const { text } = flagReader(tokens.success, env, apiserverSimFlags)
    const listen = yield* parseListen(text("listen")).pipe(
      Effect.catchTag("ListenAddressInvalid", (error) => exitWith(2, error.message))
    )
    const kubeconfigOut = text("kubeconfig-out")
    const model = new ClusterModel()
    yield* Effect.scoped(Effect.gen(function*() {
      const running = yield* serve(model, {
        host: listen.host,
        port: listen.port,
        token: text("token"),
        ...(kubeconfigOut === "" ? {} : { kubeconfigPath: kubeconfigOut })
      })
      yield* Console.log(`listening on ${running.url}`)
      return yield* Effect.never
    }))
  })
