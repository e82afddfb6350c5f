/**
 * The Node registered and kept (CHK-08 — ensure the node): created with the taint wanted now, or
 * patched when it exists, its conditions' transition times read back from it; a Node deleted while
 * the daemon runs is registered again.
 */
import { Effect, Option, Ref, type Semaphore } from "effect"
import type { Node } from "../../Schemas/Node.ts"
import type { EventType } from "../../Services/EventRecorder.ts"
import type { KubeApi, KubeError } from "../../Services/KubeApi.ts"
import type { NodeIdentity, SandboxdReachability, UnavailableReason } from "../../Services/NodeController.ts"
import {
  buildNode,
  desiredConditions,
  type NodeSnapshot,
  sandboxdTaintOn,
  statusPatch,
  type TrackedConditions,
  trackedFromServer
} from "./NodeObject.ts"

/** Our condition types, for reading transition times back from an existing Node. */
const ownConditionTypes = desiredConditions({ _tag: "NotProbed" }).map((c) => c.type)

const identityOf = (node: Node, fallbackName: string): NodeIdentity => ({
  name: node.metadata?.name ?? fallbackName,
  uid: node.metadata?.uid ?? ""
})

/** The node controller's state the registration reads and writes. */
export interface NodeRegistrationState {
  readonly identity: Ref.Ref<Option.Option<NodeIdentity>>
  readonly tracked: Ref.Ref<TrackedConditions>
  readonly reachability: Ref.Ref<SandboxdReachability>
  readonly failedInARow: Ref.Ref<number>
  /** Held by every writer of the Node. */
  readonly nodeLock: Semaphore.Semaphore
}

export interface NodeRegistrationDeps {
  readonly kube: Pick<KubeApi["Service"], "getNode" | "createNode" | "patchNodeStatus">
  readonly nodeName: string
  readonly version: string
  readonly probeGrace: number
  readonly state: NodeRegistrationState
  /** The desired status now. */
  readonly snapshot: Effect.Effect<NodeSnapshot>
  readonly wantedTaint: Effect.Effect<UnavailableReason | undefined>
  readonly noteTaint: (reason: string | undefined) => Effect.Effect<void>
  readonly nodeEvent: (type: EventType, reason: string, message: string) => Effect.Effect<void>
}

/** The Node's writers: the status patch, the registration, and the Node's identity for the lease. */
export const makeNodeRegistration = (deps: NodeRegistrationDeps) => {
  const { kube, nodeEvent, nodeName, noteTaint, snapshot, wantedTaint } = deps
  const { failedInARow, identity, nodeLock, reachability, tracked } = deps.state
  const options = { version: deps.version, probeGrace: deps.probeGrace }
  const remember = (node: Node) => Ref.set(identity, Option.some(identityOf(node, nodeName)))

  // The writers below run under nodeLock (taken by their public callers only).

  const patchExisting = Effect.gen(function*() {
    const patched = yield* kube.patchNodeStatus(nodeName, statusPatch(yield* snapshot))
    yield* remember(patched)
    return identityOf(patched, nodeName)
  })

  const createNode: Effect.Effect<NodeIdentity, KubeError> = Effect.gen(function*() {
    const unavailable = yield* wantedTaint
    const created = yield* kube.createNode(buildNode(yield* snapshot, unavailable)).pipe(
      Effect.catchTag("KubeConflict", () => Effect.succeed(undefined))
    )
    // Someone created it between our GET and POST: patch theirs instead (once; a 404 now fails).
    if (created === undefined) return yield* patchExisting
    yield* remember(created)
    yield* noteTaint(sandboxdTaintOn(created))
    const registered = identityOf(created, nodeName)
    yield* Effect.logInfo("node registered").pipe(Effect.annotateLogs({ uid: registered.uid }))
    yield* nodeEvent("Normal", "Registered", `Node ${nodeName} registered by vk-sandbox ${options.version}`)
    return registered
  })

  /**
   * The status patch; a Node deleted while we run is registered again (unlike the Go library;
   * PIT-19 — a deleted Node).
   */
  const patchStatus: Effect.Effect<NodeIdentity, KubeError> = patchExisting.pipe(
    Effect.catchTag("KubeNotFound", () =>
      Effect.logWarning("node is gone; registering it again").pipe(Effect.andThen(createNode)))
  )

  /** GET; present → keep its transition times and patch; missing → POST the whole Node. */
  const ensureNode = Effect.gen(function*() {
    const existing = yield* kube.getNode(nodeName).pipe(
      Effect.map(Option.some),
      Effect.catchTag("KubeNotFound", () => Effect.succeed(Option.none<Node>()))
    )
    if (Option.isNone(existing)) return yield* createNode
    yield* Ref.set(tracked, trackedFromServer(existing.value, ownConditionTypes))
    const leftover = sandboxdTaintOn(existing.value)
    yield* noteTaint(leftover)
    // Tainted by an earlier run and sandboxd still failing: keep the taint rather than lift it
    // for the length of a new grace.
    const first = yield* Ref.get(reachability)
    if (leftover !== undefined && first._tag === "Unavailable") {
      yield* Ref.update(failedInARow, (n) => Math.max(n, options.probeGrace))
    }
    return yield* patchStatus
  }).pipe(nodeLock.withPermits(1))

  /** For the lease when it is missing: is the Node still there (and with which UID)? */
  const confirmNode = Effect.gen(function*() {
    const existing = yield* kube.getNode(nodeName).pipe(
      Effect.map(Option.some),
      Effect.catchTag("KubeNotFound", () => Effect.succeed(Option.none<Node>()))
    )
    if (Option.isNone(existing)) {
      yield* Effect.logWarning("node is gone; registering it again")
      return yield* createNode
    }
    yield* remember(existing.value)
    return identityOf(existing.value, nodeName)
  }).pipe(nodeLock.withPermits(1))

  const currentNode = Effect.gen(function*() {
    const current = yield* Ref.get(identity)
    return Option.isSome(current) ? current.value : yield* confirmNode
  })

  return { patchStatus, ensureNode, confirmNode, currentNode }
}
