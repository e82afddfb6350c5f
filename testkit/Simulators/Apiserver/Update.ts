/**
 * An update's rules (PUT, and the last step of every PATCH and apply): the storage preconditions
 * (a uid in the body must be the stored one; a resourceVersion must be the stored one, and only
 * some resources may omit it), and the update strategy — what the main resource and the status
 * subresource each take from the request and what they keep from storage, the system metadata that
 * always comes from storage (the deletion fields only where the request cannot change them: a
 * deletionGracePeriodSeconds it carries, or a deletionTimestamp on an object not being deleted, is
 * left for validation to refuse as immutable), and the generation bump on a spec change.
 */
import { sameValue } from "./Fields.ts"
import { applyDefaults } from "./Kinds.ts"
import { clone } from "./Patch.ts"
import { Pods, registryKey, type ResourceInfo } from "./Resources.ts"
import { metaOf, rfc3339, str } from "./Objects.ts"
import { dropEmptyStatusStrings, keepOnStatusWrite, syncPodIPs } from "./Pods.ts"
import { type ApiStatusError, invalid, type JsonObject, staleConflict, uidPreconditionConflict } from "./Status.ts"

/**
 * The storage checks of an update of `stored` with `obj`: the uid precondition first, then the
 * resourceVersion. Pods, nodes, events and namespaces allow an unconditional update (no
 * resourceVersion; for pods as `unconditionalPodUpdates` says); leases and custom resources refuse
 * it with 422 naming the resource (not the Kind).
 */
export const updatePreconditions = (
  r: ResourceInfo,
  name: string,
  namespace: string,
  obj: JsonObject,
  stored: JsonObject,
  unconditionalPodUpdates: boolean
): ApiStatusError | undefined => {
  const m = metaOf(obj)
  const sm = metaOf(stored)
  // storage checks the uid precondition (taken from the body) before comparing resourceVersions
  const uid = str(m["uid"])
  const storedUid = str(sm["uid"]) ?? ""
  if (uid !== undefined && uid !== "" && uid !== storedUid) {
    return uidPreconditionConflict(r, name, uid, storedUid, registryKey(r, namespace, name))
  }
  const rv = str(m["resourceVersion"]) ?? ""
  if (rv === "" || rv === "0") {
    const unconditional = r === Pods ? unconditionalPodUpdates : r.allowUnconditionalUpdate
    if (!unconditional) {
      return invalid(r.group, r.plural, name, [
        { field: "metadata.resourceVersion", type: "FieldValueInvalid", value: "0", detail: "must be specified for an update" }
      ])
    }
  } else if (rv !== sm["resourceVersion"]) {
    return staleConflict(r, name)
  }
  return undefined
}

/**
 * The object an update stores, before validation and managedFields: `obj` (the request's copy,
 * changed in place and returned for the main resource and for built-in status writes) with the
 * strategy applied. A status write keeps the stored spec (custom resources: takes only the status);
 * a main-resource write keeps the stored status when the resource has a status subresource.
 */
export const updatedObject = (
  r: ResourceInfo,
  name: string,
  namespace: string,
  obj: JsonObject,
  stored: JsonObject,
  sub: "status" | undefined
): JsonObject => {
  const sm = metaOf(stored)
  let next: JsonObject
  if (sub === "status") {
    if (r.customResource) {
      next = clone(stored)
      if (obj["status"] === undefined) delete next["status"]
      else next["status"] = clone(obj["status"])
    } else {
      next = obj
      next["spec"] = clone(stored["spec"])
      if (next["spec"] === undefined) delete next["spec"]
      if (r === Pods) keepOnStatusWrite(next, stored)
    }
  } else {
    next = obj
    if (r.subresources.includes("status")) {
      if (stored["status"] === undefined) delete next["status"]
      else next["status"] = clone(stored["status"])
    }
  }
  // BeforeUpdate: system fields come from storage
  const nm = metaOf(next)
  nm["name"] = name
  if (r.namespaced) nm["namespace"] = namespace
  nm["uid"] = str(sm["uid"]) ?? ""
  nm["creationTimestamp"] = sm["creationTimestamp"]
  if (sm["generation"] === undefined) delete nm["generation"]
  else nm["generation"] = sm["generation"]
  keepDeletionFields(r, nm, sm, sub)
  if (sm["managedFields"] !== undefined) nm["managedFields"] = clone(sm["managedFields"])
  else delete nm["managedFields"]
  nm["resourceVersion"] = sm["resourceVersion"]
  if (r.tracksGeneration && typeof nm["generation"] === "number") {
    const strip = (o: JsonObject) => {
      const c = clone(o)
      delete c["metadata"]
      if (r.subresources.includes("status")) delete c["status"]
      return c
    }
    if (!sameValue(strip(next), strip(stored))) nm["generation"] = nm["generation"] + 1
  }
  if (r === Pods) {
    dropEmptyStatusStrings(next)
    syncPodIPs(next)
  }
  applyDefaults(r, next)
  return next
}

const rfc3339Text = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

/**
 * The deletion fields an update leaves for validation to hold immutable (`Validation.ts`): storage
 * wins only where the request cannot change anything. A stored deletionTimestamp always replaces
 * the request's; with none stored the request's stays (decoded to whole seconds in UTC), except on
 * pods/status, which drops it. A deletionGracePeriodSeconds the request leaves out (or sends null)
 * is the stored one; one it carries stays, so a different one is refused (kube-apiserver v1.37.2,
 * test/k8s/Differential.test.ts). Changes `nm`, the metadata about to be stored.
 */
const keepDeletionFields = (
  r: ResourceInfo,
  nm: Record<string, unknown>,
  sm: Record<string, unknown>,
  sub: "status" | undefined
): void => {
  const sent = nm["deletionTimestamp"]
  if (sm["deletionTimestamp"] !== undefined) nm["deletionTimestamp"] = sm["deletionTimestamp"]
  else if (sent === undefined || sent === null || (sub === "status" && r === Pods)) delete nm["deletionTimestamp"]
  else if (typeof sent === "string" && rfc3339Text.test(sent)) nm["deletionTimestamp"] = rfc3339(new Date(sent).getTime())
  const grace = nm["deletionGracePeriodSeconds"]
  if (grace !== undefined && grace !== null) return
  if (sm["deletionGracePeriodSeconds"] === undefined) delete nm["deletionGracePeriodSeconds"]
  else nm["deletionGracePeriodSeconds"] = sm["deletionGracePeriodSeconds"]
}
