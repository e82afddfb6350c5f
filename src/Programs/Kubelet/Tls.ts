/**
 * The kubelet port's TLS material (TLS-2 — which certificate): the operator's
 * `--tls-cert`/`--tls-key` when they are given; otherwise the co-located vk-cocoon's kubelet pair
 * when it is usable (TLS-4 — vk-cocoon's certificate is reused when it is usable); otherwise a
 * self-signed certificate made in memory; plus the optional `--client-ca-file`. The operator's
 * pair, or a CA file, that cannot be read or used is a startup error, never a silent fallback to
 * self-signing; vk-cocoon's pair is looked for, so its absence or a fault in it is a logged reason
 * to self-sign. (One of the two flags without the other is refused earlier, as a usage error.)
 */
import { Effect, Metric, Option, Result } from "effect"
import { X509Certificate } from "node:crypto"
import { readFile } from "node:fs/promises"
import { createSecureContext } from "node:tls"
import type { AppConfigShape } from "../../Schemas/Config.ts"
import { KubeletTlsError, type KubeletTlsSource } from "../../Services/KubeletServer.ts"
import { kubeletTlsInfo, labelled } from "../../Services/Metrics.ts"
import { generateSelfSigned } from "./SelfSigned.ts"
import { loadVkCocoonPair } from "./VkCocoonPair.ts"

export interface KubeletTlsMaterial {
  readonly certPem: string
  readonly keyPem: string
  readonly source: KubeletTlsSource
  /** PEM bundle of the CAs client certificates must chain to; None = no client certificates asked for. */
  readonly clientCaPem: Option.Option<string>
}

export type KubeletTlsConfig = Pick<
  AppConfigShape,
  "nodeName" | "nodeIp" | "tlsCert" | "tlsKey" | "vkCocoonTlsCert" | "vkCocoonTlsKey" | "clientCaFile"
>

const readText = (path: string, what: string): Effect.Effect<string, KubeletTlsError> =>
  Effect.tryPromise({
    try: () => readFile(path, "utf8"),
    catch: (cause) => new KubeletTlsError({ path, message: `cannot read ${what} ${path}: ${errorText(cause)}` })
  })

const errorText = (cause: unknown): string => cause instanceof Error ? cause.message : String(cause)

/** Both files read, parsed, and the key checked against the certificate. */
export const loadKeyPair = Effect.fnUntraced(function*(certPath: string, keyPath: string) {
  const certPem = yield* readText(certPath, "the kubelet certificate")
  const keyPem = yield* readText(keyPath, "the kubelet key")
  // createSecureContext parses both and checks that the key belongs to the certificate.
  yield* Effect.try({
    try: () => createSecureContext({ cert: certPem, key: keyPem }),
    catch: (cause) =>
      new KubeletTlsError({
        path: certPath,
        message: `cannot use the key pair ${certPath} / ${keyPath}: ${errorText(cause)}`
      })
  })
  return { certPem, keyPem }
})

const loadClientCa = Effect.fnUntraced(function*(path: string) {
  const pem = yield* readText(path, "the client CA file")
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
    return yield* new KubeletTlsError({ path, message: `the client CA file ${path} holds no PEM certificate` })
  }
  yield* Effect.try({
    try: () => new X509Certificate(pem),
    catch: (cause) =>
      new KubeletTlsError({ path, message: `cannot parse the client CA file ${path}: ${errorText(cause)}` })
  })
  return pem
})

/** The serving pair and where it came from, without the client CA. */
const servingPair = Effect.fnUntraced(function*(config: KubeletTlsConfig) {
  if (config.tlsCert !== "" || config.tlsKey !== "") {
    return { ...yield* loadKeyPair(config.tlsCert, config.tlsKey), source: "flags" as KubeletTlsSource }
  }
  const annotations = { node: config.nodeName, cert: config.vkCocoonTlsCert, key: config.vkCocoonTlsKey }
  const reused = yield* Effect.result(loadVkCocoonPair(config.vkCocoonTlsCert, config.vkCocoonTlsKey))
  if (Result.isSuccess(reused)) {
    yield* Effect.logInfo("kubelet certificate: reusing vk-cocoon's").pipe(Effect.annotateLogs(annotations))
    return { ...reused.success, source: "vk-cocoon" as KubeletTlsSource }
  }
  // No vk-cocoon here (or reuse turned off) is ordinary; a pair that is there but unusable is not.
  const unused = reused.failure
  const ordinary = unused.reason === "disabled" || unused.reason === "absent"
  yield* (ordinary ? Effect.logInfo : Effect.logWarning)("vk-cocoon kubelet certificate not reused; self-signing").pipe(
    Effect.annotateLogs({ ...annotations, reason: unused.reason, error: unused })
  )
  const generated = yield* generateSelfSigned(config.nodeName, config.nodeIp).pipe(
    Effect.mapError((e) => new KubeletTlsError({ path: "", message: e.message }))
  )
  return { ...generated, source: "self-signed" as KubeletTlsSource }
})

export const loadKubeletTls = Effect.fn("Kubelet.loadTls")(function*(config: KubeletTlsConfig) {
  const clientCaPem = config.clientCaFile === ""
    ? Option.none<string>()
    : Option.some(yield* loadClientCa(config.clientCaFile))
  const pair = yield* servingPair(config)
  yield* Metric.update(labelled(kubeletTlsInfo, { source: pair.source }), 1)
  return { ...pair, clientCaPem } satisfies KubeletTlsMaterial
})
