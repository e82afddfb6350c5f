/**
 * Server-side apply, the parts that are about the applied configuration and field ownership: the
 * request checks (a field manager, an object with apiVersion and kind, the URL's name), the object a
 * first apply creates, and the merge of a later apply into the stored object — a field another
 * manager owns and the apply sets to a different value is a conflict (409, worded as
 * kube-apiserver v1.37.2 does) unless forced; fields the applier owned and no longer sends are
 * removed unless someone else owns them. Lists are atomic (the CRDs here declare no list types).
 */
import { Result } from "effect"
import { deletePath, fromKey, getPath, leafPaths, sameValue, setPath } from "./Fields.ts"
import { managedEntries, type ManagedEntry } from "./ManagedFields.ts"
import { clone, isRecord } from "./Patch.ts"
import { apiVersionOf, type ResourceInfo } from "./Resources.ts"
import { metaOf, str } from "./Objects.ts"
import { type ApiStatusError, badRequest, failure, invalid, type JsonObject } from "./Status.ts"
import { checkKind, decodeCheck } from "./Validation.ts"

/** The fields of an apply configuration that the applier claims (server-owned metadata dropped). */
export const appliedFields = (applied: JsonObject): JsonObject => {
  const c = clone(applied)
  const m = metaOf(c)
  for (const k of Object.keys(m)) if (!["labels", "annotations", "finalizers", "ownerReferences"].includes(k)) delete m[k]
  return c
}

const withoutVolatile = (o: JsonObject): JsonObject => {
  const c = clone(o)
  const m = metaOf(c)
  delete m["resourceVersion"]
  delete m["managedFields"]
  return c
}

/**
 * The checks of an apply request before the stored object is looked at: the applied configuration
 * (a copy, with apiVersion and kind set to the resource's) or the 400/422 the server answers.
 */
export const applyRequest = (
  r: ResourceInfo,
  name: string,
  manager: string | undefined,
  body: unknown
): Result.Result<JsonObject, ApiStatusError> => {
  if (manager === undefined || manager === "") {
    return Result.fail(invalid("meta.k8s.io", "PatchOptions", "", [
      { field: "fieldManager", type: "FieldValueRequired", detail: "is required for apply patch" }
    ]))
  }
  if (!isRecord(body)) return Result.fail(badRequest("error decoding YAML: the apply configuration is not an object"))
  const applied: JsonObject = clone(body)
  const apiVersion = str(applied["apiVersion"]) ?? ""
  const kind = str(applied["kind"]) ?? ""
  if (apiVersion === "" || kind === "") {
    return Result.fail(badRequest(`invalid object type: ${apiVersion === "" ? "/" : apiVersion}, Kind=${kind}`))
  }
  const kindCheck = checkKind(r, applied)
  if (kindCheck !== undefined) return Result.fail(kindCheck)
  const am = metaOf(applied)
  const bodyName = str(am["name"])
  if (bodyName !== undefined && bodyName !== "" && bodyName !== name) {
    return Result.fail(badRequest(`the name of the object (${bodyName}) does not match the name on the URL (${name})`))
  }
  const decode = decodeCheck(r, applied)
  if (decode !== undefined) return Result.fail(decode)
  return Result.succeed(applied)
}

/** What a first apply creates, before the server sets uid, creationTimestamp and generation. */
export const firstApplied = (r: ResourceInfo, applied: JsonObject, name: string, namespace: string): JsonObject => {
  const created = clone(applied)
  const cm = metaOf(created)
  cm["name"] = name
  delete cm["creationTimestamp"] // the applier's creationTimestamp: null is ignored
  delete cm["managedFields"]
  if (r.namespaced) cm["namespace"] = namespace
  return created
}

/**
 * A later apply merged into `stored`: the object to store and the managedFields entries to write
 * (the applier's last, with no time when the apply changed something: the writer stamps it), or
 * the 409 for the conflicts when not forced.
 */
export const mergeApply = (
  r: ResourceInfo,
  stored: JsonObject,
  applied: JsonObject,
  manager: string,
  options: { readonly force?: boolean | undefined; readonly subresource?: "status" | undefined }
): Result.Result<{ readonly next: JsonObject; readonly entries: Array<ManagedEntry> }, ApiStatusError> => {
  const appliedSet = leafPaths(appliedFields(applied))
  const entries = managedEntries(stored)
  // conflicts: a field another manager owns, set to a different value
  const conflicts: Array<{ manager: string; path: string; entry: number }> = []
  entries.forEach((e, i) => {
    if (e.manager === manager && e.operation === "Apply") return
    for (const p of e.fields) {
      if (appliedSet.has(p) && !sameValue(getPath(stored, fromKey(p)), getPath(applied, fromKey(p)))) {
        conflicts.push({ manager: e.manager, path: p, entry: i })
      }
    }
  })
  if (conflicts.length > 0 && options.force !== true) {
    // worded as kube-apiserver v1.37.2 does: one conflict inline, several listed per manager
    const field = (c: { path: string }) => `.${fromKey(c.path).join(".")}`
    const managers = [...new Set(conflicts.map((c) => c.manager))]
    const message = conflicts.length === 1
      ? `Apply failed with 1 conflict: conflict with "${conflicts[0].manager}": ${field(conflicts[0])}`
      : `Apply failed with ${conflicts.length} conflicts: ${
        managers.map((mg) => `conflicts with "${mg}":\n${conflicts.filter((c) => c.manager === mg).map((c) => `- ${field(c)}`).join("\n")}`).join("\n")
      }`
    return Result.fail(
      failure(409, "Conflict", message, {
        causes: conflicts.map((c) => ({ reason: "FieldManagerConflict", message: `conflict with "${c.manager}"`, field: field(c) }))
      })
    )
  }
  for (const c of conflicts) entries[c.entry].fields.delete(c.path)
  const next = clone(stored)
  const mine = entries.find((e) => e.manager === manager && e.operation === "Apply")
  const ownedByOthers = new Set(entries.filter((e) => e !== mine).flatMap((e) => [...e.fields]))
  for (const p of mine?.fields ?? []) {
    if (!appliedSet.has(p) && !ownedByOthers.has(p)) deletePath(next, fromKey(p))
  }
  for (const p of appliedSet) setPath(next, fromKey(p), getPath(applied, fromKey(p)))
  // others lose fields this apply now sets (forced) — done above; the applier owns exactly appliedSet
  const others = entries.filter((e) => e !== mine)
  for (const e of others) for (const p of appliedSet) if (e.fields.has(p) && conflicts.some((c) => c.path === p)) e.fields.delete(p)
  // the applier's timestamp moves only when the apply changed something; the others keep theirs
  const changed = !sameValue(withoutVolatile(next), withoutVolatile(stored))
  return Result.succeed({
    next,
    entries: [
      ...others,
      { manager, operation: "Apply", apiVersion: apiVersionOf(r), fields: appliedSet, time: changed ? undefined : mine?.time, subresource: options.subresource }
    ]
  })
}
