/**
 * What the real-node scenarios read to assert: the VMs sandboxd holds and releases, the claims
 * file, the daemon's process as the kernel sees it (user, capabilities, no-new-privileges, the
 * root filesystem's mount), its bound service-account token as the kubelet mounted it, and the
 * kubelet's memory figures for the daemon's container (the sockets' check is ./Sockets.ts).
 */
import * as k8s from "@kubernetes/client-node"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { inject } from "vitest"
import { NodeStepFailed } from "./Commands.ts"
import { ContainerName, type DaemonPod, type World } from "./World.ts"

type WorldShape = World["Service"]

export const claimsOf = (world: WorldShape) =>
  Effect.gen(function*() {
    const held = new Set((yield* world.sandboxd.sim.claims).map((c) => c.id))
    const audit = yield* world.sandboxd.sim.audit
    return {
      held,
      released: audit.filter((e) => e.route === "release").map((e) => e.path),
      claimRequests: audit.filter((e) => e.route === "claim").length,
      file: yield* world.claimsFile
    }
  })

/** The Pod's own service-account token, as the kubelet projected it into the Pod's volume. */
export const daemonTokenOf = (world: WorldShape, pod: DaemonPod) =>
  Effect.try({
    try: () => {
      const projected = join(world.node.dir, "kubelet", "root", "pods", pod.metadata.uid, "volumes", "kubernetes.io~projected")
      const volume = readdirSync(projected).find((name) => name.startsWith("kube-api-access-")) ?? ""
      const token = readFileSync(join(projected, volume, "token"), "utf8").trim()
      const plane = inject("cluster")
      const admin = new k8s.KubeConfig()
      admin.loadFromFile(plane.adminKubeconfig)
      const cluster = admin.getCurrentCluster()
      const config = new k8s.KubeConfig()
      config.loadFromOptions({
        clusters: [{ name: "plane", server: plane.server, caData: cluster?.caData, skipTLSVerify: false }],
        users: [{ name: "pod", token }],
        contexts: [{ name: "pod", cluster: "plane", user: "pod" }],
        currentContext: "pod"
      })
      return { token, config }
    },
    catch: (cause) => new NodeStepFailed({ message: `reading the daemon Pod's token: ${String(cause)}` })
  })

/** The daemon's process: real uid and gid, effective capabilities, no_new_privs, a read-only root. */
export const processSecurity = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const field = (name: string) => (new RegExp(`^${name}:\\s*(\\S+)`, "m").exec(status)?.[1] ?? "")
  const root = readFileSync(`/proc/${pid}/mountinfo`, "utf8").split("\n").map((line) => line.split(" ")).find((fields) => fields[4] === "/")
  return {
    uid: field("Uid"),
    gid: field("Gid"),
    effectiveCaps: field("CapEff"),
    noNewPrivs: field("NoNewPrivs"),
    rootReadOnly: (root?.[5] ?? "").split(",").includes("ro")
  }
}

interface Summary {
  readonly pods?: ReadonlyArray<{
    readonly podRef: { readonly uid: string }
    readonly containers?: ReadonlyArray<{ readonly name: string; readonly memory?: { readonly workingSetBytes?: number; readonly rssBytes?: number } }>
  }>
}

/** The daemon container's memory in the kubelet's /stats/summary; undefined until it is there. */
export const memoryOfDaemon = (world: WorldShape, pod: DaemonPod) =>
  Effect.map(world.kubeletGet("/stats/summary"), (body) => {
    const summary = body as Summary
    const container = summary.pods?.find((p) => p.podRef.uid === pod.metadata.uid)?.containers?.find((c) => c.name === ContainerName)
    const workingSetBytes = container?.memory?.workingSetBytes ?? 0
    return workingSetBytes > 0 ? { workingSetBytes, rssBytes: container?.memory?.rssBytes ?? 0 } : undefined
  })

/** The daemon's /readyz on its metrics port (loopback); undefined while nothing answers. */
export const readyzBody = (port: number) =>
  Effect.promise(() =>
    fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      async (res) => ({ status: res.status, text: await res.text() }),
      () => undefined
    )
  )
