/**
 * The container tests' world: both simulators in this process (the apiserver behind TLS, as a
 * cluster's is), a service-account directory and the sandboxd token Secret as the kubelet would
 * mount them, and the chart's containers run from the image with `docker run` (./ChartPod.ts).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { type Duration, Effect, Option, type Scope } from "effect"
import {
  type Cluster,
  freePorts,
  getPod,
  httpGet,
  readClaimsFile,
  startCluster,
  StepFailed,
  waitFor
} from "../../testkit/Demo/Harness.ts"
import { generatePki, type Pki } from "../k8s/fixture/Pki.ts"
import type { Finished } from "../support/Process.ts"
import { type Binding, type ChartError, dockerRun, renderPod } from "./ChartPod.ts"
import { type Container, type DockerFailed, runContainer, runToEnd } from "./Docker.ts"
import { tlsFront } from "./TlsFront.ts"

/** The host node the DaemonSet's Pod runs on, and the virtual node the chart names after it. */
export const hostNode = "worker-1"
export const virtualNode = `${hostNode}-sandboxd`
/** The daemon's user and group in the chart (podSecurityContext), read back from the render. */
export const daemonUid = 65532

export interface World {
  readonly cluster: Cluster
  readonly pki: Pki
  readonly apiserverPort: number
  readonly serviceAccountDir: string
  readonly secretDir: string
  /** The host's vk-cocoon TLS directory (root 0700, as vk-cocoon keeps it): empty unless a test writes a pair. */
  readonly vkCocoonDir: string
  /** The memory volume prepare-state copies vk-cocoon's pair into (the kubelet makes an emptyDir 0777). */
  readonly tlsCopyDir: string
}

const writeFile = (file: string, content: string, mode: number) => {
  fs.writeFileSync(file, content, { mode })
  fs.chmodSync(file, mode)
}

export interface WorldOptions {
  readonly warmPerPool?: number
  /** The apiserver's bearer token ("" = none: the TLS front then asks for a client certificate). */
  readonly apiToken?: string
}

export const startWorld = (options: WorldOptions = {}): Effect.Effect<World, StepFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const cluster = yield* startCluster({
      nodeName: virtualNode,
      namespace: "team-a",
      warmPerPool: options.warmPerPool ?? 60,
      ...(options.apiToken === undefined ? {} : { apiToken: options.apiToken })
    })
    const pki = yield* generatePki.pipe(Effect.mapError((e) => new StepFailed({ step: "setup", message: e.message })))
    const front = yield* tlsFront(cluster.apiserver.port, pki, { requireClientCert: cluster.apiToken === "" })
    // the projected service-account volume (files 0644, as the kubelet writes them)
    const serviceAccountDir = path.join(cluster.dir, "projected-serviceaccount")
    fs.mkdirSync(serviceAccountDir)
    writeFile(path.join(serviceAccountDir, "token"), cluster.apiToken, 0o644)
    writeFile(path.join(serviceAccountDir, "ca.crt"), pki.caCertPem, 0o644)
    writeFile(path.join(serviceAccountDir, "namespace"), "vk-sandbox", 0o644)
    // the sandboxd token Secret: defaultMode 0400, and fsGroup makes it the group's (0440)
    const secretDir = path.join(cluster.dir, "secret-sandboxd-token")
    fs.mkdirSync(secretDir)
    writeFile(path.join(secretDir, "token"), fs.readFileSync(cluster.tokenFile, "utf8").trim(), 0o440)
    fs.chownSync(path.join(secretDir, "token"), 0, daemonUid)
    const vkCocoonDir = path.join(cluster.dir, "etc-cocoon-vk-tls")
    fs.mkdirSync(vkCocoonDir, { mode: 0o700 })
    const tlsCopyDir = path.join(cluster.dir, "emptydir-tls")
    fs.mkdirSync(tlsCopyDir)
    fs.chmodSync(tlsCopyDir, 0o777)
    return { cluster, pki, apiserverPort: front.port, serviceAccountDir, secretDir, vkCocoonDir, tlsCopyDir }
  })

/** A new host directory for the state hostPath, as the kubelet's DirectoryOrCreate makes it (root, 0755). */
export const newStateDir = (world: World, name: string): string => {
  const dir = path.join(world.cluster.dir, name)
  fs.mkdirSync(dir, { mode: 0o755 })
  fs.chmodSync(dir, 0o755)
  return dir
}

