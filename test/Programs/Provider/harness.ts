/**
 * The provider's test world: the sandboxd simulator served over loopback HTTP and reached
 * through the real HTTP client, the real ClaimTable, the in-memory ClaimsStore (with its
 * injectable failures), the event PubSubs, and the Provider itself.
 */
import { assert } from "@effect/vitest"
import type { V1Pod } from "@kubernetes/client-node"
import { Context, type DateTime, Duration, Deferred, Effect, Layer, Option, PubSub, Redacted, Ref, type Scope } from "effect"
import type { ClaimRecord } from "../../../src/Schemas/Claims.ts"
import type { AppConfigShape } from "../../../src/Schemas/Config.ts"
import { testConfig } from "../../../testkit/Config.ts"
import { AppConfig } from "../../../src/Services/Config.ts"
import type { ClaimId, PodKey } from "../../../src/Schemas/Ids.ts"
import { ClaimTableRefLayer } from "../../../src/Layers/ClaimTableRef.ts"
import * as ClaimsStoreFile from "../../../src/Layers/ClaimsStoreFile.ts"
import * as ClaimsStoreMemory from "../../../testkit/Layers/ClaimsStoreMemory.ts"
import { ClaimsStoreMemoryControl } from "../../../testkit/Layers/ClaimsStoreMemory.ts"
import { ProviderEventsPubSubLayer } from "../../../src/Layers/ProviderEventsPubSub.ts"
import * as ProviderLive from "../../../src/Programs/Provider/ProviderLive.ts"
import * as EventRecorderKube from "../../../src/Layers/EventRecorderKube.ts"
import * as OwnerResolverKube from "../../../src/Programs/Authorization/OwnerResolverKube.ts"
import * as SandboxdClientHttp from "../../../src/Layers/SandboxdClientHttp.ts"
import { ClaimTable } from "../../../src/Services/ClaimTable.ts"
import { PodLifecycle } from "../../../src/Services/PodLifecycle.ts"
import { ProviderEvents } from "../../../src/Services/ProviderEvents.ts"
import { SandboxdClient } from "../../../src/Services/SandboxdClient.ts"
import { TestClock } from "effect/testing"
import { SandboxdSim, type SandboxdSimOptions } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { SandboxdSimServer } from "../../../testkit/Simulators/Sandboxd/Server.ts"
import { decorated } from "../../support/Failpoints.ts"
import * as Wait from "../../support/Wait.ts"
import type { FailpointsShape } from "../../../src/Services/Failpoints.ts"

export const Template = "python"

export interface WorldOptions {
  readonly sim?: Partial<SandboxdSimOptions>
  readonly store?: ClaimsStoreMemory.ClaimsStoreMemoryOptions
  readonly config?: Partial<AppConfigShape>
  /**
   * What the store's `load` returns, computed once the simulator is up: lets a test claim real
   * sandboxes first and then "restart" onto a file naming them.
   */
  readonly seed?: (client: SandboxdClient["Service"]) => Effect.Effect<ReadonlyMap<PodKey, ClaimRecord>, unknown>
  /** Armed failpoints (test/support/Failpoints.ts), wrapping the sandboxd client and the store. */
  readonly failpoints?: FailpointsShape
}

/**
 * Holds one sandboxd listing in flight: once armed, the next listing takes its answer from the
 * simulator, signals `reached`, and returns only when `open` completes. Lets a test change the
 * table between a listing and the decisions made from it (CC-2 — ordering under concurrency, d).
 */
export class ListGate extends Context.Service<ListGate, {
  readonly arm: Effect.Effect<{ readonly reached: Deferred.Deferred<void>; readonly open: Deferred.Deferred<void> }>
}>()("test/ListGate") {}

