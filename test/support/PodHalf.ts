/**
 * The daemon's pod half as `src/Daemon.ts` composes it, without the node, the kubelet, the loops,
 * the token-file follower and the metrics: the live wire (sandboxd HTTP client and KubeApi, and
 * what tells the pod controller sandboxd answers again), the
 * claims file store, the provider with the live owner resolver and event recorder, and the claims
 * startup, over the real claim table. The in-memory pod-controller world and the real-cluster
 * scenarios both build on it, so the two cannot drift apart.
 */
import { Layer } from "effect"
import * as ClaimsStoreFile from "../../src/Layers/ClaimsStoreFile.ts"
import { ClaimTableRefLayer } from "../../src/Layers/ClaimTableRef.ts"
import * as DependencyRecoveryPubSub from "../../src/Layers/DependencyRecoveryPubSub.ts"
import * as EventRecorderKube from "../../src/Layers/EventRecorderKube.ts"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"
import { ProviderEventsPubSubLayer } from "../../src/Layers/ProviderEventsPubSub.ts"
import * as SandboxdClientHttp from "../../src/Layers/SandboxdClientHttp.ts"
import * as OwnerResolverKube from "../../src/Programs/Authorization/OwnerResolverKube.ts"
import * as ProviderLive from "../../src/Programs/Provider/ProviderLive.ts"
import { startClaims } from "../../src/Programs/Provider/Startup.ts"
import type { AppConfigShape } from "../../src/Schemas/Config.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import type { PodLifecycle } from "../../src/Services/PodLifecycle.ts"
import type { SandboxdClient } from "../../src/Services/SandboxdClient.ts"

/**
 * The pod half on `config`, claims loaded and verified when it is built. `around` wraps the
 * PodLifecycle the controller calls (a test counts the calls with it), `aroundSandboxd` the
 * sandboxd client (a test sees which requests are in flight with it).
 */
export const podHalfLayer = (
  config: AppConfigShape,
  around?: Layer.Layer<PodLifecycle, never, PodLifecycle>,
  aroundSandboxd?: Layer.Layer<SandboxdClient, never, SandboxdClient>
) => {
  const sandboxd = aroundSandboxd === undefined ? SandboxdClientHttp.layer : aroundSandboxd.pipe(Layer.provide(SandboxdClientHttp.layer))
  const wire = Layer.mergeAll(sandboxd, KubeApiClientNode.layer).pipe(Layer.provideMerge(DependencyRecoveryPubSub.layer))
  const lifecycle = around === undefined ? ProviderLive.layer : around.pipe(Layer.provide(ProviderLive.layer))
  const provider = lifecycle.pipe(
    Layer.provideMerge(Layer.mergeAll(ProviderEventsPubSubLayer, OwnerResolverKube.layer, EventRecorderKube.layer()))
  )
  return Layer.effectDiscard(startClaims).pipe(
    Layer.provideMerge(provider),
    Layer.provideMerge(ClaimsStoreFile.layer),
    Layer.provideMerge(wire),
    // Below the wire, as in the daemon: the sandboxd client scrubs the table's claim tokens.
    Layer.provideMerge(ClaimTableRefLayer),
    Layer.provideMerge(AppConfig.layer(config))
  )
}
