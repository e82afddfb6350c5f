/**
 * The simulator's state: one mutable object per simulator (`SimState`), read and written by the
 * parts of the model (`Claims.ts`, `Sandboxes.ts`, `Faults.ts`, `Model.ts`). Its rule: a step
 * that reads the state and writes from what it read runs without a yield in between (inside one
 * `Effect.sync`, or synchronous code between two yields), so JavaScript's one thread makes every
 * such step atomic. All time comes from the Effect `Clock`, so tests drive leases with `TestClock`.
 */
import { randomBytes, timingSafeEqual } from "node:crypto"
import { Duration } from "effect"
import type { Scope } from "effect"
import { formatDeadline, ZERO_TIME } from "../../../src/Schemas/Sandboxd.ts"
import { NEWEST_REVISION, type SandboxdSimOptions, type SimLifecycleEvent, type SimRevision } from "./Options.ts"
import type { AuditEntry, SimFault, SimRequest, SimRoute } from "./Wire.ts"

export const hex = (bytes: number): string => randomBytes(bytes).toString("hex")

export const tokensEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

export interface PoolKey {
  readonly template: string
  readonly net: string
  readonly size: string
}

export const poolKeyString = (key: PoolKey) => `${key.template}\u0000${key.net}\u0000${key.size}`

export interface ClaimState {
  id: string
  token: string
  key: PoolKey
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

export interface RenderedRow {
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
export class ClaimTable extends Map<string, ClaimState> {
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

export interface PoolState {
  readonly key: PoolKey
  readonly target: number
  warm: number
  refilling: number
}

export interface FaultState {
  readonly route: SimRoute | "*"
  readonly fault: SimFault
  remaining: number | undefined
}

/** What the options fix for the simulator's life. */
export interface SimSettings {
  readonly options: SandboxdSimOptions
  readonly tenantTokens: ReadonlyArray<string>
  /** The observer of every VM's start and end (`onLifecycle`), or one that ignores them. */
  readonly tell: (event: SimLifecycleEvent) => void
  readonly zoneOffset: number
  readonly nanoJitter: boolean
  readonly wholeSecondClaimedAt: boolean
  readonly refillDelay: Duration.Duration
  readonly reapInterval: Duration.Duration
  readonly archiveOnExpiry: boolean
  readonly archiveRetentionNanos: bigint
  readonly egress: boolean
  /** Where refills run: the simulator's own scope. */
  readonly scope: Scope.Scope
}

/** The simulator's one mutable state (see the module's rule). */
export interface SimState {
  readonly settings: SimSettings
  /** The node `api_token`, changed by `setRootToken` as sandboxd takes a new one from its config. */
  rootToken: string
  coldProvisionDelay: Duration.Duration
  maxClaims: number
  mesh: { readonly peers: ReadonlyArray<string> } | undefined
  ownerAddr: string
  draining: boolean
  revision: SimRevision
  claimsOutliveClients: boolean
  /** Ids left out of listings, with how many more listings (undefined: until cleared). */
  readonly omitted: Map<string, number | undefined>
  /** Cold claims being provisioned: they count against the quota. */
  provisioning: number
  readonly claims: ClaimTable
  readonly issuedTokens: Set<string>
  readonly pools: Map<string, PoolState>
  faults: Array<FaultState>
  auditLog: Array<AuditEntry>
  inFlight: number
  /** Requests sleeping in a latency fault (see `Faults.ts`). */
  readonly delayed: Set<SimRequest>
  maxInFlight: number
  requests: number
}

export const makeState = (options: SandboxdSimOptions, scope: Scope.Scope): SimState => {
  const pools = new Map<string, PoolState>()
  for (const pool of options.pools ?? []) {
    const key = { template: pool.template, net: pool.net || "none", size: pool.size || "small" }
    pools.set(poolKeyString(key), { key, target: pool.target, warm: pool.target, refilling: 0 })
  }
  const tenantTokens = options.tenantTokens ?? []
  return {
    settings: {
      options,
      tenantTokens,
      tell: options.onLifecycle ?? (() => undefined),
      zoneOffset: options.zoneOffsetMinutes ?? 0,
      nanoJitter: options.nanosecondDeadlines ?? true,
      wholeSecondClaimedAt: options.wholeSecondClaimedAt === true,
      refillDelay: Duration.fromInputUnsafe(options.refillDelay ?? "1 second"),
      reapInterval: Duration.fromInputUnsafe(options.reapInterval ?? "5 seconds"),
      archiveOnExpiry: options.archiveOnExpiry ?? false,
      archiveRetentionNanos: Duration.toNanosUnsafe(options.archiveRetention ?? 0),
      egress: options.egress ?? false,
      scope
    },
    rootToken: options.rootToken,
    coldProvisionDelay: Duration.fromInputUnsafe(options.coldProvisionDelay ?? 0),
    maxClaims: options.maxClaims ?? 0,
    mesh: options.mesh,
    ownerAddr: options.ownerAddr ?? "",
    draining: false,
    revision: { ...NEWEST_REVISION, ...options.revision },
    claimsOutliveClients: options.claimsOutliveClients ?? false,
    omitted: new Map(),
    provisioning: 0,
    claims: new ClaimTable(),
    issuedTokens: new Set(),
    pools,
    faults: [],
    auditLog: [],
    inFlight: 0,
    delayed: new Set(),
    maxInFlight: 0,
    requests: 0
  }
}

/** Neither a root nor a tenant token: every caller is root on operator routes. */
export const isOpenNode = (state: SimState): boolean => state.rootToken === "" && state.settings.tenantTokens.length === 0

/** Tells the observer that `claim`'s VM ended, and how. */
export const ended = (state: SimState, claim: ClaimState, how: "released" | "reaped" | "forgotten", atNanos: bigint) =>
  state.settings.tell({ _tag: "Ended", id: claim.id, claimRef: claim.claimRef, how, atNanos })

/** The deadline as written on the wire, rendered again only when it has changed since. */
export const deadlineOf = (state: SimState, claim: ClaimState): string => {
  if (claim.deadlineTextNanos !== claim.deadlineNanos) {
    claim.deadlineText = claim.deadlineNanos === 0n ? ZERO_TIME : formatDeadline(claim.deadlineNanos, state.settings.zoneOffset)
    claim.deadlineTextNanos = claim.deadlineNanos
  }
  return claim.deadlineText
}
