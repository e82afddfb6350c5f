import { assert, describe, it } from "@effect/vitest"
import { Duration, Redacted, Result } from "effect"
import type { UsageError } from "../../src/Cli/Errors.ts"
import { daemonFlags } from "../../src/Cli/Flags.ts"
import { parseConfig, parseInvocation } from "../../src/Cli/ParseConfig.ts"
import type { AppConfigShape } from "../../src/Schemas/Config.ts"
import { testConfig } from "../../testkit/Config.ts"

const ok = (argv: ReadonlyArray<string>, env: Record<string, string | undefined> = {}): AppConfigShape => {
  const result = parseConfig(argv, env)
  if (Result.isFailure(result)) return assert.fail(`rejected ${JSON.stringify(argv)}: ${result.failure.message}`)
  return result.success
}

const usageError = (argv: ReadonlyArray<string>, env: Record<string, string | undefined> = {}): UsageError => {
  const result = parseConfig(argv, env)
  if (Result.isSuccess(result)) return assert.fail(`accepted ${JSON.stringify(argv)} ${JSON.stringify(env)}`)
  return result.failure
}

/**
 * Every flag's default: testConfig's, except that the daemon looks for vk-cocoon's pair where
 * vk-cocoon keeps it (TLS-4 — vk-cocoon's certificate is reused when it is usable), which a test
 * config never does.
 */
const flagDefaults = testConfig({
  vkCocoonTlsCert: "/etc/cocoon/vk/tls/vk-kubelet.crt",
  vkCocoonTlsKey: "/etc/cocoon/vk/tls/vk-kubelet.key"
})

/** The config with Durations compared by length and the token unwrapped, for deepStrictEqual. */
const comparable = (config: AppConfigShape) =>
  Object.fromEntries(
    Object.entries(config).map(([key, value]) => [
      key,
      Duration.isDuration(value)
        ? `${Duration.toNanosUnsafe(value)}ns`
        : Redacted.isRedacted(value)
        ? `redacted:${Redacted.value(value)}`
        : value
    ])
  )

describe("parseConfig: defaults", () => {
  it("gives every CFG-2 default with an empty command line and environment", () => {
    assert.deepStrictEqual(comparable(ok([])), comparable(flagDefaults))
  })

  it("ignores unrelated and empty environment variables", () => {
    const env = Object.fromEntries(daemonFlags.flatMap((spec) => spec.env === undefined ? [] : [[spec.env, ""]]))
    assert.deepStrictEqual(comparable(ok([], { ...env, KUBECONFIG: "/k", VK_LOG_LEVEL: "debug" })), comparable(flagDefaults))
  })
})

/** Env-backed flags: [flag, env var, env value, flag value, read the field, expected from env, expected from flag]. */
const envBacked: ReadonlyArray<
  readonly [string, string, string, string, (c: AppConfigShape) => unknown, unknown, unknown]
