/**
 * A real worker node for the cluster scenarios: containerd (./Containerd.ts) and the kubelet
 * (./Kubelet.ts) under one temporary directory, the sandbox image and the project's image loaded
 * into containerd from the Docker engine (no registry), registered as `nodeName` and Ready. When
 * the scope closes: the kubelet stops, every container is removed, containerd stops, whatever the
 * kubelet or containerd left mounted under the directory is unmounted, what they wrote outside it
 * is removed (./HostFootprint.ts), the Node object is deleted and the directory removed.
 */
import { mkdtempSync, readFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { kube } from "../../fixture/Kube.ts"
import { admin, adminGet, eventually } from "../../scenarioHarness.ts"
import { NodeStepFailed, pipeline, run, shellWord } from "./Commands.ts"
import { type Containerd, CriNamespace, missingPrerequisite, startContainerd } from "./Containerd.ts"
import { hostBefore, hostLeftovers, removeHostLeftovers } from "./HostFootprint.ts"
import { type Kubelet, startKubelet } from "./Kubelet.ts"

export interface RealNodeOptions {
  /** test/k8s/build.sh's bin directory (kubelet, pause). */
  readonly binDir: string
  readonly nodeName: string
  readonly kubeconfig: string
  /** Docker engine images the node's Pods run (pullPolicy Never). */
  readonly images: ReadonlyArray<string>
}

export interface RealNode {
  readonly nodeName: string
  /** The node's directory: a stand-in for the host's filesystem under `hostRoot`. */
  readonly dir: string
  /** A host path of this node (hostPath volumes), inside its directory. */
  readonly hostRoot: string
  readonly containerd: Containerd
  readonly kubelet: Kubelet
}

interface NodeView {
  readonly status?: { readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string }> }
}

export const nodeReady = (name: string) =>
  Effect.map(
    adminGet<NodeView>(`/api/v1/nodes/${name}`),
    (node) => node?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true
  )

/** The sandbox ("pause") image: the pause binary alone, tagged by its content. */
const buildSandboxImage = (binDir: string) =>
  Effect.gen(function*() {
    const sum = yield* run("hashing the pause binary", "sha256sum", [join(binDir, "pause")])
    const image = `localhost/vk-test-pause:${sum.slice(0, 12)}`
    yield* pipeline(
      "building the sandbox image",
      `docker image inspect ${shellWord(image)} >/dev/null 2>&1 || tar -C ${shellWord(binDir)} -c pause | docker import --change 'ENTRYPOINT ["/pause"]' - ${
        shellWord(image)
      } >/dev/null`
    )
    return image
  })

const tempDirUnder = (parent: string, prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(parent, prefix))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  )

/** Mount points under `dir` (deepest first), from this mount namespace's table. */
const mountsUnder = (dir: string): ReadonlyArray<string> =>
  readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => (line.split(" ")[4] ?? "").replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .filter((point) => point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length)

export const startRealNode = (options: RealNodeOptions) =>
  Effect.gen(function*() {
    const missing = missingPrerequisite()
    if (missing !== undefined) return yield* new NodeStepFailed({ message: `no real node on this machine: ${missing}` })
    // Under run.sh's state directory, whose clean-up also ends containers a killed vitest left;
    // VK_K8S_KEEP_STATE keeps it (logs, the kubelet's and containerd's state) for a look.
    const parent = process.env["VK_K8S_STATE"] || tmpdir()
    const dir = process.env["VK_K8S_KEEP_STATE"] ? mkdtempSync(join(parent, "realnode-")) : yield* tempDirUnder(parent, "realnode-")
    // Runs after the kubelet and containerd have stopped (finalizers run in reverse).
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        for (const point of mountsUnder(dir)) yield* run(`unmounting ${point}`, "umount", ["--lazy", point]).pipe(Effect.ignore)
        const { core } = yield* admin
        yield* kube("delete the host node", () => core.deleteNode({ name: options.nodeName }))
      }).pipe(Effect.ignore)
    )
    // Also after the kubelet and containerd have stopped: what they wrote outside the directory
    // (./HostFootprint.ts) is taken back, and anything still there fails the suite's teardown.
    const before = hostBefore(CriNamespace)
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        removeHostLeftovers(before, dir)
        const left = hostLeftovers(before, dir)
        return left.length === 0
          ? Effect.void
          : Effect.die(new NodeStepFailed({ message: `the real node left on the machine: ${left.join(", ")}` }))
      })
    )
    const sandboxImage = yield* buildSandboxImage(options.binDir)
    const containerd = yield* startContainerd(join(dir, "containerd"), sandboxImage)
    for (const image of [sandboxImage, ...options.images]) yield* containerd.importFromDocker(image)
    const kubelet = yield* startKubelet({
      binDir: options.binDir,
      dir: join(dir, "kubelet"),
      nodeName: options.nodeName,
      kubeconfig: options.kubeconfig,
      containerdSocket: containerd.socket
    })
    yield* eventually(`the node ${options.nodeName} Ready`, nodeReady(options.nodeName), 120_000).pipe(
      Effect.catchDefect((defect) =>
        Effect.fail(new NodeStepFailed({ message: `${String(defect)}; kubelet log ${join(dir, "kubelet", "kubelet.log")}` })))
    )
    const node: RealNode = { nodeName: options.nodeName, dir, hostRoot: join(dir, "host"), containerd, kubelet }
    return node
  })
