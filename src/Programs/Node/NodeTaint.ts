/**
 * The Node's NoSchedule `sandboxd-unavailable` taint: wanted once `probeGrace` probes in a row
 * failed, written without changing any other taint, and an Event when it goes on or comes off.
 */
import { Effect, Metric, Option, Ref, Schedule, type Semaphore } from "effect"
import { encodeTaints } from "../../Schemas/Node.ts"
import type { EventType } from "../../Services/EventRecorder.ts"
import { type KubeApi, type KubeError, KubeInvalid } from "../../Services/KubeApi.ts"
import { nodeTainted } from "../../Services/Metrics.ts"
import type { SandboxdReachability, UnavailableReason } from "../../Services/NodeController.ts"
import { retaint, sandboxdTaintOn } from "./NodeObject.ts"

/** A taint write met a 409 (someone else wrote the Node): re-read and try again at once, up to 4 times. */
const taintConflictRetry = Schedule.recurs(4)

/**
 * Sets or clears the taint on the Node, changing no other taint: GET, then a strategic-merge
 * patch of the whole taint list guarded by the resourceVersion read, so a concurrent writer
 * makes it a 409 and it is read again. Returns the reason before and after.
 */
const writeTaint = (
  kube: Pick<KubeApi["Service"], "getNode" | "patchNode">,
  nodeName: string,
  reason: UnavailableReason | undefined
) =>
  Effect.gen(function*() {
    const node = yield* kube.getNode(nodeName)
    const before = sandboxdTaintOn(node)
    const taints = retaint(node.spec?.taints ?? [], reason)
    if (taints === undefined) return { before, after: before }
    // Every taint as read (a NoExecute taint's timeAdded included): the patch replaces the list.
    const encoded = encodeTaints(taints)
    if (Option.isNone(encoded)) {
      return yield* new KubeInvalid({ operation: "patchNode", message: "node taints that cannot be encoded" })
    }
    const patched = yield* kube.patchNode(nodeName, {
      metadata: { resourceVersion: node.metadata?.resourceVersion },
      spec: { taints: encoded.value }
    })
    return { before, after: sandboxdTaintOn(patched) }
  }).pipe(Effect.retry({ schedule: taintConflictRetry, while: (e) => e._tag === "KubeConflict" }))

/** What the taint is decided from and written under (the node controller's state). */
export interface NodeTaintState {
  readonly reachability: Ref.Ref<SandboxdReachability>
  readonly failedInARow: Ref.Ref<number>
  /** What the Node's taint is known to be: None until read, or after a failed write. */
  readonly taintOnNode: Ref.Ref<Option.Option<string | undefined>>
  /** Held by every writer of the Node. */
  readonly nodeLock: Semaphore.Semaphore
}

/** The taint's parts the node controller uses: the taint wanted now, noting what the Node carries, and the sync. */
export const makeNodeTaint = (
  kube: Pick<KubeApi["Service"], "getNode" | "patchNode">,
  nodeName: string,
  probeGrace: number,
  state: NodeTaintState,
  nodeEvent: (type: EventType, reason: string, message: string) => Effect.Effect<void>
) => {
  const { failedInARow, nodeLock, reachability, taintOnNode } = state
  /** The taint the Node should carry now: the reason once `probeGrace` probes in a row failed. */
  const wantedTaint = Effect.gen(function*() {
    const result = yield* Ref.get(reachability)
    const failures = yield* Ref.get(failedInARow)
    return result._tag === "Unavailable" && failures >= probeGrace ? result.reason : undefined
  })

  const noteTaint = (reason: string | undefined) =>
    Ref.set(taintOnNode, Option.some(reason)).pipe(Effect.andThen(Metric.update(nodeTainted, reason === undefined ? 0 : 1)))

  const syncTaint = Effect.gen(function*() {
    const wanted = yield* wantedTaint
    const known = yield* Ref.get(taintOnNode)
    if (Option.isSome(known) && known.value === wanted) return
    const { before, after } = yield* writeTaint(kube, nodeName, wanted).pipe(nodeLock.withPermits(1))
    yield* noteTaint(after)
    if (before === after) return
    if (after === undefined) {
      yield* Effect.logInfo("sandboxd taint removed")
      yield* nodeEvent("Normal", "SandboxdTaintRemoved", "sandboxd answers again: new Pods may be placed on this node")
    } else {
      yield* Effect.logWarning("node tainted NoSchedule: sandboxd cannot serve").pipe(Effect.annotateLogs({ reason: after }))
      yield* nodeEvent(
        "Warning",
        "SandboxdTainted",
        `sandboxd cannot serve (${after}): no new Pods are placed on this node; running Pods stay`
      )
    }
  }).pipe(
    Effect.catch((e: KubeError) =>
      Ref.set(taintOnNode, Option.none()).pipe(
        Effect.andThen(Effect.logWarning("node taint update failed; retried after the next probe")),
        Effect.annotateLogs({ error: e })
      )
    )
  )

  return { wantedTaint, noteTaint, syncTaint }
}