> = [
  ["node-name", "VK_NODE_NAME", "env-node", "flag-node", (c) => c.nodeName, "env-node", "flag-node"],
  ["node-ip", "VK_NODE_IP", "10.0.0.1", "10.0.0.2", (c) => c.nodeIp, "10.0.0.1", "10.0.0.2"],
  ["listen-addr", "VK_LISTEN_ADDR", "127.0.0.1:1", ":2", (c) => c.listenAddr, { host: "127.0.0.1", port: 1 }, { host: "", port: 2 }],
  ["bind-address", "VK_BIND_ADDRESS", "10.0.0.5", "::1", (c) => c.listenAddr, { host: "10.0.0.5", port: 10260 }, { host: "::1", port: 10260 }],
  [
    "metrics-bind-address",
    "VK_METRICS_BIND_ADDRESS",
    "10.0.0.5",
    "127.0.0.1",
    (c) => c.metricsAddr,
    { host: "10.0.0.5", port: 10261 },
    { host: "127.0.0.1", port: 10261 }
  ],
  ["tls-cert", "VK_TLS_CERT", "/env.crt", "/flag.crt", (c) => c.tlsCert, "/env.crt", "/flag.crt"],
  ["tls-key", "VK_TLS_KEY", "/env.key", "/flag.key", (c) => c.tlsKey, "/env.key", "/flag.key"],
  ["vk-cocoon-tls-cert", "VK_COCOON_TLS_CERT", "/env/vk.crt", "/flag/vk.crt", (c) => c.vkCocoonTlsCert, "/env/vk.crt", "/flag/vk.crt"],
  ["vk-cocoon-tls-key", "VK_COCOON_TLS_KEY", "/env/vk.key", "/flag/vk.key", (c) => c.vkCocoonTlsKey, "/env/vk.key", "/flag/vk.key"],
  ["node-cpu", "VK_NODE_CPU", "500m", "2e3", (c) => c.nodeCpu, "500m", "2e3"],
  ["node-memory", "VK_NODE_MEMORY", "1.5Gi", "64Gi", (c) => c.nodeMemory, "1.5Gi", "64Gi"],
  ["node-pods", "VK_NODE_PODS", "110", "3000", (c) => c.nodePods, "110", "3000"],
  ["sandboxd-url", "SANDBOXD_URL", "http://10.0.0.9:7777/", "https://sb.example", (c) => c.sandboxdUrl, "http://10.0.0.9:7777", "https://sb.example"],
  ["sandboxd-advertise-addr", "SANDBOXD_ADVERTISE_ADDR", "10.1.1.1:7777", "10.2.2.2:7777", (c) => c.sandboxdAdvertiseAddr, "10.1.1.1:7777", "10.2.2.2:7777"],
  ["sandboxd-token-file", "SANDBOXD_TOKEN_FILE", "/env/token", "/flag/token", (c) => c.sandboxdTokenFile, "/env/token", "/flag/token"],
  ["state-path", "VK_STATE_PATH", "/env/claims.json", "/flag/claims.json", (c) => c.statePath, "/env/claims.json", "/flag/claims.json"],
  ["host-node-name", "HOST_NODE_NAME", "host-env", "host-flag", (c) => c.nodeName, "vk-env", "vk-flag"],
  ["node-name-map", "VK_NODE_NAME_MAP", "host-a=vk-env", "host-a=vk-flag", (c) => c.nodeName, "vk-env", "vk-flag"],
  ["claim-settle-time", "VK_CLAIM_SETTLE_TIME", "20s", "45s", (c) => Duration.toMillis(c.claimSettleTime), 20_000, 45_000],
  ["sandboxd-probe-interval", "SANDBOXD_PROBE_INTERVAL", "3s", "2s", (c) => Duration.toMillis(c.sandboxdProbeInterval), 3000, 2000],
  ["sandboxd-probe-grace", "SANDBOXD_PROBE_GRACE", "5", "1", (c) => c.sandboxdProbeGrace, 5, 1],
  ["watch-check-interval", "VK_WATCH_CHECK_INTERVAL", "1m", "2s", (c) => Duration.toMillis(c.watchCheckInterval), 60_000, 2000],
  ["otlp-endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel:4318", "https://collector.example:4318/", (c) => c.otlpEndpoint, "http://otel:4318", "https://collector.example:4318"]
]

