/**
 * The kubelet port's TLS material: the operator's `--tls-cert`/`--tls-key` when they are given,
 * a self-signed certificate made in memory only when neither is; plus the optional
 * `--client-ca-file`. A pair that cannot be read or does not match, or a CA file that cannot be
 * used, is a startup error, never a silent fallback to self-signing. (One of the two flags
 * without the other is refused earlier, as a usage error.)
 */
import { Effect, Option } from "effect"
import { X509Certificate } from "node:crypto"
import { readFile } from "node:fs/promises"
import { createSecureContext } from "node:tls"
import type { AppConfigShape } from "../../Schemas/Config.ts"
import { KubeletTlsError, type KubeletTlsSource } from "../../Services/KubeletServer.ts"
import { generateSelfSigned } from "./SelfSigned.ts"

export interface KubeletTlsMaterial {
  readonly certPem: string
  readonly keyPem: string
  readonly source: KubeletTlsSource
  /** PEM bundle of the CAs client certificates must chain to; None = no client certificates asked for. */
  readonly clientCaPem: Option.Option<string>
}

export type KubeletTlsConfig = Pick<AppConfigShape, "nodeName" | "nodeIp" | "tlsCert" | "tlsKey" | "clientCaFile">

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

export const loadKubeletTls = Effect.fn("Kubelet.loadTls")(function*(config: KubeletTlsConfig) {
  const clientCaPem = config.clientCaFile === ""
    ? Option.none<string>()
    : Option.some(yield* loadClientCa(config.clientCaFile))
  if (config.tlsCert !== "" || config.tlsKey !== "") {
    const pair = yield* loadKeyPair(config.tlsCert, config.tlsKey)
    return { ...pair, source: "files", clientCaPem } satisfies KubeletTlsMaterial
  }
  yield* Effect.logInfo("kubelet cert absent; self-signing").pipe(Effect.annotateLogs({ node: config.nodeName }))
  const generated = yield* generateSelfSigned(config.nodeName, config.nodeIp).pipe(
    Effect.mapError((e) => new KubeletTlsError({ path: "", message: e.message }))
  )
  return { ...generated, source: "self-signed", clientCaPem } satisfies KubeletTlsMaterial
})
