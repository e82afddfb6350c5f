/**
 * The in-memory serving certificate used when no `--tls-cert`/`--tls-key` pair is on disk
 * (TLS-3): ECDSA P-256, CN `vk-sandbox`, valid from an hour ago for ten
 * years, server-auth only, SANs for the node name, the node IP and 127.0.0.1. A new key is made on
 * every start and never written anywhere.
 */
import "./ReflectMetadata.ts"
import * as x509 from "@peculiar/x509"
import { Clock, Effect, Schema } from "effect"
import { randomBytes, webcrypto } from "node:crypto"
import { isIP } from "node:net"

export class SelfSignedCertError extends Schema.TaggedError<SelfSignedCertError>()("SelfSignedCertError", {
  message: Schema.String
}) {}

export interface ServingCertificate {
  readonly certPem: string
  readonly keyPem: string
}

export interface SubjectAltName {
  readonly type: "dns" | "ip"
  readonly value: string
}

const hourMillis = 60 * 60 * 1000
const validityMillis = 3650 * 24 * hourMillis

/** Node name, node IP and 127.0.0.1; empty entries skipped, IP literals as IP SANs, no duplicates. */
export const subjectAltNames = (nodeName: string, nodeIp: string): ReadonlyArray<SubjectAltName> => {
  const names: Array<SubjectAltName> = []
  for (const entry of [nodeName, nodeIp, "127.0.0.1"]) {
    if (entry === "") continue
    const san: SubjectAltName = { type: isIP(entry) === 0 ? "dns" : "ip", value: entry }
    if (!names.some((n) => n.type === san.type && n.value === san.value)) names.push(san)
  }
  return names
}

const toPem = (label: string, der: ArrayBuffer): string => {
  const base64 = Buffer.from(der).toString("base64")
  const lines = base64.match(/.{1,64}/g) ?? []
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`
}

const ecdsaP256 = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const

/** WebCrypto from node:crypto, typed as the `Crypto` the library's declarations name. */
type LibraryCrypto = NonNullable<Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[1]>
const nodeCrypto = webcrypto as unknown as LibraryCrypto

export const generateSelfSigned = Effect.fn("Kubelet.generateSelfSigned")(function*(
  nodeName: string,
  nodeIp: string
) {
  const now = yield* Clock.currentTimeMillis
  return yield* Effect.tryPromise({
    try: async (): Promise<ServingCertificate> => {
      const keys = await nodeCrypto.subtle.generateKey(ecdsaP256, true, ["sign", "verify"])
      // 128 random bits; the library makes the DER INTEGER positive.
      const serialNumber = randomBytes(16).toString("hex")
      const certificate = await x509.X509CertificateGenerator.createSelfSigned({
        serialNumber,
        name: "CN=vk-sandbox",
        notBefore: new Date(now - hourMillis),
        notAfter: new Date(now + validityMillis),
        signingAlgorithm: ecdsaP256,
        keys,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          new x509.SubjectAlternativeNameExtension(
            subjectAltNames(nodeName, nodeIp).map((san) => ({ type: san.type, value: san.value }))
          )
        ]
      }, nodeCrypto)
      const pkcs8 = await nodeCrypto.subtle.exportKey("pkcs8", keys.privateKey)
      return { certPem: certificate.toString("pem") + "\n", keyPem: toPem("PRIVATE KEY", pkcs8) }
    },
    catch: (cause) =>
      new SelfSignedCertError({ message: `cannot generate the self-signed kubelet certificate: ${String(cause)}` })
  })
})