describe("parseConfig: env-backed flags (CFG-1, CFG-3)", () => {
  it("covers every flag that has an env var", () => {
    assert.deepStrictEqual(
      envBacked.map(([flag]) => flag).sort(),
      daemonFlags.filter((spec) => spec.env !== undefined).map((spec) => spec.name).sort()
    )
  })

  // The TLS pair goes together: each is tried with the other given through its env var; so do
  // the host's name and the node-name map (CFG-19 — a full node name per host).
  const partner: Record<string, Record<string, string>> = {
    "tls-cert": { VK_TLS_KEY: "/partner.key" },
    "tls-key": { VK_TLS_CERT: "/partner.crt" },
    "host-node-name": { VK_NODE_NAME_MAP: "host-env=vk-env,host-flag=vk-flag" },
    "node-name-map": { HOST_NODE_NAME: "host-a" }
  }
  for (const [flag, envVar, envValue, flagValue, read, fromEnv, fromFlag] of envBacked) {
    it(`--${flag} / $${envVar}: default, env fallback, flag wins, empty env = unset`, () => {
      const base = partner[flag] ?? {}
      const defaultValue = read(flagDefaults)
      assert.deepStrictEqual(read(ok([])), defaultValue, "default")
      assert.deepStrictEqual(read(ok([], { ...base, [envVar]: envValue })), fromEnv, "env fallback")
      assert.deepStrictEqual(read(ok([`--${flag}`, flagValue], { ...base, [envVar]: envValue })), fromFlag, "flag beats env")
      assert.deepStrictEqual(read(ok([`--${flag}=${flagValue}`], base)), fromFlag, "--flag=value")
      assert.deepStrictEqual(read(ok([], { [envVar]: "" })), defaultValue, "empty env counts as unset")
    })
  }

  it("BIND-1: a bind address fills the host of an address that names none, and agrees with one that does", () => {
    assert.deepStrictEqual(ok(["--listen-addr", ":9999"], { VK_BIND_ADDRESS: "fd00::5" }).listenAddr, { host: "fd00::5", port: 9999 })
    assert.deepStrictEqual(ok(["--listen-addr", "10.0.0.5:9999", "--bind-address", "10.0.0.5"]).listenAddr, { host: "10.0.0.5", port: 9999 })
    assert.deepStrictEqual(ok(["--bind-address", "0.0.0.0"]).listenAddr, { host: "0.0.0.0", port: 10260 })
    assert.deepStrictEqual(ok(["--metrics-addr", "127.0.0.1:0"], { VK_METRICS_BIND_ADDRESS: "" }).metricsAddr, { host: "127.0.0.1", port: 0 })
  })

  it("an explicit empty flag value beats the env var", () => {
    assert.strictEqual(ok(["--node-ip="], { VK_NODE_IP: "10.0.0.1" }).nodeIp, "")
    assert.strictEqual(ok(["--tls-cert", ""], { VK_TLS_CERT: "/env.crt" }).tlsCert, "")
    // Both vk-cocoon paths cleared: its pair is never looked for (TLS-4).
    const off = ok(["--vk-cocoon-tls-cert=", "--vk-cocoon-tls-key="], { VK_COCOON_TLS_CERT: "/env/vk.crt" })
    assert.deepStrictEqual([off.vkCocoonTlsCert, off.vkCocoonTlsKey], ["", ""])
  })
})

/** Flags without env vars: [argv, read the field, expected]. */
const flagOnly: ReadonlyArray<readonly [ReadonlyArray<string>, (c: AppConfigShape) => unknown, unknown]> = [
  [["--client-ca-file", "/ca.pem"], (c) => c.clientCaFile, "/ca.pem"],
  [["--node-labels", "a=b,c=d"], (c) => c.nodeLabels, { a: "b", c: "d" }],
  [["--node-labels="], (c) => c.nodeLabels, {}],
  [["--kube-api-qps", "12.5"], (c) => c.kubeApiQps, 12.5],
  [["--kube-api-qps=1e3"], (c) => c.kubeApiQps, 1000],
  [["--kube-api-burst", "7"], (c) => c.kubeApiBurst, 7],
  [["--kubeconfig", "/etc/kubeconfig"], (c) => c.kubeconfig, "/etc/kubeconfig"],
  [["--sandboxd-timeout", "1m30s"], (c) => Duration.toMillis(c.sandboxdTimeout), 90_000],
  [["--sandboxd-max-concurrency", "1"], (c) => c.sandboxdMaxConcurrency, 1],
  [["--orphan-scan-interval", "0"], (c) => Duration.toMillis(c.orphanScanInterval), 0],
  [["--orphan-scan-interval", "-5s"], (c) => Duration.toMillis(c.orphanScanInterval), 0],
  [["--orphan-scan-interval", "1.5s"], (c) => Duration.toMillis(c.orphanScanInterval), 1500],
  [["--publish-inventory"], (c) => c.publishInventory, true],
  [["--publish-inventory=false"], (c) => c.publishInventory, false],
  [["--publish-inventory=0"], (c) => c.publishInventory, false],
  [["--publish-inventory=T"], (c) => c.publishInventory, true],
  [["--publish-interval", "500ms"], (c) => Duration.toMillis(c.publishInterval), 500],
  [["--publish-interval", "0"], (c) => Duration.toMillis(c.publishInterval), 0],
  [["--lease-watch-interval", "2s"], (c) => Duration.toMillis(c.leaseWatchInterval), 2000],
  [["--claim-verify-interval", "100ms"], (c) => Duration.toMillis(c.claimVerifyInterval), 100],
  [["--claim-settle-time=-1s"], (c) => Duration.toMillis(c.claimSettleTime), 0],
  [["--shutdown-timeout", "1h"], (c) => Duration.toMillis(c.shutdownTimeout), 3_600_000],
  [["--metrics-addr", "127.0.0.1:0"], (c) => c.metricsAddr, { host: "127.0.0.1", port: 0 }],
  [["--metrics-addr", "[::1]:9090"], (c) => c.metricsAddr, { host: "::1", port: 9090 }],
  [["--log-level", "debug"], (c) => c.logLevel, "debug"],
  [["--log-level", "WARN"], (c) => c.logLevel, "warn"],
  [["--log-format", "text"], (c) => c.logFormat, "text"]
]

