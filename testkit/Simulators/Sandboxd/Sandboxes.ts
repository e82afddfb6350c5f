/**
 * The routes on claims that exist: release, hibernate and wake (the claim's own token, or root by
 * id), the root listing and by-id read, pool info, and the reaper. A listing row is rendered as
 * text and kept until something it shows changes: every daemon start lists all claims (10,000 in
 * the bench's restarts, whose simulators share the machine with the daemon).
 */
import { Clock, Effect, Option, Result } from "effect"
import { UNKNOWN_SANDBOX } from "../../../src/Sandboxd/Replies.ts"
import { claimRefOf } from "../../../src/Sandboxd/Routes.ts"
import { requireRoot } from "./Auth.ts"
import { clampTtlSeconds } from "./Options.ts"
import { type ClaimState, deadlineOf, ended, poolKeyString, type SimState, tokensEqual } from "./State.ts"
import { type AuthKind, errorReply, noContent, notFoundPage, reply, type SimResponse } from "./Wire.ts"

/** The claim a release, hibernate or wake names, if the caller may act on it; a wrong token gets 404. */
const authorizeSandboxVerb = (state: SimState, id: string, bearer: string, kind: AuthKind) => {
  if (kind === "none" || kind === "malformed") {
    return Result.fail(errorReply(401, "missing bearer token"))
  }
  const claim = state.claims.get(id)
  if (claim === undefined) return Result.fail(errorReply(404, UNKNOWN_SANDBOX))
  if (tokensEqual(bearer, claim.token) || (kind === "root" && state.revision.rootRelease)) return Result.succeed(claim)
  return Result.fail(errorReply(404, UNKNOWN_SANDBOX))
}

/** Archives `claim`: the deadline becomes now + retention, or the zero time (kept forever). */
export const doArchive = (state: SimState, claim: ClaimState, now: bigint) => {
  const retention = state.settings.archiveRetentionNanos
  claim.hibernated = false
  claim.archived = true
  claim.deadlineNanos = retention === 0n ? 0n : now + retention
}

/** Wakes `claim`: an archived one gets a fresh lease; any failure is cleared. */
export const doWake = (claim: ClaimState, now: bigint) => {
  if (claim.archived) {
    claim.archived = false
    claim.deadlineNanos = now + BigInt(clampTtlSeconds(claim.leaseSeconds)) * 1_000_000_000n
  }
  claim.hibernated = false
  claim.failed = ""
}

