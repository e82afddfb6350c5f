/**
 * From a controller ownerReference to the REST coordinates of its owner (AUTH-2 — the controller
 * reference; AUTH-3 — owner GET; AUTH-5 — pluralising the kind).
 */
import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node"
import { Option } from "effect"

/**
 * Every ownerReference with `controller: true`. None means a bare Pod; more than one is a Pod the
 * apiserver should have refused, and no single owner speaks for it.
 */
export const controllerRefsOf = (pod: V1Pod): ReadonlyArray<V1OwnerReference> => {
  const refs = pod.metadata?.ownerReferences
  return Array.isArray(refs) ? refs.filter((ref) => ref !== null && typeof ref === "object" && ref.controller === true) : []
}

/**
 * English plural of a lower-cased kind (AUTH-5). A wrong guess is still safe: the endpoint-level
 * 404 it produces carries no Status naming the owner, and reads as "ambiguous" (preserve).
 */
export const pluralOf = (kind: string): string => {
  const k = kind.toLowerCase()
  if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`
  if (k.length > 1 && k.endsWith("y") && !"aeiou".includes(k[k.length - 2]!)) return `${k.slice(0, -1)}ies`
  return `${k}s`
}

export interface OwnerGvr {
  readonly group: string
  readonly version: string
  readonly plural: string
}

/**
 * `apiVersion` as group/version ("v1" is the core group). An empty kind, or an apiVersion with
 * more than one "/" or an empty part, is unresolvable (AUTH-1 — delete authorization order, rule
 * 3).
 */
export const ownerGvrOf = (ref: V1OwnerReference): Option.Option<OwnerGvr> => {
  if (ref.kind === undefined || ref.kind === "") return Option.none()
  const parts = (ref.apiVersion ?? "").split("/")
  if (parts.length > 2) return Option.none()
  const [group, version] = parts.length === 2 ? [parts[0]!, parts[1]!] : ["", parts[0]!]
  // The Go reference sends an empty apiVersion to a malformed path and preserves on the error;
  // naming it unresolvable gives the same verdict with a truthful reason.
  if (version === "" || (parts.length === 2 && group === "")) return Option.none()
  return Option.some({ group, version, plural: pluralOf(ref.kind) })
}
