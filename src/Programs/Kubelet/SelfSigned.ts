/**
 * The in-memory serving certificate (TLS-3 — the self-signed certificate), used when neither
 * `--tls-cert`/`--tls-key` nor vk-cocoon's kubelet pair is served: ECDSA P-256, CN `vk-sandbox`,
 * valid from an hour ago for ten years, server-auth only, SANs for the node name, the node IP and
 * 127.0.0.1. A new key on every start, never written anywhere. The certificate's one fixed shape
 * is written here as DER and signed with node:crypto, so a start does not wait on JavaScript ASN.1.
 */
import { Clock, Effect, Schema } from "effect"
import { generateKeyPair, type KeyObject, randomBytes, sign } from "node:crypto"
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

// ---- DER (the distinguished encoding: definite lengths, minimal integers) ----------------------

const tlv = (tag: number, content: Uint8Array): Buffer => {
  const n = content.length
  const length = n < 0x80
    ? [n]
    : n < 0x100
    ? [0x81, n]
    : n < 0x10000
    ? [0x82, n >> 8, n & 0xff]
    : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff]
  return Buffer.concat([Buffer.from([tag, ...length]), content])
}

const sequence = (...parts: ReadonlyArray<Uint8Array>) => tlv(0x30, Buffer.concat(parts))

const objectId = (dotted: string): Buffer => {
  const [first = 0, second = 0, ...rest] = dotted.split(".").map(Number)
  const bytes: Array<number> = []
  for (const arc of [first * 40 + second, ...rest]) {
    const base128 = [arc & 0x7f]
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) base128.unshift((v & 0x7f) | 0x80)
    bytes.push(...base128)
  }
  return tlv(0x06, Buffer.from(bytes))
}

/** A non-negative INTEGER from its big-endian bytes. */
const unsignedInteger = (bytes: Uint8Array): Buffer => {
  let start = 0
  while (start < bytes.length - 1 && bytes[start] === 0) start++
  const trimmed = bytes.subarray(start)
  return tlv(0x02, (trimmed[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed)
}

const utf8String = (text: string) => tlv(0x0c, Buffer.from(text, "utf8"))

/** UTCTime through 2049, GeneralizedTime after (RFC 5280 4.1.2.5), to the second. */
const time = (millis: number): Buffer => {
  const iso = new Date(millis).toISOString() // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, "")
  const year = Number(iso.slice(0, 4))
  return year < 2050 ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, "ascii")) : tlv(0x18, Buffer.from(`${digits}Z`, "ascii"))
}

/** The 4 or 16 octets of an IP literal that `isIP` accepts. */
const ipOctets = (ip: string): Buffer => {
  if (isIP(ip) === 4) return Buffer.from(ip.split(".").map(Number))
  let text = ip.replace(/%.*$/, "")
  // An IPv4 tail (::ffff:10.1.2.3) is two groups of 16 bits.
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (tail !== null) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = "", rest] = text.split("::")
  const groups = (part: string | undefined) => (part === undefined || part === "" ? [] : part.split(":"))
  const left = groups(head)
  const right = groups(rest)
  const all = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right]
  const octets = Buffer.alloc(16)
  all.forEach((group, i) => octets.writeUInt16BE(parseInt(group, 16), i * 2))
  return octets
}

const ecdsaWithSha256 = sequence(objectId("1.2.840.10045.4.3.2"))
const commonName = (cn: string) => sequence(tlv(0x31, sequence(objectId("2.5.4.3"), utf8String(cn))))
const extension = (oid: string, critical: boolean, value: Uint8Array) =>
  sequence(objectId(oid), ...(critical ? [Buffer.from([0x01, 0x01, 0xff])] : []), tlv(0x04, value))

/** The certificate (DER) for `publicKey`, signed by `privateKey`. */
export const certificateDer = (options: {
  readonly serial: Uint8Array
  readonly notBefore: number
  readonly notAfter: number
  readonly sans: ReadonlyArray<SubjectAltName>
  readonly publicKey: KeyObject
  readonly privateKey: KeyObject
}): Buffer => {
  const name = commonName("vk-sandbox")
  const extensions = [
    // basicConstraints, critical: not a CA
    extension("2.5.29.19", true, sequence()),
    // keyUsage, critical: digitalSignature only
    extension("2.5.29.15", true, Buffer.from([0x03, 0x02, 0x07, 0x80])),
    // extKeyUsage: serverAuth
    extension("2.5.29.37", false, sequence(objectId("1.3.6.1.5.5.7.3.1"))),
    // subjectAltName: dNSName [2], iPAddress [7]
    extension(
      "2.5.29.17",
      false,
      sequence(...options.sans.map((san) => san.type === "dns" ? tlv(0x82, Buffer.from(san.value, "ascii")) : tlv(0x87, ipOctets(san.value))))
    )
  ]
  const tbs = sequence(
    tlv(0xa0, unsignedInteger(Buffer.from([2]))), // version: v3
    unsignedInteger(options.serial),
    ecdsaWithSha256,
    name, // issuer: itself
    sequence(time(options.notBefore), time(options.notAfter)),
    name,
    options.publicKey.export({ type: "spki", format: "der" }),
    tlv(0xa3, sequence(...extensions))
  )
  const signature = sign("sha256", tbs, options.privateKey) // DER ECDSA-Sig-Value, as X.509 wants it
  return sequence(tbs, ecdsaWithSha256, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])))
}

const toPem = (label: string, der: Uint8Array): string => {
  const base64 = Buffer.from(der).toString("base64")
  const lines = base64.match(/.{1,64}/g) ?? []
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`
}

/** A P-256 key pair, made on libuv's thread pool. */
const p256KeyPair = Effect.callback<{ readonly publicKey: KeyObject; readonly privateKey: KeyObject }, SelfSignedCertError>((resume) => {
  generateKeyPair("ec", { namedCurve: "prime256v1" }, (error, publicKey, privateKey) => {
    resume(
      error === null
        ? Effect.succeed({ publicKey, privateKey })
        : Effect.fail(new SelfSignedCertError({ message: `cannot generate the self-signed kubelet certificate: ${error.message}` }))
    )
  })
})

export const generateSelfSigned = Effect.fn("Kubelet.generateSelfSigned")(function*(
  nodeName: string,
  nodeIp: string
) {
  const now = yield* Clock.currentTimeMillis
  const { publicKey, privateKey } = yield* p256KeyPair
  return yield* Effect.try({
    try: (): ServingCertificate => {
      const der = certificateDer({
        // 128 random bits, made positive (an INTEGER's top bit is its sign).
        serial: Buffer.concat([Buffer.from([0]), randomBytes(16)]),
        notBefore: now - hourMillis,
        notAfter: now + validityMillis,
        sans: subjectAltNames(nodeName, nodeIp),
        publicKey,
        privateKey
      })
      return { certPem: toPem("CERTIFICATE", der), keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() }
    },
    catch: (cause) =>
      new SelfSignedCertError({ message: `cannot generate the self-signed kubelet certificate: ${String(cause)}` })
  })
})
