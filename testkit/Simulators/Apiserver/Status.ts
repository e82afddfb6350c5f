/**
 * Kubernetes `Status` bodies, shaped byte for byte like the ones kube-apiserver writes
 * (field order included: kind, apiVersion, metadata, status, message, reason, details, code).
 * `ApiStatusError` carries one of them out of the model; the HTTP face writes `body` as is.
 */
import { Schema } from "effect"

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [k: string]: Json }
export type JsonObject = { [k: string]: unknown }

export interface StatusCause {
  readonly reason?: string
  readonly message?: string
  readonly field?: string
}

export interface StatusDetailsBody {
  readonly name?: string
  readonly group?: string
  readonly kind?: string
  readonly uid?: string
  readonly causes?: ReadonlyArray<StatusCause>
  readonly retryAfterSeconds?: number
}

export interface StatusBody {
  readonly kind: "Status"
  readonly apiVersion: "v1"
  readonly metadata: {}
  readonly status: "Failure" | "Success"
  readonly message?: string
  readonly reason?: string
  readonly details?: StatusDetailsBody
  readonly code?: number
}

/** A refusal from the model: the HTTP status code and the Status body the real server would write. */
export class ApiStatusError extends Schema.TaggedError<ApiStatusError>()("ApiStatusError", {
  code: Schema.Number,
  reason: Schema.String,
  message: Schema.String,
  body: Schema.Unknown
}) {
  get status(): StatusBody {
    return this.body as StatusBody
  }
}

/** Identifies a resource in messages: `pods`, `leases.coordination.k8s.io`. */
export interface GroupResource {
  readonly group: string
  readonly plural: string
}

export const qualified = (gr: GroupResource): string => gr.group === "" ? gr.plural : `${gr.plural}.${gr.group}`

/** details{name, group, kind}: group omitted for the core group (the server's omitempty). */
const details = (gr: GroupResource, name: string | undefined, extra?: Partial<StatusDetailsBody>): StatusDetailsBody => ({
  ...(name !== undefined && name !== "" ? { name } : {}),
  ...(gr.group !== "" ? { group: gr.group } : {}),
  kind: gr.plural,
  ...extra
})

export const failure = (
  code: number,
  reason: string,
  message: string,
  detailsBody?: StatusDetailsBody
): ApiStatusError =>
  new ApiStatusError({
    code,
    reason,
    message,
    body: {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      ...(reason !== "" ? { reason } : {}),
      ...(detailsBody !== undefined ? { details: detailsBody } : {}),
      code
    } satisfies StatusBody
  })

export const notFound = (gr: GroupResource, name: string): ApiStatusError =>
  failure(404, "NotFound", `${qualified(gr)} "${name}" not found`, details(gr, name))

/** A known group/version with no such resource: the server's generic 404, `details` empty. */
export const endpointNotFound = (): ApiStatusError =>
  failure(404, "NotFound", "the server could not find the requested resource", {})

export const alreadyExists = (gr: GroupResource, name: string): ApiStatusError =>
  failure(409, "AlreadyExists", `${qualified(gr)} "${name}" already exists`, details(gr, name))

export const conflict = (gr: GroupResource, name: string, why: string): ApiStatusError =>
  failure(409, "Conflict", `Operation cannot be fulfilled on ${qualified(gr)} "${name}": ${why}`, details(gr, name))

export const staleConflict = (gr: GroupResource, name: string): ApiStatusError =>
  conflict(gr, name, "the object has been modified; please apply your changes to the latest version and try again")

/** A failed uid precondition in storage; the message quotes the storage error (kube-apiserver v1.37.2). */
export const uidPreconditionConflict = (gr: GroupResource, name: string, want: string, have: string, key: string): ApiStatusError =>
  conflict(
    gr,
    name,
    `StorageError: invalid object, Code: 4, Key: ${key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${want}, UID in object meta: ${have}`
  )

/** 410 as the watch cache writes it: no details. */
export const expired = (message: string): ApiStatusError => failure(410, "Expired", message)

export const badRequest = (message: string): ApiStatusError => failure(400, "BadRequest", message)

export const methodNotAllowed = (): ApiStatusError =>
  failure(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})

/** An unknown PATCH content type, as the REST layer answers it (kube-apiserver v1.37.2). */
export const unsupportedMediaType = (): ApiStatusError => failure(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})

