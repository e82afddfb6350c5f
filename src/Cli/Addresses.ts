/**
 * Address-shaped flags: --listen-addr / --metrics-addr (`host:port`, split as Go's
 * net.SplitHostPort does) and the bind addresses that supply their host, --sandboxd-url (an
 * http(s) base URL) and the advertise address derived from it (CFG-9 — advertise address).
 */
import { Result } from "effect"
import { isIP } from "node:net"
import type { ListenAddr } from "../Schemas/Config.ts"

/** Go's net.SplitHostPort: `host:port`, `[v6]:port`, `:port`; the host may be empty. */
export const splitHostPort = (text: string): Result.Result<{ readonly host: string; readonly port: string }, string> => {
  const lastColon = text.lastIndexOf(":")
  if (lastColon < 0) return Result.fail("missing port (want host:port, e.g. :10260 or 127.0.0.1:10260)")
  let host: string
  let hostEnd = 0
  let portStart = 0
  if (text.startsWith("[")) {
    const close = text.indexOf("]")
    if (close < 0) return Result.fail("missing ']' in address")
    if (close + 1 === text.length) return Result.fail("missing port (want [host]:port)")
    if (close + 1 !== lastColon) {
      return Result.fail(text[close + 1] === ":" ? "too many colons in address" : "missing port (want [host]:port)")
    }
    host = text.slice(1, close)
    hostEnd = 1
    portStart = close + 1
  } else {
    host = text.slice(0, lastColon)
    if (host.includes(":")) return Result.fail("too many colons in address (write an IPv6 host as [host]:port)")
  }
  if (text.slice(hostEnd).includes("[")) return Result.fail("unexpected '[' in address")
  if (text.slice(portStart).includes("]")) return Result.fail("unexpected ']' in address")
  return Result.succeed({ host, port: text.slice(lastColon + 1) })
}

/**
 * A listen address (CFG-14 — startup failures exit 1): `host:port` with a base-10 port in 1..65535
 * (0 too when `allowPortZero`, meaning "any free port"). Named ports (`:http`) and a missing port
 * are rejected.
 */
export const parseListenAddr = (
  text: string,
  options: { readonly allowPortZero: boolean }
): Result.Result<ListenAddr, string> =>
  Result.flatMap(splitHostPort(text), ({ host, port }) => {
    const range = options.allowPortZero ? "0..65535" : "1..65535"
    if (!/^\d+$/.test(port)) {
      return Result.fail(port === "" ? `missing port (want host:port, port ${range})` : `port ${JSON.stringify(port)} is not a number in ${range}`)
    }
    const number = Number(port)
    const minimum = options.allowPortZero ? 0 : 1
    if (number < minimum || number > 65535) return Result.fail(`port ${port} is out of range ${range}`)
    return Result.succeed({ host, port: number })
  })

/** --bind-address / --metrics-bind-address: an IPv4 or IPv6 address (no brackets), or empty. */
export const parseBindAddress = (text: string): Result.Result<string, string> =>
  text === "" || isIP(text) !== 0
    ? Result.succeed(text)
    : Result.fail("not an IP address (want e.g. 10.0.0.5, ::1, 0.0.0.0; a host name is not accepted)")

/**
 * BIND-1 — bind addresses: the address a server listens on, from its `host:port` flag and its bind
 * address. The bind address supplies the host when the `host:port` flag names none; when both name
 * one they must agree, since neither could silently win over the other (the chart sets the bind
 * address from the host IP, a `--listen-addr` with a host can come from extra arguments).
 */
export const withBindAddress = (
  address: ListenAddr,
  bindAddress: string,
  addressFlag: string
): Result.Result<ListenAddr, string> => {
  if (bindAddress === "" || address.host === bindAddress) return Result.succeed(address)
  if (address.host === "") return Result.succeed({ host: bindAddress, port: address.port })
  return Result.fail(`--${addressFlag} names host ${address.host} but the bind address is ${bindAddress}: give one, or the same in both`)
}

/** --sandboxd-url: an http(s) URL with a host and no query or fragment; trailing `/` removed. */
export const parseSandboxdUrl = (text: string): Result.Result<string, string> => {
  const trimmed = text.replace(/\/+$/, "")
  if (!URL.canParse(trimmed)) return Result.fail("not a URL (want e.g. http://127.0.0.1:7777)")
  const url = new URL(trimmed)
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return Result.fail(`scheme "${url.protocol.slice(0, -1)}" is not http or https`)
  }
  if (url.hostname === "") return Result.fail("the URL has no host")
  if (url.search !== "" || url.hash !== "" || trimmed.includes("?") || trimmed.includes("#")) {
    return Result.fail("a base URL must not have a query or fragment")
  }
  return Result.succeed(trimmed)
}

/**
 * CFG-9: the explicit advertise address when non-empty; otherwise the URL's authority as written
 * (host and port, without user info: `http://127.0.0.1:7777` → `127.0.0.1:7777`); otherwise the raw
 * text without trailing `/`.
 */
export const deriveAdvertiseAddr = (explicit: string, sandboxdUrl: string): string => {
  if (explicit !== "") return explicit
  const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)/.exec(sandboxdUrl)?.[1]
  if (authority !== undefined) {
    const host = authority.slice(authority.lastIndexOf("@") + 1)
    if (host !== "") return host
  }
  return sandboxdUrl.replace(/\/+$/, "")
}
