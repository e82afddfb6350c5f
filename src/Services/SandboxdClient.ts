/**
 * The sandboxd HTTP surface the daemon uses: claim, release, the live listing, pool info and
 * the unauthenticated health probe. The live layer is `Layers/SandboxdClientHttp.ts`.
 */
import { Context, type DateTime, type Effect, type Option, type Redacted, Result, Schema } from "effect"
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
  /** `claimed_at` where the server sends it (newer revisions); absent when unknown or unparsable. */
  readonly claimedAt?: DateTime.Utc | undefined
}

/**
 * The root by-id read `GET /v1/sandboxes/{id}`. Only the JSON `unknown sandbox` 404 says the id
 * is gone; a plain-text router 404 (or a 405) means this sandboxd revision has no such route.
 */
export type SandboxLookup =
  | {
    readonly _tag: "Found"
    readonly sandbox: ListedSandbox
    /** The claim's token, when this revision serves it and it passes the same checks as a claim reply's. */
    readonly token: Option.Option<Redacted.Redacted<string>>
  }
  | { readonly _tag: "Gone" }
  | { readonly _tag: "RouteUnknown" }

/**
 * A release by id with the node root token. Only a 204 proves the release: the oldest revision
 * and an open node answer 404 `unknown sandbox` to a root bearer on a live claim.
 */
export type RootReleaseOutcome = "Released" | "NotProven"

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

/**
 * 401 or 403 to a call made with the node token: sandboxd refused the token (wrong, rotated, or
 * not the root token). Its own type so callers can tell it from a failing sandboxd. The message
 * is ours; sandboxd's reply body is left out, as it may quote the token.
 */
export class SandboxdUnauthorized extends Schema.TaggedError<SandboxdUnauthorized>()("SandboxdUnauthorized", {
  operation: Schema.String,
  status: Schema.Number,
  message: Schema.String
}) {}

export class SandboxdUnreachable extends Schema.TaggedError<SandboxdUnreachable>()("SandboxdUnreachable", {
  operation: Schema.String,
  message: Schema.String,
  /**
   * False only when the request provably never left (the connection was refused or the host not
   * found). Absent means it may have reached sandboxd (a reset after sending, a reply cut short).
   */
  requestSent: Schema.optionalKey(Schema.Boolean)
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

/** The one transport error union: every failure of a request that is neither a refusal nor "no capacity". */
export const SandboxdTransportError = Schema.Union([SandboxdHttpError, SandboxdUnreachable, SandboxdTimeout, SandboxdDecodeError])
export type SandboxdTransportError = typeof SandboxdTransportError.Type

export const SandboxdClaimError = Schema.Union([NoWarmCapacity, SandboxdUnauthorized, SandboxdTransportError])
export type SandboxdClaimError = typeof SandboxdClaimError.Type
/** Release uses the claim's own token, so a 401 there is a plain SandboxdHttpError. */
export type SandboxdReleaseError = SandboxdTransportError

/**
 * A listing or info query that did not produce a trustworthy answer. Its own type, so no caller
 * can mistake "query failed" for "zero sandboxes" (VER-4 — failed listing vs empty listing).
 */
export class SandboxdListError extends Schema.TaggedError<SandboxdListError>()("SandboxdListError", {
  operation: Schema.Literals(["list", "info", "get"]),
  reason: Schema.Union([SandboxdUnauthorized, SandboxdTransportError]),
  message: Schema.String
}) {}

// ---- claim outcomes -------------------------------------------------------------------------

/**
 * What one claim attempt tells us about sandboxd's state. Known: a valid 200 reply, the VM and its
 * token are ours. Failed: sandboxd said no, or the request provably never left, so no VM was
 * made. Unknown: sandboxd may have made a VM we hold no token for (a timeout or a reset after
 * sending, a gateway's 5xx, a reply that is not a valid claim): the key is in doubt until a
 * listing settles it.
 */
export type ClaimOutcome =
  | { readonly _tag: "Known"; readonly result: ClaimResult }
  | { readonly _tag: "Failed"; readonly error: SandboxdClaimError }
  | { readonly _tag: "Unknown"; readonly error: SandboxdClaimError }

/** Whether a failed claim may still have made a VM. */
export const claimFailureKind = (error: SandboxdClaimError): "Failed" | "Unknown" => {
  switch (error._tag) {
    case "NoWarmCapacity":
    case "SandboxdUnauthorized": // refused before anything was made
      return "Failed"
    case "SandboxdHttpError":
      // CRT-23 — what a failed claim says about its VM: status 0 is a request refused locally
      // (never sent), and sandboxd's own answers to a claim are 4xx or its 500 "provisioning
      // failed": no VM. Any other 5xx is never sandboxd's: a proxy in between (502, 503 on an
      // upstream reset, 504) may have forwarded the claim before it answered, so sandboxd may have
      // made the VM.
      return error.status > 500 && error.status <= 599 ? "Unknown" : "Failed"
    case "SandboxdUnreachable":
      return error.requestSent === false ? "Failed" : "Unknown"
    case "SandboxdTimeout":
    case "SandboxdDecodeError":
      return "Unknown"
  }
}

export const claimOutcomeOf = (result: Result.Result<ClaimResult, SandboxdClaimError>): ClaimOutcome =>
  Result.isSuccess(result)
    ? { _tag: "Known", result: result.success }
    : { _tag: claimFailureKind(result.failure), error: result.failure }

export class SandboxdClient extends Context.Service<SandboxdClient, {
  readonly claim: (spec: ClaimSpec) => Effect.Effect<ClaimResult, SandboxdClaimError>
  /** 204 → Released, 404 → AlreadyGone; both are success. Uses the claim's own token. */
  readonly release: (id: ClaimId, claimToken: Redacted.Redacted<string>) => Effect.Effect<ReleaseOutcome, SandboxdReleaseError>
  readonly listSandboxes: Effect.Effect<ReadonlyArray<ListedSandbox>, SandboxdListError>
  /**
   * The listing rows whose `claim_ref` is exactly `claimRef`. Sends `?claim_ref=` (newer servers
   * filter) and always filters locally too: older servers ignore the parameter.
   */
  readonly listByClaimRef: (claimRef: string) => Effect.Effect<ReadonlyArray<ListedSandbox>, SandboxdListError>
  /** Root `GET /v1/sandboxes/{id}`. */
  readonly getSandbox: (id: ClaimId) => Effect.Effect<SandboxLookup, SandboxdListError>
  /** `POST /v1/sandboxes/{id}/release` with the node root token (for sandboxes whose token we lack). */
  readonly releaseAsRoot: (id: ClaimId) => Effect.Effect<RootReleaseOutcome, SandboxdReleaseError>
  readonly info: Effect.Effect<NodeInfo, SandboxdListError>
  /** Unauthenticated `GET /healthz`; succeeds only on a 2xx within the timeout. */
  readonly healthz: Effect.Effect<void, SandboxdTransportError>
}>()("vk-sandbox/SandboxdClient") {}
