/**
 * DeletePod and delete authorization (DEL-1 — DeletePod; AUTH-1 — delete authorization order, to
 * AUTH-8 — what each verdict keeps). A Pod deletion is not VM authority: the verdict of the Pod's
 * owner decides. Preserve drops only the Pod entry, so the claim and its release token stay for a
 * same-name replacement to adopt.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Effect, Option } from "effect"
import { DeleteVerdict } from "../../Schemas/DeleteVerdict.ts"
import type { PreservedOwner } from "../../Schemas/Claims.ts"
import { controllerRefsOf } from "../Authorization/OwnerGvr.ts"
import { PreserveNotPersisted } from "../../Services/ProviderErrors.ts"
import { dropLostRow } from "./LostRows.ts"
import { saveState } from "./SaveState.ts"
import { settleDoubt } from "./PreClaim.ts"
import { type PodKey, podKeyOfPod } from "../../Schemas/Ids.ts"
import { ClaimsStore } from "../../Services/ClaimsStore.ts"
import { ClaimTable, type ClaimTableState, podUidIsCurrent } from "../../Services/ClaimTable.ts"
import { EventRecorder, involvedPod } from "../../Services/EventRecorder.ts"
import * as Metrics from "../../Services/Metrics.ts"
import { OwnerResolver } from "../../Services/OwnerResolver.ts"
import { type DeleteOutcome, ReleaseFailed } from "../../Services/ProviderErrors.ts"
import { SandboxdClient } from "../../Services/SandboxdClient.ts"

/**
 * The controller reference of `pod` (AUTH-2 — the controller reference), as a row keeps it (AUTH-9
 * — a preserved VM is released once its owner goes); none for a bare Pod or several controllers.
 */
const preservedOwnerOf = (pod: V1Pod): PreservedOwner | undefined => {
  const refs = controllerRefsOf(pod)
  const ref = refs.length === 1 ? refs[0] : undefined
  return ref === undefined ? undefined : { apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, uid: ref.uid }
}

const sameOwner = (a: PreservedOwner | undefined, b: PreservedOwner): boolean =>
  a !== undefined && a.apiVersion === b.apiVersion && a.kind === b.kind && a.name === b.name && a.uid === b.uid

const withoutPod = (state: ClaimTableState, key: PodKey): ClaimTableState =>
  state.pods.has(key) ? { ...state, pods: state.pods.without(key) } : state

/**
 * AUTH-9: the row keeps the owner it now waits on, on disk before the Pod goes: once the Pod
 * object is removed, the file is the only record of that owner, and a restart reads nothing
 * else. A write that fails undoes the owner in memory and fails the delete, so the Pod object
 * stays (the final delete waits) and the retry writes again. Nothing to write for no owner (a
 * bare Pod, several controllers) or the owner the row already names.
 */
const rememberOwner = Effect.fnUntraced(function*(key: PodKey, claimId: string, owner: PreservedOwner | undefined) {
  if (owner === undefined) return
  const table = yield* ClaimTable
  const previous = yield* table.modify((state) => {
    const row = state.rows.get(key)
    if (row === undefined || row.record.id !== claimId || sameOwner(row.record.owner, owner)) return [undefined, state] as const
    const rows = state.rows.with(key, { ...row, record: { ...row.record, owner } })
    return [{ owner: row.record.owner }, { ...state, rows }] as const
  })
  if (previous === undefined) return
  yield* (yield* ClaimsStore).commit(Option.none()).pipe(
    Effect.catchTag("ClaimsWriteError", (cause) =>
      table.modify((state) => {
        const row = state.rows.get(key)
        if (row === undefined || row.record.id !== claimId || !sameOwner(row.record.owner, owner)) return [undefined, state] as const
        return [undefined, { ...state, rows: state.rows.with(key, { ...row, record: { ...row.record, owner: previous.owner } }) }] as const
      }).pipe(Effect.andThen(Effect.fail(
        new PreserveNotPersisted({
          pod: key,
          claim: claimId,
          cause,
          message: `pod ${key}: whom sandbox ${claimId} is preserved for could not be written (${cause.message}); the Pod is kept until it is`
        })
      ))))
  )
})

