/**
 * A process's inet sockets as the kernel lists them (/proc/<pid>/net/{tcp,tcp6,udp,udp6}, matched
 * to the process's own descriptors by inode), for the real node's loopback-only check: every peer
 * a process talks to must be in 127.0.0.0/8.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs"

export interface InetSocket {
  readonly protocol: "tcp" | "tcp6" | "udp" | "udp6"
  readonly local: string
  /** "" for a socket with no peer (listening, unconnected UDP). */
  readonly remote: string
}

/** One 32-bit word of /proc/net's hex address, in host (little-endian) order. */
const word = (hex: string): ReadonlyArray<number> => {
  const bytes = (hex.match(/../g) ?? []).map((b) => parseInt(b, 16))
  return bytes.reverse()
}

/** /proc/net's "0100007F:1F90" (or 32 hex digits for IPv6) as an address and port. */
const endpoint = (text: string): { readonly address: string; readonly port: number } => {
  const [hex = "", portHex = "0"] = text.split(":")
  const port = parseInt(portHex, 16)
  if (hex.length === 8) return { address: word(hex).join("."), port }
  const bytes = (hex.match(/.{8}/g) ?? []).flatMap(word)
  // An IPv4 peer of an IPv6 socket (::ffff:a.b.c.d) is told as its IPv4 address.
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) {
    return { address: bytes.slice(12).join("."), port }
  }
  const groups: Array<string> = []
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16))
  return { address: `[${groups.join(":")}]`, port }
}

const noPeer = (address: string, port: number) => port === 0 && (address === "0.0.0.0" || /^\[(0:){7}0\]$/.test(address))

/** The inet sockets `pid` holds open now. */
export const inetSockets = (pid: number): ReadonlyArray<InetSocket> => {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`)
      const match = /^socket:\[(\d+)\]$/.exec(target)
      if (match?.[1] !== undefined) inodes.add(match[1])
    } catch {
      // closed meanwhile
    }
  }
  const found: Array<InetSocket> = []
  for (const protocol of ["tcp", "tcp6", "udp", "udp6"] as const) {
    const lines = readFileSync(`/proc/${pid}/net/${protocol}`, "utf8").split("\n").slice(1)
    for (const line of lines) {
      const fields = line.trim().split(/\s+/)
      if (fields.length < 10 || !inodes.has(fields[9] ?? "")) continue
      const local = endpoint(fields[1] ?? "")
      const remote = endpoint(fields[2] ?? "")
      found.push({
        protocol,
        local: `${local.address}:${local.port}`,
        remote: noPeer(remote.address, remote.port) ? "" : `${remote.address}:${remote.port}`
      })
    }
  }
  return found
}

/** True for a peer in 127.0.0.0/8. */
export const loopbackPeer = (remote: string): boolean => /^127\.\d+\.\d+\.\d+:\d+$/.test(remote)

/** Each process's sockets; the ones whose peer is outside 127.0.0.0/8, and how many had a peer. */
export const loopbackOnly = (pids: Record<string, number>) => {
  const outside: Array<InetSocket & { readonly process: string }> = []
  const peers: Record<string, number> = {}
  for (const [process, pid] of Object.entries(pids)) {
    const withPeer = inetSockets(pid).filter((socket) => socket.remote !== "")
    peers[process] = withPeer.length
    for (const socket of withPeer) if (!loopbackPeer(socket.remote)) outside.push({ ...socket, process })
  }
  return { outside, peers }
}
