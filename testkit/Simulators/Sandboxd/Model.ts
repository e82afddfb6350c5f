/**
 * A model of sandboxd: warm pools, claims, leases, the reaper,
 * hibernate/archive, token rules, quotas, mesh redirects, fault injection and an audit log.
 *
 * The model speaks HTTP-shaped requests and replies (`handle`) so the HTTP face (`Server.ts`) is
 * a thin adapter and the no-socket test client (`Layers/SandboxdClientSim.ts`) meets the same
 * wire bodies. All time comes from the Effect `Clock`, so tests drive leases with `TestClock`.
 * State is plain mutable data: every mutation runs synchronously inside one `Effect.sync`, and
 * JavaScript runs those one at a time.
 */
import { randomBytes, timingSafeEqual } from "node:crypto"
import { Clock, Context, Duration, Effect, Layer, Option, Result, Schedule, Schema } from "effect"
import type { Scope } from "effect"
import { formatDeadline, ZERO_TIME } from "../../../src/Schemas/Sandboxd.ts"

// ---- configuration -----------------------------------------------------------------------------

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

const VALID_NETS = ["none", "egress"]
const VALID_SIZES = ["small", "medium", "large", "xlarge", "2xlarge"]

// ---- wire-level request/response ---------------------------------------------------------------

export interface SimRequest {
  readonly method: string
  /** Path with an optional query string. */
  readonly path: string
  readonly authorization?: string | undefined
  readonly contentType?: string | undefined
  readonly body: string
  /** The HTTP face saw more than `REQUEST_BODY_LIMIT` bytes. */
  readonly bodyTooLarge?: boolean
}

export type SimResponse =
  | {
    readonly _tag: "Reply"
    readonly status: number
    readonly contentType: string | undefined
    readonly body: string
    readonly headers?: Readonly<Record<string, string>>
  }
  /** Close the connection without any reply. */
  | { readonly _tag: "Drop" }
  /** Send the status and part of the body, then close mid-body. */
  | { readonly _tag: "Truncate"; readonly status: number; readonly contentType: string; readonly body: string }
  /** Send the status and part of the body, then neither finish nor close (until the client goes away). */
  | { readonly _tag: "Stall"; readonly status: number; readonly contentType: string; readonly body: string }

export type SimRoute = "claim" | "release" | "list" | "get" | "info" | "healthz" | "hibernate" | "wake"

export type SimFault =
  /** Added before the answer; further faults (or the normal answer) follow. */
  | { readonly _tag: "Latency"; readonly delay: Duration.Input }
  /** Answer with exactly this status and raw body. */
  | { readonly _tag: "Reply"; readonly status: number; readonly body: string; readonly contentType?: string }
  | { readonly _tag: "Drop" }
  | { readonly _tag: "Truncate"; readonly status: number; readonly body: string }
  /** Headers and part of the body are sent, the rest never comes: a reply hung mid-body. */
  | { readonly _tag: "Stall"; readonly status: number; readonly body: string }
  /** Never answer (until the client goes away). */
  | { readonly _tag: "Hang" }
  /**
   * Do the work (a claim is made, a release happens), then lose the reply: `"drop"` closes the
   * connection, `"hang"` never answers. Models a response lost after sandboxd committed.
   */
  | { readonly _tag: "LoseReply"; readonly how: "drop" | "hang" }
  /**
   * Do the work, then answer with this status and body instead of the model's reply: a gateway in
   * front of sandboxd that forwarded the request and answered on its own when the upstream broke
   * off (Envoy's 503 after a reset).
   */
  | { readonly _tag: "ReplaceReply"; readonly status: number; readonly body: string }

export const SimFault = {
  latency: (delay: Duration.Input): SimFault => ({ _tag: "Latency", delay }),
  /** A JSON `{"error": message}` body, or an empty body when `message` is undefined. */
  status: (status: number, message?: string): SimFault =>
    message === undefined
      ? { _tag: "Reply", status, body: "", contentType: "text/plain; charset=utf-8" }
      : { _tag: "Reply", status, body: jsonBody({ error: message }), contentType: "application/json" },
  body: (status: number, body: string, contentType = "application/json"): SimFault => ({
    _tag: "Reply",
    status,
    body,
    contentType
  }),
  drop: { _tag: "Drop" } as SimFault,
  truncate: (status: number, body: string): SimFault => ({ _tag: "Truncate", status, body }),
  stall: (status: number, body: string): SimFault => ({ _tag: "Stall", status, body }),
  hang: { _tag: "Hang" } as SimFault,
  loseReply: (how: "drop" | "hang"): SimFault => ({ _tag: "LoseReply", how }),
  replaceReply: (status: number, body: string): SimFault => ({ _tag: "ReplaceReply", status, body })
}