describe("parseConfig: flags without env vars", () => {
  it("covers every flag without an env var", () => {
    const covered = new Set(flagOnly.map(([argv]) => argv[0]!.replace(/^--/, "").replace(/=.*$/, "")))
    for (const spec of daemonFlags) {
      if (spec.env === undefined && spec.name !== "version") assert.isTrue(covered.has(spec.name), spec.name)
    }
  })

  for (const [argv, read, expected] of flagOnly) {
    it(argv.join(" "), () => {
      assert.deepStrictEqual(read(ok(argv)), expected)
    })
  }

  it("reads no env var for them (KUBECONFIG is the loader's fallback, not the flag's)", () => {
    assert.strictEqual(ok([], { KUBECONFIG: "/k" }).kubeconfig, "")
  })

  it("derives the advertise address from --sandboxd-url when unset (CFG-9)", () => {
    assert.strictEqual(ok(["--sandboxd-url", "https://sb.example/"]).sandboxdAdvertiseAddr, "sb.example")
    assert.strictEqual(ok([], { SANDBOXD_URL: "http://10.0.0.9:7777" }).sandboxdAdvertiseAddr, "10.0.0.9:7777")
    assert.strictEqual(
      ok(["--sandboxd-url", "https://sb.example", "--sandboxd-advertise-addr", "10.0.0.1:7777"]).sandboxdAdvertiseAddr,
      "10.0.0.1:7777"
    )
  })

  it("never reads the token file here", () => {
    assert.strictEqual(Redacted.value(ok(["--sandboxd-token-file", "/does/not/exist"]).sandboxdToken), "")
  })
})

describe("parseConfig: Go flag syntax (CFG-4)", () => {
  it("treats -x and --x alike, with = or a separate value", () => {
    for (const argv of [["-node-name", "n"], ["--node-name", "n"], ["-node-name=n"], ["--node-name=n"]]) {
      assert.strictEqual(ok(argv).nodeName, "n", argv.join(" "))
    }
  })

  it("takes Node names the apiserver takes", () => {
    for (const name of ["n", "vk-sandboxd", "node-1.zone-a.example", "192.168.7.7", "a".repeat(253), "0a"]) {
      assert.strictEqual(ok(["--node-name", name]).nodeName, name)
    }
  })

  it("takes the next argument as the value even when it starts with a dash", () => {
    assert.strictEqual(ok(["--kubeconfig", "-odd"]).kubeconfig, "-odd")
  })

  it("keeps everything after the first = in the value", () => {
    assert.deepStrictEqual(ok(["--node-labels=a=b=c"]).nodeLabels, { a: "b=c" })
  })

  it("lets the last occurrence win", () => {
    assert.strictEqual(ok(["--node-name", "a", "--node-name=b"]).nodeName, "b")
  })

  it("stops at --", () => {
    assert.strictEqual(ok(["--node-name", "a", "--"]).nodeName, "a")
  })

  it("does not take a following word as a boolean's value", () => {
    const error = usageError(["--publish-inventory", "false"])
    assert.include(error.message, `unexpected argument "false"`)
  })
})

