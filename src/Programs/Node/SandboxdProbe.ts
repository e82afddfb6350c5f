/**
 * sandboxd reachability for the node's `SandboxdReachable` condition (ARCHITECTURE.md §6.6): one
 * unauthenticated `GET /healthz` with its own timeout, so a hung sandboxd reads as unreachable
 * instead of leaving the last answer in place (PIT-20).
 */
import { type Duration, Effect } from "effect"
import { SandboxdClient } from "../../Services/SandboxdClient.ts"
import type { SandboxdReachability } from "./NodeObject.ts"

export const probeSandboxd = Effect.fn("Node.probeSandboxd")(function*(timeout: Duration.Duration) {
  const sandboxd = yield* SandboxdClient
  return yield* sandboxd.healthz.pipe(
    Effect.timeout(timeout),
    Effect.as<SandboxdReachability>({ _tag: "Reachable" }),
    Effect.catchTags({
      TimeoutError: () => Effect.succeed<SandboxdReachability>({ _tag: "Unreachable", message: "no answer in time" }),
      SandboxdHttpError: (e) =>
        Effect.succeed<SandboxdReachability>({ _tag: "Unreachable", message: `HTTP ${e.status}${e.message === "" ? "" : `: ${e.message}`}` }),
      SandboxdUnreachable: (e) => Effect.succeed<SandboxdReachability>({ _tag: "Unreachable", message: e.message }),
      SandboxdTimeout: (e) => Effect.succeed<SandboxdReachability>({ _tag: "Unreachable", message: e.message }),
      SandboxdDecodeError: (e) => Effect.succeed<SandboxdReachability>({ _tag: "Unreachable", message: e.message })
    })
  )
})
