/**
 * Which kubeconfig the daemon uses: an explicit `--kubeconfig` wins,
 * else the in-cluster service account, else `$KUBECONFIG`. No fallback to `~/.kube/config`:
 * a daemon should not silently pick up whatever a developer's home directory holds.
 * Nothing usable is a typed startup error.
 */
import { KubeConfig } from "@kubernetes/client-node"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodeNet from "node:net"
import * as NodePath from "node:path"
import { KubeConfigMissing } from "../Services/KubeApi.ts"

export const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

export interface KubeConfigSources {
  /** `AppConfig.kubeconfig`; "" = not given. */
  readonly explicitPath: string
  /** The environment to read `KUBERNETES_SERVICE_HOST`/`_PORT` and `KUBECONFIG` from. */
  readonly env: Readonly<Record<string, string | undefined>>
  /** Prefix for the service-account directory (tests point it at a temp dir); "" in production. */
  readonly rootPrefix: string
}

export type KubeConfigSource = "explicit" | "in-cluster" | "KUBECONFIG"

export interface LoadedKubeConfig {
  readonly kubeConfig: KubeConfig
  readonly source: KubeConfigSource
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const fromFiles = (paths: ReadonlyArray<string>, what: string) =>
  Effect.try({
    try: () => {
      const kubeConfig = new KubeConfig()
      kubeConfig.loadFromFile(paths[0]!)
      for (const extra of paths.slice(1)) {
        const next = new KubeConfig()
        next.loadFromFile(extra)
        kubeConfig.mergeConfig(next, true)
      }
      return kubeConfig
    },
    catch: (cause) => new KubeConfigMissing({ message: `${what}: ${describe(cause)}` })
  })

/**
 * The in-cluster config, built from `sources.env` (client-node's `loadFromCluster` reads
 * `process.env` itself). The token is re-read from the file by client-node's tokenFile provider.
 */
const inCluster = (sources: KubeConfigSources, host: string): KubeConfig => {
  const dir = `${sources.rootPrefix}${serviceAccountDir}`
  const port = sources.env["KUBERNETES_SERVICE_PORT"] ?? "443"
  const serverHost = NodeNet.isIPv6(host) ? `[${host}]` : host
  const kubeConfig = new KubeConfig()
  kubeConfig.loadFromOptions({
    clusters: [{ name: "inCluster", server: `https://${serverHost}:${port}`, caFile: `${dir}/ca.crt`, skipTLSVerify: false }],
    users: [{ name: "inClusterUser", authProvider: { name: "tokenFile", config: { tokenFile: `${dir}/token` } } }],
    contexts: [{ name: "inClusterContext", cluster: "inCluster", user: "inClusterUser" }],
    currentContext: "inClusterContext"
  })
  return kubeConfig
}

const requireCluster = (loaded: LoadedKubeConfig, what: string) =>
  loaded.kubeConfig.getCurrentCluster() === null
    ? Effect.fail(new KubeConfigMissing({ message: `${what}: no current context with a cluster` }))
    : Effect.succeed(loaded)

export const resolve = (sources: KubeConfigSources): Effect.Effect<LoadedKubeConfig, KubeConfigMissing> =>
  Effect.gen(function*() {
    if (sources.explicitPath !== "") {
      const what = `kubeconfig ${sources.explicitPath}`
      const kubeConfig = yield* fromFiles([sources.explicitPath], what)
      return yield* requireCluster({ kubeConfig, source: "explicit" }, what)
    }
    const host = sources.env["KUBERNETES_SERVICE_HOST"] ?? ""
    const tokenPath = `${sources.rootPrefix}${serviceAccountDir}/token`
    if (host !== "" && NodeFs.existsSync(tokenPath)) {
      return { kubeConfig: inCluster(sources, host), source: "in-cluster" }
    }
    const fromEnv = (sources.env["KUBECONFIG"] ?? "").split(NodePath.delimiter).filter((path) => path !== "")
    if (fromEnv.length > 0) {
      const what = `$KUBECONFIG ${fromEnv.join(NodePath.delimiter)}`
      const kubeConfig = yield* fromFiles(fromEnv, what)
      return yield* requireCluster({ kubeConfig, source: "KUBECONFIG" }, what)
    }
    return yield* new KubeConfigMissing({
      message: "no kubeconfig: pass --kubeconfig, run in-cluster (service account token and " +
        "KUBERNETES_SERVICE_HOST), or set $KUBECONFIG"
    })
  })

/** `resolve` against the real process environment and filesystem. */
export const load = (explicitPath: string): Effect.Effect<LoadedKubeConfig, KubeConfigMissing> =>
  Effect.suspend(() => resolve({ explicitPath, env: process.env, rootPrefix: "" }))