export const unauthorized = (): ApiStatusError => failure(401, "Unauthorized", "Unauthorized")

/** RBAC refusal, worded like the authorizer's: `pods "x" is forbidden: User "u" cannot delete resource "pods" in API group "" in the namespace "ns"`. */
export const rbacForbidden = (
  gr: GroupResource,
  subresource: string | undefined,
  name: string | undefined,
  verb: string,
  user: string,
  namespace: string | undefined
): ApiStatusError => {
  const resource = subresource === undefined ? gr.plural : `${gr.plural}/${subresource}`
  const subject = name === undefined || name === "" ? qualified(gr) : `${qualified(gr)} "${name}"`
  const scope = namespace === undefined || namespace === "" ? "at the cluster scope" : `in the namespace "${namespace}"`
  return failure(
    403,
    "Forbidden",
    `${subject} is forbidden: User "${user}" cannot ${verb} resource "${resource}" in API group "${gr.group}" ${scope}`,
    details(gr, name)
  )
}

/** NamespaceLifecycle: creating in a namespace that is being deleted. */
export const namespaceTerminating = (gr: GroupResource, name: string, namespace: string): ApiStatusError => {
  const subject = name === "" ? qualified(gr) : `${qualified(gr)} "${name}"`
  return failure(
    403,
    "Forbidden",
    `${subject} is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
    details(gr, name, {
      causes: [{ reason: "NamespaceTerminating", message: `namespace ${namespace} is being terminated`, field: "metadata.namespace" }]
    })
  )
}

export interface FieldError {
  readonly field: string
  readonly type: "FieldValueInvalid" | "FieldValueRequired" | "FieldValueForbidden" | "FieldValueNotSupported"
  /** the detail after the value, e.g. "must be a valid IP address" */
  readonly detail: string
  readonly value?: string
}

const renderFieldError = (e: FieldError): string => {
  switch (e.type) {
    case "FieldValueInvalid":
      return `Invalid value: ${e.value ?? "null"}: ${e.detail}`
    case "FieldValueRequired":
      return `Required value${e.detail === "" ? "" : `: ${e.detail}`}`
    case "FieldValueForbidden":
      return `Forbidden: ${e.detail}`
    case "FieldValueNotSupported":
      return `Unsupported value: ${e.value ?? "null"}${e.detail === "" ? "" : `: ${e.detail}`}`
  }
}

/**
 * 422 Invalid. As the real server does, the `kind` here is the object's Kind (`Pod`, `Lease`) for built-in
 * types, and the message is `<Kind>[.<group>] "<name>" is invalid: <field>: <error>[, <field>: <error>]`.
 */
export const invalid = (
  group: string,
  kind: string,
  name: string,
  errors: ReadonlyArray<FieldError>
): ApiStatusError => {
  const causes = errors.map((e) => ({ reason: e.type, message: renderFieldError(e), field: e.field }))
  // the message lists an error found twice once (a custom resource's update validates metadata twice)
  const list = [...new Set(errors.map((e) => `${e.field}: ${renderFieldError(e)}`))]
  const joined = list.length === 1 ? list[0] : `[${list.join(", ")}]`
  const qualifiedKind = group === "" ? kind : `${kind}.${group}`
  return failure(422, "Invalid", `${qualifiedKind} "${name}" is invalid: ${joined}`, {
    ...(name !== "" ? { name } : {}),
    ...(group !== "" ? { group } : {}),
    kind,
    causes
  })
}

export const internalError = (message: string): ApiStatusError =>
  failure(500, "InternalError", `Internal error occurred: ${message}`, { causes: [{ message }] })

/** A plain (non-API) error from storage: code 500, the bare message, no reason, no details. */
export const plainServerError = (message: string): ApiStatusError => failure(500, "", message)

/** The Status an injected fault answers with, by code. */
export const injected = (code: number, message: string): ApiStatusError => {
  switch (code) {
    case 500:
      return internalError(message)
    case 503:
      return failure(503, "ServiceUnavailable", message)
    case 504:
      return failure(504, "Timeout", message)
    case 429:
      return failure(429, "TooManyRequests", message, { retryAfterSeconds: 1 })
    default:
      return failure(code, "", message)
  }
}

export const success = (gr: GroupResource, name: string, uid: string): StatusBody => ({
  kind: "Status",
  apiVersion: "v1",
  metadata: {},
  status: "Success",
  details: details(gr, name, { uid })
})
