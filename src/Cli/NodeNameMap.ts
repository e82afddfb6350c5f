/**
 * --node-name-map (CFG-19 — a full node name per host): `host=node,...`, the full virtual Node name
 * of the hosts listed, so a node moved from the Go daemon keeps its name (and its Pods) while every
 * other host keeps the `<host><suffix>` of --node-name. Unlike --node-labels it is strict: a name
 * the apiserver would refuse, a host listed twice or one Node name for two hosts is a usage error,
 * since two daemons under one Node name would fight over its Pods; so is a Node name that is a
 * listed host's own, which is that host's kubelet's Node and Pods.
 */
import { Result } from "effect"

/**
 * A Node's name as the apiserver accepts one (a DNS-1123 subdomain): it is also the certificate's
 * DNS SAN (TLS-3 — the self-signed certificate), which holds ASCII only.
 */
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

export const nodeNameProblem = (text: string): string | undefined =>
  text.length <= 253 && dnsSubdomain.test(text)
    ? undefined
    : "must be a Node name: at most 253 characters of lowercase letters, digits, '-' and '.', each part between dots starting and ending with a letter or digit"

export const parseNodeName = (text: string): Result.Result<string, string> => {
  const problem = nodeNameProblem(text)
  return problem === undefined ? Result.succeed(text) : Result.fail(problem)
}

/** host → virtual Node name; empty for an empty value. Items are trimmed; empty items are skipped. */
export const parseNodeNameMap = (text: string): Result.Result<ReadonlyMap<string, string>, string> => {
  const names = new Map<string, string>()
  const hostOf = new Map<string, string>()
  for (const rawItem of text.split(",")) {
    const item = rawItem.trim()
    if (item === "") continue
    const equals = item.indexOf("=")
    if (equals < 0) return Result.fail(`item ${JSON.stringify(item)} is not host=node`)
    const host = item.slice(0, equals)
    const node = item.slice(equals + 1)
    for (const [what, name] of [["host", host], ["node", node]] as const) {
      const problem = nodeNameProblem(name)
      if (problem !== undefined) return Result.fail(`the ${what} ${JSON.stringify(name)} of item ${JSON.stringify(item)} ${problem}`)
    }
    if (names.has(host)) return Result.fail(`host ${JSON.stringify(host)} is listed twice`)
    const other = hostOf.get(node)
    if (other !== undefined) return Result.fail(`hosts ${JSON.stringify(other)} and ${JSON.stringify(host)} both map to ${JSON.stringify(node)}`)
    names.set(host, node)
    hostOf.set(node, host)
  }
  for (const [host, node] of names) {
    if (names.has(node)) {
      return Result.fail(`host ${JSON.stringify(host)} maps to ${JSON.stringify(node)}, which is a host's name: a virtual Node must not take a host's own Node`)
    }
  }
  return Result.succeed(names)
}

/**
 * The virtual Node's name: the map's entry for the host, else `nodeName`, which must then not be
 * a name the map gives another host. A map without the host it is for is a mistake, not a no-op.
 */
export const resolveNodeName = (
  nodeName: string,
  hostNodeName: string,
  map: ReadonlyMap<string, string>
): Result.Result<string, { readonly flag: string; readonly message: string }> => {
  if (map.size === 0) return Result.succeed(nodeName)
  if (hostNodeName === "") {
    return Result.fail({ flag: "node-name-map", message: "--node-name-map needs --host-node-name (the host this daemon runs on) to pick an entry" })
  }
  const mapped = map.get(hostNodeName)
  if (mapped !== undefined) return Result.succeed(mapped)
  for (const [host, node] of map) {
    if (node === nodeName) {
      return Result.fail({
        flag: "node-name",
        message: `--node-name ${JSON.stringify(nodeName)} is the name --node-name-map gives host ${JSON.stringify(host)}, not this host ${JSON.stringify(hostNodeName)}`
      })
    }
  }
  return Result.succeed(nodeName)
}
