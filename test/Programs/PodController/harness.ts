/**
 * The pod controller's test world, composed like `src/Daemon.ts` but without the node,
 * kubelet and loops: the in-memory API server over loopback HTTP reached through the live
 * KubeApi layer, the sandboxd simulator over loopback HTTP through the live client, the real
 * claims table and file store in a temporary directory, the real provider with the live owner
 * resolver and event recorder, and `PodController.make`. The simulators outlive a controller
 * start, so a test can stop one daemon and start another on the same state file ("restart").
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Context, Duration, Effect, Exit, Layer, Scope } from "effect"
import { TestClock } from "effect/testing"
import { eventually, sleepReal } from "../../support/Wait.ts"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as KubeApiClientNode from "../../../src/Layers/KubeApiClientNode.ts"
import { type LeaseWatchOutcome, publishExpiredLeases } from "../../../src/Programs/LeaseWatcher.ts"
import * as PodController from "../../../src/Programs/PodController/PodController.ts"
import type { AppConfigShape } from "../../../src/Schemas/Config.ts"
import { testConfig } from "../../../testkit/Config.ts"
import { AppConfig } from "../../../src/Services/Config.ts"
import type { PodKey } from "../../../src/Schemas/Ids.ts"
import { ClaimTable } from "../../../src/Services/ClaimTable.ts"
import { KubeApi } from "../../../src/Services/KubeApi.ts"
import { PodLifecycle } from "../../../src/Services/PodLifecycle.ts"
import { ProviderEvents } from "../../../src/Services/ProviderEvents.ts"
import { SandboxdClient } from "../../../src/Services/SandboxdClient.ts"
import { ClusterModel } from "../../../testkit/Simulators/Apiserver/Model.ts"
import { Pods, Sandboxes } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../testkit/Simulators/Apiserver/Status.ts"
import { make as makeSandboxdSim, type SandboxdSimOptions } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { serve as serveSandboxd } from "../../../testkit/Simulators/Sandboxd/Server.ts"
import { sandboxBody, sandboxOwnerRef } from "../../../testkit/Demo/Harness.ts"
import { podHalfLayer } from "../../support/PodHalf.ts"
import { makeRunLog, type RunLog } from "../../support/RunLog.ts"
import { serveModel } from "../../support/Apiserver.ts"

export const NODE = "vk-sandboxd"
export const NS = "default"
export const Template = "python"
export const ClaimIdAnnotation = "sandbox.cocoonstack.io/claim-id"

/**
 * The apiserver model, counting the pods/status writes (PUTs, and patches apart) that reach it,
 * and naming every resource a request asked for (known to the model or not).
 */
export class CountingModel extends ClusterModel {
  statusWrites = 0
  /** The pods/status writes per Pod name. */
  readonly statusWritesOf = new Map<string, number>()
  statusPatches = 0
  readonly resourcesAsked = new Set<string>()
  override resourceFor(...args: Parameters<ClusterModel["resourceFor"]>) {
    this.resourcesAsked.add(args[2])
    return super.resourceFor(...args)
  }
  override updateStatus(...args: Parameters<ClusterModel["updateStatus"]>) {
    if (args[0] === Pods) {
      this.statusWrites++
      this.statusWritesOf.set(args[2], (this.statusWritesOf.get(args[2]) ?? 0) + 1)
    }
    return super.updateStatus(...args)
  }
  override patch(...args: Parameters<ClusterModel["patch"]>) {
    if (args[0] === Pods && args[5]?.subresource === "status") this.statusPatches++
    return super.patch(...args)
  }
}

/** Short intervals: real I/O dominates these tests, so they run on the real clock. */
export const fastOptions: PodController.PodControllerOptions = {
  resyncInterval: Duration.seconds(60),
  backoff: { initial: Duration.millis(50), max: Duration.millis(400) },
  rewatchDelay: Duration.millis(20),
  fruitlessWatchesBeforeRelist: 3,
  silentWatchCheck: Duration.seconds(15)
}

/** Calls the controller made into the provider, per key. */
export interface Calls {
  readonly create: Map<string, number>
  readonly update: Map<string, number>
  readonly delete: Map<string, number>
}

const bump = (m: Map<string, number>, key: string) => m.set(key, (m.get(key) ?? 0) + 1)

