/**
 * What a sandboxd simulator is started with: its tokens, pools, quota, mesh, clocks of its
 * deadlines, the sandboxd revision it behaves as, and sandboxd's own limits.
 */
import type { Duration } from "effect"

export interface SimPool {
  readonly template: string
  readonly net: string
  readonly size: string
  readonly target: number
}

export interface SandboxdSimOptions {
  /** The node `api_token`; "" makes an open node (every caller is root on operator routes). */
  readonly rootToken: string
  /** Tenant tokens: may claim, get 403 on the root-only list and info. */
  readonly tenantTokens?: ReadonlyArray<string>
  readonly pools?: ReadonlyArray<SimPool>
  /** 0 = no node quota. */
  readonly maxClaims?: number
  /** Mesh mode: a warm miss answers 200 `{"redirect": peers}` instead of provisioning. */
  readonly mesh?: { readonly peers: ReadonlyArray<string> } | undefined
  /**
   * `owner_addr` of every claim; "" omits it. When not given, the HTTP face fills in its bound
   * address (`adoptListenAddr`).
   */
  readonly ownerAddr?: string
  /** Deadlines are written in this UTC offset, like a daemon in a local zone. */
  readonly zoneOffsetMinutes?: number
  /** Adds random sub-millisecond nanoseconds to deadlines so they carry 9 fractional digits. */
  readonly nanosecondDeadlines?: boolean
  /** `claimed_at` is written at whole seconds (truncated), as Go's RFC 3339 layout writes a time. */
  readonly wholeSecondClaimedAt?: boolean
  readonly coldProvisionDelay?: Duration.Input
  readonly refillDelay?: Duration.Input
  readonly reapInterval?: Duration.Input
  /** A hibernated claim reaching its deadline is archived instead of destroyed. */
  readonly archiveOnExpiry?: boolean
  /** Archive retention; zero = keep forever (deadline becomes the zero time). */
  readonly archiveRetention?: Duration.Input
  /** The node has an egress attachment (`net: egress` allowed). */
  readonly egress?: boolean
  /**
   * A claim is finished even when its client goes away first (a timeout, a dropped connection),
   * as a daemon that does not watch for disconnects would: the VM exists, nobody got its token.
   */
  readonly claimsOutliveClients?: boolean
  /** Which sandboxd revision to behave as; every piece is on unless switched off. */
  readonly revision?: Partial<SimRevision>
  /**
   * Told of every VM's start and end as it happens (a recorded history: the chaos suite's),
   * synchronously, inside the model's own step; it must not throw.
   */
  readonly onLifecycle?: (event: SimLifecycleEvent) => void
}

/** A VM made by a claim, or ended: released, reaped at its deadline, or forgotten out of band. */
export type SimLifecycleEvent =
  | {
    readonly _tag: "Claimed"
    readonly id: string
    readonly token: string
    readonly claimRef: string
    readonly leaseSeconds: number
    readonly deadlineNanos: bigint
    readonly atNanos: bigint
  }
  | { readonly _tag: "Ended"; readonly id: string; readonly claimRef: string; readonly how: "released" | "reaped" | "forgotten"; readonly atNanos: bigint }

/**
 * Pieces that only some sandboxd revisions have. A route a revision lacks answers the router's
 * plain-text 404, as Go's ServeMux does.
 */
export interface SimRevision {
  /** Root `GET /v1/sandboxes/{id}`, returning the row plus the claim's `token`. */
  readonly byIdRead: boolean
  /** The by-id read includes `token` (when on; `byIdRead` must be on too). */
  readonly byIdToken: boolean
  /** The root token releases any id (the oldest revision accepted only the claim's own token). */
  readonly rootRelease: boolean
  /** `GET /v1/sandboxes?claim_ref=` filters (older revisions ignore the parameter). */
  readonly claimRefFilter: boolean
  /** Listing rows carry `claimed_at`. */
  readonly claimedAt: boolean
}

export const NEWEST_REVISION: SimRevision = {
  byIdRead: true,
  byIdToken: true,
  rootRelease: true,
  claimRefFilter: true,
  claimedAt: true
}
/** The oldest stored revision: no by-id read, no root release, no filter, no `claimed_at`. */
export const OLDEST_REVISION: SimRevision = {
  byIdRead: false,
  byIdToken: false,
  rootRelease: false,
  claimRefFilter: false,
  claimedAt: false
}

export const DEFAULT_TTL_SECONDS = 300
export const MAX_TTL_SECONDS = 86_400
export const REQUEST_BODY_LIMIT = 1024 * 1024
/** The audit log keeps at most this many recent entries. */
export const AUDIT_LIMIT = 100_000

/** sandboxd's `clampTTL`: ≤ 0 → 5 min, otherwise capped at 24 h. */
export const clampTtlSeconds = (ttl: number): number =>
  ttl <= 0 ? DEFAULT_TTL_SECONDS : Math.min(ttl, MAX_TTL_SECONDS)

export const VALID_NETS = ["none", "egress"]
export const VALID_SIZES = ["small", "medium", "large", "xlarge", "2xlarge"]
