/**
 * Which address a claim's Pod reports. The apiserver rejects a status
 * whose podIP is not an IP, so only an IP literal taken from sandboxd's `owner_addr` is used;
 * otherwise the node IP (`--node-ip`); otherwise nothing.
 */
import { isIP } from "node:net"
import { Option } from "effect"

const ipLiteral = (host: string): Option.Option<string> => {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  return isIP(bare) === 0 ? Option.none() : Option.some(bare)
}

/**
 * The IP literal in an `owner_addr`: a bare IPv4/IPv6 address, `host:port`, `[v6]` or
 * `[v6]:port`, or a URL origin (`http://10.0.0.5:7777`). Hostnames, `:7777` and anything else
 * give None.
 */
export const ipFromOwnerAddr = (addr: string): Option.Option<string> => {
  const trimmed = addr.trim()
  if (trimmed === "") return Option.none()
  if (trimmed.includes("://")) {
    if (!URL.canParse(trimmed)) return Option.none()
    return ipLiteral(new URL(trimmed).hostname)
  }
  const bare = ipLiteral(trimmed)
  if (Option.isSome(bare)) return bare
  const bracketed = /^\[([^\]]+)\]:[0-9]+$/.exec(trimmed)
  if (bracketed !== null) return ipLiteral(bracketed[1]!)
  const hostPort = /^([^:]+):[0-9]+$/.exec(trimmed)
  if (hostPort !== null) return ipLiteral(hostPort[1]!)
  return Option.none()
}

export type PodIp =
  | { readonly _tag: "OwnerAddr"; readonly ip: string }
  | { readonly _tag: "NodeIp"; readonly ip: string }
  | { readonly _tag: "None" }

/** The rule: owner_addr's IP, else the node IP, else None (the caller warns once per claim). */
export const resolvePodIp = (ownerAddr: string, nodeIp: string): PodIp => {
  const owner = ipFromOwnerAddr(ownerAddr)
  if (Option.isSome(owner)) return { _tag: "OwnerAddr", ip: owner.value }
  if (isIP(nodeIp) !== 0) return { _tag: "NodeIp", ip: nodeIp }
  return { _tag: "None" }
}
