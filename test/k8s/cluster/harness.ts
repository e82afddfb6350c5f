/**
 * The cluster scenarios' world: the control plane of the cluster project (real scheduler and
 * controller-manager, see ./globalSetup.ts), sandboxd simulators served over loopback, and the
 * real daemon binary as a child process under the shipped RBAC (the daemon identity of the control
 * plane), one per virtual node. Nothing binds Pods by hand here: the scheduler does, and the
 * controller-manager deletes, evicts and cascades.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { inject } from "vitest"
import { Deferred, Effect, Option, type Scope } from "effect"
import { spawnDaemonBound } from "../../../testkit/Demo/DaemonStart.ts"
import { type Daemon, httpGet, type StepFailed } from "../../../testkit/Demo/Harness.ts"
import type { SandboxdSimOptions } from "../../../testkit/Simulators/Sandboxd/Model.ts"
import { kube, uniqueName } from "../fixture/Kube.ts"
import { admin, adminGet, eventually, ScenarioFailed, startSandboxd, tempDir, Template } from "../scenarioHarness.ts"

/**
 * The shared scenario helpers read the admin and daemon kubeconfigs from the environment; in this
 * project they are the cluster plane's. Call once at the top of a test file.
 */
export const useClusterPlane = (): void => {
  const plane = inject("cluster")
  process.env["VK_K8S_ADMIN_KUBECONFIG"] = plane.adminKubeconfig
  process.env["VK_K8S_DAEMON_KUBECONFIG"] = plane.daemonKubeconfig
  process.env["VK_K8S_SERVER"] = plane.server
  process.env["VK_K8S_DAEMON_USER"] = plane.daemonUser
}

export const RuntimeLabel = "sandbox.cocoonstack.io/runtime"
/** A label only the nodes of one scenario carry, so its Pods never land on another scenario's node. */
export const PoolLabel = "vk-test.cocoonstack.io/pool"

/** The toleration every sandbox Pod carries for the virtual node's own taint. */
export const providerToleration = { key: "virtual-kubelet.io/provider", operator: "Equal", value: "sandboxd", effect: "NoSchedule" }

export interface SandboxPodSpec {
  readonly pool: string
  /** Leave out the provider toleration (such a Pod must never be bound to a virtual node). */
  readonly withoutToleration?: boolean
}

/** A sandbox Pod's template: template annotation, the routing-label selector, the toleration; no nodeName. */
export const sandboxPodTemplate = (spec: SandboxPodSpec, labels: Record<string, string> = {}) => ({
  metadata: { labels, annotations: { "sandbox.cocoonstack.io/template": Template } },
  spec: {
    nodeSelector: { [RuntimeLabel]: "sandboxd", [PoolLabel]: spec.pool },
    tolerations: spec.withoutToleration === true ? [] : [providerToleration],
    containers: [{ name: "main", image: "python:3.12" }],
    automountServiceAccountToken: false
  }
})

/** A ReplicaSet's or Deployment's body: `replicas` sandbox Pods on `pool`, labelled and selected by app=`name`. */
export const sandboxPodSet = (name: string, namespace: string, replicas: number, pool: string) => ({
  metadata: { name, namespace },
  spec: { replicas, selector: { matchLabels: { app: name } }, template: sandboxPodTemplate({ pool }, { app: name }) }
})

export interface OwnerRef {
  readonly apiVersion: string
  readonly kind: string
  readonly name: string
  readonly uid: string
  readonly blockOwnerDeletion?: boolean
}

/** Admin: a sandbox Pod left to the scheduler. */
export const createSandboxPod = (namespace: string, name: string, spec: SandboxPodSpec, owner?: OwnerRef) =>
  Effect.gen(function*() {
    const { core } = yield* admin
    const template = sandboxPodTemplate(spec)
    const pod = yield* kube(`create pod ${name}`, () =>
      core.createNamespacedPod({
        namespace,
        body: {
          metadata: {
            ...template.metadata,
            name,
            namespace,
            ...(owner === undefined ? {} : { ownerReferences: [{ ...owner, controller: true }] })
          },
          spec: template.spec
        }
      }))
    return pod.metadata?.uid ?? ""
  })

/**
 * Admin: a namespace whose `default` service account exists, since the ServiceAccount admission
 * plugin refuses Pods until the controller-manager has made it.
 */
export const createReadyNamespace = (prefix: string) =>
  Effect.gen(function*() {
    const { core } = yield* admin
    const name = uniqueName(prefix)
    yield* kube("create namespace", () => core.createNamespace({ body: { metadata: { name } } }))
    yield* eventually(
      `the default service account of ${name}`,
      adminGet<unknown>(`/api/v1/namespaces/${name}/serviceaccounts/default`),
      30_000
    )
    return name
  })

export interface PodState {
  readonly metadata: {
    readonly name: string
    readonly uid: string
    readonly annotations?: Record<string, string>
    readonly deletionTimestamp?: string
    readonly ownerReferences?: ReadonlyArray<{ readonly kind: string; readonly name: string }>
  }
  readonly spec: { readonly nodeName?: string }
  readonly status?: {
    readonly phase?: string
    readonly reason?: string
    readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string; readonly reason?: string }>
  }
}

export const listPods = (namespace: string) =>
  Effect.map(adminGet<{ readonly items: ReadonlyArray<PodState> }>(`/api/v1/namespaces/${namespace}/pods`), (list) => list?.items ?? [])

