/**
 * A DELETE's rules, apart from namespaces (`Kinds.ts`): the preconditions (uid, then
 * resourceVersion; 409 naming the Kind, as kube-apiserver v1.37.2 words it), and how the object is
 * marked. Pods have the graceful-delete strategy: every DELETE first writes deletionTimestamp and
 * deletionGracePeriodSeconds (a MODIFIED event), even with grace 0; the object then goes at once if
 * the grace is 0 and no finalizer holds it. Other resources go at once, or are marked with grace 0
 * while finalizers hold them. A second DELETE of an object being deleted changes only a longer grace
 * into a shorter one.
 */
import { clone } from "./Patch.ts"
import { Pods, type ResourceInfo } from "./Resources.ts"
import { finalizersOf, metaOf, rfc3339, str } from "./Objects.ts"
import { podGracePeriod } from "./Pods.ts"
import { type ApiStatusError, conflict, type JsonObject, type StatusBody } from "./Status.ts"

export interface DeleteOptions {
  readonly gracePeriodSeconds?: number | undefined
  readonly preconditions?: { readonly uid?: string | undefined; readonly resourceVersion?: string | undefined } | undefined
}

/** What a DELETE answers with: the object (still present, or as deleted for pods) or a Success Status. */
export type DeleteResult =
  | { readonly _tag: "Pending"; readonly object: JsonObject }
  | { readonly _tag: "Deleted"; readonly object: JsonObject; readonly body: JsonObject | StatusBody }

/** The 409 for a precondition the stored object fails, or undefined. */
export const preconditionConflict = (
  r: ResourceInfo,
  name: string,
  stored: JsonObject,
  pre: DeleteOptions["preconditions"]
): ApiStatusError | undefined => {
  const sm = metaOf(stored)
  const uid = str(sm["uid"]) ?? ""
  // DELETE checks its preconditions early, naming the Kind (kube-apiserver v1.37.2 wording)
  const byKind = { group: r.group, plural: r.kind }
  if (pre?.uid !== undefined && pre.uid !== uid) {
    return conflict(byKind, name, `the UID in the precondition (${pre.uid}) does not match the UID in record (${uid}). The object might have been deleted and then recreated`)
  }
  if (pre?.resourceVersion !== undefined && pre.resourceVersion !== sm["resourceVersion"]) {
    return conflict(byKind, name, `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${String(sm["resourceVersion"])}). The object might have been modified`)
  }
  return undefined
}

/**
 * The mark a DELETE writes before anything goes: `Marked` with the object to store (a MODIFIED
 * write), `Unmarked` when nothing is written first (the object may go at once), or `Unchanged` when
 * the object is already being deleted with a grace this request does not shorten.
 */
export type DeletionMark =
  | { readonly _tag: "Marked"; readonly next: JsonObject }
  | { readonly _tag: "Unmarked" }
  | { readonly _tag: "Unchanged" }

export const markForDeletion = (
  r: ResourceInfo,
  stored: JsonObject,
  gracePeriodSeconds: number | undefined,
  now: () => number
): DeletionMark => {
  const sm = metaOf(stored)
  const next = clone(stored)
  const m = metaOf(next)
  const existingGrace = typeof sm["deletionGracePeriodSeconds"] === "number" ? sm["deletionGracePeriodSeconds"] : undefined
  const requested = gracePeriodSeconds === undefined ? undefined : gracePeriodSeconds < 0 ? 1 : gracePeriodSeconds // negative means 1 s on the delete path
  if (sm["deletionTimestamp"] !== undefined) {
    if (existingGrace === undefined || existingGrace === 0) return { _tag: "Unmarked" }
    // already being deleted: only a shorter grace period (as asked, not re-derived) changes anything
    if (requested === undefined || requested >= existingGrace) return { _tag: "Unchanged" }
    const ts = Date.parse(String(sm["deletionTimestamp"])) - existingGrace * 1000 + requested * 1000
    m["deletionTimestamp"] = rfc3339(ts)
    m["deletionGracePeriodSeconds"] = requested
    return { _tag: "Marked", next }
  }
  if (r === Pods) {
    const grace = podGracePeriod(stored, requested)
    m["deletionTimestamp"] = rfc3339(now() + grace * 1000)
    m["deletionGracePeriodSeconds"] = grace
    if (typeof m["generation"] === "number" && m["generation"] > 0) m["generation"] = m["generation"] + 1
    return { _tag: "Marked", next }
  }
  if (finalizersOf(next).length > 0) {
    // finalizers hold the object: it is marked for deletion now, with grace 0
    m["deletionTimestamp"] = rfc3339(now())
    m["deletionGracePeriodSeconds"] = 0
    if (typeof m["generation"] === "number" && m["generation"] > 0) m["generation"] = m["generation"] + 1
    return { _tag: "Marked", next }
  }
  return { _tag: "Unmarked" }
}

/** After the mark: the object goes now when no finalizer holds it and its grace (if any) is 0. */
export const goesNow = (current: JsonObject): boolean => {
  const grace = metaOf(current)["deletionGracePeriodSeconds"]
  return finalizersOf(current).length === 0 && (grace === undefined || grace === 0)
}