/** How the caller authenticated, as the simulator classifies the Authorization header. */
export type AuthKind = "none" | "malformed" | "root" | "tenant" | "claim" | "unknown"

export interface AuditEntry {
  readonly method: string
  readonly path: string
  readonly route: SimRoute | "unknown"
  /** The raw Authorization header (simulator only: tests assert the exact bearer). */
  readonly authorization: string | undefined
  readonly auth: AuthKind
  readonly contentType: string | undefined
  readonly body: string
  readonly atMillis: number
}

export interface SimClaimView {
  readonly id: string
  readonly token: string
  readonly key: { readonly template: string; readonly net: string; readonly size: string }
  readonly claimRef: string
  /** 0n = the zero time (no expiry). */
  readonly deadlineNanos: bigint
  readonly deadline: string
  readonly leaseSeconds: number
  readonly hibernated: boolean
  readonly archived: boolean
  readonly failed: string
}

export interface SimPoolView {
  readonly template: string
  readonly net: string
  readonly size: string
  readonly warm: number
  readonly refilling: number
  readonly target: number
}

export interface SimStats {
  readonly inFlight: number
  readonly maxInFlight: number
  readonly requests: number
}

export class SimUnknownSandbox extends Schema.TaggedError<SimUnknownSandbox>()("SimUnknownSandbox", {
  id: Schema.String,
  message: Schema.String
}) {}

export interface SandboxdSimShape {
  /** Answers one request as sandboxd would (never fails; `Hang` never completes). */
  readonly handle: (request: SimRequest) => Effect.Effect<SimResponse>
  readonly claims: Effect.Effect<ReadonlyArray<SimClaimView>>
  readonly pools: Effect.Effect<ReadonlyArray<SimPoolView>>
  readonly hibernate: (id: string) => Effect.Effect<void, SimUnknownSandbox>
  readonly wake: (id: string) => Effect.Effect<void, SimUnknownSandbox>
  /** Archives now: the deadline becomes now + retention, or the zero time. */
  readonly archive: (id: string) => Effect.Effect<void, SimUnknownSandbox>
  readonly markFailed: (id: string, reason: string) => Effect.Effect<void, SimUnknownSandbox>
  /** Drops a claim as if its VM vanished out of band (no audit entry, no reply). */
  readonly forget: (id: string) => Effect.Effect<void, SimUnknownSandbox>
  readonly setDraining: (draining: boolean) => Effect.Effect<void>
  readonly setMaxClaims: (max: number) => Effect.Effect<void>
  /** Takes a new root token (`api_token`) from now on; the old one is refused at once. */
  readonly setRootToken: (token: string) => Effect.Effect<void>
  readonly setColdProvisionDelay: (delay: Duration.Input) => Effect.Effect<void>
  readonly setOwnerAddr: (addr: string) => Effect.Effect<void>
  /** Uses `addr` as `owner_addr` unless the options named one explicitly. */
  readonly adoptListenAddr: (addr: string) => Effect.Effect<void>
  readonly setMesh: (mesh: { readonly peers: ReadonlyArray<string> } | undefined) => Effect.Effect<void>
  readonly setClaimsOutliveClients: (on: boolean) => Effect.Effect<void>
  /** Switches revision pieces on or off from now on. */
  readonly setRevision: (revision: Partial<SimRevision>) => Effect.Effect<void>
  /**
   * Leaves `id` out of the next `times` listings (undefined = until cleared) while it stays live:
   * a listing that misses a claim. By-id reads still find it.
   */
  readonly omitFromListings: (id: string, times?: number) => Effect.Effect<void>
  /** `times` undefined = until cleared. Faults of a route apply in the order injected. */
  readonly injectFault: (
    route: SimRoute | "*",
    fault: SimFault,
    options?: { readonly times?: number }
  ) => Effect.Effect<void>
  readonly clearFaults: Effect.Effect<void>
  readonly audit: Effect.Effect<ReadonlyArray<AuditEntry>>
  readonly clearAudit: Effect.Effect<void>
  readonly stats: Effect.Effect<SimStats>
  readonly resetStats: Effect.Effect<void>
  /** One reaper pass (the background reaper runs this every `reapInterval`). */
  readonly reapOnce: Effect.Effect<void>
}

export class SandboxdSim extends Context.Service<SandboxdSim, SandboxdSimShape>()("vk-sandbox/SandboxdSim") {
  static readonly layer = (options: SandboxdSimOptions): Layer.Layer<SandboxdSim> =>
    Layer.effect(SandboxdSim, make(options))
}

// ---- helpers -----------------------------------------------------------------------------------

const jsonBody = (value: unknown): string => `${JSON.stringify(value)}\n`

