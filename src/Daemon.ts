/**
 * The daemon: the layer graph composed once, in the start order (CFG-11 — start order: anything
 * that can refuse to start does so before the node registers), and run until SIGTERM/SIGINT.
 * Clients, then the claims table and store (lock held), the provider, the two first reads asked
 * for, the claims verified and proven writable, the kubelet port, the node, the pod controller,
 * the loops and servers. Shutdown runs in reverse, every finalizer time-boxed under a watchdog
 * (docs/architecture.md).
 */
import { Context, Deferred, Duration, Effect, Fiber, Layer, Option, References, Scheduler } from "effect"
import { StartupError } from "./Cli/Errors.ts"
import { applyDaemonHeapFlags, applyOnceStarted } from "./Cli/HeapFlags.ts"
import * as ClaimsStoreFile from "./Layers/ClaimsStoreFile.ts"
import { ClaimTableRefLayer } from "./Layers/ClaimTableRef.ts"
import * as EventRecorderKube from "./Layers/EventRecorderKube.ts"
import * as FailpointDecorators from "./Layers/FailpointDecorators.ts"
import * as KubeApiClientNode from "./Layers/KubeApiClientNode.ts"
import * as OwnerResolverKube from "./Programs/Authorization/OwnerResolverKube.ts"
import { ProviderEventsPubSubLayer } from "./Layers/ProviderEventsPubSub.ts"
import * as ProviderLive from "./Programs/Provider/ProviderLive.ts"
import * as SandboxdClientHttp from "./Layers/SandboxdClientHttp.ts"
import * as SandboxdTokenFile from "./Layers/SandboxdTokenFile.ts"
import * as DependencyRecoveryPubSub from "./Layers/DependencyRecoveryPubSub.ts"
import { type AppConfigShape, type ListenAddr } from "./Schemas/Config.ts"
import { redactUrlUserinfo } from "./Schemas/UrlRedaction.ts"
import { AppConfig } from "./Services/Config.ts"
import { ClaimsStore } from "./Services/ClaimsStore.ts"
import { ClaimTable } from "./Services/ClaimTable.ts"
import { ClaimDoubts } from "./Services/ClaimDoubts.ts"
import { EventRecorder } from "./Services/EventRecorder.ts"
import { Failpoints, type FailpointsShape, inertFailpoints } from "./Services/Failpoints.ts"
import { TuningOff } from "./Services/Tuning.ts"
import { ClaimsStartup, EarlyPodList, RunningPodController } from "./Services/Daemon.ts"
import { KubeApi, type KubeError, type PodList } from "./Services/KubeApi.ts"
import { DaemonLoops } from "./Services/Loops.ts"
import { PodLifecycle } from "./Services/PodLifecycle.ts"
import { SandboxdClient } from "./Services/SandboxdClient.ts"
import { KubeletPods, KubeletServer } from "./Services/KubeletServer.ts"
import { NodeController, NodeHealth } from "./Services/NodeController.ts"
import * as KubeletServerLive from "./Programs/Kubelet/KubeletServer.ts"
import * as NodeControllerLive from "./Programs/Node/NodeController.ts"
import { LoopsLayer } from "./Programs/Loops.ts"
import { daemonVersion } from "./Programs/Node/NodeObject.ts"
import * as HealthServer from "./Programs/Observability/HealthServer.ts"
import * as Logging from "./Programs/Observability/Logging.ts"
import * as ProcessMetrics from "./Programs/Observability/ProcessMetrics.ts"
import { BuildInfo } from "./Services/BuildInfo.ts"
import { instrumentKube, instrumentSandboxd } from "./Programs/Observability/Instrument.ts"
import * as Metrics from "./Services/Metrics.ts"
import { commitDuration } from "./Services/Metrics.ts"
import * as Sampled from "./Programs/Observability/Sampled.ts"
import * as PodController from "./Programs/PodController/PodController.ts"
import { startClaimsWith } from "./Programs/Provider/Startup.ts"
import { listSandboxesNow } from "./Programs/ClaimVerifier.ts"
import * as EventLoopScheduler from "./Programs/EventLoopScheduler.ts"



/** The daemon's logger: one flat JSON (or text) shape for every line (`Programs/Observability/Logging.ts`). */
export const loggingLayer = Logging.layer

// ---- the feature layers, bottom-up -----------------------------------------------------------

/** Failpoints armed by `VK_SANDBOX_FAILPOINTS`, as decorators of the services below; none when unarmed. */
type Decorators = FailpointDecorators.FailpointDecorators | undefined

