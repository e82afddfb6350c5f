/**
 * The checks a write passes before storage, in the real server's order: decoding (the kind and
 * apiVersion in the body; MicroTime fields and a deletionGracePeriodSeconds that is no int64, whose
 * decoding failure is a 400, not a 422), admission
 * (NamespaceLifecycle: 404 for a missing namespace, 403 for one being deleted), then validation
 * (422 Invalid): the name, object metadata for every kind (ownerReferences, at most one of them the
 * controller; on an update, no new finalizer on an object being deleted, and deletionTimestamp and
 * deletionGracePeriodSeconds immutable) and each kind's own rules (`Pods.ts`, `Kinds.ts`).
 */
import { getPath, sameValue } from "./Fields.ts"
import { isRecord } from "./Patch.ts"
import { apiVersionOf, Namespaces, Pods, type ResourceInfo } from "./Resources.ts"
import { finalizersOf, metaOf, str } from "./Objects.ts"
import { eventErrors, leaseErrors } from "./Kinds.ts"
import { podErrors, podUpdateErrors } from "./Pods.ts"
import {
  type ApiStatusError,
  badRequest,
  failure,
  type FieldError,
  invalid,
  type JsonObject,
  namespaceTerminating,
  notFound
} from "./Status.ts"

/** Group used in Invalid details: built-in kinds use their API group. */
export const errGroup = (r: ResourceInfo): string => r.group

/** A subresource the resource does not have (e.g. status of a namespace-less custom resource). */
export const notFoundSubresource = (): ApiStatusError => failure(404, "NotFound", "the server could not find the requested resource", {})

/**
 * The body's apiVersion and kind, when given, must be the resource's (400 otherwise); both are then
 * set to the resource's. Changes `obj`.
 */
export const checkKind = (r: ResourceInfo, obj: JsonObject): ApiStatusError | undefined => {
  const apiVersion = str(obj["apiVersion"])
  const kind = str(obj["kind"])
  if (apiVersion !== undefined && apiVersion !== "" && apiVersion !== apiVersionOf(r)) {
    return badRequest(`the API version in the data (${apiVersion}) does not match the expected API version (${apiVersionOf(r)})`)
  }
  if (kind !== undefined && kind !== "" && kind !== r.kind) {
    return badRequest(`the kind in the data (${kind}) does not match the expected kind (${r.kind})`)
  }
  obj["apiVersion"] = apiVersionOf(r)
  obj["kind"] = r.kind
  return undefined
}

/**
 * MicroTime as the apiserver decodes it: Go's time.Parse with layout 2006-01-02T15:04:05.000000Z07:00,
 * which takes exactly six fractional digits. Anything else fails JSON decoding, and the server answers
 * 400 BadRequest (a decode error, not a 422 validation error).
 */
const microTimeLayout = "2006-01-02T15:04:05.000000Z07:00"
export const microTimeError = (value: string): string | undefined => {
  const head = value.slice(0, 19)
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(head)) {
    return `parsing time "${value}" as "${microTimeLayout}": cannot parse "${value}" as "2006"`
  }
  const rest = value.slice(19)
  if (/^\.\d{6}(Z|[+-]\d{2}:\d{2})$/.test(rest)) return undefined
  if (/^\.\d{6}/.test(rest)) return `parsing time "${value}" as "${microTimeLayout}": cannot parse "${rest.slice(7)}" as "Z07:00"`
  return `parsing time "${value}" as "${microTimeLayout}": cannot parse "${rest}" as ".000000"`
}

/** What Go's JSON decoder names a value it cannot put in an int64 (`number 29.5`, `string`). */
const notInt64 = (v: unknown): string | undefined => {
  if (v === undefined || v === null) return undefined
  if (typeof v === "number") return Number.isInteger(v) && Math.abs(v) < 2 ** 63 ? undefined : `number ${v}`
  if (Array.isArray(v)) return "array"
  if (isRecord(v)) return "object"
  return typeof v === "boolean" ? "bool" : typeof v
}

/** Fields whose JSON decoding fails in the real server (400 BadRequest before any validation). */
export const decodeCheck = (r: ResourceInfo, obj: JsonObject): ApiStatusError | undefined => {
  const grace = notInt64(getPath(obj, ["metadata", "deletionGracePeriodSeconds"]))
  if (grace !== undefined) {
    // a custom resource's metadata is decoded on its own, so the field path starts at ObjectMeta
    const path = r.customResource ? "ObjectMeta.deletionGracePeriodSeconds" : "ObjectMeta.metadata.deletionGracePeriodSeconds"
    return badRequest(`${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: json: cannot unmarshal ${grace} into Go struct field ${path} of type int64`)
  }
  const micro: Array<Array<string>> = r.plural === "leases"
    ? [["spec", "renewTime"], ["spec", "acquireTime"]]
    : r.plural === "events"
    ? [["eventTime"]]
    : []
  for (const path of micro) {
    const v = getPath(obj, path)
    if (v === undefined || v === null) continue
    const err = typeof v === "string" ? microTimeError(v) : `json: cannot unmarshal ${typeof v} into Go struct field`
    if (err !== undefined) {
      return badRequest(`${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: ${err}`)
    }
  }
  return undefined
}

const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const subdomainMessage =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
const labelMessage =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

