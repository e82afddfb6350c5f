/**
 * The Pod annotation contract as CreatePod reads it (reference CRT-1, CRT-2, CRT-6).
 * Private to the provider until a shared `Schemas/PodAnnotations.ts` exists.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Result } from "effect"

export const RuntimeAnnotation = "sandbox.cocoonstack.io/runtime"
export const TemplateAnnotation = "sandbox.cocoonstack.io/template"
export const NetAnnotation = "sandbox.cocoonstack.io/net"
export const SizeAnnotation = "sandbox.cocoonstack.io/size"
export const TtlAnnotation = "sandbox.cocoonstack.io/ttl-seconds"
/** Written by the provider onto pushed Pods: the claim id, never the token. */
export const ClaimIdAnnotation = "sandbox.cocoonstack.io/claim-id"

export const ServedRuntime = "sandboxd"
/** sandboxd's maximum lease; asked for when the Pod says nothing, never 0 (LEASE-1). */
export const DefaultTtlSeconds = 86400

/** An annotation value; the empty string counts as absent (CRT-2). */
export const annotation = (pod: V1Pod, key: string): string => pod.metadata?.annotations?.[key] ?? ""

export interface TtlRejection {
  readonly value: string
  readonly reason: string
}

const int64Max = 9223372036854775807n
const int64Min = -9223372036854775808n

/**
 * CRT-6: absent → 86400; a base-10 integer with an optional sign and leading zeros (Go's Atoi:
 * no whitespace, decimals, underscores, hex, or values beyond 64 bits); negative rejected;
 * 0 kept (sent as absent, sandboxd's default). Positive values beyond the range a JSON number
 * carries exactly are sent as the largest exact one; sandboxd clamps to 24 h either way.
 */
export const parseTtlSeconds = (raw: string): Result.Result<number, TtlRejection> => {
  if (raw === "") return Result.succeed(DefaultTtlSeconds)
  if (!/^[+-]?[0-9]+$/.test(raw)) return Result.fail({ value: raw, reason: "not a base-10 integer" })
  const value = BigInt(raw)
  if (value > int64Max || value < int64Min) return Result.fail({ value: raw, reason: "out of range" })
  if (value < 0n) return Result.fail({ value: raw, reason: "negative" })
  return Result.succeed(value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value))
}
