/**
 * The daemon's flag table (CFG-2 — the flag table, plus our additions) and a tokenizer with Go
 * `flag` package semantics (CFG-4 — Go flag syntax): `-x` and `--x` are the same flag; `--x=v` and
 * `--x v`; a boolean is set by the bare flag or `--x=<bool>` (never by a following word); `--` ends
 * the flags; the last occurrence of a flag wins. Unlike Go, a leftover positional argument is an
 * error rather than silently ignored: with subcommands, a misspelt one must not start the daemon.
 */
import { Result } from "effect"
import { redactUrlUserinfo } from "../Schemas/UrlRedaction.ts"
import { UsageError } from "./Errors.ts"

export interface FlagSpec {
  readonly name: string
  /**
   * The env var that supplies the default when set and non-empty (CFG-3 — an empty env var is
   * unset).
   */
  readonly env?: string
  /** The default, as text (what the value parser receives when neither flag nor env var is set). */
  readonly defaultText: string
  readonly kind: "value" | "bool"
  /** Shown in --help as the value's type. */
  readonly valueName: string
  readonly description: string
}

export const value = (
  name: string,
  valueName: string,
  defaultText: string,
  description: string,
  env?: string
): FlagSpec => env === undefined
  ? { name, kind: "value", valueName, defaultText, description }
  : { name, kind: "value", valueName, defaultText, description, env }

export const bool = (name: string, description: string): FlagSpec => ({
  name,
  kind: "bool",
  valueName: "",
  defaultText: "false",
  description
})

