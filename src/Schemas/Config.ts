/**
 * The validated daemon configuration (CFG-2 — the flag table, plus our additions). `src/Cli/`
 * parses flags and env vars into it; tests build it with `testConfig` (testkit/Config.ts).
 */
import { Duration, Redacted } from "effect"

export interface ListenAddr {
  /** "" = all interfaces */
  readonly host: string
  readonly port: number
}

export type LogFormat = "json" | "text"
export type LogLevelName = "trace" | "debug" | "info" | "warn" | "error"

export interface AppConfigShape {
  readonly nodeName: string
  readonly nodeIp: string
  readonly listenAddr: ListenAddr
  readonly tlsCert: string
  readonly tlsKey: string
  /**
   * Where the co-located vk-cocoon keeps its kubelet pair, reused without --tls-cert (TLS-4 —
   * vk-cocoon's certificate is reused when it is usable); "" = not looked for.
   */
  readonly vkCocoonTlsCert: string
  readonly vkCocoonTlsKey: string
  readonly clientCaFile: string
  /** Kubernetes quantities as given (validated): written to capacity/allocatable verbatim. */
  readonly nodeCpu: string
  readonly nodeMemory: string
  readonly nodePods: string
  readonly nodeLabels: Readonly<Record<string, string>>
  readonly kubeApiQps: number
  readonly kubeApiBurst: number
  /** An explicit --kubeconfig; "" = in-cluster, then $KUBECONFIG. */
  readonly kubeconfig: string
  /** Without a trailing "/". */
  readonly sandboxdUrl: string
  /** --sandboxd-advertise-addr, or derived from --sandboxd-url (CFG-9 — advertise address). */
  readonly sandboxdAdvertiseAddr: string
  readonly sandboxdTokenFile: string
  /** Read once from the token file and trimmed; "" = no Authorization header. */
  readonly sandboxdToken: Redacted.Redacted<string>
  readonly sandboxdTimeout: Duration.Duration
  /**
   * How long past a claim attempt's timeout sandboxd may still finish making its VM: a listing
   * proves the attempt made none only when taken after both. Zero = `sandboxdTimeout`.
   */
  readonly claimSettleTime: Duration.Duration
  readonly sandboxdMaxConcurrency: number
  /** How often the node controller asks sandboxd whether it can serve. */
  readonly sandboxdProbeInterval: Duration.Duration
  /** Failed probes in a row before the Node is tainted NoSchedule (>= 1). */
  readonly sandboxdProbeGrace: number
  readonly statePath: string
  /** Zero disables the scan. */
  readonly orphanScanInterval: Duration.Duration
  readonly publishInventory: boolean
  readonly publishInterval: Duration.Duration
  readonly leaseWatchInterval: Duration.Duration
  readonly claimVerifyInterval: Duration.Duration
  /** A Pod watch silent this long checks the apiserver's resourceVersion did not go backwards. */
  readonly watchCheckInterval: Duration.Duration
  readonly shutdownTimeout: Duration.Duration
  readonly metricsAddr: ListenAddr
  readonly logLevel: LogLevelName
  readonly logFormat: LogFormat
  /** OTLP/HTTP base URL for traces; empty = no tracing (nothing loaded, nothing exported). */
  readonly otlpEndpoint: string
}

/** The settle time in force: the flag's value, or `--sandboxd-timeout` when it is zero. */
export const effectiveSettleTime = (config: Pick<AppConfigShape, "sandboxdTimeout" | "claimSettleTime">): Duration.Duration =>
  Duration.isZero(config.claimSettleTime) ? config.sandboxdTimeout : config.claimSettleTime
