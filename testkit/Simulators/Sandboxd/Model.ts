/**
 * A model of sandboxd: warm pools, claims, leases, the reaper, hibernate/archive, token rules,
 * quotas, mesh redirects, fault injection and an audit log. It speaks HTTP-shaped requests and
 * replies (`handle`), so the HTTP face (`Server.ts`) is a thin adapter and the no-socket test
 * client (`testkit/Layers/SandboxdClientSim.ts`) meets the same wire bodies. Its parts: routes
 * from `src/Sandboxd/Routes.ts` (the client's own table), callers (`Auth.ts`), claims
 * (`Claims.ts`), the routes on existing claims (`Sandboxes.ts`), faults (`Faults.ts`), all on one
 * state (`State.ts`, with its rule for who may change it).
 */
import { Clock, Context, Duration, Effect, Layer, Option, Result, Schedule, Schema } from "effect"
import type { Scope } from "effect"
import { routeOf } from "../../../src/Sandboxd/Routes.ts"
import { type Caller, classify } from "./Auth.ts"
import { handleClaim } from "./Claims.ts"
import { applyFaults } from "./Faults.ts"
import { AUDIT_LIMIT, type SandboxdSimOptions, type SimRevision } from "./Options.ts"
import { doArchive, doWake, handleGet, handleInfo, handleList, handleVerb, poolViews, reapOnce } from "./Sandboxes.ts"
import { type ClaimState, deadlineOf, ended, makeState, type SimState } from "./State.ts"
import { type AuditEntry, methodNotAllowed, notFoundPage, plainText, type SimFault, type SimRequest, type SimResponse, type SimRoute } from "./Wire.ts"

export * from "./Options.ts"
export * from "./Wire.ts"

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
  /** The requests held in a latency fault now: each ends when the TestClock reaches its end, or its client goes. */
  readonly delayed: Effect.Effect<ReadonlyArray<SimRequest>>
  readonly resetStats: Effect.Effect<void>
  /** One reaper pass (the background reaper runs this every `reapInterval`). */
  readonly reapOnce: Effect.Effect<void>
}

export class SandboxdSim extends Context.Service<SandboxdSim, SandboxdSimShape>()("vk-sandbox/SandboxdSim") {
  static readonly layer = (options: SandboxdSimOptions): Layer.Layer<SandboxdSim> =>
    Layer.effect(SandboxdSim, make(options))
}

/** The answer to a request that reached a route (faults aside). */
const answerRoute = (state: SimState, route: SimRoute, id: string, request: SimRequest, caller: Caller): Effect.Effect<SimResponse> => {
  switch (route) {
    case "healthz":
      return Effect.succeed(plainText(200, "ok"))
    case "claim":
      return handleClaim(state, request, caller.kind)
    case "release":
    case "hibernate":
    case "wake":
      return handleVerb(state, route, id, caller.bearer, caller.kind)
    case "list":
      return Effect.sync(() => handleList(state, request.path, caller.kind))
    case "get":
      return Effect.sync(() => handleGet(state, id, caller.kind))
    case "info":
      return Effect.sync(() => handleInfo(state, caller.kind))
  }
}

/** Keeps the audit entry of a request; bounded, so a long-running standalone simulator does not grow without limit. */
const audit = (state: SimState, entry: AuditEntry) => {
  if (state.auditLog.length >= AUDIT_LIMIT) state.auditLog = state.auditLog.slice(-(AUDIT_LIMIT / 2))
  state.auditLog.push(entry)
}

/** Answers one request: audited, routed, then faulted or answered by the model. */
const handle = (state: SimState, request: SimRequest): Effect.Effect<SimResponse> =>
  Effect.gen(function*() {
    const atMillis = yield* Clock.currentTimeMillis
    const routed = routeOf(request.method, request.path)
    const caller = classify(state, request.authorization)
    const { authorization, body, contentType, method, path } = request
    audit(state, { method, path, route: routed.route, authorization, auth: caller.kind, contentType, body, atMillis })
    if (routed.route === "unknown") return notFoundPage
    if (routed.route === "get" && !state.revision.byIdRead) return notFoundPage
    if (!routed.allowed) return methodNotAllowed
    const route = routed.route
    const answer = answerRoute(state, route, routed.id, request, caller)
    const work = Effect.gen(function*() {
      const faulted = yield* applyFaults(state, route, request)
      if (Option.isNone(faulted)) return Result.succeed<SimResponse>(yield* answer)
      const outcome = faulted.value
      if (Result.isFailure(outcome)) return Result.succeed<SimResponse>(outcome.failure)
      // The work is done; only the reply is lost (or replaced).
      yield* answer
      return Result.fail(outcome.success)
    })
    // A client going away interrupts its request, unless claims are finished regardless.
    const done = yield* (route === "claim" && state.claimsOutliveClients ? Effect.uninterruptible(work) : work)
    if (Result.isSuccess(done)) return done.success
    return done.failure === "hang" ? yield* Effect.never : done.failure
  }).pipe(
    Effect.onExit(() =>
      Effect.sync(() => {
        state.inFlight -= 1
      })
    ),
    (effect) =>
      Effect.andThen(
        Effect.sync(() => {
          state.inFlight += 1
          state.requests += 1
          state.maxInFlight = Math.max(state.maxInFlight, state.inFlight)
        }),
        effect
      )
  )

