/**
 * The real node's kubelet (built by test/k8s/build.sh) on loopback: API and health ports and node
 * IP 127.0.0.1, every directory under the node's own. It runs here by accepting cgroup v1, using
 * cgroupfs without QoS cgroups and skipping the swap check; its API authenticates by TokenReview
 * and authorizes by SubjectAccessReview, as a cluster's kubelets do. It has a scope of its own,
 * so a scenario can `restart` it on the same directories.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import * as YAML from "yaml"
import { freePorts } from "../../../../testkit/Demo/Harness.ts"
import { type Managed, startProcess } from "../../fixture/Processes.ts"
import { NodeStepFailed } from "./Commands.ts"
import { nodeTunables } from "./Tunables.ts"

export interface KubeletOptions {
  readonly binDir: string
  readonly dir: string
  readonly nodeName: string
  readonly kubeconfig: string
  readonly containerdSocket: string
}

export interface Kubelet {
  /** https://127.0.0.1:<port>, the kubelet API (/stats/summary, /pods). */
  readonly url: string
  readonly current: () => Managed
  /** SIGTERM (then SIGKILL) and a new kubelet process on the same configuration. */
  readonly restart: Effect.Effect<void, NodeStepFailed>
}

const configYaml = (options: KubeletOptions, port: number, healthzPort: number): string =>
  YAML.stringify({
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    address: "127.0.0.1",
    port,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort,
    containerRuntimeEndpoint: `unix://${options.containerdSocket}`,
    // This kind of machine: cgroup v1 (refused by default since 1.35), no systemd, swap not checked.
    failCgroupV1: false,
    cgroupDriver: "cgroupfs",
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    failSwapOn: false,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: {} },
    authorization: { mode: "Webhook" },
    podLogsDir: join(options.dir, "pod-logs"),
    volumePluginDir: join(options.dir, "volume-plugins"),
    // The imported images can never be pulled again: no image garbage collection.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // The machine's disk is shared with builds; eviction only when really short.
    evictionHard: { "memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%" },
    // Pod status reaches the apiserver quickly (the default sync period is a minute).
    syncFrequency: "10s"
  })

/** The kubelet for the surrounding scope, once its health port answers. */
export const startKubelet = (options: KubeletOptions): Effect.Effect<Kubelet, NodeStepFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const { dir } = options
    for (const sub of ["root", "certs", "pod-logs", "volume-plugins"]) {
      yield* Effect.try({
        try: () => mkdirSync(join(dir, sub), { recursive: true, mode: 0o700 }),
        catch: (cause) => new NodeStepFailed({ message: `creating ${join(dir, sub)}: ${String(cause)}` })
      })
    }
    const [port = 0, healthzPort = 0] = yield* freePorts(2).pipe(Effect.mapError((e) => new NodeStepFailed({ message: e.message })))
    const configFile = join(dir, "kubelet.yaml")
    yield* Effect.try({
      try: () => writeFileSync(configFile, configYaml(options, port, healthzPort), { mode: 0o600 }),
      catch: (cause) => new NodeStepFailed({ message: `writing ${configFile}: ${String(cause)}` })
    })
    const args = [
      `--config=${configFile}`,
      `--kubeconfig=${options.kubeconfig}`,
      `--root-dir=${join(dir, "root")}`,
      `--cert-dir=${join(dir, "certs")}`,
      `--hostname-override=${options.nodeName}`,
      "--node-ip=127.0.0.1",
      "--v=2"
    ]
    const logFile = join(dir, "kubelet.log")
    const parent = yield* Scope.Scope
    // The kernel settings the kubelet sets for the whole machine (./Tunables.ts): recorded before
    // the first kubelet starts; added before its scope is forked, so put back after the last stopped.
    const tunables = nodeTunables()
    tunables.record()
    yield* Effect.addFinalizer(() => Effect.sync(tunables.restore))
    const start = Effect.gen(function*() {
      const scope = yield* Scope.fork(parent)
      const managed = yield* startProcess("kubelet", join(options.binDir, "kubelet"), args, logFile).pipe(
        Scope.provide(scope),
        Effect.mapError((e) => new NodeStepFailed({ message: e.message }))
      )
      yield* waitHealthy(managed, healthzPort, logFile)
      return { scope, managed }
    })
    let current = yield* start
    return {
      url: `https://127.0.0.1:${port}`,
      current: () => current.managed,
      restart: Effect.gen(function*() {
        yield* Scope.close(current.scope, Exit.void)
        current = yield* start
      })
    }
  })

const waitHealthy = (managed: Managed, port: number, logFile: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 120_000
    while (Date.now() < deadline) {
      if (managed.child.exitCode !== null || managed.child.signalCode !== null) {
        return yield* new NodeStepFailed({ message: `the kubelet exited (${String(managed.child.exitCode)}); see ${logFile}` })
      }
      const ok = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status === 200, () => false)
      )
      if (ok) return
      yield* Effect.sleep("500 millis")
    }
    return yield* new NodeStepFailed({ message: `the kubelet's /healthz did not answer in 120 s; see ${logFile}` })
  })
