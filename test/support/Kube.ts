/**
 * The live KubeApi client for tests: from a kubeconfig file, with limits that never slow a test
 * down unless the test gives its own.
 */
import { KubeConfig } from "@kubernetes/client-node"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"

export interface Limits {
  readonly qps: number
  readonly burst: number
}

export const kubeApiFromFile = (kubeconfigPath: string, limits: Limits = { qps: 1000, burst: 1000 }) => {
  const kubeConfig = new KubeConfig()
  kubeConfig.loadFromFile(kubeconfigPath)
  return KubeApiClientNode.make(kubeConfig, {
    ...KubeApiClientNode.defaultOptions,
    callTimeout: "1 hour",
    ...limits
  })
}

/**
 * A one-cluster, one-user kubeconfig as YAML: `server`, any extra cluster lines (a CA file,
 * `insecure-skip-tls-verify: true`) and a bearer token.
 */
export const kubeconfigYaml = (server: string, clusterLines: ReadonlyArray<string>, token: string): string =>
  [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: c",
    "  cluster:",
    `    server: ${server}`,
    ...clusterLines.map((line) => `    ${line}`),
    "users:",
    "- name: u",
    "  user:",
    `    token: ${token}`,
    "contexts:",
    "- name: ctx",
    "  context:",
    "    cluster: c",
    "    user: u",
    "current-context: ctx",
    ""
  ].join("\n")