const reply = (status: number, value: unknown): SimResponse => ({
  _tag: "Reply",
  status,
  contentType: "application/json",
  body: jsonBody(value)
})
const errorReply = (status: number, message: string): SimResponse => reply(status, { error: message })
const noContent: SimResponse = { _tag: "Reply", status: 204, contentType: undefined, body: "" }
const plainText = (status: number, body: string): SimResponse => ({
  _tag: "Reply",
  status,
  contentType: "text/plain; charset=utf-8",
  body
})
const notFoundPage = plainText(404, "404 page not found\n")
const methodNotAllowed = plainText(405, "Method Not Allowed\n")

const hex = (bytes: number): string => randomBytes(bytes).toString("hex")

const tokensEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/** The claim body, decoded as leniently as Go's encoding/json (unknown keys ignored). */
const ClaimBody = Schema.NullOr(Schema.Struct({
  template: Schema.optionalKey(Schema.NullOr(Schema.String)),
  net: Schema.optionalKey(Schema.NullOr(Schema.String)),
  size: Schema.optionalKey(Schema.NullOr(Schema.String)),
  ttl_seconds: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  claim_ref: Schema.optionalKey(Schema.NullOr(Schema.String)),
  no_redirect: Schema.optionalKey(Schema.NullOr(Schema.Boolean))
}))

const parseClaimBody = (text: string): Result.Result<typeof ClaimBody.Type, string> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return Result.fail("invalid request body")
  }
  const decoded = Schema.decodeUnknownResult(ClaimBody)(json)
  return Result.isFailure(decoded) ? Result.fail("invalid request body") : Result.succeed(decoded.success)
}

const poolKeyString = (key: { template: string; net: string; size: string }) =>
  `${key.template}\u0000${key.net}\u0000${key.size}`

interface ClaimState {
  id: string
  token: string
  key: { template: string; net: string; size: string }
  claimRef: string
  deadlineNanos: bigint
  leaseSeconds: number
  hibernated: boolean
  archived: boolean
  failed: string
  claimedAtNanos: bigint
  /**
   * The listing row's text up to its deadline (`{"id":…,"key":{…},"deadline":`) and `claimed_at`'s
   * value, rendered once: neither the id, the key nor the claim time ever change. Every daemon
   * start lists all claims (10,000 in the bench's restarts, whose simulators share the machine
   * with the daemon), so the simulator keeps what it has rendered rather than spend the bench's
   * CPU on rendering it again.
   */
  rowHead: string
  claimedAtText: string
  /** `deadline` as last rendered, for `deadlineNanos === deadlineTextNanos` (-1n: not yet). */
  deadlineText: string
  deadlineTextNanos: bigint
  /** The whole listing row as last rendered, and what it was rendered from. */
  row: RenderedRow | undefined
}

interface RenderedRow {
  readonly text: string
  readonly deadlineNanos: bigint
  readonly hibernated: boolean
  readonly archived: boolean
  readonly failed: string
  readonly claimedAt: boolean
}

/**
 * The live claims by id, with the listing's order (by id) kept until a claim is added or removed:
 * sorting 10,000 ids anew for every listing was a good part of what a restart's listing cost.
 */
class ClaimTable extends Map<string, ClaimState> {
  private byId: Array<ClaimState> | undefined = undefined

  override set(id: string, claim: ClaimState): this {
    this.byId = undefined
    return super.set(id, claim)
  }

  override delete(id: string): boolean {
    this.byId = undefined
    return super.delete(id)
  }

  override clear(): void {
    this.byId = undefined
    super.clear()
  }