export const handleVerb = (state: SimState, verb: "release" | "hibernate" | "wake", id: string, bearer: string, kind: AuthKind) =>
  Effect.map(Clock.currentTimeNanos, (now): SimResponse => {
    const authorized = authorizeSandboxVerb(state, id, bearer, kind)
    if (Result.isFailure(authorized)) return authorized.failure
    const claim = authorized.success
    switch (verb) {
      case "release":
        state.claims.delete(id)
        ended(state, claim, "released", now)
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
 * One listing row as JSON text, byte for byte what `JSON.stringify` makes of the row object (id,
 * key, deadline, hibernated, then archived, claim_ref, claimed_at and failed when they apply),
 * without building that object. A deadline is digits, `-`, `:`, `.`, `T`, `Z` and `+` only, so it
 * is quoted without escaping.
 */
const renderRow = (state: SimState, claim: ClaimState): string => {
  const parts = [claim.rowHead, `"${deadlineOf(state, claim)}","hibernated":${claim.hibernated}`]
  if (claim.archived) parts.push(`,"archived":true`)
  if (claim.claimRef !== "") parts.push(`,"claim_ref":${JSON.stringify(claim.claimRef)}`)
  if (state.revision.claimedAt) parts.push(`,"claimed_at":${claim.claimedAtText}`)
  if (claim.failed !== "") parts.push(`,"failed":${JSON.stringify(claim.failed)}`)
  parts.push("}")
  // join, not a template: join makes one flat string, which the listing's join copies as is;
  // a string built by concatenation is a tree of pieces that join would walk at every listing
  return parts.join("")
}

/** The row as rendered before, unless something it shows has changed since. */
const rowText = (state: SimState, claim: ClaimState): string => {
  const row = claim.row
  const claimedAt = state.revision.claimedAt
  if (
    row !== undefined && row.deadlineNanos === claim.deadlineNanos && row.hibernated === claim.hibernated &&
    row.archived === claim.archived && row.failed === claim.failed && row.claimedAt === claimedAt
  ) return row.text
  const text = renderRow(state, claim)
  claim.row = { text, deadlineNanos: claim.deadlineNanos, hibernated: claim.hibernated, archived: claim.archived, failed: claim.failed, claimedAt }
  return text
}

/** Whether the listing shows `claim`; counts down an omission that is for a number of listings. */
const listed = (state: SimState, claim: ClaimState): boolean => {
  if (!state.omitted.has(claim.id)) return true
  const left = state.omitted.get(claim.id)
  if (left !== undefined) {
    if (left <= 1) state.omitted.delete(claim.id)
    else state.omitted.set(claim.id, left - 1)
  }
  return false
}

/** Root `GET /v1/sandboxes`: `{"sandboxes":[rows by id]}` and a newline, as Go's encoder ends it. */
export const handleList = (state: SimState, path: string, kind: AuthKind): SimResponse => {
  const denied = requireRoot(state, kind)
  if (Option.isSome(denied)) return denied.value
  const claimRef = state.revision.claimRefFilter ? claimRefOf(path) : undefined
  const rows: Array<string> = []
  for (const claim of state.claims.sortedById()) {
    if ((claimRef === undefined || claim.claimRef === claimRef) && listed(state, claim)) rows.push(rowText(state, claim))
  }
  return { _tag: "Reply", status: 200, contentType: "application/json", body: `{"sandboxes":[${rows.join(",")}]}\n` }
}

/** Root `GET /v1/sandboxes/{id}`: the listing row, with the claim's token where the revision adds it. */
export const handleGet = (state: SimState, id: string, kind: AuthKind): SimResponse => {
  if (!state.revision.byIdRead) return notFoundPage
  const denied = requireRoot(state, kind)
  if (Option.isSome(denied)) return denied.value
  const claim = state.claims.get(id)
  if (claim === undefined) return errorReply(404, UNKNOWN_SANDBOX)
  const row = rowText(state, claim)
  return {
    _tag: "Reply",
    status: 200,
    contentType: "application/json",
    body: state.revision.byIdToken ? `${row.slice(0, -1)},"token":${JSON.stringify(claim.token)}}\n` : `${row}\n`
  }
}

/** The pools, sorted by key. */
export const poolViews = (state: SimState) =>
  [...state.pools.values()]
    .map((pool) => ({ ...pool.key, warm: pool.warm, refilling: pool.refilling, target: pool.target }))
    .sort((a, b) => poolKeyString(a) < poolKeyString(b) ? -1 : 1)

/** Root `GET /v1/info`: the pools, the claim counts, draining and the mesh peers. */
export const handleInfo = (state: SimState, kind: AuthKind): SimResponse => {
  const denied = requireRoot(state, kind)
  if (Option.isSome(denied)) return denied.value
  const all = [...state.claims.values()]
  return reply(200, {
    pools: poolViews(state).map((p) => ({
      key: { template: p.template, net: p.net, size: p.size },
      warm: p.warm,
      refilling: p.refilling,
      target: p.target,
      golden: true
    })),
    claimed: all.length,
    hibernated: all.filter((c) => c.hibernated).length,
    archived: all.filter((c) => c.archived).length,
    ...(state.draining ? { draining: true } : {}),
    ...(state.mesh === undefined ? {} : { peers: state.mesh.peers })
  })
}

/** One reaper pass: a claim past its deadline is destroyed, or archived when hibernated and the node archives. */
export const reapOnce = (state: SimState) =>
  Effect.flatMap(Clock.currentTimeNanos, (now) =>
    Effect.sync(() => {
      // deleting the claim being visited is safe in a Map's iteration: no copy of every claim each pass
      for (const claim of state.claims.values()) {
        if (claim.deadlineNanos === 0n || claim.deadlineNanos > now) continue
        if (!claim.archived && claim.hibernated && state.settings.archiveOnExpiry) {
          doArchive(state, claim, now)
        } else {
          state.claims.delete(claim.id)
          ended(state, claim, "reaped", now)
        }
      }
    }))