const view = (state: SimState, claim: ClaimState): SimClaimView => ({
  id: claim.id,
  token: claim.token,
  key: { ...claim.key },
  claimRef: claim.claimRef,
  deadlineNanos: claim.deadlineNanos,
  deadline: deadlineOf(state, claim),
  leaseSeconds: claim.leaseSeconds,
  hibernated: claim.hibernated,
  archived: claim.archived,
  failed: claim.failed
})

/** `f` on the live claim `id`, now; SimUnknownSandbox when there is none. */
const withClaim = <A>(state: SimState, id: string, f: (claim: ClaimState, now: bigint) => A) =>
  Effect.flatMap(Clock.currentTimeNanos, (now) => {
    const claim = state.claims.get(id)
    return claim === undefined
      ? Effect.fail(new SimUnknownSandbox({ id, message: `unknown sandbox ${id}` }))
      : Effect.sync(() => f(claim, now))
  })

/** A change of the state, as one synchronous step. */
const setting = <A>(state: SimState, set: (state: SimState, value: A) => void) => (value: A) => Effect.sync(() => set(state, value))

/** What a test may see and change of the model, besides sending it requests. */
const controls = (state: SimState): Omit<SandboxdSimShape, "handle"> => ({
  claims: Effect.sync(() => [...state.claims.values()].map((claim) => view(state, claim))),
  pools: Effect.sync(() => poolViews(state)),
  hibernate: (id) =>
    withClaim(state, id, (claim) => {
      claim.hibernated = true
    }),
  wake: (id) => withClaim(state, id, doWake),
  archive: (id) => withClaim(state, id, (claim, now) => doArchive(state, claim, now)),
  markFailed: (id, reason) =>
    withClaim(state, id, (claim) => {
      claim.failed = reason
    }),
  forget: (id) =>
    withClaim(state, id, (claim, now) => {
      state.claims.delete(claim.id)
      ended(state, claim, "forgotten", now)
    }),
  setDraining: setting(state, (s, value: boolean) => {
    s.draining = value
  }),
  setMaxClaims: setting(state, (s, value: number) => {
    s.maxClaims = value
  }),
  setRootToken: setting(state, (s, token: string) => {
    s.rootToken = token
  }),
  setColdProvisionDelay: setting(state, (s, delay: Duration.Input) => {
    s.coldProvisionDelay = Duration.fromInputUnsafe(delay)
  }),
  setOwnerAddr: setting(state, (s, addr: string) => {
    s.ownerAddr = addr
  }),
  adoptListenAddr: setting(state, (s, addr: string) => {
    if (s.settings.options.ownerAddr === undefined) s.ownerAddr = addr
  }),
  setMesh: setting(state, (s, mesh: { readonly peers: ReadonlyArray<string> } | undefined) => {
    s.mesh = mesh
  }),
  setClaimsOutliveClients: setting(state, (s, on: boolean) => {
    s.claimsOutliveClients = on
  }),
  setRevision: setting(state, (s, revision: Partial<SimRevision>) => {
    s.revision = { ...s.revision, ...revision }
  }),
  omitFromListings: (id, times) =>
    Effect.sync(() => {
      state.omitted.set(id, times)
    }),
  injectFault: (route, fault, options) =>
    Effect.sync(() => {
      state.faults.push({ route, fault, remaining: options?.times })
    }),
  clearFaults: Effect.sync(() => {
    state.faults = []
  }),
  audit: Effect.sync(() => [...state.auditLog]),
  clearAudit: Effect.sync(() => {
    state.auditLog = []
  }),
  stats: Effect.sync(() => ({ inFlight: state.inFlight, maxInFlight: state.maxInFlight, requests: state.requests })),
  delayed: Effect.sync(() => [...state.delayed]),
  resetStats: Effect.sync(() => {
    state.maxInFlight = state.inFlight
    state.requests = 0
  }),
  reapOnce: reapOnce(state)
})

/** A simulator for the life of the scope; its reaper runs every `reapInterval` meanwhile. */
export const make = (options: SandboxdSimOptions): Effect.Effect<SandboxdSimShape, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const state = makeState(options, scope)
    yield* reapOnce(state).pipe(Effect.repeat(Schedule.spaced(state.settings.reapInterval)), Effect.forkIn(scope))
    return { handle: (request: SimRequest) => handle(state, request), ...controls(state) }
  })