/** [argv, env, flag named in the error, text the message contains]. */
const rejections: ReadonlyArray<readonly [ReadonlyArray<string>, Record<string, string>, string, string]> = [
  [["--bogus"], {}, "bogus", `not defined: "--bogus"`],
  [["-x=1"], {}, "x", `not defined: "--x"`],
  [["--bind-address", "node-1.example"], {}, "bind-address", "not an IP address"],
  [["--bind-address", "[::1]"], {}, "bind-address", "not an IP address"],
  [["--listen-addr", "127.0.0.1:10260"], { VK_BIND_ADDRESS: "10.0.0.5" }, "bind-address", "names host 127.0.0.1 but the bind address is 10.0.0.5"],
  [["--metrics-addr", "[::1]:9090", "--metrics-bind-address", "::"], {}, "metrics-bind-address", "names host ::1 but the bind address is ::"],
  [["---node-name=a"], {}, "", "bad flag syntax"],
  [["-=a"], {}, "", "bad flag syntax"],
  [["stray"], {}, "", `unexpected argument "stray"`],
  [["--node-name", "a", "stray"], {}, "", `unexpected argument "stray"`],
  [["--", "stray"], {}, "", `unexpected argument "stray"`],
  [["--node-name"], {}, "node-name", "flag needs an argument: --node-name"],
  [["--publish-inventory=maybe"], {}, "publish-inventory", "invalid boolean"],
  [["--orphan-scan-interval", "abc"], {}, "orphan-scan-interval", "Go duration"],
  [["--orphan-scan-interval", "5"], {}, "orphan-scan-interval", "missing unit"],
  [["--orphan-scan-interval", "-"], {}, "orphan-scan-interval", "Go duration"],
  [["--publish-interval", "1x"], {}, "publish-interval", "unknown unit"],
  [["--publish-inventory", "--publish-interval", "0"], {}, "publish-interval", "greater than 0 with --publish-inventory"],
  [["--publish-inventory", "--publish-interval", "-1s"], {}, "publish-interval", "greater than 0"],
  [["--sandboxd-timeout", "0"], {}, "sandboxd-timeout", "greater than 0"],
  [["--sandboxd-timeout", "10"], {}, "sandboxd-timeout", "missing unit"],
  [["--lease-watch-interval", "0s"], {}, "lease-watch-interval", "greater than 0"],
  [["--claim-verify-interval", "-1s"], {}, "claim-verify-interval", "greater than 0"],
  [["--watch-check-interval", "0s"], {}, "watch-check-interval", "greater than 0"],
  [["--shutdown-timeout", "0"], {}, "shutdown-timeout", "greater than 0"],
  // a Node's name: what the apiserver accepts, ASCII for the certificate's DNS SAN
  [["--node-name", "-odd"], {}, "node-name", "must be a Node name"],
  [["--node-name", "Upper"], {}, "node-name", "must be a Node name"],
  [["--node-name", "nöde"], {}, "node-name", "must be a Node name"],
  [["--node-name", "a..b"], {}, "node-name", "must be a Node name"],
  [["--node-name", "a-"], {}, "node-name", "must be a Node name"],
  [["--node-name", ""], {}, "node-name", "must be a Node name"],
  [["--node-name", "a".repeat(254)], {}, "node-name", "must be a Node name"],
  [[], { VK_NODE_NAME: "node_1" }, "node-name", "must be a Node name"],
  [["--node-cpu", "abc"], {}, "node-cpu", "Kubernetes quantity"],
  [["--node-memory", "8TB"], {}, "node-memory", "Kubernetes quantity"],
  [["--node-pods="], {}, "node-pods", "Kubernetes quantity"],
  [["--node-pods", "-1"], {}, "node-pods", "negative"],
  [[], { VK_NODE_CPU: "abc" }, "node-cpu", "--node-cpu (from $VK_NODE_CPU)"],
  [[], { VK_NODE_MEMORY: "8TB" }, "node-memory", "(from $VK_NODE_MEMORY)"],
  [[], { VK_NODE_PODS: "x" }, "node-pods", "(from $VK_NODE_PODS)"],
  [["--kube-api-qps", "0"], {}, "kube-api-qps", "greater than 0"],
  [["--kube-api-qps", "-1"], {}, "kube-api-qps", "greater than 0"],
  [["--kube-api-qps", "fast"], {}, "kube-api-qps", "not a number"],
  [["--kube-api-qps", "Inf"], {}, "kube-api-qps", "not a number"],
  [["--kube-api-burst", "0"], {}, "kube-api-burst", "greater than 0"],
  [["--kube-api-burst", "-5"], {}, "kube-api-burst", "greater than 0"],
  [["--kube-api-burst", "1.5"], {}, "kube-api-burst", "not an integer"],
  [["--sandboxd-max-concurrency", "0"], {}, "sandboxd-max-concurrency", "greater than 0"],
  [["--sandboxd-max-concurrency", "many"], {}, "sandboxd-max-concurrency", "not an integer"],
  [["--sandboxd-probe-interval", "0s"], {}, "sandboxd-probe-interval", "greater than 0"],
  [["--sandboxd-probe-interval", "10"], {}, "sandboxd-probe-interval", ""],
  [["--sandboxd-probe-grace", "0"], {}, "sandboxd-probe-grace", "greater than 0"],
  [["--tls-cert", "/tls.crt"], {}, "tls-key", "--tls-cert needs --tls-key"],
  [["--tls-key", "/tls.key"], {}, "tls-cert", "--tls-key needs --tls-cert"],
  [[], { VK_TLS_CERT: "/tls.crt" }, "tls-key", "--tls-cert needs --tls-key"],
  [["--vk-cocoon-tls-cert="], {}, "vk-cocoon-tls-cert", "--vk-cocoon-tls-cert is empty but --vk-cocoon-tls-key is not"],
  [["--vk-cocoon-tls-key="], { VK_COCOON_TLS_CERT: "/vk.crt" }, "vk-cocoon-tls-key", "clear both"],
  [["--sandboxd-probe-grace", "2.5"], {}, "sandboxd-probe-grace", "not an integer"],
  [["--listen-addr", ":0"], {}, "listen-addr", "out of range"],
  [["--listen-addr", ":http"], {}, "listen-addr", "not a number"],
  [["--listen-addr", "127.0.0.1"], {}, "listen-addr", "missing port"],
  [["--listen-addr="], {}, "listen-addr", "missing port"],
  [[], { VK_LISTEN_ADDR: ":70000" }, "listen-addr", "(from $VK_LISTEN_ADDR)"],
  [["--metrics-addr", ":http"], {}, "metrics-addr", "not a number"],
  [["--metrics-addr", "localhost"], {}, "metrics-addr", "missing port"],
  [["--state-path="], {}, "state-path", "must not be empty"],
  [["--state-path", ""], { VK_STATE_PATH: "/env/claims.json" }, "state-path", "must not be empty"],
  [["--sandboxd-url", "localhost:7777"], {}, "sandboxd-url", "http"],
  [["--sandboxd-url", "ftp://x"], {}, "sandboxd-url", "not http or https"],
  [[], { SANDBOXD_URL: "nope" }, "sandboxd-url", "(from $SANDBOXD_URL)"],
  // CFG-19: the node-name map is strict, and needs the host it is for
  [["--node-name-map", "a=vk-a"], {}, "node-name-map", "needs --host-node-name"],
  [["--node-name-map", "a"], { HOST_NODE_NAME: "a" }, "node-name-map", "is not host=node"],
  [["--node-name-map", "a=Vk"], { HOST_NODE_NAME: "a" }, "node-name-map", "must be a Node name"],
  [["--node-name-map", "a_b=vk"], { HOST_NODE_NAME: "a" }, "node-name-map", "must be a Node name"],
  [["--node-name-map", "a=vk-a,a=vk-b"], { HOST_NODE_NAME: "a" }, "node-name-map", "listed twice"],
  [["--node-name-map", "a=vk,b=vk"], { HOST_NODE_NAME: "a" }, "node-name-map", "both map to"],
  // A virtual Node named after a host would be that host's kubelet's Node, and its Pods.
  [["--node-name-map", "a=a"], { HOST_NODE_NAME: "a" }, "node-name-map", "is a host's name"],
  [["--node-name-map", "a=vk-a,b=a"], { HOST_NODE_NAME: "a" }, "node-name-map", "is a host's name"],
  [["--node-name-map", "b=a,a=vk-a"], { HOST_NODE_NAME: "a" }, "node-name-map", "is a host's name"],
  [["--host-node-name", "Host"], {}, "host-node-name", "must be a Node name"],
  [["--node-name", "vk-a", "--node-name-map", "a=vk-a"], { HOST_NODE_NAME: "b" }, "node-name", "gives host \"a\""],
  [["--log-level", "verbose"], {}, "log-level", "must be one of trace, debug, info, warn, error"],
  [["--log-format", "xml"], {}, "log-format", "must be one of json, text"]
]

