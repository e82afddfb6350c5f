/**
 * The virtual node as data (NODE-2 — Node labels; NODE-4 — Node addresses; NC-06 — what the node
 * patch covers; NC-09 — Node status merge rules; Ready=False is never written, so sandboxd trouble
 * does not evict every sandbox Pod): the Node created on first registration, the strategic-merge
 * patch of `nodes/status` sent afterwards, and the condition bookkeeping (a transition time moves
 * only when a status does). Everything here is pure; times come in as epoch milliseconds.
 */
import packageJson from "../../../package.json" with { type: "json" }
import type { AppConfigShape } from "../../Schemas/Config.ts"
import type { Node, NodeAddress, NodeCondition, NodeSystemInfo, Taint } from "../../Schemas/Node.ts"
import type { SandboxdReachability, UnavailableReason } from "../../Services/NodeController.ts"

export type NodeConfig = Pick<
  AppConfigShape,
  "nodeName" | "nodeIp" | "listenAddr" | "nodeCpu" | "nodeMemory" | "nodePods" | "nodeLabels"
>

export const daemonVersion: string = packageJson.version

// ---- labels, taint, addresses, capacity -------------------------------------------------------

/** VK's defaults, then `--node-labels`, which may override any of them (NODE-2). No OS label. */
export const nodeLabels = (config: NodeConfig): Record<string, string> => ({
  "type": "virtual-kubelet",
  "kubernetes.io/role": "agent",
  "kubernetes.io/hostname": config.nodeName,
  ...config.nodeLabels
})