export const deletePod = Effect.fn("Provider.deletePod")(function*(pod: V1Pod) {
  const table = yield* ClaimTable
  const owners = yield* OwnerResolver
  const sandboxd = yield* SandboxdClient
  const events = yield* EventRecorder
  const key = podKeyOfPod(pod)
  const uid = pod.metadata?.uid ?? ""

  // 1. ST-4 — stale-UID guard: a previous generation's request touches nothing.
  if (!podUidIsCurrent(yield* table.state, key, uid)) {
    yield* Effect.logInfo("ignoring stale DeletePod for previous pod generation").pipe(Effect.annotateLogs({ uid }))
    return { _tag: "StaleUid" } satisfies DeleteOutcome
  }
  // 1b. A key in doubt (a claim that may have made a VM no row records, from before a crash or a
  // lost reply) is resolved first: its sandbox adopted, so the owner's verdict below releases or
  // keeps it like any held claim, or shown absent. Until then the Pod is not let go.
  yield* settleDoubt(key, "the Pod is kept until it is")
  // 2–3. The held lookup: tentative and quarantined claims still hold live microVMs.
  const held = yield* table.held(key)
  if (Option.isSome(held) && held.value.state._tag === "Lost") {
    // VER-7 — a lost sandbox's row outlives restarts until its Pod is settled: its VM is confirmed
    // gone, so nothing is asked or released; the row has nothing left to guard once the key's Pod
    // is deleted.
    yield* table.modify((state) => [undefined, withoutPod(state, key)] as const)
    yield* dropLostRow(key)
    return { _tag: "LostDropped" } satisfies DeleteOutcome
  }
  if (Option.isNone(held)) {
    yield* table.modify((state) => [undefined, withoutPod(state, key)] as const)
    return { _tag: "NoClaim" } satisfies DeleteOutcome
  }
  const claim = held.value.record
  const claimId = claim.id
  // 4. The owner decides.
  const verdict = yield* owners.verdictFor(pod)
  const annotations = { claim: claimId, verdict: `${verdict._tag}(${verdict.reason})`, reason: verdict.detail }
  yield* Metrics.count(Metrics.deleteVerdicts, { verdict: verdict._tag, reason: verdict.reason })

  // The match is exhaustive: a new verdict kind cannot be forgotten here.
  return yield* DeleteVerdict.$match(verdict, {
    Preserve: () =>
      Effect.gen(function*() {
        // 5. Only the Pod entry goes; claim, token and state marker stay. AUTH-9: the row keeps
        // the owner it now waits on (on disk first), so that owner is asked again while no Pod holds it.
        yield* Effect.logInfo("preserving sandbox: pod deletion is not VM authority").pipe(Effect.annotateLogs(annotations))
        yield* rememberOwner(key, claimId, preservedOwnerOf(pod))
        yield* table.modify((state) => [undefined, withoutPod(state, key)] as const)
        yield* events.record(involvedPod(pod), "Normal", "Preserved", `sandbox ${claimId} preserved: ${verdict.detail}`)
        return { _tag: "Preserved", verdict } satisfies DeleteOutcome
      }),
    Release: () =>
      Effect.gen(function*() {
        // 6. Release with the claim's own token.
        yield* Effect.logInfo("release authorized").pipe(Effect.annotateLogs(annotations))
        const outcome = yield* sandboxd.release(claimId, claim.token).pipe(
          Effect.mapError((cause) =>
            new ReleaseFailed({
              pod: key,
              claim: claimId,
              cause,
              message: `release sandbox ${claimId} for ${key}: ${cause._tag}: ${cause.message}`
            })
          ),
          Effect.tapError((error) =>
            Metrics.count(Metrics.releases, { result: "failed" }).pipe(
              Effect.andThen(Effect.logWarning("release failed; claim kept for the retry")),
              Effect.annotateLogs({ ...annotations, error }),
              Effect.andThen(events.record(involvedPod(pod), "Warning", "ReleaseFailed", error.message))
            )
          )
        )
        yield* Metrics.count(Metrics.releases, { result: outcome === "AlreadyGone" ? "already_gone" : "released" })
        if (outcome === "AlreadyGone") {
          yield* Effect.logInfo("sandbox already gone at release").pipe(Effect.annotateLogs({ claim: claimId }))
        }
        // 7. Converge: the row goes (only if it still carries this claim), then a log-only save.
        yield* table.modify((state) => {
          const row = state.rows.get(key)
          const rows = row !== undefined && row.record.id === claimId ? state.rows.without(key) : state.rows
          return [undefined, withoutPod({ ...state, rows }, key)] as const
        })
        // DEL-2 — a failed save after release: the released row may stay on disk; the next start
        // quarantines and then drops it.
        yield* saveState
        yield* events.record(
          involvedPod(pod),
          "Normal",
          "Released",
          `sandbox ${claimId} released (${verdict.detail})${outcome === "AlreadyGone" ? "; it was already gone" : ""}`
        )
        return { _tag: "Released", verdict, alreadyGone: outcome === "AlreadyGone" } satisfies DeleteOutcome
      })
  })
}, (effect, pod) => Effect.annotateLogs(effect, { pod: `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""}` }))
