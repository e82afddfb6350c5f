/**
 * The real-node scenarios' shared world (test/k8s/cluster/RealNode.test.ts): the cluster plane,
 * one real host node with the chart's opt-in label, the sandboxd simulator on the host's
 * loopback, helm and kubectl, and the chart's values for this node; installing and uninstalling
 * are the scenarios' own steps. Everything is on loopback: the daemon reaches the apiserver
 * through the chart's extraEnv, and the values say 127.0.0.1 where the chart would use a host IP.
 */
import { readFileSync } from "node:fs"
import { request } from "node:https"
import { join } from "node:path"
import { Context, Effect, Layer } from "effect"
import * as YAML from "yaml"
import { inject } from "vitest"
import { freePorts } from "../../../../testkit/Demo/Harness.ts"
import * as Wait from "../../../support/Wait.ts"
import { admin, adminGet, rawRequest, startSandboxd } from "../../scenarioHarness.ts"
import { RealNodeHosts } from "../globalSetup.ts"
import { NodeStepFailed } from "./Commands.ts"
import { chartDir, type Tools, tools } from "./Helm.ts"
import { type RealNode, startRealNode } from "./RealNode.ts"

export const HostNode = RealNodeHosts[0]
export const Release = "realnode"
export const Namespace = "vk-realnode"
export const NodeSuffix = "-sandboxd"
export const VirtualNode = `${HostNode}${NodeSuffix}`
export const ContainerName = "vk-sandbox"
/** The chart's opt-in label (values.yaml nodeSelector). */
export const OptInLabel = "sandbox.cocoonstack.io/sandboxd"

/** Polls every half second: each poll is a request to the real apiserver or a file read. */
export const waitFor = <A, E, R>(what: string, check: Effect.Effect<A | undefined | false, E, R>, limitMs = 60_000) =>
  Wait.eventually<A, E, R>(what, check, limitMs, 500)

/** The image the chart runs, split as its values want it. */
export const imageValues = (reference: string) => {
  const at = reference.indexOf("@")
  if (at > 0) return { repository: reference.slice(0, at), digest: reference.slice(at + 1), pullPolicy: "Never" }
  const colon = reference.lastIndexOf(":")
  return colon > reference.lastIndexOf("/")
    ? { repository: reference.slice(0, colon), tag: reference.slice(colon + 1), pullPolicy: "Never" }
    : { repository: reference, tag: "latest", pullPolicy: "Never" }
}

export interface DaemonPod {
  readonly metadata: { readonly name: string; readonly uid: string; readonly deletionTimestamp?: string }
  readonly spec: { readonly nodeName?: string }
  readonly status?: {
    readonly phase?: string
    readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string }>
    readonly initContainerStatuses?: ReadonlyArray<ContainerStatus>
    readonly containerStatuses?: ReadonlyArray<ContainerStatus>
  }
}

export interface ContainerStatus {
  readonly name: string
  readonly ready?: boolean
  readonly restartCount?: number
  readonly containerID?: string
  readonly state?: {
    readonly running?: object
    readonly terminated?: { readonly exitCode?: number; readonly reason?: string }
  }
}

export const podReady = (pod: DaemonPod | undefined): boolean =>
  pod?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true

export const daemonContainer = (pod: DaemonPod | undefined): ContainerStatus | undefined =>
  pod?.status?.containerStatuses?.find((c) => c.name === ContainerName)

export class World extends Context.Service<World, {
  readonly node: RealNode
  readonly sandboxd: Effect.Success<ReturnType<typeof startSandboxd>>
  readonly tools: Tools
  /** The values every install and upgrade starts from. */
  readonly values: Record<string, unknown>
  /**
   * `helm install` or `helm upgrade` of the chart with `values` (kept as `<name>.yaml`), once
   * `helm template` of the same shows every hostPath volume inside the node's directory: the
   * kubelet creates a missing DirectoryOrCreate path, and none may land on the machine itself.
   */
  readonly chart: (verb: "install" | "upgrade", name: string, values: object) => Effect.Effect<void, NodeStepFailed>
  readonly metricsPort: number
  readonly statePath: string
  /** sandboxd's root token, and the host file the chart reads it from. */
  readonly rootToken: string
  readonly tokenFile: string
  readonly pool: string
  /** The daemon's Pods on the host node, not being deleted. */
  readonly daemonPods: Effect.Effect<ReadonlyArray<DaemonPod>, unknown>
  /** The one daemon Pod once it is Ready, else undefined. */
  readonly readyDaemonPod: Effect.Effect<DaemonPod | undefined, unknown>
  /** The host pid of the daemon's container in `pod`. */
  readonly daemonPid: (pod: DaemonPod) => Effect.Effect<number, NodeStepFailed>
  /** GET on the kubelet API as the admin (TokenReview + SubjectAccessReview). */
  readonly kubeletGet: (path: string) => Effect.Effect<unknown, NodeStepFailed>
  /** The claims file's rows (key → claim id) on the hostPath. */
  readonly claimsFile: Effect.Effect<ReadonlyMap<string, string> | undefined>
}>()("vk-test/RealNodeWorld") {}