export const providerTaint: Taint = { key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" }

/**
 * Put on the Node while sandboxd cannot serve, so the scheduler places no new Pods here. It is
 * NoSchedule only: Pods already running stay, and the node stays Ready.
 */
export const SANDBOXD_TAINT_KEY = "sandbox.cocoonstack.io/sandboxd-unavailable"

export const sandboxdTaint = (reason: UnavailableReason): Taint => ({
  key: SANDBOXD_TAINT_KEY,
  value: reason,
  effect: "NoSchedule"
})

/** The reason our taint carries on a Node, if it carries it. */
export const sandboxdTaintOn = (node: Node): string | undefined =>
  node.spec?.taints?.find((t) => t.key === SANDBOXD_TAINT_KEY && t.effect === "NoSchedule")?.value ?? undefined

/**
 * The Node's taints with ours set to `reason` (or removed when undefined); every other taint is
 * kept as it is, in its place. `undefined` when nothing would change.
 */
export const retaint = (
  taints: ReadonlyArray<Taint>,
  reason: UnavailableReason | undefined
): Array<Taint> | undefined => {
  const ours = (t: Taint) => t.key === SANDBOXD_TAINT_KEY && t.effect === "NoSchedule"
  const current = taints.filter(ours)
  if (reason === undefined) return current.length === 0 ? undefined : taints.filter((t) => !ours(t))
  if (current.length === 1 && current[0]!.value === reason) return undefined
  const wanted = sandboxdTaint(reason)
  const at = taints.findIndex(ours)
  if (at < 0) return [...taints, wanted]
  return taints.flatMap((t, i) => (i === at ? [wanted] : ours(t) ? [] : [t]))
}

/** InternalIP first when `--node-ip` is set, then Hostname (NODE-4). One address per type. */
export const nodeAddresses = (config: NodeConfig): Array<NodeAddress> => [
  ...(config.nodeIp === "" ? [] : [{ type: "InternalIP", address: config.nodeIp }]),
  { type: "Hostname", address: config.nodeName }
]

export const nodeResources = (config: NodeConfig): Record<string, string> => ({
  cpu: config.nodeCpu,
  memory: config.nodeMemory,
  pods: config.nodePods
})

/** Go's GOARCH names, which is what kubectl and node selectors expect. */
export const goArchitecture = (arch: string): string => {
  switch (arch) {
    case "x64":
      return "amd64"
    case "ia32":
      return "386"
    default:
      return arch // arm64, s390x, ppc64 (Go says ppc64le; Node's "ppc64" is little-endian on Linux)
  }
}

/** Semver-parsable: the Kubernetes minor it targets, then ours as a pre-release tag. */
export const kubeletVersion = (version: string): string => `v1.34.0-vk-sandbox.${version}`

export const nodeSystemInfo = (version: string, arch: string): NodeSystemInfo => ({
  architecture: goArchitecture(arch),
  operatingSystem: "linux",
  kubeletVersion: kubeletVersion(version),
  containerRuntimeVersion: "sandboxd://",
  kubeProxyVersion: "",
  kernelVersion: "",
  osImage: "",
  machineID: "",
  systemUUID: "",
  bootID: ""
})

// ---- conditions -------------------------------------------------------------------------------

export const SANDBOXD_REACHABLE = "SandboxdReachable"

export type ConditionStatus = "True" | "False" | "Unknown"

export interface ConditionSpec {
  readonly type: string
  readonly status: ConditionStatus
  readonly reason: string
  readonly message: string
}

/**
 * Ready is True whenever the daemon writes at all (it never writes Ready=False); the
 * pressure conditions are kubelet-style False; sandboxd reachability is its own condition.
 */
export const desiredConditions = (sandboxd: SandboxdReachability): ReadonlyArray<ConditionSpec> => [
  { type: "Ready", status: "True", reason: "KubeletReady", message: "Kubelet is ready" },
  {
    type: "MemoryPressure",
    status: "False",
    reason: "KubeletHasSufficientMemory",
    message: "kubelet has sufficient memory available"
  },
  { type: "DiskPressure", status: "False", reason: "KubeletHasNoDiskPressure", message: "kubelet has no disk pressure" },
  { type: "PIDPressure", status: "False", reason: "KubeletHasSufficientPID", message: "kubelet has sufficient PID available" },
  {
    type: "NetworkUnavailable",
    status: "False",
    reason: "SandboxNetworkReady",
    message: "sandbox networking is provided by sandboxd"
  },
  sandboxdCondition(sandboxd)
]

const sandboxdCondition = (sandboxd: SandboxdReachability): ConditionSpec => {
  switch (sandboxd._tag) {
    case "Reachable":
      return { type: SANDBOXD_REACHABLE, status: "True", reason: "SandboxdHealthy", message: "sandboxd /v1/info answered" }
    case "Unavailable":
      return {
        type: SANDBOXD_REACHABLE,
        status: "False",
        reason: sandboxd.reason,
        message: `sandboxd cannot serve: ${sandboxd.message}`
      }
    case "NotProbed":
      return { type: SANDBOXD_REACHABLE, status: "Unknown", reason: "SandboxdNotProbed", message: "sandboxd not probed yet" }
  }
}

export interface TrackedCondition extends ConditionSpec {
  readonly lastTransitionMillis: number
}

export type TrackedConditions = ReadonlyMap<string, TrackedCondition>

/**
 * The next tracked set: a condition whose status changed (or is new) gets `now` as its transition
 * time, the others keep theirs. `statusChanged` tells the caller to write at once (NC-11 — Node
 * status cadence).
 */
export const advanceConditions = (
  previous: TrackedConditions,
  desired: ReadonlyArray<ConditionSpec>,
  now: number
): { readonly next: TrackedConditions; readonly statusChanged: boolean } => {
  const next = new Map<string, TrackedCondition>()
  let statusChanged = false
  for (const spec of desired) {
    const before = previous.get(spec.type)
    const same = before !== undefined && before.status === spec.status
    if (!same) statusChanged = true
    next.set(spec.type, { ...spec, lastTransitionMillis: same ? before.lastTransitionMillis : now })
  }
  return { next, statusChanged }
}

/** Our condition types as the server has them, so a restart keeps their transition times. */
export const trackedFromServer = (node: Node, types: ReadonlyArray<string>): TrackedConditions => {
  const tracked = new Map<string, TrackedCondition>()
  for (const condition of node.status?.conditions ?? []) {
    if (!types.includes(condition.type)) continue
    const status = condition.status
    if (status !== "True" && status !== "False" && status !== "Unknown") continue
    const transition = toMillis(condition.lastTransitionTime)
    if (transition === undefined) continue
    tracked.set(condition.type, {
      type: condition.type,
      status,
      reason: condition.reason ?? "",
      message: condition.message ?? "",
      lastTransitionMillis: transition
    })
  }
  return tracked
}

const toMillis = (value: Date | undefined): number | undefined => {
  const millis = value?.getTime()
  return millis === undefined || Number.isNaN(millis) ? undefined : millis
}

/** Whole-second RFC 3339, as the kubelet writes condition times. */
export const formatTime = (millis: number): string => new Date(Math.floor(millis / 1000) * 1000).toISOString().replace(".000Z", "Z")

/** A condition time for the Node's schema, which writes it at whole seconds, the form the apiserver stores. */
const wholeSecond = (millis: number): Date => new Date(Math.floor(millis / 1000) * 1000)

// ---- the Node and its status patch ------------------------------------------------------------

export interface NodeSnapshot {
  readonly config: NodeConfig
  readonly version: string
  readonly arch: string
  readonly conditions: TrackedConditions
  readonly now: number
}

const conditionList = (snapshot: NodeSnapshot): Array<TrackedCondition> => [...snapshot.conditions.values()]

/**
 * The whole Node for the first POST (CHK-08 — ensure the node). Afterwards the spec is written only
 * to set or clear the sandboxd taint (`retaint`); a Node created while sandboxd is down carries it
 * from the start.
 */
export const buildNode = (snapshot: NodeSnapshot, unavailable?: UnavailableReason): Node => {
  const { config } = snapshot
  const conditions: Array<NodeCondition> = conditionList(snapshot).map((c) => ({
    type: c.type,
    status: c.status,
    reason: c.reason,
    message: c.message,
    lastHeartbeatTime: wholeSecond(snapshot.now),
    lastTransitionTime: wholeSecond(c.lastTransitionMillis)
  }))
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: config.nodeName, labels: nodeLabels(config) },
    spec: { taints: unavailable === undefined ? [providerTaint] : [providerTaint, sandboxdTaint(unavailable)] },
    status: {
      phase: "Running",
      conditions,
      addresses: nodeAddresses(config),
      capacity: nodeResources(config),
      allocatable: nodeResources(config),
      daemonEndpoints: { kubeletEndpoint: { Port: config.listenAddr.port } },
      nodeInfo: nodeSystemInfo(snapshot.version, snapshot.arch)
    }
  }
}

/**
 * The strategic-merge patch of `nodes/status` (NC-06; NC-09; CHK-09 — building the node patch):
 * labels, and the status fields we own. `conditions` and `addresses` merge by `type`, so entries
 * other writers added survive; `spec` is never sent. Plain JSON (strings for times), sent as it is
 * built.
 */
export const statusPatch = (snapshot: NodeSnapshot): object => {
  const { config } = snapshot
  return {
    metadata: { labels: nodeLabels(config) },
    status: {
      phase: "Running",
      conditions: conditionList(snapshot).map((c) => ({
        type: c.type,
        status: c.status,
        reason: c.reason,
        message: c.message,
        lastHeartbeatTime: formatTime(snapshot.now),
        lastTransitionTime: formatTime(c.lastTransitionMillis)
      })),
      addresses: nodeAddresses(config),
      capacity: nodeResources(config),
      allocatable: nodeResources(config),
      daemonEndpoints: { kubeletEndpoint: { Port: config.listenAddr.port } },
      nodeInfo: nodeSystemInfo(snapshot.version, snapshot.arch)
    }
  }
}
