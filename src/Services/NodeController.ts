/**
 * The virtual node as the rest of the daemon sees it: the Node's identity once registered, what
 * the last sandboxd probe said, the taint and the Lease (`NodeController`), and the daemon's own
 * health that decides whether the Node's status and Lease are written at all (`NodeHealth`). The
 * controller itself (registration, status, Lease and probe loops) is
 * `Programs/Node/NodeController.ts`.
 */
import { Context, Effect, type Option } from "effect"
import type { Lease } from "../Schemas/Lease.ts"

/** The server's name and UID for the node: the lease's owner reference points at them. */
export interface NodeIdentity {
  readonly name: string
  readonly uid: string
}

/**
 * Why sandboxd cannot serve: no answer (`Unreachable`), the node token refused with 401/403
 * (`Unauthorized`), any other failed answer (`Failing`), or `/v1/info` reporting a drain
 * (`Draining`). It is the condition's reason and the taint's value.
 */
export type UnavailableReason = "Unreachable" | "Unauthorized" | "Failing" | "Draining"

/** What the last sandboxd probe said; NotProbed is reported as Unknown. */
export type SandboxdReachability =
  | { readonly _tag: "Reachable" }
  | { readonly _tag: "Unavailable"; readonly reason: UnavailableReason; readonly message: string }
  | { readonly _tag: "NotProbed" }

/**
 * The daemon's own health (its loops are running). The daemon wiring provides the real check;
 * by default the node counts as healthy.
 */
export const NodeHealth = Context.Reference<{ readonly healthy: Effect.Effect<boolean> }>("vk-sandbox/NodeHealth", {
  defaultValue: () => ({ healthy: Effect.succeed(true) })
})

export class NodeController extends Context.Service<NodeController, {
  /** The server's name and UID for the node, once registered. */
  readonly node: Effect.Effect<Option.Option<NodeIdentity>>
  readonly sandboxd: Effect.Effect<SandboxdReachability>
  /** Has sandboxd answered a probe (reachable or draining) since this process started? */
  readonly sandboxdAnswered: Effect.Effect<boolean>
  /** The reason on the Node's sandboxd taint as last read or written; undefined = not tainted. */
  readonly tainted: Effect.Effect<string | undefined>
  readonly lease: Effect.Effect<Option.Option<Lease>>
}>()("vk-sandbox/NodeController") {}