/** Every hostPath volume's path in a rendered manifest. */
const hostPaths = (doc: unknown): ReadonlyArray<string> => {
  const volumes = (doc as { spec?: { template?: { spec?: { volumes?: ReadonlyArray<{ hostPath?: { path?: string } }> } } } } | null)
    ?.spec?.template?.spec?.volumes ?? []
  return volumes.flatMap((volume) => (volume.hostPath?.path === undefined ? [] : [volume.hostPath.path]))
}

const requestJson = (url: string, token: string) =>
  Effect.callback<unknown, NodeStepFailed>((resume) => {
    // The kubelet's serving certificate is self-signed (its --cert-dir); loopback only.
    const req = request(url, { rejectUnauthorized: false, headers: { authorization: `Bearer ${token}` }, timeout: 10_000 }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        body += chunk
      })
      res.on("end", () => {
        if (res.statusCode !== 200) return resume(Effect.fail(new NodeStepFailed({ message: `GET ${url}: ${res.statusCode} ${body.slice(0, 300)}` })))
        try {
          resume(Effect.succeed(JSON.parse(body) as unknown))
        } catch (cause) {
          resume(Effect.fail(new NodeStepFailed({ message: `GET ${url}: not JSON: ${String(cause)}` })))
        }
      })
    })
    req.on("error", (cause) => resume(Effect.fail(new NodeStepFailed({ message: `GET ${url}: ${String(cause)}` }))))
    req.on("timeout", () => req.destroy(new Error("timed out")))
    req.end()
    return Effect.sync(() => req.destroy())
  })