describe("parseConfig: rejections (exit 2 in the binary)", () => {
  for (const [argv, env, flag, text] of rejections) {
    it(`${argv.join(" ")} ${JSON.stringify(env)}`, () => {
      const error = usageError(argv, env)
      assert.strictEqual(error._tag, "UsageError")
      assert.strictEqual(error.flag, flag)
      assert.include(error.message, text)
      assert.notInclude(error.message, "\n")
      if (flag !== "") assert.include(error.message, `-${flag}`)
    })
  }

  it("reports the offending value", () => {
    assert.include(usageError(["--node-cpu", "abc"]).message, `"abc"`)
  })

  it("reports a rejected URL without its user info", () => {
    const error = usageError(["--sandboxd-url", "http://admin:hunter2@10.0.0.9:7777/?x=1"])
    assert.include(error.message, `"http://redacted@10.0.0.9:7777/?x=1"`)
    assert.notInclude(error.message, "hunter2")
    assert.notInclude(usageError([], { SANDBOXD_URL: "ftp://tok3n@x" }).message, "tok3n")
  })
})

describe("parseConfig: --node-name-map (CFG-19)", () => {
  it("a listed host takes its full name; other hosts keep --node-name; empty items are skipped", () => {
    const map = " a=vk-a , b=vk-b.example ,"
    assert.strictEqual(ok(["--node-name", "a-sandboxd", "--node-name-map", map], { HOST_NODE_NAME: "a" }).nodeName, "vk-a")
    assert.strictEqual(ok(["--node-name", "b-sandboxd", "--node-name-map", map], { HOST_NODE_NAME: "b" }).nodeName, "vk-b.example")
    assert.strictEqual(ok(["--node-name", "c-sandboxd", "--node-name-map", map], { HOST_NODE_NAME: "c" }).nodeName, "c-sandboxd")
    assert.strictEqual(ok(["--node-name", "c-sandboxd", "--node-name-map", ","], {}).nodeName, "c-sandboxd")
  })

  it("the host's name alone changes nothing", () => {
    assert.strictEqual(ok(["--node-name", "x"], { HOST_NODE_NAME: "a" }).nodeName, "x")
  })
})

