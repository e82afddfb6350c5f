/**
 * Who sends a kubelet API request (KAPI-1 — who a kubelet API request comes from), as a kubelet
 * decides it: a client certificate that `--client-ca-file` verified names the user (its subject's
 * CN) and the groups (its O values); otherwise an `Authorization: Bearer` token names whoever the
 * apiserver's TokenReview says holds it. A request with neither, a certificate the CA did not sign,
 * or a token the review rejects is unauthenticated. Every authenticated user is also in
 * `system:authenticated`. Token answers are cached (KAPI-4 — review answers are cached briefly, a
 * failed review refuses): an accepted token for 2 minutes, a rejected one for 30 seconds (a kubelet
 * keeps both for 2 minutes; a token minted just after a refusal should not wait that long).
 */
import { Duration, Effect, Redacted } from "effect"
import { createHash } from "node:crypto"
import type { TLSSocket } from "node:tls"
import type { KubeUser, TokenVerdict } from "../../Schemas/Reviews.ts"
import type { KubeApi } from "../../Services/KubeApi.ts"
import { KubeletReviewFailed } from "../../Services/KubeletServer.ts"
import * as ReviewCache from "./ReviewCache.ts"

/** A client certificate as the TLS layer saw it. */
export interface PeerCertificate {
  /** Verified against the client CA (chain, dates, client-auth use). */
  readonly verified: boolean
  /** Why it was not verified (the TLS library's code); "" when it was. */
  readonly verifyError: string
  readonly commonName: string
  readonly organizations: ReadonlyArray<string>
}

export interface Credentials {
  /** undefined: no certificate was sent, or none was asked for (no `--client-ca-file`). */
  readonly certificate: PeerCertificate | undefined
  /** The `Authorization` header as sent. */
  readonly authorization: string | undefined
}

export type Authentication =
  | { readonly _tag: "Authenticated"; readonly user: KubeUser; readonly via: "certificate" | "token" }
  | { readonly _tag: "Unauthenticated"; readonly reason: string }

export const authenticatedGroup = "system:authenticated"

export const tokenTtl = { accepted: Duration.minutes(2), rejected: Duration.seconds(30) } as const

/** Answers kept at most, per cache: enough for every client that belongs, bounded against a flood. */
export const cacheCapacity = 1024

/** A subject field: one value, several (an array), or none. */
const values = (field: unknown): ReadonlyArray<string> =>
  typeof field === "string" ? [field] : Array.isArray(field) ? field.filter((v): v is string => typeof v === "string") : []

/** The certificate a TLS connection's client sent, or undefined when it sent none. */
export const peerCertificate = (socket: TLSSocket): PeerCertificate | undefined => {
  const peer = socket.getPeerCertificate()
  // Without a certificate from the client, Node hands back an empty object.
  if (peer === null || typeof peer !== "object" || Object.keys(peer).length === 0) return undefined
  // A field with several values (two O=) comes as an array, whatever the type says.
  const subject: { readonly CN?: unknown; readonly O?: unknown } = peer.subject ?? {}
  return {
    verified: socket.authorized,
    verifyError: socket.authorized ? "" : String(socket.authorizationError ?? "not verified"),
    // Of several CNs the last names the user, as Go's x509 (so the apiserver) reads a subject:
    // one certificate is never two users.
    commonName: values(subject.CN).at(-1) ?? "",
    organizations: values(subject.O)
  }
}

/**
 * The token of an `Authorization: Bearer <token>` header (the scheme in any case, surrounding
 * space ignored), or undefined when the header is absent, of another scheme, or carries none.
 */
export const bearerToken = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const parts = header.trim().split(" ")
  if (parts.length < 2 || parts[0]!.toLowerCase() !== "bearer" || parts[1] === "") return undefined
  return parts[1]
}

const withAuthenticatedGroup = (user: KubeUser): KubeUser =>
  user.groups.includes(authenticatedGroup) ? user : { ...user, groups: [...user.groups, authenticatedGroup] }

const tokenKey = (token: string): string => createHash("sha256").update(token).digest("hex")

export interface Authenticator {
  readonly authenticate: (credentials: Credentials) => Effect.Effect<Authentication, KubeletReviewFailed>
}

export const makeAuthenticator = (kube: Pick<KubeApi["Service"], "reviewToken">): Authenticator => {
  const answers = ReviewCache.make<TokenVerdict>(
    cacheCapacity,
    (verdict) => verdict._tag === "Authenticated" ? tokenTtl.accepted : tokenTtl.rejected
  )

  const byToken = (token: string): Effect.Effect<Authentication, KubeletReviewFailed> =>
    answers.through(tokenKey(token), kube.reviewToken(Redacted.make(token))).pipe(
      Effect.mapError((cause) =>
        new KubeletReviewFailed({ review: "TokenReview", message: `the TokenReview of a bearer token failed: ${cause.message}`, cause })
      ),
      Effect.map((verdict): Authentication =>
        verdict._tag === "Authenticated"
          ? { _tag: "Authenticated", user: withAuthenticatedGroup(verdict.user), via: "token" }
          : { _tag: "Unauthenticated", reason: `the bearer token was rejected by the apiserver's TokenReview (${verdict.reason})` }
      )
    )

  const authenticate = (credentials: Credentials): Effect.Effect<Authentication, KubeletReviewFailed> => {
    const certificate = credentials.certificate
    if (certificate !== undefined) {
      // A certificate that was sent decides alone: one the CA did not sign is not passed over for a token.
      if (!certificate.verified) {
        return Effect.succeed({
          _tag: "Unauthenticated",
          reason: `the client certificate is not signed by --client-ca-file (${certificate.verifyError})`
        })
      }
      if (certificate.commonName === "") {
        return Effect.succeed({ _tag: "Unauthenticated", reason: "the client certificate's subject has no common name (the user)" })
      }
      return Effect.succeed({
        _tag: "Authenticated",
        user: withAuthenticatedGroup({ name: certificate.commonName, uid: "", groups: certificate.organizations, extra: {} }),
        via: "certificate"
      })
    }
    const token = bearerToken(credentials.authorization)
    if (token !== undefined) return byToken(token)
    return Effect.succeed({ _tag: "Unauthenticated", reason: "no client certificate and no bearer token" })
  }

  return { authenticate }
}
