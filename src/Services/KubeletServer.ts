/**
 * The kubelet HTTPS API on `--listen-addr`: the provider's pods it serves (`KubeletPods`), the
 * running server as the rest of the daemon sees it (`KubeletServer`), and the two ways it fails to
 * start. The server itself (TLS, routes, shutdown) is `Programs/Kubelet/KubeletServer.ts`.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Context, type Effect, Schema } from "effect"

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
 * Where the serving certificate came from (TLS-2): the operator's `--tls-cert`/`--tls-key`, the
 * co-located vk-cocoon's kubelet pair (TLS-4), or made in memory.
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
  readonly clientCertificatesRequired: boolean
}>()("vk-sandbox/KubeletServer") {}
