/**
 * The pod half of a node agent for a provider: list + watch the Pods bound to this node, reconcile
 * each key level-triggered and serialized, write the provider's status pushes, send the final
 * grace-0 delete. Three parts composed here: the Informer (list + watch → slim Pod cache) feeds
 * the pod queue and its Reconciler (createPod / deletePod), and the StatusWriter writes the
 * provider's pushes and repairs statuses the Informer observes. Every retry waits on steps of one
 * retry schedule (`Backoff.ts`); a periodic resync re-examines every cached Pod and its last push.
 */
import { Cause, Clock, Duration, Effect, Exit, Metric, Option, type Scope, Stream } from "effect"
import type { AppConfigShape } from "../../Schemas/Config.ts"
import { AppConfig } from "../../Services/Config.ts"
import { type PodKey, podKeyOfPod } from "../../Schemas/Ids.ts"
import type { UndecodablePod } from "../../Schemas/Pod/Decode.ts"
import type { Pod } from "../../Schemas/Pod/Schema.ts"
import { EventRecorder } from "../../Services/EventRecorder.ts"
import type { KubeApi, KubeError, PodList } from "../../Services/KubeApi.ts"
import { type DeletePodError, PodLifecycle } from "../../Services/PodLifecycle.ts"
import type { PodControllerHandle } from "../../Services/Daemon.ts"
import { every } from "../../Services/Loops.ts"
import * as Metrics from "../../Services/Metrics.ts"
import * as Backoff from "./Backoff.ts"
import { ControllerBook } from "./ControllerBook.ts"
import * as Informer from "./Informer.ts"
import { SandboxdToken } from "../../Services/SandboxdToken.ts"
import { DependencyRecovery } from "../../Services/DependencyRecovery.ts"
import * as KeyedQueue from "./KeyedQueue.ts"
import { PodStarts } from "./PodStarts.ts"
import * as Reconciler from "./Reconciler.ts"
import * as StatusWriter from "./StatusWriter.ts"

export { resourceVersionOlder } from "./Informer.ts"

export interface PodControllerOptions {
  readonly resyncInterval: Duration.Duration
  readonly backoff: Backoff.BackoffPolicy
  /** Delay before re-watching after a clean close (guards against a server that closes at once). */
  readonly rewatchDelay: Duration.Duration
  /** Watches in a row from one resourceVersion that deliver nothing (fail or close) before a relist. */
  readonly fruitlessWatchesBeforeRelist: number
  /** A watch silent this long asks whether the server's resourceVersion went backwards (`--watch-check-interval`). */
  readonly silentWatchCheck: Duration.Duration
  /** The retry schedule every retry waits on; by default `Backoff.schedule(backoff)`. */
  readonly retry?: Backoff.RetrySchedule
  /** Reconciles in flight at once (`KeyedQueue`); other keys wait their turn without a fiber. By default `inFlightBounds`. */
  readonly maxReconciles?: number
  /** Status writes in flight at once; other keys' pushes wait their turn without a fiber. By default `inFlightBounds`. */
  readonly maxStatusWrites?: number
  /** The first pod list, asked for before the controller started (see `Informer.InformerOptions`). */
  readonly firstList?: Effect.Effect<PodList, KubeError> | undefined
  /** The scheduler priority reconciles start at; by default `reconcilePriority` (a test sets 0 to show the difference). */
  readonly reconcilePriority?: number
}

export const defaultOptions: PodControllerOptions = {
  resyncInterval: Duration.seconds(60),
  backoff: Backoff.defaultBackoff,
  rewatchDelay: Duration.millis(100),
  fruitlessWatchesBeforeRelist: 3,
  silentWatchCheck: Duration.seconds(15),
}

/**
 * How much work is in flight at once (Q-05 — bounded work in flight), from the flags that pace it.
 * A reconcile or status write in flight holds a fiber of some 20 KB while it waits, and every Pod
 * of a burst bound at once would otherwise be in flight together (the heap V8 grows for that peak
 * stays resident after it). Creates reach sandboxd at most `--sandboxd-max-concurrency` at a time
 * and the claims-file writes batch whatever arrives meanwhile, so four times that many creates in
 * flight (256 by default) keep both busy. Status writes are paced by `--kube-api-qps`: a quarter
 * second of that rate in flight (at least 64) keeps it saturated while the apiserver answers within
 * that time. A flag raised past the defaults raises its bound with it.
 */
export const inFlightBounds = (
  config: Pick<AppConfigShape, "sandboxdMaxConcurrency" | "kubeApiQps">
): { readonly reconciles: number; readonly statusWrites: number } => ({
  reconciles: Math.max(256, 4 * config.sandboxdMaxConcurrency),
  statusWrites: Math.max(64, Math.ceil(config.kubeApiQps / 4))
})

export type { PodControllerHandle }

/**
 * The scheduler priority a reconcile starts at (`KeyedQueue`'s `runPriority`): after every task
 * of the default priority, 0 (Q-06 — the event loop is shared in turns). A restart's first list
 * hands the queue 10,000 re-attached Pods whose reconciles need no I/O; started at the default
 * priority, a `/readyz`, an apiserver reply or a lease renewal arriving meanwhile waited behind one
 * run of every reconcile started before it (up to the 256 in flight: up to 0.3 s on a 2-core
 * machine).
 */