const WireLayer = (decorators: Decorators) => Layer.mergeAll(
  Layer.effect(
    SandboxdClient,
    Effect.map(SandboxdClient.use(Effect.succeed), (client) => decorators?.sandboxd(instrumentSandboxd(client)) ?? instrumentSandboxd(client))
  ).pipe(Layer.provide(SandboxdClientHttp.layer)),
  Layer.effect(
    KubeApi,
    Effect.map(KubeApi.use(Effect.succeed), (kube) => decorators?.kube(instrumentKube(kube)) ?? instrumentKube(kube))
  ).pipe(Layer.provide(KubeApiClientNode.layer))
).pipe(
  // The token file is followed while the daemon runs (rotation without a restart); the pod
  // controller hears from it when sandboxd accepts the token again, and when sandboxd answers
  // again after failing (Q-08 — a dependency that comes back wakes the keys waiting on it).
  Layer.provideMerge(Layer.mergeAll(SandboxdTokenFile.layer, DependencyRecoveryPubSub.layer))
)

/**
 * The node's first pod list, asked for now and only held here: on a restart with 10,000 Pods the
 * apiserver's answer (tens of MB) comes while the claims load and verify, and the node registers,
 * instead of being waited for after them.
 */
const askForPodList = Effect.gen(function*() {
  const config = yield* AppConfig
  const kube = yield* KubeApi
  // Handed over once and then let go: kept here, the list would pin every Pod it holds (all
  // 10,000 after a restart) long after the watch replaced them.
  const held: { answer: Deferred.Deferred<PodList, KubeError> | undefined } = { answer: yield* Deferred.make<PodList, KubeError>() }
  yield* kube.listPods(config.nodeName).pipe(
    Effect.exit,
    Effect.flatMap((exit) => (held.answer === undefined ? Effect.void : Deferred.done(held.answer, exit))),
    // Sent now, before whatever this fiber does next (the claims load), not on a later turn.
    Effect.forkScoped({ startImmediately: true })
  )
  return EarlyPodList.of({
    list: Effect.suspend(() => {
      const answer = held.answer
      if (answer === undefined) return kube.listPods(config.nodeName)
      return Deferred.await(answer).pipe(Effect.ensuring(Effect.sync(() => void (held.answer = undefined))))
    })
  })
})

/** The durable store, its commits timed as the caller sees them (queueing in the group commit included). */
const ClaimsLayer = (decorators: Decorators) => Layer.effect(
  ClaimsStore,
  Effect.map(ClaimsStore.use(Effect.succeed), (store) => {
    const timed = ClaimsStore.of({
      ...store,
      commit: (key) => store.commit(key).pipe(Effect.trackDuration(commitDuration, (d) => Duration.toMillis(d) / 1000))
    })
    return decorators?.store(timed) ?? timed
  })
).pipe(Layer.provide(
  decorators === undefined ? ClaimsStoreFile.layer : ClaimsStoreFile.layerWith({ ops: decorators.fileOps(ClaimsStoreFile.nodeClaimsFileOps) })
))

const ProviderLayer = ProviderLive.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(ProviderEventsPubSubLayer, OwnerResolverKube.layer, EventRecorderKube.layer()))
)


/**
 * The claims (PER-8 — loading the file; VER-1 — quarantine at startup; PER-9 — the mandatory
 * startup write): loaded, quarantined, verified and written before anything else starts; the store
 * below already holds the state lock, and nothing above this is built (no claim, no release) until
 * it is done. Two reads are asked for first, in this order (CFG-11), and answered while the claims
 * file is read and decoded: sandboxd's listing, which the verification waits for and everything
 * else waits for the verification; then the node's first pod list, which only the pod controller
 * reads, at the end. A server answering both one after the other (the bench's simulators share one
 * event loop) then answers the listing first.
 */
export const startupLayer = Layer.effectContext(
  Effect.gen(function*() {
    const listing = yield* Effect.forkScoped(listSandboxesNow, { startImmediately: true })
    const podList = yield* askForPodList
    // Let go once startup is done: interrupted if no row needed it.
    const summary = yield* startClaimsWith(Fiber.join(listing)).pipe(Effect.ensuring(Fiber.interrupt(listing)))
    return Context.make(ClaimsStartup, ClaimsStartup.of(summary)).pipe(Context.add(EarlyPodList, podList))
  })
)

