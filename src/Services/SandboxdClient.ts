/**
 * The sandboxd HTTP surface the daemon uses: claim, release, the live listing, pool info and
 * the unauthenticated health probe. The live layer is `Layers/SandboxdClientHttp.ts`.
 */
import { Context, type DateTime, type Effect, type Option, type Redacted, Schema } from "effect"
import type { ClaimId } from "../Schemas/Ids.ts"

/** What the provider asks sandboxd for. `claimRef` is always the pod key. */
export interface ClaimSpec {
  readonly template: string
  readonly net: string // "" = omitted on the wire
  readonly size: string // "" = omitted on the wire
  readonly ttlSeconds: number // 0 = omitted on the wire (sandboxd's 5 min default)
  readonly claimRef: string
}

export interface ClaimResult {
  readonly id: ClaimId
  readonly token: Redacted.Redacted<string>
  readonly ownerAddr: string
  /** None when absent, unparsable or the zero time: no known expiry. */
  readonly deadline: Option.Option<DateTime.Utc>
}

export interface ListedSandbox {
  readonly id: ClaimId
  readonly claimRef: string // "" when sandboxd recorded none
  readonly deadline: Option.Option<DateTime.Utc>
  readonly hibernated: boolean
  readonly archived: boolean
  readonly failed: string // "" unless the VMM is down
  readonly key: { readonly template: string; readonly net: string; readonly size: string }
}

export interface PoolCapacity {
  readonly template: string
  readonly net: string
  readonly size: string
  readonly warm: number
  readonly target: number
}

export interface NodeInfo {
  readonly pools: ReadonlyArray<PoolCapacity>
  /** sandboxd is draining: it answers claims with 429 until the drain ends. */
  readonly draining: boolean
}

export type ReleaseOutcome = "Released" | "AlreadyGone"

// ---- errors -------------------------------------------------------------------------------

/** 429, a 200 without an id, or a 200 redirect: this node cannot hand out a VM now. */
export class NoWarmCapacity extends Schema.TaggedError<NoWarmCapacity>()("NoWarmCapacity", {
  message: Schema.String
}) {}

/** Any status the contract gives no special meaning; `message` is the body's `error` field or "". */
export class SandboxdHttpError extends Schema.TaggedError<SandboxdHttpError>()("SandboxdHttpError", {
  operation: Schema.String,
  status: Schema.Number,
  message: Schema.String
}) {}

export class SandboxdUnreachable extends Schema.TaggedError<SandboxdUnreachable>()("SandboxdUnreachable", {
  operation: Schema.String,
  message: Schema.String
}) {}

export class SandboxdTimeout extends Schema.TaggedError<SandboxdTimeout>()("SandboxdTimeout", {
  operation: Schema.String,
  timeoutMillis: Schema.Number,
  message: Schema.String
}) {}

export class SandboxdDecodeError extends Schema.TaggedError<SandboxdDecodeError>()("SandboxdDecodeError", {
  operation: Schema.String,
  message: Schema.String
}) {}

export type SandboxdTransportError = SandboxdHttpError | SandboxdUnreachable | SandboxdTimeout | SandboxdDecodeError

export type SandboxdClaimError = NoWarmCapacity | SandboxdTransportError
export type SandboxdReleaseError = SandboxdTransportError

/**
 * A listing or info query that did not produce a trustworthy answer. Its own type, so no caller
 * can mistake "query failed" for "zero sandboxes" (ARCHITECTURE.md §3, §6.13).
 */
export class SandboxdListError extends Schema.TaggedError<SandboxdListError>()("SandboxdListError", {
  operation: Schema.Literals(["list", "info"]),
  reason: Schema.Union([SandboxdHttpError, SandboxdUnreachable, SandboxdTimeout, SandboxdDecodeError]),
  message: Schema.String
}) {}

export class SandboxdClient extends Context.Service<SandboxdClient, {
  readonly claim: (spec: ClaimSpec) => Effect.Effect<ClaimResult, SandboxdClaimError>
  /** 204 → Released, 404 → AlreadyGone; both are success. Uses the claim's own token. */
  readonly release: (id: ClaimId, claimToken: Redacted.Redacted<string>) => Effect.Effect<ReleaseOutcome, SandboxdReleaseError>
  readonly listSandboxes: Effect.Effect<ReadonlyArray<ListedSandbox>, SandboxdListError>
  readonly info: Effect.Effect<NodeInfo, SandboxdListError>
  /** Unauthenticated `GET /healthz`; succeeds only on a 2xx within the timeout. */
  readonly healthz: Effect.Effect<void, SandboxdTransportError>
}>()("vk-sandbox/SandboxdClient") {}