  sortedById(): ReadonlyArray<ClaimState> {
    if (this.byId === undefined) this.byId = [...this.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    return this.byId
  }
}

interface PoolState {
  key: { template: string; net: string; size: string }
  target: number
  warm: number
  refilling: number
}

interface FaultState {
  route: SimRoute | "*"
  fault: SimFault
  remaining: number | undefined
}

const route = (method: string, rawPath: string): { route: SimRoute | "unknown"; id: string; allowed: boolean } => {
  const path = rawPath.split("?")[0]
  const exact: Record<string, [SimRoute, string]> = {
    "/healthz": ["healthz", "GET"],
    "/v1/claim": ["claim", "POST"],
    "/v1/sandboxes": ["list", "GET"],
    "/v1/info": ["info", "GET"]
  }
  const hit = exact[path]
  if (hit !== undefined) return { route: hit[0], id: "", allowed: method === hit[1] }
  const byId = /^\/v1\/sandboxes\/([^/]+)$/.exec(path)
  if (byId !== null) {
    let id: string
    try {
      id = decodeURIComponent(byId[1])
    } catch {
      return { route: "unknown", id: "", allowed: false }
    }
    return { route: "get", id, allowed: method === "GET" }
  }
  const verb = /^\/v1\/sandboxes\/([^/]+)\/(release|hibernate|wake)$/.exec(path)
  if (verb !== null) {
    let id: string
    try {
      id = decodeURIComponent(verb[1])
    } catch {
      return { route: "unknown", id: "", allowed: false }
    }
    return { route: verb[2] as SimRoute, id, allowed: method === "POST" }
  }
  return { route: "unknown", id: "", allowed: false }
}

// ---- the model ---------------------------------------------------------------------------------

export const make = (options: SandboxdSimOptions): Effect.Effect<SandboxdSimShape, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    // Changed by setRootToken, as sandboxd takes a new api_token from its config (one at a time).
    let rootToken = options.rootToken
    const tenantTokens = options.tenantTokens ?? []
    const zoneOffset = options.zoneOffsetMinutes ?? 0
    const nanoJitter = options.nanosecondDeadlines ?? true
    const claimedAtNanosOf = (now: bigint) => options.wholeSecondClaimedAt === true ? now - (now % 1_000_000_000n) : now
    const refillDelay = Duration.fromInputUnsafe(options.refillDelay ?? "1 second")
    const reapInterval = Duration.fromInputUnsafe(options.reapInterval ?? "5 seconds")
    const archiveOnExpiry = options.archiveOnExpiry ?? false
    const archiveRetentionNanos = Duration.toNanosUnsafe(options.archiveRetention ?? 0)
    const egress = options.egress ?? false

    let coldProvisionDelay = Duration.fromInputUnsafe(options.coldProvisionDelay ?? 0)
    let maxClaims = options.maxClaims ?? 0
    let mesh = options.mesh
    let ownerAddr = options.ownerAddr ?? ""
    let draining = false
    let revision: SimRevision = { ...NEWEST_REVISION, ...options.revision }
    let claimsOutliveClients = options.claimsOutliveClients ?? false
    const omitted = new Map<string, number | undefined>()
    const tell = options.onLifecycle ?? (() => undefined)
    const ended = (claim: ClaimState, how: "released" | "reaped" | "forgotten", atNanos: bigint) =>
      tell({ _tag: "Ended", id: claim.id, claimRef: claim.claimRef, how, atNanos })
    let provisioning = 0
    const claims = new ClaimTable()
    const issuedTokens = new Set<string>()
    const pools = new Map<string, PoolState>()
    for (const pool of options.pools ?? []) {
      const key = { template: pool.template, net: pool.net || "none", size: pool.size || "small" }
      pools.set(poolKeyString(key), { key, target: pool.target, warm: pool.target, refilling: 0 })
    }
    let faults: Array<FaultState> = []
    let auditLog: Array<AuditEntry> = []
    let inFlight = 0
    let maxInFlight = 0
    let requests = 0

    const nowNanos = Clock.currentTimeNanos

    /** The deadline as written on the wire, rendered again only when it has changed since. */
    const deadlineOf = (claim: ClaimState): string => {
      if (claim.deadlineTextNanos !== claim.deadlineNanos) {
        claim.deadlineText = claim.deadlineNanos === 0n ? ZERO_TIME : formatDeadline(claim.deadlineNanos, zoneOffset)
        claim.deadlineTextNanos = claim.deadlineNanos
      }
      return claim.deadlineText
    }

    const view = (claim: ClaimState): SimClaimView => ({
      id: claim.id,
      token: claim.token,
      key: { ...claim.key },
      claimRef: claim.claimRef,
      deadlineNanos: claim.deadlineNanos,
      deadline: deadlineOf(claim),
      leaseSeconds: claim.leaseSeconds,
      hibernated: claim.hibernated,
      archived: claim.archived,
      failed: claim.failed
    })

    const classify = (authorization: string | undefined): { kind: AuthKind; bearer: string } => {
      if (authorization === undefined) return { kind: "none", bearer: "" }
      if (!authorization.startsWith("Bearer ") || authorization.length === "Bearer ".length) {
        return { kind: "malformed", bearer: "" }
      }
      const bearer = authorization.slice("Bearer ".length)
      if (rootToken !== "" && tokensEqual(bearer, rootToken)) return { kind: "root", bearer }
      if (tenantTokens.includes(bearer)) return { kind: "tenant", bearer }
      if (issuedTokens.has(bearer)) return { kind: "claim", bearer }
      return { kind: "unknown", bearer }
    }

    const isOpen = () => rootToken === "" && tenantTokens.length === 0

    /** `requireToken`: root or tenant (or an open node). */
    const requireToken = (kind: AuthKind): Option.Option<SimResponse> =>
      isOpen() || kind === "root" || kind === "tenant"
        ? Option.none()
        : Option.some(errorReply(401, "invalid api token"))

