/**
 * The live KubeApi client for tests: from a kubeconfig file, with limits and timeouts that never
 * slow a test down (a call in flight while TestClock jumps must not time out), unless the test
 * gives its own.
 */
import { KubeConfig } from "@kubernetes/client-node"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"

export const kubeApiFromFile = (kubeconfigPath: string, overrides: Partial<KubeApiClientNode.ClientOptions> = {}) => {
  const kubeConfig = new KubeConfig()
  kubeConfig.loadFromFile(kubeconfigPath)
  return KubeApiClientNode.make(kubeConfig, {
    ...KubeApiClientNode.defaultOptions,
    callTimeout: "1 hour",
    livenessCallTimeout: "1 hour",
    qps: 1000,
    burst: 1000,
    ...overrides
  })
}