/** Names are DNS subdomains (253 characters at most); a namespace's is a DNS label (63). */
export const validateName = (r: ResourceInfo, name: string): ApiStatusError | undefined => {
  const isLabel = r === Namespaces
  const ok = isLabel ? label.test(name) && name.length <= 63 : subdomain.test(name) && name.length <= 253
  if (ok) return undefined
  return invalid(errGroup(r), r.kind, name, [
    { field: "metadata.name", type: "FieldValueInvalid", value: JSON.stringify(name), detail: isLabel ? labelMessage : subdomainMessage }
  ])
}

/**
 * NamespaceLifecycle admission: 404 for a missing namespace, 403 for one being deleted.
 * `namespace` is the stored Namespace object named `ns` (undefined when there is none).
 */
export const admitNamespace = (
  r: ResourceInfo,
  namespace: JsonObject | undefined,
  ns: string,
  name: string
): ApiStatusError | undefined => {
  if (!r.namespaced) return undefined
  if (namespace === undefined) return notFound(Namespaces, ns)
  if (metaOf(namespace)["deletionTimestamp"] !== undefined) return namespaceTerminating(r, name, ns)
  return undefined
}

/**
 * Object metadata validation of ownerReferences, for every kind: each reference names an apiVersion,
 * kind, name and uid, and at most one is the controller. The value in the message is a stand-in for
 * the server's Go rendering of the list (which prints pointer addresses).
 */
export const ownerReferenceErrors = (refs: unknown): ReadonlyArray<FieldError> => {
  if (!Array.isArray(refs)) return []
  const errors: Array<FieldError> = []
  const field = "metadata.ownerReferences"
  let firstController: string | undefined
  for (const ref of refs) {
    const entry = isRecord(ref) ? ref : {}
    const text = (key: string) => typeof entry[key] === "string" ? entry[key] : ""
    const version = text("apiVersion").split("/").at(-1) ?? ""
    if (version === "") errors.push({ field: `${field}.apiVersion`, type: "FieldValueInvalid", value: "\"\"", detail: "version must not be empty" })
    if (text("kind") === "") errors.push({ field: `${field}.kind`, type: "FieldValueInvalid", value: "\"\"", detail: "kind must not be empty" })
    if (text("name") === "") errors.push({ field: `${field}.name`, type: "FieldValueInvalid", value: "\"\"", detail: "name must not be empty" })
    if (text("uid") === "") errors.push({ field: `${field}.uid`, type: "FieldValueInvalid", value: "\"\"", detail: "uid must not be empty" })
    if (entry["controller"] === true) {
      const current = `${text("kind")}/${text("name")}`
      if (firstController === undefined) firstController = current
      else {
        errors.push({
          field,
          type: "FieldValueInvalid",
          value: `[]v1.OwnerReference{${refs.length} entries}`,
          detail: `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`
        })
      }
    }
  }
  return errors
}

/**
 * An update's metadata rules, in the server's order: no finalizer may be added to an object that is
 * being deleted (the message lists the new ones as Go prints a string slice), and the deletion
 * fields the update strategy left from the request (`Update.ts`) must be the stored ones.
 */
const metadataUpdateErrors = (obj: JsonObject, old: JsonObject): ReadonlyArray<FieldError> => {
  const errors: Array<FieldError> = []
  const m = metaOf(obj)
  const o = metaOf(old)
  const before = finalizersOf(old)
  const added = finalizersOf(obj).filter((f) => !before.includes(f))
  if (o["deletionTimestamp"] !== undefined && added.length > 0) {
    errors.push({
      field: "metadata.finalizers",
      type: "FieldValueForbidden",
      detail: `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(", ")}}`
    })
  }
  const immutable = (key: "deletionTimestamp" | "deletionGracePeriodSeconds", render: (v: unknown) => string) => {
    if (!sameValue(m[key], o[key])) {
      errors.push({ field: `metadata.${key}`, type: "FieldValueInvalid", value: m[key] === undefined ? "null" : render(m[key]), detail: "field is immutable" })
    }
  }
  immutable("deletionTimestamp", (v) => JSON.stringify(v))
  immutable("deletionGracePeriodSeconds", (v) => String(v))
  return errors
}

/**
 * Validation of the object about to be stored (`old`: the stored one, for an update): every error
 * found, in the server's order, as one 422 Invalid; undefined when there is none. A custom
 * resource's update checks its metadata more than once, and each pass adds its errors again to
 * the causes (the message lists each once): [ownerReferences, update rules] twice, then the
 * ownerReferences once more (kube-apiserver v1.37.2, seen with two controllers and both deletion
 * fields, with a new finalizer and a grace, and with each alone).
 */
export const validate = (r: ResourceInfo, obj: JsonObject, old: JsonObject | undefined): ApiStatusError | undefined => {
  const name = str(metaOf(obj)["name"]) ?? ""
  const owners = ownerReferenceErrors(metaOf(obj)["ownerReferences"])
  const update = old !== undefined ? metadataUpdateErrors(obj, old) : []
  const metadata = r.customResource && old !== undefined ? [...owners, ...update, ...owners, ...update, ...owners] : [...owners, ...update]
  const errors: Array<FieldError> = [
    ...metadata,
    ...(r === Pods ? podErrors(obj) : []),
    ...eventErrors(r, obj),
    ...leaseErrors(r, obj),
    ...(r === Pods && old !== undefined ? podUpdateErrors(obj, old) : [])
  ]
  return errors.length === 0 ? undefined : invalid(errGroup(r), r.kind, name, errors)
}