    /** `requireRoot`: root only; a tenant gets 403. */
    const requireRoot = (kind: AuthKind): Option.Option<SimResponse> => {
      if (isOpen() || kind === "root") return Option.none()
      if (kind === "tenant") return Option.some(errorReply(403, "operator token required"))
      return Option.some(errorReply(401, "invalid api token"))
    }

    const refill = (pool: PoolState) =>
      Effect.sleep(refillDelay).pipe(
        Effect.andThen(Effect.sync(() => {
          pool.refilling -= 1
          pool.warm += 1
        })),
        Effect.forkIn(scope),
        Effect.asVoid
      )

    const quotaError = (): Option.Option<string> => {
      if (draining) return Option.some("node claim quota reached: node draining")
      const live = claims.size + provisioning
      if (maxClaims > 0 && live >= maxClaims) {
        return Option.some(`node claim quota reached: ${live} live claims, cap ${maxClaims}`)
      }
      return Option.none()
    }

    const stamp = (key: ClaimState["key"], ttlSeconds: number, claimRef: string) =>
      Effect.gen(function*() {
        const now = yield* nowNanos
        const leaseSeconds = clampTtlSeconds(ttlSeconds)
        const jitter = nanoJitter ? BigInt(randomBytes(3).readUIntBE(0, 3) % 1_000_000) : 0n
        let id = `sb_${hex(8)}`
        while (claims.has(id)) id = `sb_${hex(8)}`
        const claim: ClaimState = {
          id,
          token: hex(16),
          key,
          claimRef,
          deadlineNanos: now + BigInt(leaseSeconds) * 1_000_000_000n + jitter,
          leaseSeconds,
          hibernated: false,
          archived: false,
          failed: "",
          claimedAtNanos: now,
          rowHead: `{"id":${JSON.stringify(id)},"key":${JSON.stringify(key)},"deadline":`,
          claimedAtText: JSON.stringify(formatDeadline(claimedAtNanosOf(now), zoneOffset)),
          deadlineText: "",
          deadlineTextNanos: -1n,
          row: undefined
        }
        claims.set(id, claim)
        issuedTokens.add(claim.token)
        tell({ _tag: "Claimed", id, token: claim.token, claimRef, leaseSeconds, deadlineNanos: claim.deadlineNanos, atNanos: now })
        return claim
      })

    const claimReply = (claim: ClaimState): SimResponse =>
      reply(200, {
        id: claim.id,
        token: claim.token,
        deadline: deadlineOf(claim),
        ...(ownerAddr === "" ? {} : { owner_addr: ownerAddr })
      })

    const handleClaim = (request: SimRequest, kind: AuthKind) =>
      Effect.gen(function*() {
        const denied = requireToken(kind)
        if (Option.isSome(denied)) return denied.value
        if (request.bodyTooLarge === true) return errorReply(400, "invalid request body")
        const parsed = parseClaimBody(request.body)
        if (Result.isFailure(parsed)) return errorReply(400, parsed.failure)
        const body = parsed.success
        const template = body?.template ?? ""
        const net = (body?.net ?? "") || "none"
        const size = (body?.size ?? "") || "small"
        if (template === "") return errorReply(400, "invalid pool key: template must not be empty")
        if (!VALID_NETS.includes(net)) return errorReply(400, `invalid pool key: unknown net shape ${JSON.stringify(net)}`)
        if (!VALID_SIZES.includes(size)) return errorReply(400, `invalid pool key: unknown size ${JSON.stringify(size)}`)
        if (net === "egress" && !egress) return errorReply(409, "node has no egress attachment (bridge or network)")
        const quota = quotaError()
        if (Option.isSome(quota)) return errorReply(429, quota.value)
        const key = { template, net, size }
        const ttl = body?.ttl_seconds ?? 0
        const claimRef = body?.claim_ref ?? ""
        const pool = pools.get(poolKeyString(key))
        if (pool !== undefined && pool.warm > 0) {
          pool.warm -= 1
          pool.refilling += 1
          yield* refill(pool)
          return claimReply(yield* stamp(key, ttl, claimRef))
        }
        if (mesh !== undefined && mesh.peers.length > 0 && body?.no_redirect !== true) {
          return reply(200, { redirect: mesh.peers })
        }
        // Single-node warm miss: provision (slowly) rather than refuse.
        provisioning += 1
        const claim = yield* Effect.sleep(coldProvisionDelay).pipe(
          Effect.andThen(stamp(key, ttl, claimRef)),
          Effect.ensuring(Effect.sync(() => {
            provisioning -= 1
          }))
        )
        return claimReply(claim)
      })

