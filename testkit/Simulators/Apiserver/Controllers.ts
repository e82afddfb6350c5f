/**
 * The cluster controllers the apiserver model plays, on demand or right after the write that
 * triggers them (a real cluster runs them in kube-controller-manager): the garbage collector, the
 * namespace controller's final sweep, and the node lifecycle controller's removal of the not-ready
 * taint. Each writes through the store, so watches see their writes like any other.
 */
import { Result } from "effect"
import { withoutNotReadyTaint } from "./Kinds.ts"
import { recordManager } from "./ManagedFields.ts"
import { metaOf, str } from "./Objects.ts"
import { clone, isRecord } from "./Patch.ts"
import { apiVersionOf, Namespaces, Nodes, type ResourceInfo } from "./Resources.ts"
import type { ApiStatusError } from "./Status.ts"
import type { ObjectStore } from "./Store.ts"

/**
 * One pass of the garbage collector: every object whose owners are all gone is deleted with
 * `deleteOne` (the background way, so a bound pod gets its graceful deletion). An owner kind the
 * server does not serve is never gone. Returns the keys (`resource/namespace/name`) it deleted.
 */
export const collectGarbage = (
  resources: ReadonlyArray<ResourceInfo>,
  store: ObjectStore,
  deleteOne: (r: ResourceInfo, ns: string, name: string) => Result.Result<unknown, ApiStatusError>
): Array<string> => {
  const deleted: Array<string> = []
  for (const r of resources) {
    for (const o of [...store.bucket(r).values()]) {
      const m = metaOf(o)
      const refs = Array.isArray(m["ownerReferences"]) ? m["ownerReferences"].filter(isRecord) : []
      if (refs.length === 0 || m["deletionTimestamp"] !== undefined) continue
      const ns = str(m["namespace"]) ?? ""
      const ownerGone = (ref: Record<string, unknown>) => {
        const owner = resources.find((x) => apiVersionOf(x) === ref["apiVersion"] && x.kind === ref["kind"])
        if (owner === undefined) return false // an owner kind the server does not know is left alone
        const scope = owner.namespaced ? ns : ""
        return ![...store.bucket(owner).values()].some((x) => metaOf(x)["uid"] === ref["uid"] && (metaOf(x)["namespace"] ?? "") === scope)
      }
      if (!refs.every(ownerGone)) continue
      const name = str(m["name"]) ?? ""
      if (Result.isSuccess(deleteOne(r, ns, name))) deleted.push(`${r.plural}/${ns}/${name}`)
    }
  }
  return deleted
}

/** The namespace controller's job: remove everything in the namespace, then the namespace. */
export const finalizeNamespace = (resources: ReadonlyArray<ResourceInfo>, store: ObjectStore, name: string): void => {
  for (const r of resources) {
    if (!r.namespaced) continue
    for (const [k, o] of [...store.bucket(r).entries()]) {
      if (k.startsWith(`${name}/`)) store.commit(r, name, str(metaOf(o)["name"]) ?? "", "DELETED", clone(o), o)
    }
  }
  const ns = store.lookup(Namespaces, "", name)
  if (ns !== undefined) store.commit(Namespaces, "", name, "DELETED", clone(ns), ns)
}

/** The node lifecycle controller's part: drop the not-ready taint once Ready=True (its own write, as kube-controller-manager). */
export const nodeLifecycle = (store: ObjectStore, name: string, now: () => number): void => {
  const stored = store.lookup(Nodes, "", name)
  if (stored === undefined) return
  const next = withoutNotReadyTaint(stored)
  if (next === undefined) return
  recordManager(next, stored, "kube-controller-manager", "Update", undefined, now)
  store.commit(Nodes, "", name, "MODIFIED", next, stored)
}