export const reconcilePriority = 1

/**
 * Provider Pods absent from the first complete list are deleted (by namespace/name). One that
 * is listed in a version the informer cannot decode is there (INF-1 — a Pod the daemon cannot
 * decode is left out): not dangling.
 */
const danglingSweep = (
  provider: PodLifecycle["Service"],
  informer: Informer.Informer,
  enqueue: (key: PodKey) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const held = yield* provider.getPods
    const dangling: Array<typeof held[number]> = []
    for (const pod of held) {
      const key = podKeyOfPod(pod)
      if (Option.isNone(yield* informer.get(key)) && !(yield* informer.unreadable(key))) dangling.push(pod)
    }
    if (dangling.length > 0) yield* Effect.logInfo("dangling pods at startup").pipe(Effect.annotateLogs({ count: dangling.length }))
    // DEL-3 — a claim in doubt is settled even when its Pod never comes back: a key in doubt whose
    // Pod is not listed (an intent left by a crash for a Pod deleted while the daemon was down)
    // gets a run of its own, which settles it.
    for (const key of yield* provider.doubtKeys) {
      if (Option.isNone(yield* informer.get(key)) && !(yield* informer.unreadable(key))) yield* enqueue(key)
    }
    // VER-7 — a lost sandbox's row outlives restarts until its Pod is settled: likewise a key with
    // a Lost row (its VM found gone at startup) whose Pod was deleted while the daemon was down:
    // its run drops the row. One pass over the rows, here only.
    for (const key of yield* provider.lostKeys) {
      if (Option.isNone(yield* informer.get(key))) yield* enqueue(key)
    }
    yield* Effect.forEach(dangling, (pod) =>
      provider.deletePod(pod).pipe(
        Effect.catch((failure: DeletePodError) =>
          Effect.logWarning("dangling pod delete failed").pipe(Effect.annotateLogs({ pod: podKeyOfPod(pod), error: failure }))
        )
      ), { concurrency: 8, discard: true })
  })

/**
 * HZ-1 — a stopped part fails liveness: the parts that run for as long as the controller does.
 * One that ends (a defect, a stream that completes) is logged with its cause and named by
 * `stopped`, which /healthz reports, so the kubelet's liveness probe restarts a daemon whose
 * cache froze instead of it looking healthy.
 */
const runForever = (book: ControllerBook, name: string) => <E, R>(self: Effect.Effect<unknown, E, R>) =>
  self.pipe(
    Effect.onExit((exit) =>
      Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
        ? Effect.void
        : Effect.logError("pod controller part stopped; /healthz fails from now on", ...(Exit.isFailure(exit) ? [exit.cause] : [])).pipe(
          Effect.annotateLogs({ part: name })
        )
    ),
    Effect.forkScoped,
    Effect.tap((fiber) => Effect.sync(() => book.addPart(name, fiber)))
  )

/**
 * INF-1: a Pod held as it was (a Pending one given no VM) shows why where its owner looks, once
 * per version the daemon cannot read (a restart's list meets it once more).
 */
const undecodableEvent = (events: EventRecorder["Service"]) => (pod: UndecodablePod, lastGoodKept: boolean) =>
  events.record(
    { kind: "Pod", namespace: pod.namespace, name: pod.name, uid: pod.uid },
    "Warning",
    "Undecodable",
    `the daemon cannot decode this pod at resourceVersion ${pod.resourceVersion} (${pod.error}); ` +
      (lastGoodKept
        ? "it is kept as its last readable version was: no sandbox is claimed or released for it, and only an ending status is written, until a readable version"
        : "it is left out: no sandbox is claimed for it until a readable version")
  )

