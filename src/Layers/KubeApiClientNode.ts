/**
 * The live `KubeApi`: @kubernetes/client-node 2.0.1 serves only the kubeconfig, auth and TLS;
 * every request is built in `Kube/` and its JSON decoded with the Schemas of `src/Schemas`, so
 * none of client-node's generated API classes or its model serializer are loaded. The parts:
 * `Kube/Transport.ts` (lanes, limiters, timeouts, spans), `Kube/Body.ts` (reading replies),
 * `Kube/PodList.ts` and `Kube/PodWatch.ts`, `Kube/Endpoints/` (one module per resource) and
 * `Kube/Status.ts` (HTTP status and Status body → typed error).
 */
import type { KubeConfig } from "@kubernetes/client-node"
import { Effect, Layer, Option } from "effect"
import { redactUrlUserinfo } from "../Schemas/UrlRedaction.ts"
import { BuildInfo } from "../Services/BuildInfo.ts"
import { AppConfig } from "../Services/Config.ts"
import { KubeApi, KubeConfigMissing, type KubeUnavailable } from "../Services/KubeApi.ts"
import * as Events from "../Kube/Endpoints/Events.ts"
import * as NodeInventory from "../Kube/Endpoints/NodeInventory.ts"
import * as Nodes from "../Kube/Endpoints/Nodes.ts"
import * as Owners from "../Kube/Endpoints/Owners.ts"
import * as Pods from "../Kube/Endpoints/Pods.ts"
import * as Reviews from "../Kube/Endpoints/Reviews.ts"
import * as KubeConfigLoader from "../Kube/KubeConfigLoader.ts"
import * as PodList from "../Kube/PodList.ts"
import * as PodWatch from "../Kube/PodWatch.ts"
import * as Transport from "../Kube/Transport.ts"

export type ClientOptions = Transport.ClientOptions
export const defaultOptions = Transport.defaultOptions

/** Builds the live service on an already-loaded kubeconfig. */
export const make = (kubeConfig: KubeConfig, options: ClientOptions): Effect.Effect<KubeApi["Service"], KubeUnavailable> =>
  Effect.map(Transport.make(kubeConfig, options), (transport) =>
    KubeApi.of({
      ...PodList.make(transport),
      ...PodWatch.make(transport),
      ...Pods.make(transport),
      ...Nodes.make(transport),
      ...Events.make(transport),
      ...Owners.make(transport),
      ...NodeInventory.make(transport),
      ...Reviews.make(transport)
    }))

/** The current cluster's server URL (as a URL writes it) when it holds a user name or password. */
const serverWithCredentials = (kubeConfig: KubeConfig): string | undefined => {
  const server = kubeConfig.getCurrentCluster()?.server
  if (server === undefined || !URL.canParse(server)) return undefined
  const url = new URL(server)
  return Transport.carriesCredentials(url) ? url.href : undefined
}

/** The live layer: kubeconfig per `AppConfig.kubeconfig` (else in-cluster, else $KUBECONFIG), limiter per qps/burst. */
export const layer = Layer.effect(
  KubeApi,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const { kubeConfig } = yield* KubeConfigLoader.load(config.kubeconfig)
    // Refused at start, not at each request: the user info of a server URL is never sent, and
    // every call would fail the same way while the daemon waited for an apiserver that answers
    // (node registration waits for one; CHK-08 — ensure the node).
    const server = serverWithCredentials(kubeConfig)
    if (server !== undefined) {
      return yield* new KubeConfigMissing({
        message: `the kubeconfig's server URL carries credentials, which are never sent (basic auth belongs in the kubeconfig's user): ${redactUrlUserinfo(server)}`
      })
    }
    const build = yield* Effect.serviceOption(BuildInfo)
    const userAgent = Option.match(build, { onNone: () => "vk-sandbox", onSome: (info) => `vk-sandbox/${info.version}` })
    return yield* make(kubeConfig, { ...defaultOptions, qps: config.kubeApiQps, burst: config.kubeApiBurst, userAgent }).pipe(
      // only a kubeconfig without a usable cluster gets here (the loader checks for one)
      Effect.mapError((error) => new KubeConfigMissing({ message: error.message }))
    )
  })
)