    /** Release, hibernate and wake: the claim's own token, or root by id; wrong token → 404. */
    const authorizeSandboxVerb = (id: string, bearer: string, kind: AuthKind) => {
      if (kind === "none" || kind === "malformed") {
        return Result.fail(errorReply(401, "missing bearer token"))
      }
      const claim = claims.get(id)
      if (claim === undefined) return Result.fail(errorReply(404, "unknown sandbox"))
      if (tokensEqual(bearer, claim.token) || (kind === "root" && revision.rootRelease)) return Result.succeed(claim)
      return Result.fail(errorReply(404, "unknown sandbox"))
    }

    const doArchive = (claim: ClaimState, now: bigint) => {
      claim.hibernated = false
      claim.archived = true
      claim.deadlineNanos = archiveRetentionNanos === 0n ? 0n : now + archiveRetentionNanos
    }

    const doWake = (claim: ClaimState, now: bigint) => {
      if (claim.archived) {
        claim.archived = false
        claim.deadlineNanos = now + BigInt(clampTtlSeconds(claim.leaseSeconds)) * 1_000_000_000n
      }
      claim.hibernated = false
      claim.failed = ""
    }

    const handleVerb = (verb: "release" | "hibernate" | "wake", id: string, bearer: string, kind: AuthKind) =>
      Effect.gen(function*() {
        const authorized = authorizeSandboxVerb(id, bearer, kind)
        if (Result.isFailure(authorized)) return authorized.failure
        const claim = authorized.success
        const now = yield* nowNanos
        switch (verb) {
          case "release":
            claims.delete(id)
            ended(claim, "released", now)
            return noContent
          case "hibernate":
            if (claim.archived) return errorReply(409, "sandbox is archived")
            claim.hibernated = true
            return noContent
          case "wake":
            doWake(claim, now)
            return noContent
        }
      })

    /**
     * One listing row as JSON text, byte for byte what `JSON.stringify` makes of the row object
     * (id, key, deadline, hibernated, then archived, claim_ref, claimed_at and failed when they
     * apply), without building that object. A deadline is digits, `-`, `:`, `.`, `T`, `Z` and `+`
     * only, so it is quoted without escaping.
     */
    const renderRow = (claim: ClaimState): string => {
      const parts = [claim.rowHead, `"${deadlineOf(claim)}","hibernated":${claim.hibernated}`]
      if (claim.archived) parts.push(`,"archived":true`)
      if (claim.claimRef !== "") parts.push(`,"claim_ref":${JSON.stringify(claim.claimRef)}`)
      if (revision.claimedAt) parts.push(`,"claimed_at":${claim.claimedAtText}`)
      if (claim.failed !== "") parts.push(`,"failed":${JSON.stringify(claim.failed)}`)
      parts.push("}")
      // join, not a template: join makes one flat string, which the listing's join copies as is;
      // a string built by concatenation is a tree of pieces that join would walk at every listing
      return parts.join("")
    }

    /** The row as rendered before, unless something it shows has changed since. */
    const rowText = (claim: ClaimState): string => {
      const row = claim.row
      if (
        row !== undefined && row.deadlineNanos === claim.deadlineNanos && row.hibernated === claim.hibernated &&
        row.archived === claim.archived && row.failed === claim.failed && row.claimedAt === revision.claimedAt
      ) return row.text
      const text = renderRow(claim)
      claim.row = {
        text,
        deadlineNanos: claim.deadlineNanos,
        hibernated: claim.hibernated,
        archived: claim.archived,
        failed: claim.failed,
        claimedAt: revision.claimedAt
      }
      return text
    }

    /** Whether the listing shows `claim`; counts down an omission that is for a number of listings. */
    const listed = (claim: ClaimState): boolean => {
      if (!omitted.has(claim.id)) return true
      const left = omitted.get(claim.id)
      if (left !== undefined) {
        if (left <= 1) omitted.delete(claim.id)
        else omitted.set(claim.id, left - 1)
      }
      return false
    }

    /** The listing's body text: `{"sandboxes":[rows by id]}` and a newline, as Go's encoder ends it. */
    const listText = (path: string): string => {
      const query = new URLSearchParams(path.includes("?") ? path.slice(path.indexOf("?") + 1) : "")
      const claimRef = revision.claimRefFilter ? query.get("claim_ref") : null
      const rows: Array<string> = []
      for (const claim of claims.sortedById()) {
        if ((claimRef === null || claim.claimRef === claimRef) && listed(claim)) rows.push(rowText(claim))
      }
      return `{"sandboxes":[${rows.join(",")}]}\n`
    }