const gatedClient = Layer.effectContext(
  Effect.gen(function*() {
    const inner = yield* SandboxdClient
    const armed = yield* Ref.make(Option.none<{ reached: Deferred.Deferred<void>; open: Deferred.Deferred<void> }>())
    const listSandboxes = Effect.gen(function*() {
      const listing = yield* inner.listSandboxes
      const gate = yield* Ref.getAndSet(armed, Option.none())
      if (Option.isSome(gate)) {
        yield* Deferred.succeed(gate.value.reached, undefined)
        yield* Deferred.await(gate.value.open)
      }
      return listing
    })
    const gate = ListGate.of({
      arm: Effect.gen(function*() {
        const handles = { reached: yield* Deferred.make<void>(), open: yield* Deferred.make<void>() }
        yield* Ref.set(armed, Option.some(handles))
        return handles
      })
    })
    return Context.make(SandboxdClient, SandboxdClient.of({ ...inner, listSandboxes })).pipe(Context.add(ListGate, gate))
  })
)

const simAndClient = (options: WorldOptions) => {
  const sim = SandboxdSim.layer({
    rootToken: "",
    pools: [{ template: Template, net: "none", size: "small", target: 8 }],
    nanosecondDeadlines: false,
    ...options.sim
  })
  const server = SandboxdSimServer.layer({ host: "127.0.0.1", port: 0 }).pipe(Layer.provideMerge(sim))
  return Layer.unwrap(
    Effect.gen(function*() {
      const address = yield* SandboxdSimServer
      const config = AppConfig.layer(testConfig({ sandboxdUrl: address.url, ...options.config }))
      return gatedClient.pipe(Layer.provide(SandboxdClientHttp.layer), Layer.provideMerge(config))
    })
  ).pipe(Layer.provideMerge(server))
}

const assemble = <S, E, R>(
  clientAndConfig: ReturnType<typeof simAndClient>,
  storeLayer: Layer.Layer<S, E, R>,
  failpoints?: FailpointsShape
) => {
  const deps = Layer.mergeAll(
    storeLayer,
    ProviderEventsPubSubLayer,
    clientAndConfig,
    // delete authorization needs an owner client; without one every owned Pod is preserved
    OwnerResolverKube.layerNoClient,
    EventRecorderKube.layerDiscard
  ).pipe(Layer.provideMerge(ClaimTableRefLayer))
  return ProviderLive.layer.pipe(Layer.provideMerge(decorated(failpoints, deps)))
}

/**
 * A fresh world per call with the in-memory store: provide it with `{ local: true }` so nothing
 * is shared between tests.
 */
export const world = (options: WorldOptions = {}) => {
  const clientAndConfig = simAndClient(options)
  const seed = options.seed
  const storeLayer = seed === undefined
    ? ClaimsStoreMemory.layer(options.store)
    : Layer.unwrap(Effect.gen(function*() {
      const initial = yield* Effect.orDie(seed(yield* SandboxdClient))
      return ClaimsStoreMemory.layer({ ...options.store, initial })
    })).pipe(Layer.provide(clientAndConfig))
  return assemble(clientAndConfig, storeLayer, options.failpoints)
}

/** Everything `world` provides. */
export type WorldServices = Layer.Success<ReturnType<typeof world>>

/** The services most tests reach for first, taken from the world before the test's own steps. */
export interface Parts {
  readonly provider: PodLifecycle["Service"]
  readonly control: ClaimsStoreMemoryControl["Service"]
  readonly sim: SandboxdSim["Service"]
  readonly table: ClaimTable["Service"]
}

const parts: Effect.Effect<Parts, never, WorldServices> = Effect.gen(function*() {
  return {
    provider: yield* PodLifecycle,
    control: yield* ClaimsStoreMemoryControl,
    sim: yield* SandboxdSim,
    table: yield* ClaimTable
  }
})

/** Runs `body` in a fresh `world(options)`, handing it the `Parts`. */
export const inWorld = <A, E>(
  body: (parts: Parts) => Effect.Effect<A, E, WorldServices | Scope.Scope>,
  options: WorldOptions = {}
) => Effect.flatMap(parts, body).pipe(Effect.provide(world(options), { local: true }))

/** The same world over the real file store at `options.config.statePath`. */
export const fileWorld = (options: WorldOptions & { readonly fileStore: ClaimsStoreFile.ClaimsStoreFileOptions }) => {
  const clientAndConfig = simAndClient(options)
  return assemble(
    clientAndConfig,
    ClaimsStoreFile.layerWith(options.fileStore).pipe(Layer.provide(clientAndConfig), Layer.orDie)
  )
}

