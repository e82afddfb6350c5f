/**
 * Error mapping of the Kubernetes client: an HTTP status and the raw `Status` body (or a watch
 * ERROR event's Status) become the typed errors of `Services/KubeApi.ts`. Only what the server
 * wrote is carried: `details` are never filled in from the request. The in-memory apiserver layer
 * maps its replies with the same functions, so both layers fail alike.
 */
import { Duration, Effect, Option, Schema } from "effect"
import { scrubText } from "../Schemas/Scrub.ts"
import { redactCause, redactUrlUserinfo } from "../Schemas/UrlRedaction.ts"
import {
  KubeConflict,
  type KubeError,
  KubeForbidden,
  KubeGone,
  KubeInvalid,
  KubeNotFound,
  KubeUnavailable,
  type StatusDetails
} from "../Services/KubeApi.ts"

/** The parts of a `Status` body we read. `kind: "Status"` is required: anything else is not one. */
const K8sStatus = Schema.Struct({
  kind: Schema.Literal("Status"),
  reason: Schema.optionalKey(Schema.String),
  message: Schema.optionalKey(Schema.String),
  code: Schema.optionalKey(Schema.Number),
  details: Schema.optionalKey(Schema.Struct({
    name: Schema.optionalKey(Schema.String),
    group: Schema.optionalKey(Schema.String),
    kind: Schema.optionalKey(Schema.String),
    uid: Schema.optionalKey(Schema.String),
    causes: Schema.optionalKey(Schema.Array(Schema.Struct({
      reason: Schema.optionalKey(Schema.String),
      field: Schema.optionalKey(Schema.String)
    })))
  }))
})
type K8sStatus = typeof K8sStatus.Type

const decodeStatusText = Schema.decodeUnknownOption(Schema.fromJsonString(K8sStatus))
const decodeStatusObject = Schema.decodeUnknownOption(K8sStatus)

export const parseStatus = (body: unknown): Option.Option<K8sStatus> =>
  typeof body === "string" ? decodeStatusText(body) : decodeStatusObject(body)

/** Only the keys the server wrote; an empty `details: {}` counts as no details. */
const detailsOf = (status: K8sStatus | undefined): StatusDetails | undefined => {
  const details = status?.details
  if (details === undefined) return undefined
  const out: { -readonly [K in keyof StatusDetails]: StatusDetails[K] } = {}
  if (details.name !== undefined) out.name = details.name
  if (details.group !== undefined) out.group = details.group
  if (details.kind !== undefined) out.kind = details.kind
  if (details.uid !== undefined) out.uid = details.uid
  return Object.keys(out).length === 0 ? undefined : out
}

/**
 * A 504 asking for a resourceVersion newer than the server has ("Too large resource version",
 * cause ResourceVersionTooLarge): the server went backwards, and only a relist helps.
 */
const isTooLargeResourceVersion = (code: number, status: K8sStatus | undefined): boolean =>
  code === 504 &&
  ((status?.details?.causes ?? []).some((cause) => cause.reason === "ResourceVersionTooLarge") ||
    (status?.message ?? "").includes("Too large resource version"))

/**
 * The first line of a reply that is not a Status, for an error message: scrubbed before it is cut
 * (a proxy may echo the request's bearer token; a list or watch body quotes Pods' annotations).
 */
export const firstLine = (text: string): string => scrubText(text.trim().split("\n")[0]!).slice(0, 300)

/** Maps an HTTP failure. `body` is the response text (or a decoded Status from a watch ERROR event). */
export const errorFromResponse = (operation: string, code: number, body: unknown): KubeError => {
  const status = Option.getOrUndefined(parseStatus(body))
  const message = status?.message ??
    (typeof body === "string" && body.trim() !== "" ? firstLine(body) : `HTTP ${code}`)
  switch (code) {
    case 404: {
      const details = detailsOf(status)
      return new KubeNotFound({ operation, message, ...(details === undefined ? {} : { details }) })
    }
    case 409:
      return new KubeConflict({ operation, message, reason: status?.reason ?? "Conflict" })
    case 410:
      return new KubeGone({ operation, message })
    case 504:
      return isTooLargeResourceVersion(code, status)
        ? new KubeGone({ operation, message })
        : new KubeUnavailable({ operation, status: code, message })
    case 403:
      return new KubeForbidden({ operation, message })
    case 400:
    case 422: {
      const fields = (status?.details?.causes ?? []).flatMap((cause) => cause.field === undefined ? [] : [cause.field])
      return new KubeInvalid({ operation, message, ...(fields.length === 0 ? {} : { fields }) })
    }
    default:
      return new KubeUnavailable({ operation, status: code, message })
  }
}

/**
 * A watch ERROR event's object: KubeGone for a 410 or a "Too large resource version", else
 * KubeUnavailable with the Status' code. Its unset fields may come as `null` (dropped by the caller).
 */
export const errorFromWatchStatus = (operation: string, object: unknown): KubeError => {
  const status = Option.getOrUndefined(parseStatus(object))
  const message = status?.message ?? "watch ERROR event"
  return status?.code === 410 || isTooLargeResourceVersion(status?.code ?? 0, status)
    ? new KubeGone({ operation, message })
    : new KubeUnavailable({ operation, status: status?.code ?? 0, message })
}

/** A transport error can quote the request URL, and a kubeconfig `server` may carry a password. */
export const describe = (cause: unknown): string => redactUrlUserinfo(cause instanceof Error ? cause.message : String(cause))

/** A request that got no HTTP answer (refused, reset, aborted): status 0, the cause redacted. */
export const transportError = (operation: string) => (cause: unknown): KubeError =>
  new KubeUnavailable({ operation, status: 0, message: describe(cause), cause: redactCause(cause) })

export const timedOut = (operation: string, timeout: Duration.Duration) => (): Effect.Effect<never, KubeError> =>
  Effect.fail(new KubeUnavailable({ operation, status: 0, message: `no response within ${Duration.format(timeout)}` }))

export const notJson = (operation: string, status: number, text: string): KubeError =>
  new KubeUnavailable({ operation, status, message: `response is not JSON: ${firstLine(text)}` })

export const invalid = (operation: string, message: string): Effect.Effect<never, KubeError> =>
  Effect.fail(new KubeInvalid({ operation, message }))

/** A served object → its Schema shape, or the typed error naming the operation. */
export const decoded = <A>(operation: string, what: string, decode: (json: unknown) => Option.Option<A>) =>
(json: unknown): Effect.Effect<A, KubeError> =>
  Option.match(decode(json), {
    onNone: () =>
      Effect.fail(new KubeUnavailable({ operation, status: 200, message: `the server sent a ${what} this client cannot read` })),
    onSome: Effect.succeed
  })

/** The body of a write, or a KubeInvalid when the object does not encode. */
export const encoded = (operation: string, what: string, body: Option.Option<unknown>): Effect.Effect<unknown, KubeError> =>
  Option.match(body, { onNone: () => invalid(operation, `${what} that cannot be encoded`), onSome: Effect.succeed })
