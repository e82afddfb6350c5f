/**
 * The kernel settings a starting kubelet sets for the whole machine, put back once the last
 * kubelet has stopped. Several suites may run a node at once, so the first node to start while
 * no kubelet runs records the machine's values in a file; a node restores from that record only
 * when no other kubelet runs, and then removes it (a record a killed run left is restored next).
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { otherKubeletRuns } from "./HostFootprint.ts"

export const KernelTunables = [
  "vm/overcommit_memory",
  "vm/panic_on_oom",
  "kernel/panic",
  "kernel/panic_on_oops",
  "kernel/keys/root_maxkeys",
  "kernel/keys/root_maxbytes"
] as const

/** Where the settings are (/proc/sys), where the record is kept, and whether another kubelet runs. */
export interface TunablesPlace {
  readonly sysDir: string
  readonly record: string
  readonly otherKubeletRuns: () => boolean
}

export const machine: TunablesPlace = {
  sysDir: "/proc/sys",
  record: join(tmpdir(), "vk-sandbox-k8s-kernel-tunables.json"),
  otherKubeletRuns
}

const read = (place: TunablesPlace): Record<string, string> =>
  Object.fromEntries(KernelTunables.flatMap((key) => {
    try {
      return [[key, readFileSync(join(place.sysDir, key), "utf8").trim()] as const]
    } catch {
      return []
    }
  }))

/** Before a node's first kubelet starts: records the machine's values unless a record exists. */
const recordTunables = (place: TunablesPlace): void => {
  if (existsSync(place.record) || place.otherKubeletRuns()) return
  writeFileSync(`${place.record}.part`, JSON.stringify(read(place)), { mode: 0o600 })
  renameSync(`${place.record}.part`, place.record)
}

/** After a node's last kubelet stopped: the recorded values back, once no other kubelet runs. */
const restoreTunables = (place: TunablesPlace): void => {
  if (place.otherKubeletRuns()) return
  let recorded: Record<string, string>
  try {
    recorded = JSON.parse(readFileSync(place.record, "utf8")) as Record<string, string>
  } catch {
    return
  }
  const now = read(place)
  for (const [key, value] of Object.entries(recorded)) {
    try {
      if (now[key] !== value) writeFileSync(join(place.sysDir, key), value)
    } catch {
      // left as the kubelet set it; nothing else to do in a teardown
    }
  }
  rmSync(place.record, { force: true })
}

/** One node's part: `record` before its first kubelet starts, `restore` after its last stopped. */
export const nodeTunables = (place: TunablesPlace = machine) => ({
  record: () => recordTunables(place),
  restore: () => restoreTunables(place)
})