export const daemonFlags: ReadonlyArray<FlagSpec> = [
  value("node-name", "string", "vk-sandboxd", "name of the virtual Node", "VK_NODE_NAME"),
  value(
    "host-node-name",
    "string",
    "",
    "the host Node this daemon runs on; picks its entry of --node-name-map",
    "HOST_NODE_NAME"
  ),
  value(
    "node-name-map",
    "host=node,...",
    "",
    "full virtual Node names for the hosts listed (e.g. nodes moved from the Go daemon); a host listed here takes its name instead of --node-name",
    "VK_NODE_NAME_MAP"
  ),
  value("node-ip", "string", "", "the Node's InternalIP (also the Pod IP fallback)", "VK_NODE_IP"),
  value("listen-addr", "host:port", ":10260", "kubelet API listen address (port 1..65535)", "VK_LISTEN_ADDR"),
  value("bind-address", "ip", "", "IP the kubelet API listens on, when --listen-addr names no host (empty = every interface)", "VK_BIND_ADDRESS"),
  value(
    "tls-cert",
    "path",
    "",
    "kubelet API serving certificate (with --tls-key; must load); when both are unset: vk-cocoon's pair, else self-signed",
    "VK_TLS_CERT"
  ),
  value("tls-key", "path", "", "kubelet API serving key (with --tls-cert)", "VK_TLS_KEY"),
  value(
    "vk-cocoon-tls-cert",
    "path",
    "/etc/cocoon/vk/tls/vk-kubelet.crt",
    "vk-cocoon's kubelet certificate, served without --tls-cert when usable (else self-signed); empty = not looked for",
    "VK_COCOON_TLS_CERT"
  ),
  value("vk-cocoon-tls-key", "path", "/etc/cocoon/vk/tls/vk-kubelet.key", "vk-cocoon's kubelet key (with --vk-cocoon-tls-cert)", "VK_COCOON_TLS_KEY"),
  value("client-ca-file", "path", "", "CA bundle; when set, a kubelet API client may authenticate with a certificate it signed"),
  value("node-cpu", "quantity", "4000", "Node cpu capacity (Kubernetes quantity)", "VK_NODE_CPU"),
  value("node-memory", "quantity", "8Ti", "Node memory capacity (Kubernetes quantity)", "VK_NODE_MEMORY"),
  value("node-pods", "quantity", "2000", "Node pods capacity (Kubernetes quantity)", "VK_NODE_PODS"),
  value(
    "node-labels",
    "k=v,...",
    "sandbox.cocoonstack.io/runtime=sandboxd",
    "Node labels; replaces the default, so repeat the runtime label if you need it"
  ),
  value("kube-api-qps", "float", "200", "client-side rate limit for Kubernetes API requests (> 0)"),
  value("kube-api-burst", "int", "400", "client-side burst for Kubernetes API requests (> 0)"),
  value("kubeconfig", "path", "", "kubeconfig file; when unset: in-cluster config, then $KUBECONFIG"),
  value("sandboxd-url", "url", "http://127.0.0.1:7777", "sandboxd base URL (http or https)", "SANDBOXD_URL"),
  value(
    "sandboxd-advertise-addr",
    "host:port",
    "",
    "sandboxd address published in the NodeInventory (derived from --sandboxd-url when unset)",
    "SANDBOXD_ADVERTISE_ADDR"
  ),
  value("sandboxd-token-file", "path", "", "file holding the sandboxd root token (followed for rotations; must not be empty)", "SANDBOXD_TOKEN_FILE"),
  value("sandboxd-timeout", "duration", "10s", "timeout of one sandboxd request"),
  value(
    "claim-settle-time",
    "duration",
    "0s",
    "how long after a claim attempt whose outcome is unknown sandboxd may still make its VM; 0 = --sandboxd-timeout",
    "VK_CLAIM_SETTLE_TIME"
  ),
  value("sandboxd-max-concurrency", "int", "64", "most sandboxd requests in flight at once (>= 1)"),
  value(
    "sandboxd-probe-interval",
    "duration",
    "10s",
    "how often sandboxd is probed (GET /v1/info) for the node's health (> 0)",
    "SANDBOXD_PROBE_INTERVAL"
  ),
  value(
    "sandboxd-probe-grace",
    "int",
    "3",
    "failed sandboxd probes in a row before the Node is tainted NoSchedule (>= 1)",
    "SANDBOXD_PROBE_GRACE"
  ),
  value("state-path", "path", "/var/lib/vk-sandbox/claims.json", "claims file (must not be empty)", "VK_STATE_PATH"),
  value("orphan-scan-interval", "duration", "60s", "audit-only orphan scan period; 0 or negative disables it"),
  bool("publish-inventory", "publish a NodeInventory object for this node"),
  value("publish-interval", "duration", "30s", "NodeInventory publish period (> 0 with --publish-inventory)"),
  value("lease-watch-interval", "duration", "30s", "period of the claim lease check (advanced)"),
  value("claim-verify-interval", "duration", "15s", "period of the quarantined-claim verification (advanced)"),
  value(
    "watch-check-interval",
    "duration",
    "15s",
    "a Pod watch silent this long asks whether the apiserver's resourceVersion went backwards (advanced)",
    "VK_WATCH_CHECK_INTERVAL"
  ),
  value("shutdown-timeout", "duration", "10s", "how long shutdown waits for in-flight work"),
  value("metrics-addr", "host:port", ":10261", "Prometheus metrics listen address (port 0 = any free port)"),
  value(
    "metrics-bind-address",
    "ip",
    "",
    "IP the metrics server listens on, when --metrics-addr names no host (empty = every interface)",
    "VK_METRICS_BIND_ADDRESS"
  ),
  value("log-level", "level", "info", "trace, debug, info, warn or error"),
  value("log-format", "format", "json", "json or text"),
  value(
    "otlp-endpoint",
    "url",
    "",
    "OTLP/HTTP base URL; when set, traces are exported to <url>/v1/traces (off when empty)",
    "OTEL_EXPORTER_OTLP_ENDPOINT"
  ),
  bool("version", "print the version and exit")
]

const daemonSpecs: ReadonlyMap<string, FlagSpec> = new Map(daemonFlags.map((spec) => [spec.name, spec]))
const tables = new WeakMap<ReadonlyArray<FlagSpec>, ReadonlyMap<string, FlagSpec>>([[daemonFlags, daemonSpecs]])

/** A flag table by name (every command of the binary has one: the daemon, `claims`, each simulator). */
const byName = (table: ReadonlyArray<FlagSpec>): ReadonlyMap<string, FlagSpec> => {
  const known = tables.get(table)
  if (known !== undefined) return known
  const made = new Map(table.map((spec) => [spec.name, spec]))
  tables.set(table, made)
  return made
}

/** What the command line said, before any value is interpreted. */
export interface Tokens {
  /** Explicitly given flags, by name; booleans as "true"/"false". The last occurrence wins. */
  readonly given: ReadonlyMap<string, string>
  readonly help: boolean
}

/** Go's strconv.ParseBool. */
const parseGoBool = (text: string): boolean | undefined => {
  if (["1", "t", "T", "true", "TRUE", "True"].includes(text)) return true
  if (["0", "f", "F", "false", "FALSE", "False"].includes(text)) return false
  return undefined
}

/** User text inside a one-line message: quoted, control characters escaped. */
export const quote = (text: string): string => JSON.stringify(text)