    /** Root `GET /v1/sandboxes/{id}`. */
    const handleGet = (id: string, kind: AuthKind): SimResponse => {
      if (!revision.byIdRead) return notFoundPage
      const denied = requireRoot(kind)
      if (Option.isSome(denied)) return denied.value
      const claim = claims.get(id)
      if (claim === undefined) return errorReply(404, "unknown sandbox")
      const row = rowText(claim)
      return {
        _tag: "Reply",
        status: 200,
        contentType: "application/json",
        body: revision.byIdToken ? `${row.slice(0, -1)},"token":${JSON.stringify(claim.token)}}\n` : `${row}\n`
      }
    }

    const poolViews = (): Array<SimPoolView> =>
      [...pools.values()]
        .map((pool) => ({ ...pool.key, warm: pool.warm, refilling: pool.refilling, target: pool.target }))
        .sort((a, b) => poolKeyString(a) < poolKeyString(b) ? -1 : 1)

    const infoBody = () => {
      const all = [...claims.values()]
      return {
        pools: poolViews().map((p) => ({
          key: { template: p.template, net: p.net, size: p.size },
          warm: p.warm,
          refilling: p.refilling,
          target: p.target,
          golden: true
        })),
        claimed: all.length,
        hibernated: all.filter((c) => c.hibernated).length,
        archived: all.filter((c) => c.archived).length,
        ...(draining ? { draining: true } : {}),
        ...(mesh === undefined ? {} : { peers: mesh.peers })
      }
    }

    /**
     * Consumes the route's faults in order: latency accumulates, the first terminal one wins.
     * `Some(Left)` answers instead of the model; `Some(Right)` does the model's work and then
     * answers this way instead (`"hang"`: never).
     */
    const applyFaults = (r: SimRoute) =>
      Effect.gen(function*(): Effect.fn.Return<Option.Option<Result.Result<SimResponse | "hang", SimResponse>>> {
        for (const state of [...faults]) {
          if (state.route !== r && state.route !== "*") continue
          if (state.remaining !== undefined) {
            state.remaining -= 1
            if (state.remaining <= 0) faults = faults.filter((f) => f !== state)
          }
          const fault = state.fault
          switch (fault._tag) {
            case "Latency":
              yield* Effect.sleep(fault.delay)
              continue
            case "Reply":
              return Option.some(Result.fail<SimResponse>({
                _tag: "Reply",
                status: fault.status,
                contentType: fault.contentType,
                body: fault.body
              }))
            case "Drop":
              return Option.some(Result.fail<SimResponse>({ _tag: "Drop" }))
            case "Truncate":
            case "Stall":
              return Option.some(Result.fail<SimResponse>({
                _tag: fault._tag,
                status: fault.status,
                contentType: "application/json",
                body: fault.body
              }))
            case "Hang":
              return yield* Effect.never
            case "LoseReply":
              return Option.some(Result.succeed(fault.how === "hang" ? "hang" : { _tag: "Drop" }))
            case "ReplaceReply":
              return Option.some(Result.succeed<SimResponse>({
                _tag: "Reply",
                status: fault.status,
                contentType: "text/plain; charset=utf-8",
                body: fault.body
              }))
          }
        }
        return Option.none()
      })

    const answerRoute = (
      routed: { readonly route: SimRoute; readonly id: string },
      request: SimRequest,
      auth: { readonly kind: AuthKind; readonly bearer: string }
    ): Effect.Effect<SimResponse> =>
      Effect.gen(function*() {
        switch (routed.route) {
          case "healthz":
            return plainText(200, "ok")
          case "claim":
            return yield* handleClaim(request, auth.kind)
          case "release":
          case "hibernate":
          case "wake":
            return yield* handleVerb(routed.route, routed.id, auth.bearer, auth.kind)
          case "list": {
            const denied = requireRoot(auth.kind)
            return Option.isSome(denied)
              ? denied.value
              : { _tag: "Reply", status: 200, contentType: "application/json", body: listText(request.path) }
          }
          case "get":
            return handleGet(routed.id, auth.kind)
          case "info": {
            const denied = requireRoot(auth.kind)
            return Option.isSome(denied) ? denied.value : reply(200, infoBody())
          }
        }
      })

