/** The live KubeApi client for tests: from a kubeconfig file, with limits that never slow a test down. */
import { KubeConfig } from "@kubernetes/client-node"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"

export const kubeApiFromFile = (kubeconfigPath: string) => {
  const kubeConfig = new KubeConfig()
  kubeConfig.loadFromFile(kubeconfigPath)
  return KubeApiClientNode.make(kubeConfig, {
    ...KubeApiClientNode.defaultOptions,
    callTimeout: "1 hour",
    qps: 1000,
    burst: 1000
  })
}
