/**
 * vitest global setup of the cluster project (vitest.k8s.config.ts): a second control plane, this
 * one with the real kube-scheduler and kube-controller-manager around the apiserver. Its
 * coordinates reach the tests through vitest's `provide`/`inject` (not the environment, which the
 * apiserver-only plane of the same run uses).
 */
import type { TestProject } from "vitest/node"
import { setupControlPlane } from "../fixture/globalSetup.ts"

/** What the cluster tests get through `inject("cluster")`. */
export interface ClusterPlane {
  readonly server: string
  readonly adminKubeconfig: string
  readonly daemonKubeconfig: string
  readonly daemonUser: string
  readonly stateDir: string
  /** The kubeconfig of each real kubelet's node (`RealNodeHosts`), by node name. */
  readonly kubeletKubeconfigs: Readonly<Record<string, string>>
}

/**
 * The host nodes a real kubelet may register in this plane (test/k8s/cluster/node): the
 * apiserver must know their identities from its start.
 */
export const RealNodeHosts = ["vk-host-a"] as const

declare module "vitest" {
  export interface ProvidedContext {
    cluster: ClusterPlane
  }
}

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return setupControlPlane(
    "cluster",
    {
      // The daemon renews its Lease every 10 s: 20 s without one is a dead node, not a slow one.
      controllers: { nodeMonitorGraceSeconds: 20, evictionTolerationSeconds: 5 },
      kubeletNodes: RealNodeHosts
    },
    (plane) =>
      project.provide("cluster", {
        server: plane.server,
        adminKubeconfig: plane.adminKubeconfig,
        daemonKubeconfig: plane.daemonKubeconfig,
        daemonUser: plane.daemonUser,
        stateDir: plane.stateDir,
        kubeletKubeconfigs: plane.kubeletKubeconfigs
      })
  )
}
