/**
 * `vk-sandbox sim apiserver --listen 127.0.0.1:0 --kubeconfig-out <file>`: the in-memory apiserver
 * standalone, for the demo and local development. Prints `listening on http://<host>:<port>` as its
 * first stdout line and serves until interrupted (SIGTERM/SIGINT under NodeRuntime.runMain).
 */
import { Console, Effect, Option, Schema } from "effect"
import { Command, Flag } from "effect/cli"
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

export const apiserverSimCommand = Command.make(
  "apiserver",
  {
    listen: Flag.String("listen").pipe(
      Flag.withDescription("loopback address to listen on, <host>:<port> (port 0 picks a free one)"),
      Flag.withDefault("127.0.0.1:0")
    ),
    kubeconfigOut: Flag.String("kubeconfig-out").pipe(
      Flag.withDescription("write a kubeconfig for this server to this file"),
      Flag.optional
    ),
    token: Flag.String("token").pipe(
      Flag.withDescription("bearer token clients must send (and the kubeconfig carries)"),
      Flag.withDefault(defaultToken)
    )
  },
  Effect.fn("sim.apiserver")(function*(flags) {
    const { host, port } = yield* parseListen(flags.listen)
    const model = new ClusterModel()
    yield* Effect.scoped(Effect.gen(function*() {
      const running = yield* serve(model, {
        host,
        port,
        token: flags.token,
        ...(Option.isSome(flags.kubeconfigOut) ? { kubeconfigPath: flags.kubeconfigOut.value } : {})
      })
      yield* Console.log(`listening on ${running.url}`)
      return yield* Effect.never
    }))
  })
).pipe(Command.withDescription("Run the in-memory Kubernetes API server on loopback"))
