/**
 * The daemon's configuration for tests, demos and the bench: every flag's default (CFG-2 — the flag
 * table), with a node name and paths suitable for tests.
 */
import { Duration, Redacted } from "effect"
import type { AppConfigShape } from "../src/Schemas/Config.ts"

/** No vk-cocoon pair is looked for, so a test never serves a certificate of the machine it runs on. */
export const testConfig = (overrides: Partial<AppConfigShape> = {}): AppConfigShape => ({
  nodeName: "vk-sandboxd",
  nodeIp: "",
  listenAddr: { host: "", port: 10260 },
  tlsCert: "",
  tlsKey: "",
  vkCocoonTlsCert: "",
  vkCocoonTlsKey: "",
  clientCaFile: "",
  nodeCpu: "4000",
  nodeMemory: "8Ti",
  nodePods: "2000",
  nodeLabels: { "sandbox.cocoonstack.io/runtime": "sandboxd" },
  kubeApiQps: 200,
  kubeApiBurst: 400,
  kubeconfig: "",
  sandboxdUrl: "http://127.0.0.1:7777",
  sandboxdAdvertiseAddr: "127.0.0.1:7777",
  sandboxdTokenFile: "",
  sandboxdToken: Redacted.make(""),
  sandboxdTimeout: Duration.seconds(10),
  claimSettleTime: Duration.zero,
  sandboxdMaxConcurrency: 64,
  sandboxdProbeInterval: Duration.seconds(10),
  sandboxdProbeGrace: 3,
  statePath: "/var/lib/vk-sandbox/claims.json",
  orphanScanInterval: Duration.seconds(60),
  publishInventory: false,
  publishInterval: Duration.seconds(30),
  leaseWatchInterval: Duration.seconds(30),
  claimVerifyInterval: Duration.seconds(15),
  watchCheckInterval: Duration.seconds(15),
  shutdownTimeout: Duration.seconds(10),
  metricsAddr: { host: "", port: 10261 },
  logLevel: "info",
  logFormat: "json",
  otlpEndpoint: "",
  ...overrides
})
