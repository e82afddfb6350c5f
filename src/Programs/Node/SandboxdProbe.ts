/**
 * Can sandboxd serve this node? One authenticated `GET /v1/info` with its own timeout, so a hung
 * sandboxd reads as unreachable instead of leaving the last answer in place. `/v1/info` rather
 * than the open `/healthz`: only an authenticated call shows a refused node token, and only info
 * reports a drain. sandboxd's own error text is left out of the result, which ends up in the
 * Node's condition, an Event and the log.
 */
import { type Duration, Effect } from "effect"
import { SandboxdClient, type SandboxdListError } from "../../Services/SandboxdClient.ts"
import type { SandboxdReachability, UnavailableReason } from "../../Services/NodeController.ts"

const unavailable = (reason: UnavailableReason, message: string): SandboxdReachability => ({
  _tag: "Unavailable",
  reason,
  message
})

/** A failed info query, by what it says about the node. */
export const classifyProbeFailure = (failure: SandboxdListError["reason"]): SandboxdReachability => {
  switch (failure._tag) {
    case "SandboxdUnreachable":
      return unavailable("Unreachable", failure.message)
    case "SandboxdTimeout":
      return unavailable("Unreachable", `no answer within ${failure.timeoutMillis} ms`)
    case "SandboxdUnauthorized":
      return unavailable("Unauthorized", `the node token was refused (HTTP ${failure.status})`)
    case "SandboxdHttpError":
      return unavailable("Failing", failure.status === 0 ? failure.message : `GET /v1/info answered HTTP ${failure.status}`)
    case "SandboxdDecodeError":
      return unavailable("Failing", "GET /v1/info answered with a body that is not sandboxd's info")
  }
}

export const probeSandboxd = Effect.fn("Node.probeSandboxd")(function*(timeout: Duration.Duration) {
  const sandboxd = yield* SandboxdClient
  return yield* sandboxd.info.pipe(
    Effect.timeout(timeout),
    Effect.map((info): SandboxdReachability =>
      info.draining ? unavailable("Draining", "sandboxd reports that it is draining") : { _tag: "Reachable" }
    ),
    Effect.catchTags({
      TimeoutError: () => Effect.succeed(unavailable("Unreachable", "no answer in time")),
      SandboxdListError: (e) => Effect.succeed(classifyProbeFailure(e.reason))
    })
  )
})