/** PodLifecycle around the real adapter, counting each call the controller makes. */
const countingLifecycle = (calls: Calls) =>
  Layer.effect(
    PodLifecycle,
    Effect.gen(function*() {
      const inner = yield* PodLifecycle
      const keyOf = (pod: V1Pod) => `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""}`
      return PodLifecycle.of({
        ...inner,
        createPod: (pod) => Effect.suspend(() => (bump(calls.create, keyOf(pod)), inner.createPod(pod))),
        updatePod: (pod) => Effect.suspend(() => (bump(calls.update, keyOf(pod)), inner.updatePod(pod))),
        deletePod: (pod) => Effect.suspend(() => (bump(calls.delete, keyOf(pod)), inner.deletePod(pod)))
      })
    })
  )

/**
 * The sandboxd client around the live one, counting per pod key the claims and listings in flight
 * (a request that times out leaves at once, on the TestClock step that ends it).
 */
const countingSandboxd = (inFlight: Map<string, number>) =>
  Layer.effect(
    SandboxdClient,
    Effect.gen(function*() {
      const inner = yield* SandboxdClient
      const counted = <A, E>(key: string, request: Effect.Effect<A, E>) =>
        Effect.suspend(() => {
          bump(inFlight, key)
          return Effect.ensuring(request, Effect.sync(() => inFlight.set(key, (inFlight.get(key) ?? 1) - 1)))
        })
      return SandboxdClient.of({
        ...inner,
        claim: (spec) => counted(spec.claimRef, inner.claim(spec)),
        listByClaimRef: (claimRef) => counted(claimRef, inner.listByClaimRef(claimRef))
      })
    })
  )

export interface Controller {
  readonly handle: PodController.PodControllerHandle
  /** Drains and closes this controller only (the provider stays). */
  readonly stop: Effect.Effect<void>
}

export interface Daemon {
  readonly handle: PodController.PodControllerHandle
  readonly stopController: Effect.Effect<void>
  readonly startController: (options?: PodController.PodControllerOptions) => Effect.Effect<Controller>
  /** The provider's own status channel: a test can push as the provider would. */
  readonly pushStatus: (pod: V1Pod) => Effect.Effect<void>
  /** The provider's channel of keys to run now (the lease watch's): a test can hand keys on as it does. */
  readonly publishRetry: (keys: ReadonlyArray<PodKey>) => Effect.Effect<void>
  readonly lifecycle: PodLifecycle["Service"]
  readonly table: ClaimTable["Service"]
  /** The daemon's own sandboxd client (an exchange of it is one the node's probe would make). */
  readonly sandboxd: SandboxdClient["Service"]
  readonly calls: Calls
  /** The reconcile runs of this start's controllers, per key: a run's end is a receipt. */
  readonly runs: RunLog
  /** Claims and listings in flight per pod key (zero once none is). */
  readonly sandboxdInFlight: ReadonlyMap<string, number>
  /** One tick of the daemon's lease watch on this provider (the loop itself is not run here). */
  readonly leaseTick: Effect.Effect<LeaseWatchOutcome>
  /** Closes the controller and provider (drain first, as the daemon's finalizer does). */
  readonly stop: Effect.Effect<void>
}

export interface WorldOptions {
  readonly sim?: Partial<SandboxdSimOptions>
  readonly config?: Partial<AppConfigShape>
}