/** A Node event when claims start quarantined (sandboxd could not vouch for them yet). */
const QuarantineEventLayer = Layer.effectDiscard(
  Effect.gen(function*() {
    const summary = yield* ClaimsStartup
    const node = yield* NodeController
    const recorder = yield* EventRecorder
    const identity = yield* node.node
    if (summary.quarantined === 0 || Option.isNone(identity)) return
    yield* recorder.record(
      { kind: "Node", namespace: "", name: identity.value.name, uid: identity.value.uid },
      "Warning",
      "ClaimsQuarantined",
      `${summary.quarantined} of ${summary.loaded} claims loaded from disk are quarantined until a sandboxd listing confirms them`
    )
  })
)

const KubeletLayer = KubeletServerLive.layer().pipe(
  Layer.provide(Layer.effect(KubeletPods, Effect.map(PodLifecycle.use(Effect.succeed), (p) => KubeletPods.of({ getPods: p.getPods }))))
)

const PodControllerLayer = Layer.effect(
  RunningPodController,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const early = yield* EarlyPodList
    const handle = yield* PodController.make({
      ...PodController.defaultOptions,
      silentWatchCheck: config.watchCheckInterval,
      firstList: early.list
    })
    // Registered after the controller's fibers, so it runs before they are interrupted.
    yield* Effect.addFinalizer(() =>
      Effect.logInfo("shutting down: draining in-flight reconciles").pipe(
        Effect.andThen(handle.drain(config.shutdownTimeout)),
        Effect.timeout(Duration.sum(config.shutdownTimeout, Duration.seconds(1))),
        Effect.ignore
      )
    )
    return RunningPodController.of(handle)
  })
)

const HealthLayer = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const loops = yield* DaemonLoops
    const pods = yield* RunningPodController
    const node = yield* NodeController
    const table = yield* ClaimTable
    const doubts = yield* ClaimDoubts
    const build = yield* BuildInfo
    const sampleProcess = yield* ProcessMetrics.make
    return HealthServer.layer(config.metricsAddr, {
      extraMetrics: Effect.map(sampleProcess, (sample) => ProcessMetrics.render(sample, build)),
      // HZ-1 — a stopped part fails liveness: the background loops and the pod controller's parts
      // that have stopped.
      unhealthy: Effect.map(Effect.all([loops.stopped, pods.stopped]), ([a, b]) => [...a, ...b]),
      notReady: Effect.gen(function*() {
        const missing: Array<string> = []
        if (Option.isNone(yield* node.node)) missing.push("node not registered")
        if (!(yield* pods.synced)) missing.push("pod watch not synced")
        // Since this process started, not "now": a later sandboxd outage shows as the Node's taint
        // and condition; failing readiness for it would stall a rollout on every node.
        if (!(yield* node.sandboxdAnswered)) missing.push("sandboxd has not answered yet")
        return missing
      }),
      beforeScrape: Sampled.sample({ table, doubts, sandboxd: node.sandboxd, pods: pods.cachedPods, config })
    })
  })
)

/** NodeHealth for the lease: stop renewing when the daemon's own loops died (the node goes Unknown). */
const NodeHealthLayer = Layer.effect(
  NodeHealth,
  Effect.map(DaemonLoops.use(Effect.succeed), (loops) => ({
    healthy: Effect.map(loops.stopped, (stopped) => stopped.length === 0)
  }))
)

export const daemonLayer = (config: AppConfigShape, failpoints: FailpointsShape = inertFailpoints) => {
  const decorators = failpoints.armed.length === 0 ? undefined : FailpointDecorators.make(failpoints)
  return HealthLayer.pipe(
    Layer.provideMerge(PodControllerLayer),
    Layer.provideMerge(QuarantineEventLayer),
    Layer.provideMerge(NodeControllerLive.layer().pipe(Layer.provide(NodeHealthLayer))),
    Layer.provideMerge(LoopsLayer),
    Layer.provideMerge(KubeletLayer),
    Layer.provideMerge(startupLayer),
    Layer.provideMerge(ProviderLayer),
    Layer.provideMerge(ClaimsLayer(decorators)),
    Layer.provideMerge(WireLayer(decorators)),
    // Below the wire: the sandboxd client scrubs its error text of the claim tokens the table holds.
    Layer.provideMerge(ClaimTableRefLayer),
    Layer.provideMerge(AppConfig.layer(config))
  )
}

