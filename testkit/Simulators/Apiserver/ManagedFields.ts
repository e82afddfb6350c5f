/**
 * metadata.managedFields bookkeeping: which manager owns which fields (as FieldsV1 sets of leaf
 * paths; lists are leaves here), with the operation (Update or Apply), the subresource and the time
 * of the manager's last change. An Update makes the writer own the fields it changed and takes
 * removed or changed fields from everyone else; server-side apply (`Apply.ts`) computes its own
 * entries and writes them with `managedEntry`/`setManagedFields`.
 */
import { fromFieldsV1, fromKey, getPath, leafPaths, sameValue, toFieldsV1 } from "./Fields.ts"
import { isRecord } from "./Patch.ts"
import { metaOf, rfc3339, str } from "./Objects.ts"
import type { JsonObject } from "./Status.ts"

export interface ManagedEntry {
  manager: string
  operation: string
  apiVersion: string
  fields: Set<string>
  time: string | undefined
  subresource: "status" | undefined
}

/** The object's managedFields as editable entries. */
export const managedEntries = (obj: JsonObject): Array<ManagedEntry> => {
  const mf = metaOf(obj)["managedFields"]
  if (!Array.isArray(mf)) return []
  return mf.filter(isRecord).map((e) => ({
    manager: str(e["manager"]) ?? "",
    operation: str(e["operation"]) ?? "Update",
    apiVersion: str(e["apiVersion"]) ?? "",
    fields: fromFieldsV1(e["fieldsV1"]),
    time: str(e["time"]),
    subresource: e["subresource"] === "status" ? "status" : undefined
  }))
}

/** One managedFields entry as the server writes it; `time` defaults to now (the clock is read only then). */
export const managedEntry = (
  manager: string,
  operation: string,
  apiVersion: string,
  fields: Set<string>,
  subresource: string | undefined,
  now: () => number,
  time?: string
): JsonObject => ({
  manager,
  operation,
  apiVersion,
  time: time ?? rfc3339(now()),
  fieldsType: "FieldsV1",
  fieldsV1: toFieldsV1(fields),
  ...(subresource !== undefined ? { subresource } : {})
})

/** Write the entries into `obj`; none at all removes managedFields. */
export const setManagedFields = (obj: JsonObject, entries: Array<JsonObject>): void => {
  const m = metaOf(obj)
  if (entries.length === 0) delete m["managedFields"]
  else m["managedFields"] = entries
}

/**
 * Update-operation bookkeeping on `next` (the object about to be stored over `stored`): the writer
 * owns the fields it changed; removed fields lose their owners; a manager left with no field is
 * dropped. The writer's time moves only when it changed something.
 */
export const recordManager = (
  next: JsonObject,
  stored: JsonObject | undefined,
  fieldManager: string | undefined,
  operation: "Update",
  sub: "status" | undefined,
  now: () => number
): void => {
  const manager = fieldManager ?? "unknown"
  const after = leafPaths(next)
  const before = stored === undefined ? new Set<string>() : leafPaths(stored)
  const changed = new Set([...after].filter((p) => !before.has(p) || !sameValue(getPath(next, fromKey(p)), getPath(stored, fromKey(p)))))
  const entries = stored === undefined ? [] : managedEntries(stored)
  for (const e of entries) for (const p of [...e.fields]) if (!after.has(p) || changed.has(p)) e.fields.delete(p)
  let mine = entries.find((e) => e.manager === manager && e.operation === operation && e.subresource === sub)
  if (mine === undefined && changed.size > 0) {
    mine = { manager, operation, apiVersion: str(next["apiVersion"]) ?? "", fields: new Set(), time: undefined, subresource: sub }
    entries.push(mine)
  }
  const time = rfc3339(now())
  if (mine !== undefined) {
    for (const p of changed) mine.fields.add(p)
    if (changed.size > 0) mine.time = time
  }
  setManagedFields(
    next,
    entries.filter((e) => e.fields.size > 0).map((e) => managedEntry(e.manager, e.operation, e.apiVersion, e.fields, e.subresource, now, e.time ?? time))
  )
}
