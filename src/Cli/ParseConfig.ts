/**
 * argv + environment → validated configuration, with no I/O (so a bad value is reported as such, not masked by a missing kubeconfig): every value
 * is checked here, so a bad value is reported as such (exit 2) and never masked by a later
 * environment failure. The token file is read afterwards (`TokenFile.ts`).
 */
import { Duration, Redacted, Result } from "effect"
import type { AppConfigShape, LogFormat, LogLevelName } from "../Schemas/Config.ts"
import { deriveAdvertiseAddr, parseBindAddress, parseListenAddr, parseSandboxdUrl, withBindAddress } from "./Addresses.ts"
import { UsageError } from "./Errors.ts"
import { flagReader, tokenize } from "./Flags.ts"
import type { Tokens } from "./Flags.ts"
import { parseGoDuration } from "./GoDuration.ts"
import { parseNodeLabels } from "./NodeLabels.ts"
import { parseNodeName, parseNodeNameMap, resolveNodeName } from "./NodeNameMap.ts"
import { parseCapacityQuantity } from "./Quantity.ts"

export type Environment = Readonly<Record<string, string | undefined>>

/** What the daemon command line asks for. */
export type Invocation =
  | { readonly _tag: "Help" }
  | { readonly _tag: "Version" }
  /** `config.sandboxdToken` is still empty here: see `readSandboxdToken`. */
  | { readonly _tag: "Run"; readonly config: AppConfigShape }

const logLevels: ReadonlyArray<LogLevelName> = ["trace", "debug", "info", "warn", "error"]
const logFormats: ReadonlyArray<LogFormat> = ["json", "text"]

const floatPattern = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/
const intPattern = /^[+-]?\d+$/

const parseFloatText = (text: string): Result.Result<number, string> =>
  floatPattern.test(text) && Number.isFinite(Number(text)) ? Result.succeed(Number(text)) : Result.fail("not a number")

const parseIntText = (text: string): Result.Result<number, string> =>
  intPattern.test(text) && Number.isSafeInteger(Number(text)) ? Result.succeed(Number(text)) : Result.fail("not an integer")

const positive = <A>(parse: (text: string) => Result.Result<A, string>, isPositive: (value: A) => boolean) =>
(text: string): Result.Result<A, string> =>
  Result.flatMap(parse(text), (value) => isPositive(value) ? Result.succeed(value) : Result.fail("must be greater than 0"))

const positiveDuration = positive(parseGoDuration, (d) => Duration.isGreaterThan(d, Duration.zero))

const oneOf = <A extends string>(allowed: ReadonlyArray<A>) => (text: string): Result.Result<A, string> => {
  const found = allowed.find((candidate) => candidate === text.toLowerCase())
  return found === undefined ? Result.fail(`must be one of ${allowed.join(", ")}`) : Result.succeed(found)
}

/**
 * A certificate flag and its key flag, empty together or set together; otherwise a usage error
 * naming the empty one, with `message(set, empty)`.
 */
const pairedPaths = (
  text: (name: string) => string,
  certFlag: string,
  keyFlag: string,
  message: (set: string, empty: string) => string
): Result.Result<readonly [string, string], UsageError> => {
  const cert = text(certFlag)
  const key = text(keyFlag)
  if ((cert === "") === (key === "")) return Result.succeed([cert, key])
  const [set, empty] = cert === "" ? [keyFlag, certFlag] : [certFlag, keyFlag]
  return Result.fail(new UsageError({ flag: empty, message: message(set, empty) }))
}