describe("parseInvocation", () => {
  it("--help and -h ask for help, even before a bad flag", () => {
    for (const argv of [["--help"], ["-h"], ["-help"], ["--help", "--bogus"], ["--node-cpu=abc", "--help"]]) {
      assert.deepStrictEqual(parseInvocation(argv, {}), Result.succeed({ _tag: "Help" as const }), argv.join(" "))
    }
  })

  it("--version asks for the version without validating values", () => {
    assert.deepStrictEqual(parseInvocation(["--version"], {}), Result.succeed({ _tag: "Version" as const }))
    assert.deepStrictEqual(
      parseInvocation(["--version", "--node-cpu=abc"], { VK_LISTEN_ADDR: "bad" }),
      Result.succeed({ _tag: "Version" as const })
    )
    assert.strictEqual(Result.isFailure(parseInvocation(["--version", "--bogus"], {})), true)
  })

  it("--version=false runs the daemon", () => {
    const invocation = parseInvocation(["--version=false"], {})
    assert.isTrue(Result.isSuccess(invocation) && invocation.success._tag === "Run")
  })

  it("otherwise runs the daemon with the validated config", () => {
    const invocation = parseInvocation(["--node-name", "n1"], {})
    assert.isTrue(Result.isSuccess(invocation) && invocation.success._tag === "Run" && invocation.success.config.nodeName === "n1")
    assert.isTrue(Result.isFailure(parseInvocation(["--node-cpu", "abc"], {})))
  })
})

describe("parseConfig: error messages stay on one line", () => {
  it("escapes control characters in what the user typed", () => {
    for (const argv of [["--node-cpu", "1\n2"], ["--bo\ngus"], ["stray\narg"], ["--sandboxd-timeout", "1\ns"], ["--listen-addr", ":8\n0"], ["--node-memory", "1G\ni"]]) {
      const message = usageError(argv).message
      assert.notInclude(message, "\n", JSON.stringify(argv))
    }
  })
})
