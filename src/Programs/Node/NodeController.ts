/**
 * The virtual node's controller (CHK-08 — ensure the node; CHK-12 — heartbeats): registers the
 * Node, keeps its status fresh every 60 s and on a condition change, probes sandboxd for the
 * `SandboxdReachable` condition and renews the node Lease every 10 s; a deleted Node is re-created.
 * It never writes Ready=False: while the daemon's own health check fails, neither status nor Lease
 * is written, so the node goes Unknown as for any kubelet. After `probeGrace` failed probes the
 * Node gets the NoSchedule `sandboxd-unavailable` taint, removed by the next good probe: new Pods
 * go elsewhere, running ones stay. Shutdown leaves the Node and the Lease in place.
 */
import { Clock, Duration, Effect, Layer, Metric, Option, Queue, Ref, Schedule, Semaphore } from "effect"
import { encodeTaints, type Node } from "../../Schemas/Node.ts"
import { redactUrlUserinfo } from "../../Schemas/UrlRedaction.ts"
import { AppConfig } from "../../Services/Config.ts"
import { EventRecorder, type EventType } from "../../Services/EventRecorder.ts"
import { every } from "../../Services/Loops.ts"
import { type KubeError, KubeApi, KubeInvalid } from "../../Services/KubeApi.ts"
import { SandboxdClient } from "../../Services/SandboxdClient.ts"
import { nodeTainted, sandboxdUp } from "../../Services/Metrics.ts"
import {
  NodeController,
  NodeHealth,
  type NodeIdentity,
  type SandboxdReachability,
  type UnavailableReason
} from "../../Services/NodeController.ts"
import * as Backoff from "../PodController/Backoff.ts"
import { makeLeaseRenewer } from "./NodeLease.ts"
import {
  advanceConditions,
  buildNode,
  daemonVersion,
  desiredConditions,
  type NodeSnapshot,
  retaint,
  sandboxdTaintOn,
  statusPatch,
  type TrackedConditions,
  trackedFromServer
} from "./NodeObject.ts"
import { probeSandboxd } from "./SandboxdProbe.ts"

export interface NodeControllerOptions {
  readonly statusInterval: Duration.Duration
  readonly leaseRenewInterval: Duration.Duration
  /** From --sandboxd-probe-interval unless given. */
  readonly probeInterval: Duration.Duration
  readonly probeTimeout: Duration.Duration
  /** Failed probes in a row before the taint goes on; from --sandboxd-probe-grace unless given. */
  readonly probeGrace: number
  /** Our version, for nodeInfo.kubeletVersion. */
  readonly version: string
  /** Node's `process.arch`; mapped to Go's names. */
  readonly arch: string
  /** The waits between registration attempts while the apiserver is unavailable (forever). */
  readonly registrationRetry: Backoff.RetrySchedule
}

export const defaultNodeControllerOptions: Omit<NodeControllerOptions, "probeInterval" | "probeGrace"> = {
  statusInterval: Duration.seconds(60),
  leaseRenewInterval: Duration.seconds(10),
  probeTimeout: Duration.seconds(5),
  version: daemonVersion,
  arch: process.arch,
  registrationRetry: Backoff.schedule(Backoff.defaultBackoff)
}

/**
 * Registration happens while the layer is built: an unavailable apiserver is waited for (CHK-08),
 * any other non-404 apiserver error fails it.
 */
export const layer = (
  options: Partial<NodeControllerOptions> = {}
): Layer.Layer<NodeController, KubeError, AppConfig | KubeApi | SandboxdClient> =>
  Layer.effect(NodeController, make(options))

/** Our condition types, for reading transition times back from an existing Node. */
const ownConditionTypes = desiredConditions({ _tag: "NotProbed" }).map((c) => c.type)

const identityOf = (node: Node, fallbackName: string): NodeIdentity => ({
  name: node.metadata?.name ?? fallbackName,
  uid: node.metadata?.uid ?? ""
})

/** A taint write met a 409 (someone else wrote the Node): re-read and try again at once, up to 4 times. */
const taintConflictRetry = Schedule.recurs(4)

