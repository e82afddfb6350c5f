/**
 * The virtual node's controller (CHK-08 — ensure the node; CHK-12 — heartbeats): registers the
 * Node, keeps its status fresh every 60 s and on a condition change, probes sandboxd for the
 * `SandboxdReachable` condition and renews the node Lease every 10 s; a deleted Node is re-created.
 * It never writes Ready=False: while the daemon's own health check fails, neither status nor Lease
 * is written, so the node goes Unknown as for any kubelet. After `probeGrace` failed probes the
 * Node gets the NoSchedule `sandboxd-unavailable` taint, removed by the next good probe: new Pods
 * go elsewhere, running ones stay. Shutdown leaves the Node and the Lease in place.
 */
import { Clock, Duration, Effect, Layer, Metric, Option, Queue, Ref, Semaphore } from "effect"
import { redactUrlUserinfo } from "../../Schemas/UrlRedaction.ts"
import { AppConfig } from "../../Services/Config.ts"
import { EventRecorder, type EventType } from "../../Services/EventRecorder.ts"
import { every } from "../../Services/Loops.ts"
import { type KubeError, KubeApi } from "../../Services/KubeApi.ts"
import { SandboxdClient } from "../../Services/SandboxdClient.ts"
import { sandboxdUp } from "../../Services/Metrics.ts"
import { NodeController, NodeHealth, type NodeIdentity, type SandboxdReachability } from "../../Services/NodeController.ts"
import * as Backoff from "../PodController/Backoff.ts"
import { makeLeaseRenewer } from "./NodeLease.ts"
import { advanceConditions, daemonVersion, desiredConditions, type NodeSnapshot, type TrackedConditions } from "./NodeObject.ts"
import { makeNodeRegistration } from "./NodeRegistration.ts"
import { makeNodeTaint } from "./NodeTaint.ts"
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

/** An Event on the Node once it is known (a log line before, or without a recorder). */
const nodeEventOf = (
  identity: Ref.Ref<Option.Option<NodeIdentity>>,
  recorder: Option.Option<EventRecorder["Service"]>
) =>
(type: EventType, reason: string, message: string) =>
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

  const nodeEvent = nodeEventOf(identity, recorder)

  const { noteTaint, syncTaint, wantedTaint } = makeNodeTaint(
    kube,
    nodeName,
    options.probeGrace,
    { reachability, failedInARow, taintOnNode, nodeLock },
    nodeEvent
  )

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

  const { confirmNode, currentNode, ensureNode, patchStatus } = makeNodeRegistration({
    kube,
    nodeName,
    version: options.version,
    probeGrace: options.probeGrace,
    state: { identity, tracked, reachability, failedInARow, nodeLock },
    snapshot,
    wantedTaint,
    noteTaint,
    nodeEvent
  })

  const lease = yield* makeLeaseRenewer({ currentNode, confirmNode })

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
