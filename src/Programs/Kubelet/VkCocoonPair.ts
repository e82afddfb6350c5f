/**
 * The co-located vk-cocoon's kubelet serving pair, reused when it is usable (TLS-4 — vk-cocoon's
 * certificate is reused when it is usable): with no `--tls-cert`/`--tls-key`, both virtual nodes of
 * a host then present the same certificate. The pair is judged, never trusted: both halves
 * readable, the key the certificate's, the certificate not expired. Anything less is a typed reason
 * (`VkCocoonPairUnused`) to self-sign instead, never a failed start. A half that is missing or
 * holds only whitespace counts as absent: the systemd unit hands a missing vk-cocoon file over as a
 * one-newline credential (see packaging/).
 */
import { Clock, Effect } from "effect"
import { X509Certificate } from "node:crypto"
import { readFile } from "node:fs/promises"
import { createSecureContext } from "node:tls"
import { VkCocoonPairUnused } from "../../Services/KubeletServer.ts"
import type { ServingCertificate } from "./SelfSigned.ts"

type Half =
  | { readonly _tag: "Text"; readonly path: string; readonly pem: string }
  | { readonly _tag: "Absent"; readonly path: string }
  | { readonly _tag: "Unreadable"; readonly path: string; readonly message: string }

const errorText = (cause: unknown): string => cause instanceof Error ? cause.message : String(cause)

/** One half: its text, absent (no such file, or nothing but whitespace), or unreadable and why. */
const readHalf = (path: string): Effect.Effect<Half> =>
  Effect.promise(() =>
    readFile(path, "utf8").then(
      (pem): Half => pem.trim() === "" ? { _tag: "Absent", path } : { _tag: "Text", path, pem },
      (cause: unknown): Half => {
        const code = (cause as { readonly code?: unknown } | null)?.code
        return code === "ENOENT" || code === "ENOTDIR"
          ? { _tag: "Absent", path }
          : { _tag: "Unreadable", path, message: errorText(cause) }
      }
    )
  )

const unused = (reason: VkCocoonPairUnused["reason"], message: string) => new VkCocoonPairUnused({ reason, message })

/** vk-cocoon's pair at `certPath`/`keyPath`, or why it cannot be served. */
export const loadVkCocoonPair = Effect.fn("Kubelet.loadVkCocoonPair")(function*(certPath: string, keyPath: string) {
  if (certPath === "" || keyPath === "") {
    return yield* unused("disabled", "--vk-cocoon-tls-cert and --vk-cocoon-tls-key are cleared")
  }
  const cert = yield* readHalf(certPath)
  const key = yield* readHalf(keyPath)
  for (const half of [cert, key]) {
    if (half._tag === "Unreadable") return yield* unused("unreadable", `cannot read ${half.path}: ${half.message}`)
  }
  if (cert._tag !== "Text" || key._tag !== "Text") {
    if (cert._tag === key._tag) return yield* unused("absent", `no vk-cocoon kubelet pair at ${certPath} / ${keyPath}`)
    const [present, missing] = cert._tag === "Text" ? [certPath, keyPath] : [keyPath, certPath]
    return yield* unused("incomplete", `${present} is there but ${missing} is not`)
  }
  // createSecureContext parses both and checks that the key belongs to the certificate.
  const pair: ServingCertificate = yield* Effect.try({
    try: () => {
      createSecureContext({ cert: cert.pem, key: key.pem })
      return { certPem: cert.pem, keyPem: key.pem }
    },
    catch: (cause) => unused("invalid", `cannot use the pair ${certPath} / ${keyPath}: ${errorText(cause)}`)
  })
  const expires = yield* Effect.try({
    try: () => Date.parse(new X509Certificate(cert.pem).validTo),
    catch: (cause) => unused("invalid", `cannot parse ${certPath}: ${errorText(cause)}`)
  })
  if (Number.isNaN(expires)) return yield* unused("invalid", `${certPath} has no readable expiry`)
  const now = yield* Clock.currentTimeMillis
  if (expires <= now) {
    return yield* unused("expired", `${certPath} expired at ${new Date(expires).toISOString()}`)
  }
  return pair
})
