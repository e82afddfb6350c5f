/**
 * The delete-authorization test world: the in-memory API server served over loopback HTTP and
 * reached through the live KubeApi layer (so owners come back as real Status bodies), the
 * sandboxd simulator over HTTP, the real ClaimTable, the in-memory store, and the PodLifecycle with
 * the live OwnerResolver. Events go to a capturing recorder so tests can read what was reported.
 */
import { Context, Effect, Layer, Ref } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { ClaimTableRefLayer } from "../../../src/Layers/ClaimTableRef.ts"
import * as ClaimsStoreMemory from "../../../testkit/Layers/ClaimsStoreMemory.ts"
import * as KubeApiClientNode from "../../../src/Layers/KubeApiClientNode.ts"
import * as OwnerResolverKube from "../../../src/Programs/Authorization/OwnerResolverKube.ts"
import { ProviderEventsPubSubLayer } from "../../../src/Layers/ProviderEventsPubSub.ts"
import * as ProviderLive from "../../../src/Programs/Provider/ProviderLive.ts"
import * as SandboxdClientHttp from "../../../src/Layers/SandboxdClientHttp.ts"
import type { AppConfigShape } from "../../../src/Schemas/Config.ts"
import { testConfig } from "../../../testkit/Config.ts"
import { AppConfig } from "../../../src/Services/Config.ts"
import { EventRecorder, type EventType, type InvolvedObject } from "../../../src/Services/EventRecorder.ts"
import { ApiserverSim, kubeconfigYaml } from "../../../testkit/Simulators/Apiserver/Server.ts"
import { SandboxdSim, type SandboxdSimOptions } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { SandboxdSimServer } from "../../../testkit/Simulators/Sandboxd/Server.ts"
import * as FaultProxy from "../../support/FaultProxy.ts"
import type { FailpointsShape } from "../../../src/Services/Failpoints.ts"
import { decorated } from "../../support/Failpoints.ts"

export const Template = "python"

export interface RecordedEvent {
  readonly involved: InvolvedObject
  readonly type: EventType
  readonly reason: string
  readonly message: string
}

/** Every event handed to the recorder, in order. */
export class RecordedEvents extends Context.Service<RecordedEvents, {
  readonly all: Effect.Effect<ReadonlyArray<RecordedEvent>>
}>()("test/RecordedEvents") {}

const capturingRecorder = Layer.effectContext(
  Effect.gen(function*() {
    const events = yield* Ref.make<ReadonlyArray<RecordedEvent>>([])
    return Context.make(
      EventRecorder,
      EventRecorder.of({
        record: (involved, type, reason, message) => Ref.update(events, (all) => [...all, { involved, type, reason, message }]),
        forget: () => Effect.void
      })
    ).pipe(Context.add(RecordedEvents, RecordedEvents.of({ all: Ref.get(events) })))
  })
)

/** The API server simulator on loopback, its kubeconfig in a temporary directory removed at the end. */
export const apiserver = Layer.unwrap(
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "vk-auth-"))),
      (d) => Effect.sync(() => NodeFs.rmSync(d, { recursive: true, force: true }))
    )
    return ApiserverSim.layer({ token: "sim-token", kubeconfigPath: NodePath.join(dir, "kubeconfig"), bookmarkIntervalMs: 0 })
  })
)

/** The live KubeApi (default 30 s call timeout) against the simulator, and the live OwnerResolver on it. */
export const ownerResolverWorld = (config: Partial<AppConfigShape> = {}) =>
  Layer.unwrap(
    Effect.gen(function*() {
      const sim = yield* ApiserverSim
      const appConfig = AppConfig.layer(testConfig({ kubeconfig: sim.kubeconfigPath ?? "", ...config }))
      const kube = KubeApiClientNode.layer.pipe(Layer.provideMerge(appConfig))
      return OwnerResolverKube.layer.pipe(Layer.provideMerge(kube))
    })
  ).pipe(Layer.provideMerge(apiserver))

/**
 * The same, with a fault proxy between the client and the simulator (see test/support/FaultProxy.ts):
 * the kubeconfig names the proxy, which the test reaches through `OwnerProxy`.
 */
export class OwnerProxy extends Context.Service<OwnerProxy, FaultProxy.FaultProxy>()("test/OwnerProxy") {}

export const ownerResolverWorldViaProxy = Layer.unwrap(
  Effect.gen(function*() {
    const sim = yield* ApiserverSim
    const proxy = yield* FaultProxy.make(sim.url)
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "vk-auth-proxy-"))),
      (d) => Effect.sync(() => NodeFs.rmSync(d, { recursive: true, force: true }))
    )
    const kubeconfig = NodePath.join(dir, "kubeconfig")
    NodeFs.writeFileSync(kubeconfig, kubeconfigYaml(proxy.url, "sim-token"), { mode: 0o600 })
    const appConfig = AppConfig.layer(testConfig({ kubeconfig }))
    const kube = KubeApiClientNode.layer.pipe(Layer.provideMerge(appConfig))
    return OwnerResolverKube.layer.pipe(Layer.provideMerge(kube), Layer.merge(Layer.succeed(OwnerProxy, proxy)))
  })
).pipe(Layer.provideMerge(apiserver))

export interface DeleteWorldOptions {
  readonly sim?: Partial<SandboxdSimOptions>
  readonly config?: Partial<AppConfigShape>
  /** Armed failpoints (test/support/Failpoints.ts), wrapping the sandboxd client and the store. */
  readonly failpoints?: FailpointsShape
}

/** The provider world of `../Provider/harness.ts`, with the live owner client instead of none. */
export const deleteWorld = (options: DeleteWorldOptions = {}) => {
  const sandboxd = SandboxdSimServer.layer({ host: "127.0.0.1", port: 0 }).pipe(
    Layer.provideMerge(SandboxdSim.layer({
      rootToken: "",
      pools: [{ template: Template, net: "none", size: "small", target: 8 }],
      nanosecondDeadlines: false,
      ...options.sim
    }))
  )
  const clients = Layer.unwrap(
    Effect.gen(function*() {
      const kubeSim = yield* ApiserverSim
      const sandboxdSim = yield* SandboxdSimServer
      const appConfig = AppConfig.layer(
        testConfig({ kubeconfig: kubeSim.kubeconfigPath ?? "", sandboxdUrl: sandboxdSim.url, ...options.config })
      )
      const kube = KubeApiClientNode.layer.pipe(Layer.provideMerge(appConfig))
      return Layer.mergeAll(OwnerResolverKube.layer, SandboxdClientHttp.layer).pipe(Layer.provideMerge(kube))
    })
  ).pipe(Layer.provideMerge(Layer.merge(apiserver, sandboxd)))
  const deps = Layer.mergeAll(ClaimsStoreMemory.layer(), ProviderEventsPubSubLayer, clients, capturingRecorder).pipe(
    Layer.provideMerge(ClaimTableRefLayer)
  )
  return ProviderLive.layer.pipe(Layer.provideMerge(decorated(options.failpoints, deps)))
}