export const worldLayer = Layer.effect(
  World,
  Effect.gen(function*() {
    const plane = inject("cluster")
    const binDir = process.env["VK_K8S_BIN"] ?? ""
    const image = process.env["VK_K8S_IMAGE"] ?? ""
    if (image === "") {
      const why = process.env["VK_K8S_IMAGE_ERROR"] ?? "VK_K8S_IMAGE is not set: test/k8s/run.sh sets it from `npm run image`"
      return yield* new NodeStepFailed({ message: `no image for the real node: ${why}` })
    }
    const kubeconfig = plane.kubeletKubeconfigs[HostNode] ?? ""
    const node = yield* startRealNode({ binDir, nodeName: HostNode, kubeconfig, images: [image] })
    // What an uninstall leaves (the uninstall scenario records it) must not reach the other
    // scenarios of this plane: a NotReady virtual node counts in its zone's health.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        const { config } = yield* admin
        for (const path of [
          `/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories/${VirtualNode}`,
          `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${VirtualNode}`,
          `/api/v1/nodes/${VirtualNode}`
        ]) yield* rawRequest(config, "DELETE", path).pipe(Effect.ignore)
      }).pipe(Effect.ignore)
    )
    const toolbox = tools(binDir, plane.adminKubeconfig, join(node.dir, "operator"))

    const rootToken = `root-${Math.random().toString(36).slice(2)}`
    const sandboxd = yield* startSandboxd({ rootToken })
    const [kubeletPort = 0, metricsPort = 0] = yield* freePorts(2).pipe(Effect.mapError((e) => new NodeStepFailed({ message: e.message })))
    const apiPort = new URL(plane.server).port
    const sandboxdPort = new URL(sandboxd.url).port
    const pool = `realnode-${Math.random().toString(36).slice(2, 8)}`
    const stateDir = join(node.hostRoot, "var", "lib", "vk-sandbox")
    const tokenFile = join(node.hostRoot, "etc", "vk-sandbox", "sandboxd-token")
    const values = {
      image: imageValues(image),
      // The host node has no address in its status, and the kubelet refuses to start a container
      // that reads status.hostIP then: loopback instead.
      node: { nameSuffix: NodeSuffix, hostIP: "127.0.0.1", labels: { "sandbox.cocoonstack.io/runtime": "sandboxd", "vk-test.cocoonstack.io/pool": pool } },
      metrics: { port: metricsPort },
      // The chart's own default URL, http://127.0.0.1:<port>; also the advertised address's port.
      // The chart's default token source: the host's own file (written by the install scenario,
      // as node provisioning would), here inside the node's directory.
      sandboxd: { port: Number(sandboxdPort), token: { hostPath: tokenFile } },
      state: { hostPath: stateDir },
      // The chart's default looks for vk-cocoon's kubelet pair on the host (and self-signs
      // without it): this host has none, under the node's own directory.
      kubelet: { port: kubeletPort, tls: { hostCertPath: join(node.hostRoot, "etc", "cocoon", "vk", "tls", "vk-kubelet.crt"), hostKeyPath: join(node.hostRoot, "etc", "cocoon", "vk", "tls", "vk-kubelet.key") } },
      inventory: { publish: true, interval: "5s" },
      extraEnv: [
        { name: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1" },
        { name: "KUBERNETES_SERVICE_PORT", value: apiPort }
      ]
    }
    const { config } = yield* admin
    const adminToken = config.getCurrentUser()?.token ?? ""

    const daemonPods = Effect.map(
      adminGet<{ readonly items: ReadonlyArray<DaemonPod> }>(
        `/api/v1/namespaces/${Namespace}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/instance=${Release}`)}`
      ),
      (list) => (list?.items ?? []).filter((pod) => pod.spec.nodeName === HostNode && pod.metadata.deletionTimestamp === undefined)
    )
    const statePath = join(stateDir, "claims.json")
    const chart = (verb: "install" | "upgrade", name: string, chartValues: object) =>
      Effect.gen(function*() {
        const file = yield* toolbox.valuesFile(name, chartValues)
        const args = [Release, chartDir, "--namespace", Namespace, "--values", file]
        // helm template knows no cluster: it says which Kubernetes (the chart's kubeVersion needs 1.30).
        const rendered = yield* toolbox.helm(`helm template (${name})`, ["template", ...args, "--kube-version", "1.30.0"])
        const outside = YAML.parseAllDocuments(rendered)
          .flatMap((doc) => hostPaths(doc.toJS()))
          .filter((path) => !path.startsWith(`${node.hostRoot}/`))
        if (outside.length > 0) {
          return yield* new NodeStepFailed({ message: `the chart would mount host paths outside the node's directory: ${outside.join(", ")}` })
        }
        yield* toolbox.helm(`helm ${verb} (${name})`, [verb, ...args])
      })
    return World.of({
      chart,
      node,
      sandboxd,
      tools: toolbox,
      values,
      metricsPort,
      statePath,
      rootToken,
      tokenFile,
      pool,
      daemonPods,
      readyDaemonPod: Effect.map(daemonPods, (pods) => (pods.length === 1 && podReady(pods[0]) ? pods[0] : undefined)),
      daemonPid: (pod) =>
        Effect.gen(function*() {
          const id = (daemonContainer(pod)?.containerID ?? "").replace(/^containerd:\/\//, "")
          if (id === "") return yield* new NodeStepFailed({ message: `the Pod ${pod.metadata.name} has no container id yet` })
          const info = yield* node.containerd.ctr("reading the daemon's task", ["tasks", "list"])
          const row = info.split("\n").map((line) => line.trim().split(/\s+/)).find((fields) => fields[0] === id)
          const pid = Number(row?.[1] ?? "0")
          if (!(pid > 0)) return yield* new NodeStepFailed({ message: `no running task for container ${id}:\n${info}` })
          return pid
        }),
      kubeletGet: (path) => requestJson(`${node.kubelet.url}${path}`, adminToken),
      claimsFile: Effect.sync(() => {
        try {
          const claims = (JSON.parse(readFileSync(statePath, "utf8")) as { claims?: Record<string, { id?: string }> | null }).claims ?? {}
          return new Map(Object.entries(claims).map(([key, row]) => [key, row.id ?? ""]))
        } catch {
          return undefined
        }
      })
    })
  })
)

