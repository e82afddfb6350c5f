/**
 * The real node's container runtime: a containerd of its own (Debian's containerd 1.6 with runc
 * 1.1), with its own root, state, runc root and socket under the node's directory, so it never
 * touches the Docker engine's containerd. Its CRI plugin runs host-network Pods only: a CNI
 * directory with one loopback-only network list, a sandbox image built here (nothing can be
 * pulled), and `restrict_oom_score_adj` because this kind of machine refuses a negative
 * oom_score_adj even for root (without it runc fails every sandbox with "can't get final child's
 * PID from pipe").
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schedule, type Scope } from "effect"
import { type Managed, startProcess } from "../../fixture/Processes.ts"
import { NodeStepFailed, pipeline, run, shellWord } from "./Commands.ts"

/** The CRI plugin's containerd namespace, where the kubelet's images and containers live. */
export const CriNamespace = "k8s.io"

export interface Containerd {
  readonly socket: string
  readonly process: Managed
  /** `ctr` against this containerd, in the CRI namespace. */
  readonly ctr: (what: string, args: ReadonlyArray<string>) => Effect.Effect<string, NodeStepFailed>
  /** Loads a Docker engine image (`docker save`) into the CRI namespace: no registry involved. */
  readonly importFromDocker: (image: string) => Effect.Effect<void, NodeStepFailed>
  /** Kills and deletes every task and container left in the CRI namespace (the suite's teardown). */
  readonly removeAll: Effect.Effect<void>
}

const configToml = (dir: string, sandboxImage: string, cniDir: string): string =>
  `version = 2
root = ${JSON.stringify(join(dir, "root"))}
state = ${JSON.stringify(join(dir, "state"))}
# /opt/containerd is shared with any other containerd on the host; the other snapshotters are unused.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = ${JSON.stringify(join(dir, "containerd.sock"))}

[ttrpc]
  address = ${JSON.stringify(join(dir, "containerd.sock.ttrpc"))}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${JSON.stringify(sandboxImage)}
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = ${JSON.stringify(join(dir, "runc"))}
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = ${JSON.stringify(cniDir)}
`

/** Enough for the node to report its network ready; only host-network Pods run on it. */
const loopbackNetwork = JSON.stringify({ cniVersion: "0.4.0", name: "vk-test-loopback", plugins: [{ type: "loopback" }] })

const write = (path: string, text: string) =>
  Effect.try({
    try: () => writeFileSync(path, text, { mode: 0o600 }),
    catch: (cause) => new NodeStepFailed({ message: `writing ${path}: ${String(cause)}` })
  })

/** What the machine must have for a real node; the first thing missing, if any. */
export const missingPrerequisite = (): string | undefined => {
  if (process.getuid?.() !== 0) return "the real node needs root (containerd and the kubelet)"
  for (const file of ["/usr/bin/containerd", "/usr/bin/ctr", "/usr/sbin/runc", "/usr/bin/containerd-shim-runc-v2"]) {
    if (!existsSync(file)) return `${file} is missing (Debian's docker.io package brings containerd and runc)`
  }
  if (!existsSync("/usr/lib/cni/loopback")) return "/usr/lib/cni/loopback is missing (Debian's containernetworking-plugins)"
  return undefined
}

/** containerd for the surrounding scope; stopped (and its containers removed) when it closes. */
export const startContainerd = (dir: string, sandboxImage: string): Effect.Effect<Containerd, NodeStepFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const cniDir = join(dir, "cni")
    yield* Effect.try({
      try: () => mkdirSync(cniDir, { recursive: true, mode: 0o700 }),
      catch: (cause) => new NodeStepFailed({ message: `creating ${cniDir}: ${String(cause)}` })
    })
    yield* write(join(cniDir, "10-loopback.conflist"), loopbackNetwork)
    const configFile = join(dir, "containerd.toml")
    yield* write(configFile, configToml(dir, sandboxImage, cniDir))
    const socket = join(dir, "containerd.sock")
    const ctr = (what: string, args: ReadonlyArray<string>) => run(what, "ctr", ["--address", socket, "--namespace", CriNamespace, ...args])
    const removeAll = Effect.gen(function*() {
      const tasks = yield* ctr("listing tasks", ["tasks", "list", "--quiet"])
      for (const id of words(tasks)) {
        yield* ctr(`killing task ${id}`, ["tasks", "kill", "--signal", "SIGKILL", id]).pipe(Effect.ignore)
        yield* ctr(`deleting task ${id}`, ["tasks", "delete", "--force", id]).pipe(Effect.ignore)
      }
      const containers = yield* ctr("listing containers", ["containers", "list", "--quiet"])
      for (const id of words(containers)) yield* ctr(`deleting container ${id}`, ["containers", "delete", id]).pipe(Effect.ignore)
    }).pipe(Effect.ignore)
    const managed = yield* startProcess("containerd", "/usr/bin/containerd", ["--config", configFile, "--log-level", "warn"], join(dir, "containerd.log")).pipe(
      Effect.mapError((e) => new NodeStepFailed({ message: e.message }))
    )
    // Runs before containerd's own finalizer: the shims outlive containerd unless their tasks go first.
    yield* Effect.addFinalizer(() => removeAll)
    yield* ctr("containerd answering", ["version"]).pipe(
      Effect.retry({ times: 120, schedule: Schedule.spaced("250 millis") }),
      Effect.mapError((e) => new NodeStepFailed({ message: `${e.message}\n(containerd log: ${join(dir, "containerd.log")})` }))
    )
    return {
      socket,
      process: managed,
      ctr,
      importFromDocker: (image: string) =>
        pipeline(`importing ${image}`, `docker save ${shellWord(image)} | ctr --address ${shellWord(socket)} --namespace ${CriNamespace} images import -`)
          .pipe(Effect.asVoid),
      removeAll
    }
  })

const words = (text: string): ReadonlyArray<string> => text.split(/\s+/).filter((word) => word !== "")
