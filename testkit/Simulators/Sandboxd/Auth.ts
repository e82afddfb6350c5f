/**
 * Who is asking, as sandboxd's middleware decides it: the node's root token, a tenant token, a
 * claim's own token, or none. Claims need root or tenant; listing and info need root (a tenant
 * gets 403); an open node (no root or tenant token) lets everyone through.
 */
import { Option } from "effect"
import { bearerOf } from "../../../src/Sandboxd/Routes.ts"
import { isOpenNode, type SimState, tokensEqual } from "./State.ts"
import { type AuthKind, errorReply, type SimResponse } from "./Wire.ts"

export interface Caller {
  readonly kind: AuthKind
  /** The bearer token sent, "" when none could be read. */
  readonly bearer: string
}

/** The caller behind an `Authorization` header. */
export const classify = (state: SimState, authorization: string | undefined): Caller => {
  if (authorization === undefined) return { kind: "none", bearer: "" }
  const bearer = bearerOf(authorization)
  if (bearer === undefined) return { kind: "malformed", bearer: "" }
  const rootToken = state.rootToken
  if (rootToken !== "" && tokensEqual(bearer, rootToken)) return { kind: "root", bearer }
  if (state.settings.tenantTokens.includes(bearer)) return { kind: "tenant", bearer }
  if (state.issuedTokens.has(bearer)) return { kind: "claim", bearer }
  return { kind: "unknown", bearer }
}

/** sandboxd's `requireToken`: root or tenant (or an open node); the refusal, if any. */
export const requireToken = (state: SimState, kind: AuthKind): Option.Option<SimResponse> =>
  isOpenNode(state) || kind === "root" || kind === "tenant"
    ? Option.none()
    : Option.some(errorReply(401, "invalid api token"))

/** sandboxd's `requireRoot`: root only, a tenant gets 403; the refusal, if any. */
export const requireRoot = (state: SimState, kind: AuthKind): Option.Option<SimResponse> => {
  if (isOpenNode(state) || kind === "root") return Option.none()
  if (kind === "tenant") return Option.some(errorReply(403, "operator token required"))
  return Option.some(errorReply(401, "invalid api token"))
}
