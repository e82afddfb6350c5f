/**
 * What a healthy virtual node reports under the test config, as the in-memory node controller
 * test and the real-apiserver node scenario both read it back: the node info fields the daemon
 * sets and its conditions in one line each.
 */

/** The nodeInfo fields the daemon sets under the test config (the apiserver adds none of these). */
export const testNodeInfo = {
  kubeletVersion: "v1.34.0-vk-sandbox.0.1.0",
  operatingSystem: "linux",
  architecture: "arm64"
} as const

/** Each condition as `type=status/reason`, sorted, to compare with `healthyConditions`. */
export const conditionSummary = (
  conditions: ReadonlyArray<{ readonly type: string; readonly status: string; readonly reason?: string | undefined }>
) => conditions.map((c) => `${c.type}=${c.status}/${c.reason}`).sort()

/** The conditions of a node whose sandboxd answers, summarised by `conditionSummary`. */
export const healthyConditions = [
  "DiskPressure=False/KubeletHasNoDiskPressure",
  "MemoryPressure=False/KubeletHasSufficientMemory",
  "NetworkUnavailable=False/SandboxNetworkReady",
  "PIDPressure=False/KubeletHasSufficientPID",
  "Ready=True/KubeletReady",
  "SandboxdReachable=True/SandboxdHealthy"
]
