/**
 * A client of the kubelet port for tests: a client CA of the test's own that signs certificates
 * for any subject (`CN=user, O=group`), and one HTTPS request with a bearer token or a client
 * certificate (the serving certificate is not checked: it is self-signed).
 */
import "./ReflectMetadata.ts"
import * as x509 from "@peculiar/x509"
import { Effect } from "effect"
import { randomBytes, webcrypto } from "node:crypto"
import type { IncomingHttpHeaders } from "node:http"
import * as https from "node:https"

const ecdsa = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const
// @peculiar/x509 types its provider as the DOM Crypto; Node's webcrypto implements that API.
type LibraryCrypto = NonNullable<Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[1]>
const libraryCrypto = webcrypto as unknown as LibraryCrypto

const toPem = (label: string, der: ArrayBuffer) =>
  `-----BEGIN ${label}-----\n${Buffer.from(der).toString("base64").match(/.{1,64}/g)!.join("\n")}\n-----END ${label}-----\n`

export interface ClientCertificate {
  readonly cert: string
  readonly key: string
}

export interface ClientCa {
  readonly caPem: string
  /** A certificate for `subject` (e.g. `CN=system:node:vk-b, O=system:nodes`), client-auth use unless told otherwise. */
  readonly issue: (subject: string, usage?: string) => Effect.Effect<ClientCertificate>
}

export const makeClientCa: Effect.Effect<ClientCa> = Effect.promise(async () => {
  const now = Date.now()
  const caKeys = await libraryCrypto.subtle.generateKey(ecdsa, true, ["sign", "verify"])
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString("hex"),
    name: "CN=test-client-ca",
    notBefore: new Date(now - 3600_000),
    notAfter: new Date(now + 3600_000),
    signingAlgorithm: ecdsa,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature, true)
    ]
  }, libraryCrypto)
  const issue = (subject: string, usage: string = x509.ExtendedKeyUsage.clientAuth) =>
    Effect.promise(async () => {
      const keys = await libraryCrypto.subtle.generateKey(ecdsa, true, ["sign", "verify"])
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: randomBytes(8).toString("hex"),
        subject,
        issuer: ca.subject,
        notBefore: new Date(now - 3600_000),
        notAfter: new Date(now + 3600_000),
        signingAlgorithm: ecdsa,
        publicKey: keys.publicKey,
        signingKey: caKeys.privateKey,
        extensions: [new x509.ExtendedKeyUsageExtension([usage])]
      }, libraryCrypto)
      return { cert: cert.toString("pem") + "\n", key: toPem("PRIVATE KEY", await libraryCrypto.subtle.exportKey("pkcs8", keys.privateKey)) }
    })
  return { caPem: ca.toString("pem") + "\n", issue }
})

export const serverAuthUsage = x509.ExtendedKeyUsage.serverAuth

export interface KubeletReply {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

export interface As {
  readonly token?: string
  readonly certificate?: ClientCertificate
  readonly headers?: Readonly<Record<string, string>>
}

/** One request to the kubelet port on 127.0.0.1, on a connection of its own. */
export const kubeletRequest = (port: number, method: string, path: string, as: As = {}): Effect.Effect<KubeletReply, Error> =>
  Effect.callback<KubeletReply, Error>((resume) => {
    const headers = { ...as.headers, ...(as.token === undefined ? {} : { authorization: `Bearer ${as.token}` }) }
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        rejectUnauthorized: false,
        agent: false,
        headers,
        ...(as.certificate === undefined ? {} : { cert: as.certificate.cert, key: as.certificate.key })
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () =>
          resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") })))
        res.on("error", (e) => resume(Effect.fail(e)))
      }
    )
    req.on("error", (e) => resume(Effect.fail(e)))
    req.end()
    return Effect.sync(() => req.destroy())
  })