/** The command line against a flag table (the daemon's unless another is given). */
export const tokenize = (
  argv: ReadonlyArray<string>,
  table: ReadonlyArray<FlagSpec> = daemonFlags
): Result.Result<Tokens, UsageError> => {
  const specByName = byName(table)
  const given = new Map<string, string>()
  let i = 0
  while (i < argv.length) {
    const arg = argv[i]!
    i++
    if (arg === "--") break
    if (arg.length < 2 || !arg.startsWith("-")) {
      return Result.fail(new UsageError({ flag: "", message: `unexpected argument ${quote(arg)} (see --help)` }))
    }
    const body = arg.startsWith("--") ? arg.slice(2) : arg.slice(1)
    if (body === "" || body.startsWith("-") || body.startsWith("=")) {
      return Result.fail(new UsageError({ flag: "", message: `bad flag syntax: ${quote(arg)}` }))
    }
    const equals = body.indexOf("=")
    const name = equals < 0 ? body : body.slice(0, equals)
    const inline = equals < 0 ? undefined : body.slice(equals + 1)
    const spec = specByName.get(name)
    if (spec === undefined) {
      // Like Go, help ends parsing at once: nothing after it is looked at.
      if (name === "help" || name === "h") return Result.succeed({ given, help: true })
      return Result.fail(new UsageError({ flag: name, message: `flag provided but not defined: ${quote(`--${name}`)} (see --help)` }))
    }
    if (spec.kind === "bool") {
      const parsed = inline === undefined ? true : parseGoBool(inline)
      if (parsed === undefined) {
        return Result.fail(
          new UsageError({ flag: name, message: `invalid boolean value ${quote(inline ?? "")} for flag --${name}` })
        )
      }
      given.set(name, String(parsed))
      continue
    }
    if (inline !== undefined) {
      given.set(name, inline)
      continue
    }
    if (i >= argv.length) {
      return Result.fail(new UsageError({ flag: name, message: `flag needs an argument: --${name}` }))
    }
    given.set(name, argv[i]!)
    i++
  }
  if (i < argv.length) {
    return Result.fail(new UsageError({ flag: "", message: `unexpected argument ${quote(argv[i]!)} (see --help)` }))
  }
  return Result.succeed({ given, help: false })
}

/** Where a flag's effective value came from; error messages name it. */
export interface RawValue {
  readonly text: string
  readonly source: "flag" | "env" | "default"
}

/** The effective text of a flag: explicit flag, else its env var when set and non-empty, else the default. */
export const rawValue = (
  tokens: Tokens,
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  table: ReadonlyArray<FlagSpec> = daemonFlags
): RawValue => {
  const spec = byName(table).get(name)
  if (spec === undefined) return { text: "", source: "default" }
  const explicit = tokens.given.get(name)
  if (explicit !== undefined) return { text: explicit, source: "flag" }
  const fromEnv = spec.env === undefined ? undefined : env[spec.env]
  if (fromEnv !== undefined && fromEnv !== "") return { text: fromEnv, source: "env" }
  return { text: spec.defaultText, source: "default" }
}

export const flagSpec = (name: string, table: ReadonlyArray<FlagSpec> = daemonFlags): FlagSpec | undefined =>
  byName(table).get(name)

/** `--node-cpu`, or `--node-cpu (from $VK_NODE_CPU)` when the env var supplied the value. */
const describeSource = (spec: FlagSpec | undefined, name: string, source: RawValue["source"]): string =>
  source === "env" && spec?.env !== undefined ? `--${name} (from $${spec.env})` : `--${name}`

/**
 * Reads flags of one command: each value's effective text (flag, env var, default), and a value
 * parsed with the one usage-error wording every command shares.
 */
export const flagReader = (
  tokens: Tokens,
  env: Readonly<Record<string, string | undefined>>,
  table: ReadonlyArray<FlagSpec> = daemonFlags
) => ({
  text: (name: string): string => rawValue(tokens, env, name, table).text,
  field: <A>(name: string, parse: (text: string) => Result.Result<A, string>): Result.Result<A, UsageError> => {
    const raw = rawValue(tokens, env, name, table)
    return Result.mapError(parse(raw.text), (problem) =>
      new UsageError({
        flag: name,
        // A URL's password must not reach the terminal or a log collector through the echo.
        message: `invalid value ${quote(redactUrlUserinfo(raw.text))} for flag ${describeSource(byName(table).get(name), name, raw.source)}: ${problem}`
      }))
  }
})
