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

/**
 * Why a kubeconfig file could not be loaded, without its content. The YAML parser's message
 * carries a code frame of the lines around the fault (a token line among them) and can quote a
 * tag or alias name from the file; only its leading plain words and the position are kept. A
 * read error keeps its code (ENOENT, EACCES, …). client-node's own checks name a missing field
 * (`users[0].name is missing`) or a duplicate entry of merged files; any other message is not
 * repeated.
 */
export const describeLoadFailure = (cause: unknown): string => {
  if (cause instanceof Error && cause.name === "YAMLException") {
    const reason = "reason" in cause && typeof cause.reason === "string" ? cause.reason : ""
    const words = /^[A-Za-z][A-Za-z ,-]*/.exec(reason)?.[0].replace(/[ ,-]+$/, "") ?? ""
    const mark = "mark" in cause && typeof cause.mark === "object" && cause.mark !== null ? cause.mark : {}
    const line = "line" in mark && typeof mark.line === "number" ? mark.line + 1 : undefined
    const column = "column" in mark && typeof mark.column === "number" ? mark.column + 1 : undefined
    const where = line === undefined ? "" : ` at line ${line}${column === undefined ? "" : `, column ${column}`}`
    return `not valid YAML${where}${words === "" ? "" : ` (${words})`}`
  }
  if (cause instanceof Error && "code" in cause && typeof cause.code === "string" && /^E[A-Z]+$/.test(cause.code)) {
    return `cannot read it (${cause.code})`
  }
  const message = cause instanceof Error ? cause.message : ""
  const known = /^(clusters|users|contexts)\[\d+\](\.[A-Za-z-]+)+ is missing$/.test(message) ||
    /^Duplicate (cluster|user|context): [\w.:@-]{1,253}$/.test(message)
  return known
    ? `not a valid kubeconfig: ${message}`
    : "not a valid kubeconfig"
}

/** Each file is named on its own in a failure, so a merged $KUBECONFIG points at the broken one. */
const fromFiles = (paths: ReadonlyArray<string>, what: string) =>
  Effect.gen(function*() {
    const load = (path: string) =>
      Effect.try({
        try: () => {
          const next = new KubeConfig()
          next.loadFromFile(path)
          return next
        },
        catch: (cause) => new KubeConfigMissing({ message: `${what}: ${path}: ${describeLoadFailure(cause)}` })
      })
    const kubeConfig = yield* load(paths[0]!)
    for (const extra of paths.slice(1)) {
      const next = yield* load(extra)
      yield* Effect.try({
        try: () => kubeConfig.mergeConfig(next, true),
        catch: (cause) => new KubeConfigMissing({ message: `${what}: ${extra}: ${describeLoadFailure(cause)}` })
      })
    }
    return kubeConfig
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
      const kubeConfig = yield* fromFiles([sources.explicitPath], "kubeconfig")
      const what = `kubeconfig ${sources.explicitPath}`
      return yield* requireCluster({ kubeConfig, source: "explicit" }, what)
    }
    const host = sources.env["KUBERNETES_SERVICE_HOST"] ?? ""
    const tokenPath = `${sources.rootPrefix}${serviceAccountDir}/token`
    if (host !== "" && NodeFs.existsSync(tokenPath)) {
      return { kubeConfig: inCluster(sources, host), source: "in-cluster" }
    }
    const fromEnv = (sources.env["KUBECONFIG"] ?? "").split(NodePath.delimiter).filter((path) => path !== "")
    if (fromEnv.length > 0) {
      const kubeConfig = yield* fromFiles(fromEnv, "$KUBECONFIG")
      const what = `$KUBECONFIG ${fromEnv.join(NodePath.delimiter)}`
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