/** The simulators and a way to start (and restart) the daemon's pod half on them. */
export const makeWorld = (worldOptions: WorldOptions = {}) =>
  Effect.gen(function*() {
    const model = new CountingModel()
    const { apiserver, dir, kubeconfigPath } = yield* serveModel(model)
    const sim = yield* makeSandboxdSim({
      rootToken: "",
      pools: [{ template: Template, net: "none", size: "small", target: 64 }],
      nanosecondDeadlines: false,
      refillDelay: "10 millis",
      ...worldOptions.sim
    })
    const sandboxd = yield* serveSandboxd(sim, { host: "127.0.0.1", port: 0 })
    const config = testConfig({
      kubeconfig: kubeconfigPath,
      sandboxdUrl: sandboxd.url,
      statePath: NodePath.join(dir, "state", "claims.json"),
      shutdownTimeout: Duration.seconds(5),
      ...worldOptions.config
    })

    /** The provider graph (built once per "daemon start") and a first controller on it. */
    const start = (options: PodController.PodControllerOptions = fastOptions) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const calls: Calls = { create: new Map(), update: new Map(), delete: new Map() }
        const runs = makeRunLog()
        const sandboxdInFlight = new Map<string, number>()
        const context = yield* Layer.buildWithScope(
          podHalfLayer(config, countingLifecycle(calls), countingSandboxd(sandboxdInFlight)),
          scope
        ).pipe(Effect.orDie)

        /** A controller in a scope of its own, on this provider (closing it drains first). */
        const startController = (controllerOptions: PodController.PodControllerOptions = options) =>
          Effect.gen(function*() {
            const controllerScope = yield* Scope.fork(scope)
            const handle = yield* PodController.make(controllerOptions).pipe(
              Effect.withTracer(runs.tracer),
              Effect.provideContext(context),
              Scope.provide(controllerScope)
            )
            const stop = handle.drain(config.shutdownTimeout).pipe(Effect.andThen(Scope.close(controllerScope, Exit.void)))
            return { handle, stop }
          })

        const first = yield* startController()
        const stop = first.stop.pipe(Effect.andThen(Scope.close(scope, Exit.void)))
        yield* Effect.addFinalizer(() => stop)
        const daemon: Daemon = {
          handle: first.handle,
          stopController: first.stop,
          startController,
          lifecycle: Context.get(context, PodLifecycle),
          table: Context.get(context, ClaimTable),
          sandboxd: Context.get(context, SandboxdClient),
          pushStatus: Context.get(context, ProviderEvents).pushStatus,
          publishRetry: Context.get(context, ProviderEvents).publishRetry,
          leaseTick: publishExpiredLeases.pipe(Effect.provideContext(context)),
          calls,
          runs,
          sandboxdInFlight,
          stop
        }
        return daemon
      })

    /** A live KubeApi client of the test's own (for reads and fault checks through the wire). */
    const kube = yield* Layer.build(KubeApiClientNode.layer.pipe(Layer.provide(AppConfig.layer(config)))).pipe(
      Effect.orDie,
      Effect.map((ctx) => Context.get(ctx, KubeApi))
    )

    return { dir, model, apiserver, sim, sandboxd, config, start, kube, statePath: config.statePath }
  })

export type World = Effect.Success<ReturnType<typeof makeWorld>>

// ---- objects ----------------------------------------------------------------------------------

export const podBody = (
  name: string,
  options: {
    readonly annotations?: Record<string, string>
    readonly labels?: Record<string, string>
    readonly owner?: { readonly name: string; readonly uid: string }
    readonly restartPolicy?: string
  } = {}
): JsonObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    namespace: NS,
    name,
    annotations: { "sandbox.cocoonstack.io/template": Template, ...options.annotations },
    ...(options.labels === undefined ? {} : { labels: options.labels }),
    ...(options.owner === undefined ? {} : { ownerReferences: [sandboxOwnerRef(options.owner)] })
  },
  spec: {
    nodeName: NODE,
    ...(options.restartPolicy === undefined ? {} : { restartPolicy: options.restartPolicy }),
    containers: [{ name: "main", image: "python:3.12" }]
  }
})

/** Creates a Pod bound to the node (a scheduler already ran); returns its uid. */
export const createPod = (model: ClusterModel, body: JsonObject): string => {
  const out = model.create(Pods, NS, body)
  if (out._tag !== "Success") throw new Error(`create pod: ${JSON.stringify(out.failure)}`)
  return String((out.success["metadata"] as Record<string, unknown>)["uid"])
}

export const createSandboxCr = (model: ClusterModel, name: string): string => {
  const out = model.create(Sandboxes, NS, sandboxBody(name))
  if (out._tag !== "Success") throw new Error(`create sandbox: ${JSON.stringify(out.failure)}`)
  return String((out.success["metadata"] as Record<string, unknown>)["uid"])
}

export interface PodView {
  readonly metadata: {
    readonly uid: string
    readonly resourceVersion: string
    readonly labels?: Record<string, string>
    readonly annotations?: Record<string, string>
    readonly deletionTimestamp?: string
  }
  readonly status?: { readonly phase?: string; readonly reason?: string; readonly message?: string; readonly podIP?: string }
}

export const peekPod = (model: ClusterModel, name: string): PodView | undefined =>
  model.peek(Pods, NS, name) as unknown as PodView | undefined

export const keyOf = (name: string) => `${NS}/${name}` as PodKey

// ---- waiting ----------------------------------------------------------------------------------

export { eventually, eventually as eventuallyEffect, quiet, sleepReal } from "../../support/Wait.ts"

// ---- on the TestClock, with real I/O ------------------------------------------------------------