    const handle = (request: SimRequest): Effect.Effect<SimResponse> =>
      Effect.gen(function*() {
        const at = yield* Clock.currentTimeMillis
        const routed = route(request.method, request.path)
        const auth = classify(request.authorization)
        // Bounded, so a long-running standalone simulator does not grow without limit.
        if (auditLog.length >= AUDIT_LIMIT) auditLog = auditLog.slice(-(AUDIT_LIMIT / 2))
        auditLog.push({
          method: request.method,
          path: request.path,
          route: routed.route,
          authorization: request.authorization,
          auth: auth.kind,
          contentType: request.contentType,
          body: request.body,
          atMillis: at
        })
        if (routed.route === "unknown") return notFoundPage
        if (routed.route === "get" && !revision.byIdRead) return notFoundPage
        if (!routed.allowed) return methodNotAllowed
        const target = { route: routed.route, id: routed.id }
        const work = Effect.gen(function*() {
          const faulted = yield* applyFaults(target.route)
          if (Option.isNone(faulted)) return Result.succeed<SimResponse>(yield* answerRoute(target, request, auth))
          const outcome = faulted.value
          if (Result.isFailure(outcome)) return Result.succeed<SimResponse>(outcome.failure)
          // The work is done; only the reply is lost (or replaced).
          yield* answerRoute(target, request, auth)
          return Result.fail(outcome.success)
        })
        // A client going away interrupts its request, unless claims are finished regardless.
        const done = yield* (target.route === "claim" && claimsOutliveClients ? Effect.uninterruptible(work) : work)
        if (Result.isSuccess(done)) return done.success
        return done.failure === "hang" ? yield* Effect.never : done.failure
      }).pipe(
        Effect.onExit(() =>
          Effect.sync(() => {
            inFlight -= 1
          })
        ),
        (effect) =>
          Effect.andThen(
            Effect.sync(() => {
              inFlight += 1
              requests += 1
              maxInFlight = Math.max(maxInFlight, inFlight)
            }),
            effect
          )
      )

    const withClaim = <A>(id: string, f: (claim: ClaimState, now: bigint) => A) =>
      Effect.flatMap(nowNanos, (now) => {
        const claim = claims.get(id)
        return claim === undefined
          ? Effect.fail(new SimUnknownSandbox({ id, message: `unknown sandbox ${id}` }))
          : Effect.sync(() => f(claim, now))
      })

    const reapOnce = Effect.flatMap(nowNanos, (now) =>
      Effect.sync(() => {
        // deleting the claim being visited is safe in a Map's iteration: no copy of every claim each pass
        for (const claim of claims.values()) {
          if (claim.deadlineNanos === 0n || claim.deadlineNanos > now) continue
          if (!claim.archived && claim.hibernated && archiveOnExpiry) {
            doArchive(claim, now)
          } else {
            claims.delete(claim.id)
            ended(claim, "reaped", now)
          }
        }
      }))

    yield* reapOnce.pipe(
      Effect.repeat(Schedule.spaced(reapInterval)),
      Effect.forkIn(scope)
    )

    return {
      handle,
      claims: Effect.sync(() => [...claims.values()].map(view)),
      pools: Effect.sync(poolViews),
      hibernate: (id) =>
        withClaim(id, (claim) => {
          claim.hibernated = true
        }),
      wake: (id) => withClaim(id, doWake),
      archive: (id) => withClaim(id, doArchive),
      markFailed: (id, reason) =>
        withClaim(id, (claim) => {
          claim.failed = reason
        }),
      forget: (id) =>
        withClaim(id, (claim, now) => {
          claims.delete(claim.id)
          ended(claim, "forgotten", now)
        }),
      setDraining: (value) =>
        Effect.sync(() => {
          draining = value
        }),
      setMaxClaims: (value) =>
        Effect.sync(() => {
          maxClaims = value
        }),
      setRootToken: (token) =>
        Effect.sync(() => {
          rootToken = token
        }),
      setColdProvisionDelay: (delay) =>
        Effect.sync(() => {
          coldProvisionDelay = Duration.fromInputUnsafe(delay)
        }),
      setOwnerAddr: (addr) =>
        Effect.sync(() => {
          ownerAddr = addr
        }),
      adoptListenAddr: (addr) =>
        Effect.sync(() => {
          if (options.ownerAddr === undefined) ownerAddr = addr
        }),
      setMesh: (value) =>
        Effect.sync(() => {
          mesh = value
        }),
      setClaimsOutliveClients: (on) =>
        Effect.sync(() => {
          claimsOutliveClients = on
        }),
      setRevision: (value) =>
        Effect.sync(() => {
          revision = { ...revision, ...value }
        }),
      omitFromListings: (id, times) =>
        Effect.sync(() => {
          omitted.set(id, times)
        }),
      injectFault: (r, fault, faultOptions) =>
        Effect.sync(() => {
          faults.push({ route: r, fault, remaining: faultOptions?.times })
        }),
      clearFaults: Effect.sync(() => {
        faults = []
      }),
      audit: Effect.sync(() => [...auditLog]),
      clearAudit: Effect.sync(() => {
        auditLog = []
      }),
      stats: Effect.sync(() => ({ inFlight, maxInFlight, requests })),
      resetStats: Effect.sync(() => {
        maxInFlight = inFlight
        requests = 0
      }),
      reapOnce
    } satisfies SandboxdSimShape
  })
