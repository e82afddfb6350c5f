/**
 * The Pod annotation contract of CreatePod (CRT-1 — annotation keys; CRT-2 — empty means absent;
 * CRT-6 — TTL annotation).
 */
import { Option, Result, Schema } from "effect"

/** CRT-1: exact annotation keys. */
export const PodAnnotation = {
  runtime: "sandbox.cocoonstack.io/runtime",
  template: "sandbox.cocoonstack.io/template",
  net: "sandbox.cocoonstack.io/net",
  size: "sandbox.cocoonstack.io/size",
  ttlSeconds: "sandbox.cocoonstack.io/ttl-seconds",
  /** Written by the provider onto the pushed Pod; the claim token is never exposed. */
  claimId: "sandbox.cocoonstack.io/claim-id"
} as const

/** The only runtime this provider serves. */
export const SERVED_RUNTIME = "sandboxd"

/** sandboxd's maximum lease, used when the TTL annotation is absent (CRT-6). */
export const DEFAULT_TTL_SECONDS = 86_400

export type Annotations = Readonly<Record<string, string>> | null | undefined

/**
 * CRT-2: an annotation whose value is "" counts as absent. The apiserver only stores strings; a
 * value of another type (an object built by hand, a decoder that let one through) is read as its
 * JSON text, so every rule sees a string and the annotation rules' errors can always be built.
 */
export const annotationValue = (annotations: Annotations, key: string): Option.Option<string> => {
  const value: unknown = annotations?.[key]
  if (value === undefined || value === null || value === "") return Option.none()
  return Option.some(typeof value === "string" ? value : JSON.stringify(value) ?? String(value))
}

/** CRT-1: the requested runtime, `sandboxd` when absent or empty (case-sensitive, untrimmed). */
export const requestedRuntime = (annotations: Annotations): string =>
  Option.getOrElse(annotationValue(annotations, PodAnnotation.runtime), () => SERVED_RUNTIME)

export const isServedRuntime = (annotations: Annotations): boolean =>
  requestedRuntime(annotations) === SERVED_RUNTIME

export class TtlAnnotationInvalid extends Schema.TaggedError<TtlAnnotationInvalid>()("TtlAnnotationInvalid", {
  value: Schema.String,
  message: Schema.String
}) {}

const INT64_MAX = 9_223_372_036_854_775_807n
const INT64_MIN = -9_223_372_036_854_775_808n
const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER)

/**
 * CRT-6: the lease to request. Absent/empty → 86400. Otherwise a base-10 integer as Go's Atoi
 * accepts it (optional sign, leading zeros; no whitespace, decimals, underscores, hex or int64
 * overflow); negative values are rejected; 0 is kept (the claim body then omits `ttl_seconds`).
 * A valid value beyond what a JSON number carries exactly (2^53 − 1) is capped there: sandboxd
 * clamps every lease to 24 h, so the cap asks for the same lease, and the result is always exact.
 */
export const parseTtlSeconds = (annotations: Annotations): Result.Result<number, TtlAnnotationInvalid> => {
  const raw = annotationValue(annotations, PodAnnotation.ttlSeconds)
  if (Option.isNone(raw)) return Result.succeed(DEFAULT_TTL_SECONDS)
  const value = raw.value
  const invalid = (why: string) =>
    Result.fail(
      new TtlAnnotationInvalid({
        value,
        message: `invalid ${PodAnnotation.ttlSeconds} annotation ${JSON.stringify(value)}: ${why}`
      })
    )
  if (!/^[+-]?[0-9]+$/.test(value)) return invalid("not a base-10 integer")
  const parsed = BigInt(value)
  if (parsed > INT64_MAX || parsed < INT64_MIN) return invalid("out of range")
  if (parsed < 0n) return invalid("must not be negative")
  return Result.succeed(Number(parsed > MAX_EXACT ? MAX_EXACT : parsed))
}