/** The default backoff with no resync in reach: a resync landing while a key is in flight runs it once more. */
export const backoffOnly: PodController.PodControllerOptions = { ...PodController.defaultOptions, resyncInterval: Duration.hours(1) }

/** Real I/O turns: the daemon's round trips to the simulators finish while the TestClock stands. */
export const ioTurns = Effect.gen(function*() {
  for (let i = 0; i < 15; i++) yield* sleepReal(1)
})

/**
 * Stops the daemon while moving the TestClock: its drain is bounded in TestClock time, so a
 * reconcile still waiting on the clock (a retry, a rate limit) would otherwise hold the test's end.
 */
export const stopOnTestClock = (daemon: { readonly stop: Effect.Effect<void> }) =>
  Effect.gen(function*() {
    const stopping = yield* Effect.forkChild(daemon.stop)
    yield* secondsUntil(() => stopping.pollUnsafe() !== undefined)
  })

/**
 * Moves the TestClock a second at a time, with real I/O turns in between, until `done` holds;
 * how many seconds that took. Ends the test (as a hang would) after `limit` seconds.
 */
export const secondsUntil = (done: (() => boolean) | Effect.Effect<boolean>, limit = 300) =>
  Effect.gen(function*() {
    const check = Effect.isEffect(done) ? done : Effect.sync(done)
    for (let seconds = 0; seconds < limit; seconds++) {
      yield* ioTurns
      if (yield* check) return seconds
      yield* TestClock.adjust("1 second")
    }
    return yield* Effect.die(new Error(`not done after ${limit} s on the TestClock`))
  })


/**
 * The receipt that the controller has acted on everything it has seen, on the TestClock: a
 * witness Pod created now goes Running (the informer queues it after every key it queued before),
 * then every run and write begun has ended. The witness's own claim and writes are the test's to
 * count apart.
 */
export const witnessRunning = (world: World, daemon: Daemon, witness: string) =>
  Effect.gen(function*() {
    createPod(world.model, podBody(witness))
    yield* secondsUntil(() => running(world.model, witness) !== undefined)
    yield* daemon.handle.idle
  })

/**
 * The receipt for a status push under test: a push for another Running Pod (`witness`) right
 * after it. Pushes are taken in order, so once the witness's status is written the push before it
 * was taken, and `idle` waits out the write it made, if any. Each receipt is one status write.
 */
export const pushReceipt = (world: World, daemon: Daemon, witness: string) => {
  let count = 0
  return Effect.gen(function*() {
    const message = `receipt ${++count}`
    const pod = world.model.peek(Pods, NS, witness) as V1Pod
    yield* daemon.pushStatus({ ...pod, status: { ...pod.status, message } })
    yield* eventually(message, () => peekPod(world.model, witness)?.status?.message === message)
    yield* daemon.handle.idle
  })
}

/**
 * The receipt that every key handed to the controller so far on the provider's channel of keys to
 * run now (the lease watch's Pod-less and preserved rows, lifted quarantines) has had its run: a
 * witness key (no Pod, no row: its run forgets it) handed on after them has been run, the channel
 * being taken in order, and then no run is in flight.
 */
export const handedOnRun = (daemon: Daemon) =>
  Effect.gen(function*() {
    const witness = keyOf("handed-on-receipt")
    const ran = yield* daemon.runs.next(witness)
    yield* daemon.publishRetry([witness])
    yield* ran
    yield* daemon.handle.idle
  })

export const running = (model: ClusterModel, name: string) => {
  const pod = peekPod(model, name)
  return pod?.status?.phase === "Running" && pod.metadata.annotations?.[ClaimIdAnnotation] !== undefined ? pod : undefined
}

export const claimIdOf = (pod: { readonly metadata: { readonly annotations?: Record<string, string> } }) =>
  pod.metadata.annotations?.[ClaimIdAnnotation] ?? ""

export const claimRequests = (sim: World["sim"]) =>
  Effect.map(sim.audit, (entries) => entries.filter((e) => e.route === "claim").length)

export const releaseRequests = (sim: World["sim"]) =>
  Effect.map(sim.audit, (entries) => entries.filter((e) => e.route === "release").map((e) => e.path))

/** The claim ids in the state file on disk. */
export const claimsOnDisk = (statePath: string): ReadonlyArray<string> => {
  if (!NodeFs.existsSync(statePath)) return []
  const text = NodeFs.readFileSync(statePath, "utf8")
  return [...text.matchAll(/"(sb_[0-9a-f]+)"/g)].map((m) => m[1])
}

