/**
 * What the real node writes on the machine outside its own directory, whatever its flags say,
 * and taking it back when the node stops. The kubelet's device-plugin socket
 * (/var/lib/kubelet/device-plugins/kubelet.sock) and its container log links
 * (/var/log/containers/<pod>_<namespace>_<container>-<id>.log) are fixed paths; runc puts the
 * containers' cgroups under /<containerd namespace>/ in every hierarchy. A path is removed only if
 * this node made it: a link into the node's directory, or a directory that did not exist before
 * the node started while no other kubelet runs (on a shared machine another suite's node may be
 * using it).
 */
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync } from "node:fs"
import { join } from "node:path"

const KubeletDir = "/var/lib/kubelet"
const DevicePluginSocket = join(KubeletDir, "device-plugins", "kubelet.sock")
const ContainerLogLinks = "/var/log/containers"
const CgroupRoot = "/sys/fs/cgroup"

/** The directories the node may create on the machine, deepest first. */
const madeDirectories = (cgroupParent: string): ReadonlyArray<string> => [
  join(KubeletDir, "device-plugins"),
  KubeletDir,
  ContainerLogLinks,
  ...cgroupHierarchies().map((hierarchy) => join(hierarchy, cgroupParent))
]

/** Each cgroup v1 hierarchy, or the one unified hierarchy of cgroup v2. */
const cgroupHierarchies = (): ReadonlyArray<string> => {
  if (existsSync(join(CgroupRoot, "cgroup.controllers"))) return [CgroupRoot]
  try {
    return readdirSync(CgroupRoot).map((name) => join(CgroupRoot, name)).filter((path) => lstatSync(path).isDirectory())
  } catch {
    return []
  }
}

/** What existed before the node started: only what was absent then may be removed at its end. */
export interface HostBefore {
  readonly existed: ReadonlySet<string>
  readonly cgroupParent: string
}

export const hostBefore = (cgroupParent: string): HostBefore => ({
  existed: new Set([DevicePluginSocket, ...madeDirectories(cgroupParent)].filter((path) => existsSync(path))),
  cgroupParent
})

/** Another kubelet process on the machine (another suite's node): the shared paths are its too. */
export const otherKubeletRuns = (): boolean =>
  readdirSync("/proc").some((pid) => {
    if (!/^\d+$/.test(pid)) return false
    try {
      return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "kubelet"
    } catch {
      return false
    }
  })

/** The container log links pointing into `dir`. */
const linksInto = (dir: string): ReadonlyArray<string> => {
  try {
    return readdirSync(ContainerLogLinks)
      .map((name) => join(ContainerLogLinks, name))
      .filter((path) => {
        try {
          return lstatSync(path).isSymbolicLink() && readlinkSync(path).startsWith(`${dir}/`)
        } catch {
          return false
        }
      })
  } catch {
    return []
  }
}

/** Removes what the node made outside `dir`; call once its kubelet and containerd have stopped. */
export const removeHostLeftovers = (before: HostBefore, dir: string): void => {
  for (const link of linksInto(dir)) rmSync(link, { force: true })
  if (otherKubeletRuns()) return
  if (!before.existed.has(DevicePluginSocket)) rmSync(DevicePluginSocket, { force: true })
  for (const path of madeDirectories(before.cgroupParent)) {
    if (before.existed.has(path)) continue
    try {
      // Only when empty: a cgroup with a container still in it, or a directory someone filled, stays.
      rmdirSync(path)
    } catch {
      // reported by hostLeftovers
    }
  }
}

/** What the node left outside `dir` that `removeHostLeftovers` should have taken back. */
export const hostLeftovers = (before: HostBefore, dir: string): ReadonlyArray<string> => [
  ...linksInto(dir),
  ...(otherKubeletRuns()
    ? []
    : [DevicePluginSocket, ...madeDirectories(before.cgroupParent)].filter((path) => !before.existed.has(path) && existsSync(path)))
]
