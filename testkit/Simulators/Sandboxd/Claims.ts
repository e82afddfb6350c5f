/**
 * `POST /v1/claim`: a warm VM from its pool (refilled after `refillDelay`), a mesh redirect, or a
 * cold one after `coldProvisionDelay`; refused past the node quota or while draining. The request
 * body is read as leniently as Go's encoding/json reads it (unknown keys ignored, `null` absent).
 */
import { randomBytes } from "node:crypto"
import { Clock, Effect, Option, Result, Schema } from "effect"
import { formatDeadline } from "../../../src/Schemas/Sandboxd.ts"
import { requireToken } from "./Auth.ts"
import { clampTtlSeconds, VALID_NETS, VALID_SIZES } from "./Options.ts"
import { type ClaimState, deadlineOf, hex, type PoolKey, poolKeyString, type PoolState, type SimState } from "./State.ts"
import { type AuthKind, errorReply, reply, type SimRequest, type SimResponse } from "./Wire.ts"

const ClaimBody = Schema.NullOr(Schema.Struct({
  template: Schema.optionalKey(Schema.NullOr(Schema.String)),
  net: Schema.optionalKey(Schema.NullOr(Schema.String)),
  size: Schema.optionalKey(Schema.NullOr(Schema.String)),
  ttl_seconds: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  claim_ref: Schema.optionalKey(Schema.NullOr(Schema.String)),
  no_redirect: Schema.optionalKey(Schema.NullOr(Schema.Boolean))
}))
const decodeClaimBody = Schema.decodeUnknownResult(ClaimBody)

const parseClaimBody = (text: string): Result.Result<typeof ClaimBody.Type, string> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return Result.fail("invalid request body")
  }
  const decoded = decodeClaimBody(json)
  return Result.isFailure(decoded) ? Result.fail("invalid request body") : Result.succeed(decoded.success)
}

/** A warm VM taken from `pool` comes back after the refill delay (forked into the simulator's scope). */
const refill = (state: SimState, pool: PoolState) =>
  Effect.sleep(state.settings.refillDelay).pipe(
    Effect.andThen(Effect.sync(() => {
      pool.refilling -= 1
      pool.warm += 1
    })),
    Effect.forkIn(state.settings.scope),
    Effect.asVoid
  )

/** Why a claim is refused by the node quota now, if it is. */
const quotaError = (state: SimState): Option.Option<string> => {
  if (state.draining) return Option.some("node claim quota reached: node draining")
  const live = state.claims.size + state.provisioning
  if (state.maxClaims > 0 && live >= state.maxClaims) {
    return Option.some(`node claim quota reached: ${live} live claims, cap ${state.maxClaims}`)
  }
  return Option.none()
}

/** A new claim, now: a fresh id and token, its lease from `ttlSeconds`, its listing row's fixed part. */
const stamp = (state: SimState, key: PoolKey, ttlSeconds: number, claimRef: string) =>
  Effect.map(Clock.currentTimeNanos, (now) => {
    const { nanoJitter, wholeSecondClaimedAt, zoneOffset } = state.settings
    const leaseSeconds = clampTtlSeconds(ttlSeconds)
    const jitter = nanoJitter ? BigInt(randomBytes(3).readUIntBE(0, 3) % 1_000_000) : 0n
    let id = `sb_${hex(8)}`
    while (state.claims.has(id)) id = `sb_${hex(8)}`
    const claimedAt = wholeSecondClaimedAt ? now - (now % 1_000_000_000n) : now
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
      claimedAtText: JSON.stringify(formatDeadline(claimedAt, zoneOffset)),
      deadlineText: "",
      deadlineTextNanos: -1n,
      row: undefined
    }
    state.claims.set(id, claim)
    state.issuedTokens.add(claim.token)
    state.settings.tell({ _tag: "Claimed", id, token: claim.token, claimRef, leaseSeconds, deadlineNanos: claim.deadlineNanos, atNanos: now })
    return claim
  })

const claimReply = (state: SimState, claim: ClaimState): SimResponse =>
  reply(200, {
    id: claim.id,
    token: claim.token,
    deadline: deadlineOf(state, claim),
    ...(state.ownerAddr === "" ? {} : { owner_addr: state.ownerAddr })
  })

/** The pool key a claim body asks for (net and size defaulted), or the 400/409 refusing it. */
const poolKeyOf = (state: SimState, body: typeof ClaimBody.Type): Result.Result<PoolKey, SimResponse> => {
  const template = body?.template ?? ""
  const net = (body?.net ?? "") || "none"
  const size = (body?.size ?? "") || "small"
  if (template === "") return Result.fail(errorReply(400, "invalid pool key: template must not be empty"))
  if (!VALID_NETS.includes(net)) return Result.fail(errorReply(400, `invalid pool key: unknown net shape ${JSON.stringify(net)}`))
  if (!VALID_SIZES.includes(size)) return Result.fail(errorReply(400, `invalid pool key: unknown size ${JSON.stringify(size)}`))
  if (net === "egress" && !state.settings.egress) return Result.fail(errorReply(409, "node has no egress attachment (bridge or network)"))
  return Result.succeed({ template, net, size })
}

export const handleClaim = (state: SimState, request: SimRequest, kind: AuthKind) =>
  Effect.gen(function*() {
    const denied = requireToken(state, kind)
    if (Option.isSome(denied)) return denied.value
    if (request.bodyTooLarge === true) return errorReply(400, "invalid request body")
    const parsed = parseClaimBody(request.body)
    if (Result.isFailure(parsed)) return errorReply(400, parsed.failure)
    const body = parsed.success
    const key = poolKeyOf(state, body)
    if (Result.isFailure(key)) return key.failure
    const quota = quotaError(state)
    if (Option.isSome(quota)) return errorReply(429, quota.value)
    const ttl = body?.ttl_seconds ?? 0
    const claimRef = body?.claim_ref ?? ""
    const pool = state.pools.get(poolKeyString(key.success))
    if (pool !== undefined && pool.warm > 0) {
      pool.warm -= 1
      pool.refilling += 1
      yield* refill(state, pool)
      return claimReply(state, yield* stamp(state, key.success, ttl, claimRef))
    }
    const mesh = state.mesh
    if (mesh !== undefined && mesh.peers.length > 0 && body?.no_redirect !== true) {
      return reply(200, { redirect: mesh.peers })
    }
    // Single-node warm miss: provision (slowly) rather than refuse.
    state.provisioning += 1
    const claim = yield* Effect.sleep(state.coldProvisionDelay).pipe(
      Effect.andThen(stamp(state, key.success, ttl, claimRef)),
      Effect.ensuring(Effect.sync(() => {
        state.provisioning -= 1
      }))
    )
    return claimReply(state, claim)
  })