const formatListenAddr = (address: ListenAddr) =>
  `${address.host.includes(":") ? `[${address.host}]` : address.host}:${address.port}`

const describe = (error: { readonly _tag: string; readonly message: string }) => `${error._tag}: ${error.message}`

/** Ends the process if shutdown overruns its bound (a hung finalizer must not keep the node's Pod). */
const shutdownWatchdog = (bound: Duration.Duration) =>
  Effect.addFinalizer(() =>
    Effect.sync(() => {
      // A plain timer: the runtime is shutting down, and this must fire even if it hangs.
      const timer = setTimeout(() => {
        process.stderr.write(`vk-sandbox: shutdown exceeded ${Duration.format(bound)}; exiting\n`)
        process.exit(1)
      }, Duration.toMillis(bound))
      timer.unref()
    })
  )

export const run: Effect.Effect<void, StartupError, AppConfig | BuildInfo> = Effect.gen(function*() {
  const config = yield* AppConfig
  const tuningOff = yield* TuningOff
  yield* Effect.scoped(
    Effect.gen(function*() {
      yield* Metrics.initialize
      const failpoints = yield* Failpoints
      if (failpoints.armed.length > 0) {
        yield* Effect.logWarning("failpoints armed: this daemon is under test and may crash or fail on purpose").pipe(
          Effect.annotateLogs({ failpoints: failpoints.armed.join(";") })
        )
      }
      const daemon = yield* Layer.build(daemonLayer(config, failpoints)).pipe(
        Effect.tapError((error) => Effect.logError("vk-sandbox cannot start").pipe(Effect.annotateLogs({ error }))),
        Effect.mapError((error) => new StartupError({ message: describe(error) }))
      )
      // The heap setting for after the start (Cli/HeapFlags.ts): once the first pod list is taken.
      // Set this late, every Node module the start loads was compiled with its code cache too.
      if (!tuningOff.has("heap-growing-percent")) {
        yield* applyOnceStarted(
          Context.get(daemon, RunningPodController).synced,
          Effect.sync(() => applyDaemonHeapFlags(process.execArgv))
        ).pipe(Effect.forkScoped)
      }
      // Registered last, so it runs first on shutdown and covers every finalizer after it.
      yield* shutdownWatchdog(Duration.sum(config.shutdownTimeout, Duration.seconds(5)))
      // The one startup line: what this process is and where it talks (no secret in the URL).
      yield* Effect.logInfo("starting virtual node").pipe(
        Effect.annotateLogs({
          version: daemonVersion,
          node: config.nodeName,
          sandboxd: redactUrlUserinfo(config.sandboxdUrl),
          state: config.statePath,
          kubelet: formatListenAddr(config.listenAddr),
          // Which certificate the kubelet port serves: flags, vk-cocoon or self-signed (TLS-2 —
          // which certificate; TLS-4 — vk-cocoon's certificate is reused when it is usable).
          tls: Context.get(daemon, KubeletServer).tls.source,
          metrics: formatListenAddr(config.metricsAddr)
        })
      )
      return yield* Effect.never
    })
  ).pipe(
    Effect.onInterrupt(() => Effect.logInfo("vk-sandbox exiting")),
    Effect.provide(yield* tracingLayer(config)),
    Effect.provide(loggingLayer(config)),
    (self) => (tuningOff.has("event-loop-scheduler") ? self : onDaemonScheduler(self))
  )
})

/**
 * Q-06 — the event loop is shared in turns: every fiber of the daemon shares the event loop in
 * turns, so a storm of work that needs no I/O (a restart's re-attached Pods) cannot keep sockets
 * and timers waiting.
 */
export const onDaemonScheduler = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(self, Scheduler.Scheduler, EventLoopScheduler.daemonScheduler())

/**
 * The OTLP trace exporter when `--otlp-endpoint` is set, and its modules are loaded only then.
 * Without it nothing reads a span (logs carry none), so the tracer is switched off: the spans the
 * code names are then no-ops instead of objects made, timed and dropped several times per Pod.
 */
export const tracingLayer = (config: Pick<AppConfigShape, "otlpEndpoint" | "nodeName">) =>
  Effect.gen(function*() {
    if (config.otlpEndpoint === "") return Layer.succeed(References.TracerEnabled, false)
    const build = yield* BuildInfo
    const Tracing = yield* Effect.promise(() => import("./Programs/Observability/Tracing.ts"))
    return Tracing.layer(config.otlpEndpoint, build, config.nodeName)
  })