const fieldValues = { "spec.nodeName": hostNode, "status.hostIP": "127.0.0.1" }

const binding = (world: World, stateDir: string, overrides?: Binding["overrides"]): Binding => ({
  volumes: {
    state: stateDir,
    "sandboxd-token": world.secretDir,
    // kubelet.tls.source vkCocoon (the default): the host's directory of the pair, both halves in it.
    "host-tls-cert": world.vkCocoonDir,
    "host-tls-key": world.vkCocoonDir,
    tls: world.tlsCopyDir
  },
  serviceAccount: { dir: world.serviceAccountDir, host: "127.0.0.1", port: world.apiserverPort },
  fieldValues,
  ...(overrides === undefined ? {} : { overrides })
})

export interface RunningDaemon {
  readonly container: Container
  readonly metricsUrl: string
  /** The chart's terminationGracePeriodSeconds. */
  readonly graceSeconds: number
  /** The time `docker run` was issued (ms since the epoch). */
  readonly startedAt: number
}

/**
 * The chart's daemon container on `stateDir`, against the world's simulators; removed with the
 * scope. `extra` adds docker flags and daemon arguments to the chart's (a kubeconfig's mount).
 */
export const startDaemon = (
  world: World,
  stateDir: string,
  overrides?: Binding["overrides"],
  extra: { readonly runArgs: ReadonlyArray<string>; readonly args: ReadonlyArray<string> } = { runArgs: [], args: [] }
): Effect.Effect<RunningDaemon, StepFailed | ChartError | DockerFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const [kubeletPort = 0, metricsPort = 0] = yield* freePorts(2)
    const pod = yield* renderPod({
      "kubelet.port": kubeletPort,
      "metrics.port": metricsPort,
      "sandboxd.url": world.cluster.sandboxdUrl,
      "sandboxd.token.value": fs.readFileSync(path.join(world.secretDir, "token"), "utf8")
    })
    const run = yield* dockerRun(pod, "vk-sandbox", binding(world, stateDir, overrides))
    const startedAt = Date.now()
    const container = yield* runContainer("daemon", [...run.runArgs, ...extra.runArgs], [...run.args, ...extra.args])
    return { container, metricsUrl: `http://127.0.0.1:${metricsPort}`, graceSeconds: pod.graceSeconds, startedAt }
  })

/** The chart's prepare-state init container on `stateDir`, run to its end. */
export const prepareState = (world: World, stateDir: string): Effect.Effect<Finished, ChartError> =>
  Effect.gen(function*() {
    const pod = yield* renderPod({})
    const run = yield* dockerRun(pod, "prepare-state", binding(world, stateDir))
    return yield* runToEnd(run.runArgs, run.args)
  })

/** Waits for /readyz to answer 200; the time it did. */
export const ready = (daemon: RunningDaemon, timeout: Duration.Input = "60 seconds"): Effect.Effect<number, StepFailed> =>
  waitFor("ready", "/readyz to answer 200", Effect.map(httpGet(`${daemon.metricsUrl}/readyz`), (r) =>
    Option.isSome(r) && r.value.status === 200 ? Option.some(Date.now()) : Option.none()), { timeout })

/** The world's cluster as seen through another state directory (for the claims file helpers). */
export const withState = (world: World, stateDir: string): Cluster => ({ ...world.cluster, statePath: path.join(stateDir, "claims.json") })

/** Each Pod's claim id once all are Running (the claims file holds a row for each). */
export const allRunning = (world: World, stateDir: string, names: ReadonlyArray<string>, timeout: Duration.Input = "120 seconds") =>
  waitFor("running", `${names.length} Pods Running with a row in the claims file`, Effect.sync(() => {
    const rows = readClaimsFile(withState(world, stateDir))
    const ids: Array<readonly [string, string]> = []
    for (const name of names) {
      const pod = Option.getOrUndefined(getPod(world.cluster, name))
      const row = rows[`${world.cluster.namespace}/${name}`]
      if (pod?.phase !== "Running" || row === undefined || row["id"] !== pod.claimId) return Option.none()
      ids.push([name, pod.claimId])
    }
    return Option.some(new Map(ids))
  }), {
    timeout,
    describe: () => names.map((n) => `${n}=${Option.getOrUndefined(getPod(world.cluster, n))?.phase ?? "absent"}`).slice(0, 8).join(" ")
  })