/** Validate everything on the command line and in the environment into a configuration. */
export const configFromTokens = (tokens: Tokens, env: Environment): Result.Result<AppConfigShape, UsageError> => {
  const { field, text } = flagReader(tokens, env)
  return Result.gen(function*() {
    const hostNodeName = yield* field("host-node-name", (t) => (t === "" ? Result.succeed("") : parseNodeName(t)))
    const nodeNameMap = yield* field("node-name-map", parseNodeNameMap)
    const nodeName = yield* Result.mapError(
      resolveNodeName(yield* field("node-name", parseNodeName), hostNodeName, nodeNameMap),
      (problem) => new UsageError(problem)
    )
    const listenAddr = yield* field("listen-addr", (t) => parseListenAddr(t, { allowPortZero: false })).pipe(
      Result.flatMap((address) => field("bind-address", (t) => Result.flatMap(parseBindAddress(t), (ip) => withBindAddress(address, ip, "listen-addr"))))
    )
    const nodeCpu = yield* field("node-cpu", parseCapacityQuantity)
    const nodeMemory = yield* field("node-memory", parseCapacityQuantity)
    const nodePods = yield* field("node-pods", parseCapacityQuantity)
    const kubeApiQps = yield* field("kube-api-qps", positive(parseFloatText, (n) => n > 0))
    const kubeApiBurst = yield* field("kube-api-burst", positive(parseIntText, (n) => n > 0))
    const sandboxdUrl = yield* field("sandboxd-url", parseSandboxdUrl)
    const sandboxdTimeout = yield* field("sandboxd-timeout", positiveDuration)
    // Negative means the default, the same as 0.
    const claimSettleTime = yield* field(
      "claim-settle-time",
      (t) => Result.map(parseGoDuration(t), (d) => Duration.isNegative(d) ? Duration.zero : d)
    )
    const sandboxdMaxConcurrency = yield* field("sandboxd-max-concurrency", positive(parseIntText, (n) => n >= 1))
    const sandboxdProbeInterval = yield* field("sandboxd-probe-interval", positiveDuration)
    const sandboxdProbeGrace = yield* field("sandboxd-probe-grace", positive(parseIntText, (n) => n >= 1))
    // CFG-11 — start order, step 3 (exit 2 here, not 1): only an explicit empty value gets this
    // far, because an empty VK_STATE_PATH counts as unset.
    const statePath = yield* field(
      "state-path",
      (t) =>
        t === ""
          ? Result.fail("must not be empty: without a claims file no release credential survives a restart")
          : Result.succeed(t)
    )
    // CFG-17 — validation instead of crashes: negative means disabled, the same as 0.
    const orphanScanInterval = yield* field(
      "orphan-scan-interval",
      (t) => Result.map(parseGoDuration(t), (d) => Duration.isNegative(d) ? Duration.zero : d)
    )
    const publishInventory = text("publish-inventory") === "true"
    const publishInterval = yield* field(
      "publish-interval",
      publishInventory
        ? (t) =>
          Result.flatMap(
            parseGoDuration(t),
            (d) =>
              Duration.isGreaterThan(d, Duration.zero)
                ? Result.succeed(d)
                : Result.fail("must be greater than 0 with --publish-inventory")
          )
        : parseGoDuration
    )
    const leaseWatchInterval = yield* field("lease-watch-interval", positiveDuration)
    const claimVerifyInterval = yield* field("claim-verify-interval", positiveDuration)
    const watchCheckInterval = yield* field("watch-check-interval", positiveDuration)
    const shutdownTimeout = yield* field("shutdown-timeout", positiveDuration)
    const metricsAddr = yield* field("metrics-addr", (t) => parseListenAddr(t, { allowPortZero: true })).pipe(
      Result.flatMap((address) =>
        field("metrics-bind-address", (t) => Result.flatMap(parseBindAddress(t), (ip) => withBindAddress(address, ip, "metrics-addr")))
      )
    )
    const logLevel = yield* field("log-level", oneOf(logLevels))
    const logFormat = yield* field("log-format", oneOf(logFormats))
    // Off when empty; otherwise the same rules as a sandboxd base URL (http or https, a host, no query).
    const otlpEndpoint = yield* field("otlp-endpoint", (t) => (t === "" ? Result.succeed("") : parseSandboxdUrl(t)))
    // A certificate without its key (or the reverse) is a mistake, not a wish for self-signing.
    const [tlsCert, tlsKey] = yield* pairedPaths(text, "tls-cert", "tls-key", (given, missing) =>
      `--${given} needs --${missing}: give both (a serving certificate and its key) or neither (self-signed)`)
    // Clearing one vk-cocoon path and not the other is a half-made choice (TLS-4 — vk-cocoon's
    // certificate is reused when it is usable): say so.
    const [vkCocoonTlsCert, vkCocoonTlsKey] = yield* pairedPaths(text, "vk-cocoon-tls-cert", "vk-cocoon-tls-key", (kept, cleared) =>
      `--${cleared} is empty but --${kept} is not: clear both to never reuse vk-cocoon's pair, or neither`)
    const config: AppConfigShape = {
      nodeName,
      nodeIp: text("node-ip"),
      listenAddr,
      tlsCert,
      tlsKey,
      vkCocoonTlsCert,
      vkCocoonTlsKey,
      clientCaFile: text("client-ca-file"),
      nodeCpu: nodeCpu.text,
      nodeMemory: nodeMemory.text,
      nodePods: nodePods.text,
      nodeLabels: parseNodeLabels(text("node-labels")),
      kubeApiQps,
      kubeApiBurst,
      kubeconfig: text("kubeconfig"),
      sandboxdUrl,
      sandboxdAdvertiseAddr: deriveAdvertiseAddr(text("sandboxd-advertise-addr"), sandboxdUrl),
      sandboxdTokenFile: text("sandboxd-token-file"),
      sandboxdToken: Redacted.make(""),
      sandboxdTimeout,
      claimSettleTime,
      sandboxdMaxConcurrency,
      sandboxdProbeInterval,
      sandboxdProbeGrace,
      statePath,
      orphanScanInterval,
      publishInventory,
      publishInterval,
      leaseWatchInterval,
      claimVerifyInterval,
      watchCheckInterval,
      shutdownTimeout,
      metricsAddr,
      logLevel,
      logFormat,
      otlpEndpoint
    }
    return config
  })
}

/**
 * The daemon's configuration from argv (without the program name) and the environment, or the
 * first problem found. `--help`/`--version` are ignored here; see `parseInvocation`.
 * The sandboxd token is not read (it is I/O): `sandboxdToken` is empty.
 */
export const parseConfig = (argv: ReadonlyArray<string>, env: Environment): Result.Result<AppConfigShape, UsageError> =>
  Result.flatMap(tokenize(argv), (tokens) => configFromTokens(tokens, env))

/**
 * What the daemon command line asks for. `--help` and `--version` only need well-formed flags
 * (the values are not validated), so `--version` works whatever the environment holds (CFG-6 —
 * --version does nothing else).
 */
export const parseInvocation = (argv: ReadonlyArray<string>, env: Environment): Result.Result<Invocation, UsageError> =>
  Result.flatMap(tokenize(argv), (tokens): Result.Result<Invocation, UsageError> => {
    if (tokens.help) return Result.succeed({ _tag: "Help" })
    if (tokens.given.get("version") === "true") return Result.succeed({ _tag: "Version" })
    return Result.map(configFromTokens(tokens, env), (config) => ({ _tag: "Run", config }))
  })
