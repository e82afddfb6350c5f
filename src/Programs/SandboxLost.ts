/**
 * A Pod whose sandbox sandboxd confirmed gone (see `Absence.ts`) before its lease ended: it goes
 * Failed/SandboxLost naming the id, with a Warning Event, its row is dropped (the token opens
 * nothing now, and a replacement Pod must not adopt a dead VM), and its generation is marked lost
 * so no create ever claims for it again. A Pod is never left Running without a durable row.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Effect, Metric, Option } from "effect"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import type { PodKey } from "../Schemas/Ids.ts"
import { ClaimDoubts } from "../Services/ClaimDoubts.ts"
import { ClaimsStore } from "../Services/ClaimsStore.ts"
import { ClaimTable } from "../Services/ClaimTable.ts"
import { EventRecorder, involvedPod } from "../Services/EventRecorder.ts"
import { ProviderEvents } from "../Services/Provider.ts"
import { sandboxesLost } from "../Services/Metrics.ts"
import { sandboxLostPod } from "./Provider/Status.ts"

/**
 * Declares `claim` of `key` lost. `pod` is the tracked Pod when there is one; without it the
 * row's Pod UID is the generation marked lost (its next create fails with SandboxLost).
 */
export const declareSandboxLost = Effect.fnUntraced(function*(key: PodKey, claim: ClaimRecord, pod: Option.Option<V1Pod>) {
  const doubts = yield* ClaimDoubts
  const table = yield* ClaimTable
  const events = yield* ProviderEvents
  const recorder = yield* Effect.serviceOption(EventRecorder)
  const podUid = Option.match(pod, { onNone: () => claim.podUID, onSome: (p) => p.metadata?.uid ?? "" })
  yield* doubts.markLost({ key, podUid, id: claim.id })
  if (Option.isSome(pod)) {
    yield* events.pushStatus(sandboxLostPod(pod.value, claim.id, claim.claimedAt))
    if (Option.isSome(recorder)) {
      yield* recorder.value.record(
        involvedPod(pod.value),
        "Warning",
        "SandboxLost",
        `sandbox ${claim.id} is gone (sandboxd confirmed it); the pod is not given another`
      )
    }
  }
  if (yield* table.dropClaim(key, claim.id)) {
    // A write that fails only leaves a dead token on disk: the next load confirms it gone again.
    yield* (yield* ClaimsStore).commit(Option.none()).pipe(
      Effect.catchTag("ClaimsWriteError", (err) =>
        Effect.logError("persist claims state").pipe(Effect.annotateLogs({ err: err.message, path: err.path })))
    )
  }
  yield* Metric.update(sandboxesLost, 1)
  yield* Effect.logWarning("sandbox confirmed gone; pod declared SandboxLost").pipe(
    Effect.annotateLogs({ pod: key, claim: claim.id })
  )
})