/** The Pod's PodScheduled=False reason (`Unschedulable` when the scheduler found no node). */
export const unschedulableReason = (pod: PodState | undefined): string | undefined =>
  pod?.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False")?.reason

// ---- a virtual node: sandboxd simulator + daemon process --------------------------------------

export interface VirtualNode {
  readonly nodeName: string
  readonly pool: string
  readonly sandboxd: Effect.Success<ReturnType<typeof startSandboxd>>
  readonly statePath: string
  /** The file the daemon reads sandboxd's root token from (--sandboxd-token-file). */
  readonly tokenFile: string
  /** The running daemon (replaced by `restart`). */
  readonly daemon: () => Daemon
  /** SIGKILL: no drain, no goodbye; the Node and Lease are left as a crash leaves them. */
  readonly kill: Effect.Effect<void>
  /** A new daemon process on the same node name, state file and sandboxd. */
  readonly restart: Effect.Effect<void, ScenarioFailed | StepFailed, Scope.Scope>
}

export interface VirtualNodeOptions {
  readonly pool?: string
  /** The Node's name (default: a unique one). */
  readonly nodeName?: string
  /** The daemon's kubeconfig (default: the control plane's daemon identity). */
  readonly kubeconfig?: string
  readonly sandboxd?: Partial<SandboxdSimOptions>
  readonly extraArgs?: ReadonlyArray<string>
}

/**
 * One virtual node for the surrounding scope: its own sandboxd simulator (with a root token) and
 * the daemon binary, started with short intervals. When the scope closes the daemon is killed and
 * its Node object deleted, so a later scenario's zone health never counts a dead node.
 */
export const startVirtualNode = (options: VirtualNodeOptions = {}) =>
  Effect.gen(function*() {
    const plane = inject("cluster")
    const dir = yield* tempDir("vk-cluster-")
    const rootToken = `root-${Math.random().toString(36).slice(2)}`
    const sandboxd = yield* startSandboxd({ rootToken, ...options.sandboxd })
    const tokenFile = NodePath.join(dir, "sandboxd-token")
    NodeFs.writeFileSync(tokenFile, `${rootToken}\n`, { mode: 0o600 })
    const pool = options.pool ?? uniqueName("pool")
    const nodeName = options.nodeName ?? uniqueName("vk-cluster")
    const statePath = NodePath.join(dir, "state", "claims.json")
    const target = { kubeconfigPath: options.kubeconfig ?? plane.daemonKubeconfig, sandboxdUrl: sandboxd.url, tokenFile, statePath, nodeName }
    const args = [
      "--node-labels",
      `${RuntimeLabel}=sandboxd,${PoolLabel}=${pool}`,
      "--sandboxd-probe-interval",
      "1s",
      "--orphan-scan-interval",
      "0",
      ...(options.extraArgs ?? [])
    ]
    const logFile = NodePath.join(dir, "daemon.log")
    let current = yield* spawnDaemonBound(target, { logFile, extraArgs: args })
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        const { core } = yield* admin
        yield* kube("delete node", () => core.deleteNode({ name: nodeName }))
      }).pipe(Effect.ignore)
    )
    yield* waitReady(current)
    const node: VirtualNode = {
      nodeName,
      pool,
      sandboxd,
      statePath,
      tokenFile,
      daemon: () => current,
      kill: Effect.suspend(() => current.signal("SIGKILL").pipe(Effect.andThen(Deferred.await(current.exited)), Effect.asVoid)),
      restart: Effect.gen(function*() {
        current = yield* spawnDaemonBound(target, { logFile, extraArgs: args })
        yield* waitReady(current)
      })
    }
    return node
  })

/** /readyz 200: node registered, first Pod list handled, sandboxd answered. */
const waitReady = (daemon: Daemon) =>
  eventually(
    "the daemon's /readyz",
    Effect.map(httpGet(`${daemon.metricsUrl}/readyz`), (reply) => Option.isSome(reply) && reply.value.status === 200),
    30_000
  ).pipe(
    // The wait's time-out is a defect; the daemon's output says why it never got ready.
    Effect.catchDefect((defect) =>
      Effect.fail(
        new ScenarioFailed({
          message: `${defect instanceof Error ? defect.message : String(defect)}; daemon output:\n${daemon.output().slice(-3000)}`
        })
      ))
  )

// ---- reads --------------------------------------------------------------------------------------

/** The claims file's rows (key → claim id), as the daemon last committed them. */
export const claimsFileRows = (statePath: string) =>
  Effect.gen(function*() {
    if (!NodeFs.existsSync(statePath)) return new Map<string, string>()
    const text = NodeFs.readFileSync(statePath, "utf8")
    const claims = (JSON.parse(text) as { claims?: Record<string, { id?: string }> | null }).claims ?? {}
    return new Map(Object.entries(claims).map(([key, row]) => [key, row.id ?? ""]))
  })

/** The ids sandboxd holds as claimed. */
export const heldIds = (node: VirtualNode) => Effect.map(node.sandboxd.sim.claims, (claims) => new Set(claims.map((c) => c.id)))

export const claimRequests = (node: VirtualNode) =>
  Effect.map(node.sandboxd.sim.audit, (entries) => entries.filter((e) => e.route === "claim").length)

export const releasedIds = (node: VirtualNode) =>
  Effect.map(node.sandboxd.sim.audit, (entries) =>
    entries.filter((e) => e.route === "release").map((e) => e.path.split("/")[3] ?? ""))
