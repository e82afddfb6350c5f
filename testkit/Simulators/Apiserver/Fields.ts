/**
 * Field sets for managedFields and server-side apply. A field is a path of map keys; every list is a
 * leaf (atomic), which is what server-side apply does for a CRD list without x-kubernetes-list-type
 * (NodeInventory) and is a fair model for the built-in types the daemon writes.
 */
import { clone, isRecord } from "./Patch.ts"

export type FieldPath = ReadonlyArray<string>

const key = (p: FieldPath) => JSON.stringify(p)
export const pathKey = key
export const fromKey = (k: string): FieldPath => JSON.parse(k) as Array<string>

/** metadata fields that a manager can own; the rest of metadata is server-owned. */
const ownableMetadata = new Set(["labels", "annotations", "finalizers", "ownerReferences"])

/** Leaf paths of an object (apiVersion, kind and server-owned metadata excluded). */
export const leafPaths = (obj: unknown): Set<string> => {
  const out = new Set<string>()
  const visit = (v: unknown, path: Array<string>) => {
    if (isRecord(v) && Object.keys(v).length > 0) {
      for (const [k, x] of Object.entries(v)) {
        if (path.length === 0 && (k === "apiVersion" || k === "kind")) continue
        if (path.length === 1 && path[0] === "metadata" && !ownableMetadata.has(k)) continue
        if (x === null || x === undefined) continue
        visit(x, [...path, k])
      }
    } else if (path.length > 0 && !(path.length === 1 && path[0] === "metadata")) {
      out.add(key(path))
    }
  }
  visit(obj, [])
  return out
}

export const getPath = (obj: unknown, path: FieldPath): unknown => {
  let cur: unknown = obj
  for (const k of path) {
    if (!isRecord(cur)) return undefined
    cur = cur[k]
  }
  return cur
}

export const setPath = (obj: Record<string, unknown>, path: FieldPath, value: unknown): void => {
  let cur: Record<string, unknown> = obj
  for (const k of path.slice(0, -1)) {
    const next = cur[k]
    if (!isRecord(next)) cur[k] = {}
    cur = cur[k] as Record<string, unknown>
  }
  cur[path[path.length - 1]] = clone(value)
}

/** Remove a leaf and any maps it leaves empty. */
export const deletePath = (obj: Record<string, unknown>, path: FieldPath): void => {
  const parents: Array<Record<string, unknown>> = [obj]
  let cur: unknown = obj
  for (const k of path.slice(0, -1)) {
    if (!isRecord(cur)) return
    cur = cur[k]
    if (!isRecord(cur)) return
    parents.push(cur)
  }
  delete parents[parents.length - 1][path[path.length - 1]]
  for (let i = parents.length - 1; i > 0; i--) {
    if (Object.keys(parents[i]).length === 0) delete parents[i - 1][path[i - 1]]
    else break
  }
}

export const sameValue = (a: unknown, b: unknown): boolean => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b))

const canonical = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(canonical)
  if (!isRecord(v)) return v
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v).sort()) if (v[k] !== undefined) out[k] = canonical(v[k])
  return out
}

/** `{"f:metadata":{"f:labels":{"f:a":{}}},"f:node":{}}` */
export const toFieldsV1 = (paths: Iterable<string>): Record<string, unknown> => {
  const root: Record<string, unknown> = {}
  for (const k of [...paths].sort()) {
    let cur = root
    for (const seg of fromKey(k)) {
      const f = `f:${seg}`
      if (!isRecord(cur[f])) cur[f] = {}
      cur = cur[f] as Record<string, unknown>
    }
  }
  return root
}

export const fromFieldsV1 = (fields: unknown): Set<string> => {
  const out = new Set<string>()
  const visit = (v: unknown, path: Array<string>) => {
    const children = isRecord(v) ? Object.keys(v).filter((k) => k.startsWith("f:")) : []
    if (children.length === 0) {
      if (path.length > 0) out.add(key(path))
      return
    }
    for (const c of children) visit((v as Record<string, unknown>)[c], [...path, c.slice(2)])
  }
  visit(fields, [])
  return out
}
