/**
 * Small facts about stored objects that every part of the apiserver model shares: metadata access,
 * the store key, the time format, and the key order the server writes objects and list items in.
 * Plain functions over JSON objects; `metaOf` creates an empty metadata map when there is none, as
 * the model's writes expect one to exist.
 */
import { clone, isRecord } from "./Patch.ts"
import { apiVersionOf, type ResourceInfo } from "./Resources.ts"
import type { JsonObject } from "./Status.ts"

export const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

/** The object's metadata, created empty when missing (so callers can write into it). */
export const metaOf = (obj: JsonObject): Record<string, unknown> => {
  if (!isRecord(obj["metadata"])) obj["metadata"] = {}
  return obj["metadata"] as Record<string, unknown>
}

/** The string-valued labels; anything else under metadata.labels is ignored. */
export const labelsOf = (obj: JsonObject): Record<string, string> => {
  const labels = metaOf(obj)["labels"]
  const out: Record<string, string> = {}
  if (isRecord(labels)) for (const [k, v] of Object.entries(labels)) if (typeof v === "string") out[k] = v
  return out
}

export const finalizersOf = (obj: JsonObject): Array<string> => {
  const f = metaOf(obj)["finalizers"]
  return Array.isArray(f) ? f.filter((x): x is string => typeof x === "string") : []
}

/** A resource's bucket in the store: one per group and plural. */
export const resourceKey = (r: ResourceInfo): string => `${r.group}/${r.plural}`

/** An object's key inside its bucket ("" namespace for cluster-scoped objects). */
export const objectKey = (ns: string, name: string): string => `${ns}/${name}`

/** metav1.Time: whole seconds, UTC, no fraction. */
export const rfc3339 = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z")

/** The five characters generateName appends (the server's alphabet: no vowels, no look-alikes). */
export const randomSuffix = (): string => {
  const alphabet = "bcdfghjklmnpqrstvwxz2456789"
  let s = ""
  for (let i = 0; i < 5; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)]
  return s
}

export const listKind = (r: ResourceInfo): string => `${r.kind}List`

const topOrder = ["kind", "apiVersion", "metadata"]
const metaOrder = [
  "name",
  "generateName",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields"
]
const ordered = (o: Record<string, unknown>, order: ReadonlyArray<string>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const k of order) if (o[k] !== undefined) out[k] = o[k]
  for (const [k, v] of Object.entries(o)) if (!(k in out) && v !== undefined) out[k] = v
  return out
}

export const sortedKeys = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(sortedKeys)
  if (!isRecord(v)) return v
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v).sort()) out[k] = sortedKeys(v[k])
  return out
}

/**
 * A copy with keys in the order the server writes them: typed objects in Go struct order (kind,
 * apiVersion, metadata, ...); custom resources are unstructured maps, written with sorted keys.
 */
export const inWireOrder = (o: JsonObject, r: ResourceInfo): JsonObject => {
  if (r.customResource) return sortedKeys(clone(o)) as JsonObject
  const c = ordered(clone(o), topOrder)
  if (isRecord(c["metadata"])) c["metadata"] = ordered(c["metadata"], metaOrder)
  return c
}

export const withoutResourceVersion = (o: JsonObject): JsonObject => {
  const c = clone(o)
  delete metaOf(c)["resourceVersion"]
  return c
}

/** An item of a typed list carries no kind/apiVersion of its own (custom resources keep theirs). Changes `c`. */
export const typedListItem = (r: ResourceInfo, c: JsonObject): JsonObject => {
  if (!r.customResource) {
    delete c["kind"]
    delete c["apiVersion"]
  }
  return c
}

export const listItem = (r: ResourceInfo, o: JsonObject): JsonObject => typedListItem(r, clone(o))

/** The object a BOOKMARK event carries: only the kind and the resourceVersion. */
export const bookmarkObject = (r: ResourceInfo, rv: number): JsonObject => ({
  kind: r.kind,
  apiVersion: apiVersionOf(r),
  metadata: r.customResource ? { resourceVersion: String(rv) } : { resourceVersion: String(rv), creationTimestamp: null }
})