const make = Effect.fnUntraced(function*(given: Partial<NodeControllerOptions>) {
  const config = yield* AppConfig
  const options: NodeControllerOptions = {
    ...defaultNodeControllerOptions,
    probeInterval: config.sandboxdProbeInterval,
    probeGrace: config.sandboxdProbeGrace,
    ...given
  }
  const kube = yield* KubeApi
  const sandboxdClient = yield* SandboxdClient
  const health = yield* NodeHealth
  const recorder = yield* Effect.serviceOption(EventRecorder)
  const nodeName = config.nodeName

  const identity = yield* Ref.make(Option.none<NodeIdentity>())
  const tracked = yield* Ref.make<TrackedConditions>(new Map())
  const reachability = yield* Ref.make<SandboxdReachability>({ _tag: "NotProbed" })
  const failedInARow = yield* Ref.make(0)
  const answered = yield* Ref.make(false)
  // What the Node's taint is known to be: None until read, or after a failed write.
  const taintOnNode = yield* Ref.make(Option.none<string | undefined>())
  const nodeLock = yield* Semaphore.make(1)
  const wake = yield* Queue.sliding<void>(1)

  const annotate = Effect.annotateLogs({ node: nodeName })

  const nodeEvent = (type: EventType, reason: string, message: string) =>
    Effect.gen(function*() {
      const current = yield* Ref.get(identity)
      if (Option.isNone(current) || Option.isNone(recorder)) {
        return yield* Effect.logInfo("node event").pipe(Effect.annotateLogs({ type, reason, message }))
      }
      yield* recorder.value.record(
        { kind: "Node", namespace: "", name: current.value.name, uid: current.value.uid },
        type,
        reason,
        message
      )
    })

  /** The desired status now; a status change moves that condition's transition time. */
  const snapshot = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const desired = desiredConditions(yield* Ref.get(reachability))
    const conditions = yield* Ref.modify(tracked, (previous) => {
      const { next } = advanceConditions(previous, desired, now)
      return [next, next]
    })
    return { config, version: options.version, arch: options.arch, conditions, now } satisfies NodeSnapshot
  })

  const remember = (node: Node) => Ref.set(identity, Option.some(identityOf(node, nodeName)))

  /** The taint the Node should carry now: the reason once `probeGrace` probes in a row failed. */
  const wantedTaint = Effect.gen(function*() {
    const result = yield* Ref.get(reachability)
    const failures = yield* Ref.get(failedInARow)
    return result._tag === "Unavailable" && failures >= options.probeGrace ? result.reason : undefined
  })

  const noteTaint = (reason: string | undefined) =>
    Ref.set(taintOnNode, Option.some(reason)).pipe(Effect.andThen(Metric.update(nodeTainted, reason === undefined ? 0 : 1)))

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

  const lease = yield* makeLeaseRenewer({ currentNode, confirmNode })

  /**
   * Sets or clears the taint on the Node, changing no other taint: GET, then a strategic-merge
   * patch of the whole taint list guarded by the resourceVersion read, so a concurrent writer
   * makes it a 409 and it is read again. Returns the reason before and after.
   */
  const writeTaint = (reason: UnavailableReason | undefined) =>
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

  const syncTaint = Effect.gen(function*() {
    const wanted = yield* wantedTaint
    const known = yield* Ref.get(taintOnNode)
    if (Option.isSome(known) && known.value === wanted) return
    const { before, after } = yield* writeTaint(wanted).pipe(nodeLock.withPermits(1))
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

  const probeOnce = Effect.gen(function*() {
    const result = yield* probeSandboxd(options.probeTimeout).pipe(Effect.provideService(SandboxdClient, sandboxdClient))
    const previous = yield* Ref.getAndSet(reachability, result)
    yield* Ref.update(failedInARow, (n) => (result._tag === "Reachable" ? 0 : n + 1))
    if (result._tag === "Reachable" || (result._tag === "Unavailable" && result.reason === "Draining")) {
      yield* Ref.set(answered, true)
    }
    yield* Metric.update(sandboxdUp, result._tag === "Reachable" ? 1 : 0)
    // The first probe runs before registration, which writes its result.
    if (previous._tag === "NotProbed") return
    const changed = previous._tag !== result._tag ||
      (previous._tag === "Unavailable" && result._tag === "Unavailable" && previous.reason !== result.reason)
    if (changed) {
      if (result._tag === "Unavailable") {
        yield* Effect.logWarning("sandboxd cannot serve").pipe(Effect.annotateLogs({ reason: result.reason, detail: result.message }))
        yield* nodeEvent("Warning", `Sandboxd${result.reason}`, `sandboxd cannot serve (${result.reason}): ${result.message}`)
      } else if (previous._tag === "Unavailable") {
        yield* Effect.logInfo("sandboxd reachable again")
        yield* nodeEvent("Normal", "SandboxdReachable", "sandboxd is reachable again")
      }
      // The condition changed: write the status now rather than at the next 60 s tick (NC-11 — Node
      // status cadence).
      yield* Queue.offer(wake, undefined)
    }
    yield* syncTaint
  })

  const whenHealthy = (what: string, effect: Effect.Effect<void>) =>
    Effect.gen(function*() {
      if (yield* health.healthy) return yield* effect
      yield* Effect.logWarning(`daemon unhealthy: not writing the node ${what}`)
    })

  const logFailure = (what: string) => (e: KubeError) =>
    Effect.logWarning(`node ${what} failed`).pipe(Effect.annotateLogs({ error: e }))

  // ---- startup: probe, then register, then the loops --------------------------------------------

  yield* probeOnce
  // CHK-08: an apiserver that does not answer yet (a control plane restarting while this daemon
  // starts) is waited for on the daemon's backoff, however long it takes; giving up would exit,
  // and the kubelet's crash-loop backoff (up to 5 min) would then keep the node down long after
  // the apiserver is back. A refusal (403, an invalid Node) still stops the start at once.
  yield* ensureNode.pipe(
    Effect.tapError((e) =>
      e._tag === "KubeUnavailable"
        ? Effect.logWarning("node registration failed; retrying").pipe(Effect.annotateLogs({ error: e }))
        : Effect.void
    ),
    Effect.retry({ schedule: options.registrationRetry, while: (e) => e._tag === "KubeUnavailable" })
  )
  const initial = yield* Ref.get(reachability)
  if (initial._tag === "Unavailable") {
    yield* Effect.logWarning("sandboxd cannot serve at startup").pipe(
      Effect.annotateLogs({ reason: initial.reason, detail: initial.message, sandboxd: redactUrlUserinfo(config.sandboxdUrl) })
    )
    yield* nodeEvent("Warning", `Sandboxd${initial.reason}`, `sandboxd cannot serve (${initial.reason}): ${initial.message}`)
  }
  // A taint left by an earlier run is removed, or kept, or (with a grace of 1) put on now.
  yield* syncTaint

  const leaseLoop = every(options.leaseRenewInterval, whenHealthy("lease", lease.sync.pipe(Effect.catch(logFailure("lease renewal")))), {
    immediately: true
  })
  // Woken when a condition changed (NC-11): written then rather than at the next tick.
  const statusLoop = every(
    options.statusInterval,
    whenHealthy("status", patchStatus.pipe(nodeLock.withPermits(1), Effect.asVoid, Effect.catch(logFailure("status update")))),
    { wake: Queue.take(wake) }
  )
  const probeLoop = every(options.probeInterval, probeOnce)

  yield* Effect.forkScoped(leaseLoop.pipe(annotate))
  yield* Effect.forkScoped(statusLoop.pipe(annotate))
  yield* Effect.forkScoped(probeLoop.pipe(annotate))

  return NodeController.of({
    node: Ref.get(identity),
    sandboxd: Ref.get(reachability),
    sandboxdAnswered: Ref.get(answered),
    tainted: Effect.map(Ref.get(taintOnNode), Option.getOrUndefined),
    lease: lease.cached
  })
}, Effect.annotateLogs({ component: "node-controller" }))
