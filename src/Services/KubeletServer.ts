/**
 * The kubelet HTTPS API on `--listen-addr`: the provider's pods it serves (`KubeletPods`), the
 * running server as the rest of the daemon sees it (`KubeletServer`), the two ways it fails to
 * start, and the way a request's review fails. The server itself (TLS, authentication and
 * authorization, routes, shutdown) is `Programs/Kubelet/`.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Context, type Effect, Schema } from "effect"
import { KubeConflict, KubeForbidden, KubeGone, KubeInvalid, KubeNotFound, KubeUnavailable } from "./KubeApi.ts"

/** The provider's pods, for `/pods` and `/runningpods/`. */
export class KubeletPods extends Context.Service<KubeletPods, {
  readonly getPods: Effect.Effect<ReadonlyArray<V1Pod>>
}>()("vk-sandbox/KubeletPods") {}

/** The certificate, key or client CA cannot be loaded; the daemon must not start. */
export class KubeletTlsError extends Schema.TaggedError<KubeletTlsError>()("KubeletTlsError", {
  path: Schema.String, // "" for the self-signed certificate
  message: Schema.String
}) {}

/** The listen address cannot be bound (in use, not local, or port 0 outside tests). */
export class KubeletListenError extends Schema.TaggedError<KubeletListenError>()("KubeletListenError", {
  address: Schema.String,
  message: Schema.String
}) {}

/**
 * The apiserver did not answer a review the kubelet port asked for (KAPI-4 — review answers are
 * cached briefly, a failed review refuses): the request is refused, never let through, and nothing
 * is cached.
 */
export class KubeletReviewFailed extends Schema.TaggedError<KubeletReviewFailed>()("KubeletReviewFailed", {
  review: Schema.Literals(["TokenReview", "SubjectAccessReview"]),
  message: Schema.String,
  cause: Schema.Union([KubeNotFound, KubeConflict, KubeGone, KubeForbidden, KubeInvalid, KubeUnavailable])
}) {}

/**
 * Where the serving certificate came from (TLS-2 — which certificate): the operator's
 * `--tls-cert`/`--tls-key`, the co-located vk-cocoon's kubelet pair (TLS-4 — vk-cocoon's
 * certificate is reused when it is usable), or made in memory.
 */
export type KubeletTlsSource = "flags" | "vk-cocoon" | "self-signed"

/**
 * Why vk-cocoon's kubelet pair was not reused (TLS-4). `disabled` (the paths cleared) and `absent`
 * (no vk-cocoon pair on this host) are ordinary; the others mean a pair is there but unusable.
 */
export const vkCocoonPairReasons = ["disabled", "absent", "incomplete", "unreadable", "invalid", "expired"] as const
export type VkCocoonPairReason = typeof vkCocoonPairReasons[number]

/** vk-cocoon's kubelet pair cannot be reused; the daemon self-signs instead (TLS-4). */
export class VkCocoonPairUnused extends Schema.TaggedError<VkCocoonPairUnused>()("VkCocoonPairUnused", {
  reason: Schema.Literals(vkCocoonPairReasons),
  message: Schema.String
}) {}

export class KubeletServer extends Context.Service<KubeletServer, {
  /** The address actually bound (the port matters when the configured one is 0). */
  readonly host: string
  readonly port: number
  readonly tls: { readonly source: KubeletTlsSource; readonly certPem: string }
  /** `--client-ca-file` is set: client certificates are asked for, and verified when one is sent. */
  readonly clientCertificatesAccepted: boolean
}>()("vk-sandbox/KubeletServer") {}