export const make = (
  options: PodControllerOptions = defaultOptions
): Effect.Effect<PodControllerHandle, never, AppConfig | KubeApi | PodLifecycle | EventRecorder | Scope.Scope> =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const provider = yield* PodLifecycle
    const nodeName = config.nodeName
    const retry = options.retry ?? Backoff.schedule(options.backoff)
    const bounds = inFlightBounds(config)

    const informer = yield* Informer.make(nodeName, options, retry)
    // The controller's own state, touched only through its synchronous methods (`ControllerBook.ts`).
    const book = new ControllerBook()
    // MON-5 — one observation per Pod start, timed from the same instant as its queue stage.
    const starts = new PodStarts()
    const changed = (key: PodKey): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        book.changed(key, now)
        return Effect.flatMap(informer.get(key), (pod) => {
          starts.seen(key, Option.getOrUndefined(pod), now)
          return podQueue.enqueue(key, "change")
        })
      })
    const acknowledged = (key: PodKey, written: Pod) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const seconds = starts.acknowledged(key, written, now)
        return seconds === undefined ? Effect.void : Metric.update(Metrics.podStartDuration, seconds)
      })
    /** The queue stage of a Pod's start: from its change reaching the queue to its run. */
    const queueStage = (key: PodKey) =>
      Effect.suspend(() => {
        const since = book.takeChanged(key)
        if (since === undefined) return Effect.void
        return Effect.flatMap(Clock.currentTimeMillis, (now) => Metrics.observeStage("queue", (now - since) / 1000))
      })
    const status = yield* StatusWriter.make(informer, retry, changed, options.maxStatusWrites ?? bounds.statusWrites, acknowledged)
    const reconciler = yield* Reconciler.make(informer, status)
    // Made once, not per run: `Effect.withSpan` captures a stack trace each time it is called.
    const reconcileSpan = Effect.withSpan("PodController.reconcile", (key: PodKey) => ({ attributes: { pod: key, node: nodeName } }))
    const podQueue: KeyedQueue.KeyedQueue<PodKey> = yield* KeyedQueue.make<PodKey>(
      // One span per reconcile of a key: its create, claim, commit and release spans nest under it.
      (key) =>
        reconcileSpan(queueStage(key).pipe(Effect.andThen(reconciler.reconcile(key))), key).pipe(
          Effect.annotateLogs({ node: nodeName, pod: key })
        ),
      {
        retry,
        slowRetry: Backoff.slowSchedule(options.backoff),
        maxInFlight: options.maxReconciles ?? bounds.reconciles,
        runPriority: options.reconcilePriority ?? reconcilePriority,
        name: "reconcile"
      }
    )

    yield* provider.statusPushes.pipe(Stream.runForEach(status.push), runForever(book, "status-pushes"))
    yield* provider.retryNow.pipe(Stream.runForEach((key) => podQueue.enqueue(key, "now")), runForever(book, "retry-now"))

    // sandboxd accepts the node token again (a rotation, or a refusing proxy gone): the creates
    // that failed meanwhile wait on the slow schedule, so they go now instead.
    const token = yield* Effect.serviceOption(SandboxdToken)
    if (Option.isSome(token)) {
      yield* token.value.acceptedAgain.pipe(
        Stream.runForEach(() =>
          Effect.gen(function*() {
            for (const key of yield* reconciler.retainedKeys) yield* podQueue.enqueue(key, "now")
          })
        ),
        runForever(book, "token-accepted")
      )
    }

    // Q-08 — a dependency that comes back wakes the keys waiting on it: a dependency answers again
    // after failing: the keys waiting out a retry go now (their backoff kept), instead of up to 36
    // s later. At most once per initial backoff step, so a flapping dependency cannot make the keys
    // hammer it.
    const recovery = yield* Effect.serviceOption(DependencyRecovery)
    if (Option.isSome(recovery)) {
      yield* recovery.value.recovered.pipe(
        Stream.runForEach((dependency) =>
          podQueue.wakeRetrying.pipe(
            Effect.tap((woken) =>
              woken === 0 ? Effect.void : Effect.logInfo("a dependency answers again; the keys waiting on a retry go now").pipe(
                Effect.annotateLogs({ dependency, keys: woken })
              )
            ),
            Effect.andThen(Effect.sleep(options.backoff.initial))
          )
        ),
        runForever(book, "dependency-recovered")
      )
    }

    const events = yield* EventRecorder
    yield* informer.run({
      changed,
      observed: status.repair,
      removed: status.forget,
      firstSync: danglingSweep(provider, informer, (key) => podQueue.enqueue(key, "change")),
      undecodable: undecodableEvent(events)
    }).pipe(runForever(book, "informer"))

    // Resync: re-examine every known Pod; also the status repair check.
    const resync = Effect.gen(function*() {
      for (const pod of yield* informer.pods) {
        yield* podQueue.enqueue(podKeyOfPod(pod), "resync")
        yield* status.repair(pod)
      }
    })
    yield* every(options.resyncInterval, resync).pipe(runForever(book, "resync"))

    const started = yield* Clock.currentTimeMillis
    yield* Effect.logDebug("pod controller started").pipe(Effect.annotateLogs({ node: nodeName, at: started }))

    return {
      synced: informer.synced,
      stopped: Effect.sync(() => book.stopped()),
      cachedPods: informer.pods,
      // A write's outcome may queue a reconcile and a reconcile a write: idle when both are at once.
      idle: Effect.gen(function*() {
        do {
          yield* podQueue.idle
          yield* status.idle
        } while ((yield* podQueue.inFlight) + (yield* status.inFlight) > 0)
      }),
      drain: (timeout: Duration.Duration) =>
        Effect.gen(function*() {
          const startedAt = yield* Clock.currentTimeMillis
          yield* podQueue.drain(timeout)
          // Statuses of creates that just finished still get written, within what is left of the
          // same bound (one bound for the whole drain: the daemon's shutdown budget counts on it).
          const left = Duration.toMillis(timeout) - ((yield* Clock.currentTimeMillis) - startedAt)
          yield* status.drain(Duration.millis(Math.max(0, left)))
        }),
      retainedKeys: Effect.gen(function*() {
        const keys = new Set<PodKey>([...(yield* status.retainedKeys), ...(yield* reconciler.retainedKeys), ...starts.keys()])
        return keys.size + (yield* podQueue.size) + (yield* status.queued)
      })
    }
  })