export const pod = (
  name: string,
  options: { readonly uid?: string; readonly annotations?: Record<string, string>; readonly namespace?: string } = {}
): V1Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    namespace: options.namespace ?? "default",
    name,
    uid: options.uid ?? `uid-${name}`,
    annotations: { "sandbox.cocoonstack.io/template": Template, ...options.annotations }
  },
  spec: {
    nodeName: "vk-sandboxd",
    containers: [{ name: "main", image: "python:3.12" }, { name: "sidecar", image: "busybox" }]
  },
  status: { phase: "Pending", message: "waiting" }
})

export const keyOf = (name: string, namespace = "default") => `${namespace}/${name}` as PodKey

/** The state of the row held for `name` (None without one). */
export const rowState = (name: string) =>
  ClaimTable.use((table) => Effect.map(table.held(keyOf(name)), Option.map((row) => row.state._tag)))

/** What the simulator was asked, from its audit log. */
export const claimBodies = Effect.map(
  SandboxdSim.use((sim) => sim.audit),
  (audit) => audit.filter((entry) => entry.route === "claim").map((entry) => JSON.parse(entry.body) as Record<string, unknown>)
)
export const releasePaths = Effect.map(
  SandboxdSim.use((sim) => sim.audit),
  (audit) => audit.filter((entry) => entry.route === "release").map((entry) => entry.path)
)
/** How many claims sandboxd was asked for. */
export const claimCount = Effect.map(claimBodies, (bodies) => bodies.length)
/** The ids of the sandboxes the simulator holds claimed. */
export const simClaimIds = Effect.map(SandboxdSim.use((sim) => sim.claims), (claims) => claims.map((claim) => claim.id))

/** The error `effect` fails with, asserted to carry `tag` and narrowed to it. */
export const failsWith = <T extends string>(tag: T) =>
<A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.strictEqual(error._tag, tag)
    return error as Extract<E, { readonly _tag: T }>
  })

/** Subscribes to the status pushes (before the work that pushes, so nothing is dropped). */
export const subscribePushes: Effect.Effect<PubSub.Subscription<V1Pod>, never, ProviderEvents | Scope.Scope> = ProviderEvents.use(
  (events) => events.statusPushes
)

/** Everything pushed so far, without waiting. */
export const drain = <A>(subscription: PubSub.Subscription<A>) =>
  Effect.map(PubSub.takeUpTo(subscription, 1000), (items) => Array.from(items))

export const record = (
  id: string,
  options: { readonly deadline?: DateTime.Utc; readonly claimedAt?: DateTime.Utc; readonly address?: string } = {}
): ClaimRecord => ({
  id: id as ClaimId,
  token: Redacted.make(`tok-${id}`),
  address: options.address ?? "",
  podUID: "old-uid",
  claimedAt: options.claimedAt === undefined ? Option.none() : Option.some(options.claimedAt),
  deadline: options.deadline === undefined ? Option.none() : Option.some(options.deadline)
})

/** One turn of the real event loop (sockets, timers outside Effect). */
export const flushIO = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** Yields until `check` holds (the work under test runs on other fibers and real sockets). */
export const eventually = <E, R>(check: Effect.Effect<boolean, E, R>) => Wait.eventually("the condition", check)


/**
 * Moves the TestClock forward a `step` at a time, letting real I/O settle in between, until
 * `check` holds; fails after `limit`. For loops whose next sleep starts only after a socket
 * round trip, where one big adjust could land before the sleep is registered.
 */
export const advanceUntil = <E, R>(check: Effect.Effect<boolean, E, R>, step: Duration.Input = "1 second", limit = 600) =>
  Effect.gen(function*() {
    for (let i = 0; i < limit; i++) {
      for (let j = 0; j < 10; j++) yield* flushIO
      if (yield* check) return
      yield* TestClock.adjust(Duration.fromInputUnsafe(step))
    }
    return yield* Effect.die(new Error("condition never held"))
  })

/**
 * What a preserving DeletePod leaves: the claim stays, the tracked Pod goes (AUTH-8 — what each
 * verdict keeps).
 */
export const forgetPod = (name: string) =>
  ClaimTable.use((table) =>
    table.modify((state) => {
      return [undefined, { ...state, pods: state.pods.without(keyOf(name)) }] as const
    })
  )
