/**
 * The per-kind rules of the resources other than pods (those are `Pods.ts`): what a create adds for
 * namespaces, nodes (the not-ready taint, when the model plays the cluster's node admission) and
 * custom resources (schema defaults, status ignored when there is a status subresource); validation
 * of events (core/v1 and events.k8s.io/v1) and leases; a namespace's DELETE (it only turns
 * Terminating); and the node lifecycle controller's removal of the not-ready taint. Plain functions;
 * the model decides when each applies.
 */
import { getPath } from "./Fields.ts"
import { clone, isRecord } from "./Patch.ts"
import { CoreEvents, EventsV1, Namespaces, Nodes, Pods, type ResourceInfo } from "./Resources.ts"
import { metaOf, rfc3339, str } from "./Objects.ts"
import { podDefaults } from "./Pods.ts"
import type { FieldError, JsonObject } from "./Status.ts"

export const notReadyTaint = { key: "node.kubernetes.io/not-ready", effect: "NoSchedule" } as const

/** Defaults from the CRD schemas (the Sandbox CRD defaults operatingMode and shutdownPolicy). Changes `obj`. */
export const applyDefaults = (r: ResourceInfo, obj: JsonObject): void => {
  if (r.plural !== "sandboxes" || !r.customResource || !isRecord(obj["spec"])) return
  const spec = obj["spec"]
  if (spec["operatingMode"] === undefined) spec["operatingMode"] = "Running"
  if (spec["shutdownPolicy"] === undefined) spec["shutdownPolicy"] = "Retain"
}

/**
 * The strategies' PrepareForCreate, after the server set the metadata: `nodeNotReadyTaint` plays
 * TaintNodesByCondition on a new Node. Changes `obj`.
 */
export const prepareForCreate = (r: ResourceInfo, obj: JsonObject, nodeNotReadyTaint: boolean): void => {
  if (r === Nodes && nodeNotReadyTaint) {
    const spec = isRecord(obj["spec"]) ? obj["spec"] : {}
    const taints = Array.isArray(spec["taints"]) ? spec["taints"] : []
    if (!taints.some((t) => isRecord(t) && t["key"] === notReadyTaint.key && t["effect"] === notReadyTaint.effect)) {
      obj["spec"] = { ...spec, taints: [...taints, { ...notReadyTaint }] }
    }
  }
  if (r === Pods) {
    podDefaults(obj)
  } else if (r === Namespaces) {
    obj["spec"] = { finalizers: ["kubernetes"] }
    obj["status"] = { phase: "Active" }
    const m = metaOf(obj)
    const labels = isRecord(m["labels"]) ? m["labels"] : {}
    m["labels"] = { ...labels, "kubernetes.io/metadata.name": str(m["name"]) ?? "" }
  } else if (r.customResource && r.subresources.includes("status")) {
    delete obj["status"] // a CR with a status subresource ignores status on create
  }
  applyDefaults(r, obj)
}

/**
 * Validation of events: a core/v1 Event's involvedObject.namespace must be its own namespace (or
 * empty, for "default"); events.k8s.io/v1 writes get the strict validation (core/v1 keeps the lenient
 * legacy rules).
 */
export const eventErrors = (r: ResourceInfo, obj: JsonObject): ReadonlyArray<FieldError> => {
  const errors: Array<FieldError> = []
  if (r === CoreEvents) {
    const involved = getPath(obj, ["involvedObject", "namespace"])
    const eventNs = str(metaOf(obj)["namespace"]) ?? ""
    const given = typeof involved === "string" ? involved : ""
    if (given === "" ? eventNs !== "" && eventNs !== "default" : given !== eventNs) {
      errors.push({ field: "involvedObject.namespace", type: "FieldValueInvalid", value: JSON.stringify(given), detail: "does not match event.namespace" })
    }
  }
  if (r === EventsV1) {
    for (const f of ["eventTime", "reportingController", "reportingInstance", "action", "reason"]) {
      const v = obj[f]
      if (v === undefined || v === null || v === "") errors.push({ field: f, type: "FieldValueRequired", detail: "" })
    }
    const type = obj["type"]
    if (type !== "Normal" && type !== "Warning") {
      errors.push({
        field: "type",
        type: "FieldValueNotSupported",
        value: JSON.stringify(typeof type === "string" ? type : ""),
        detail: "supported values: \"Normal\", \"Warning\""
      })
    }
  }
  return errors
}

/** Validation of leases: a duration, when given, is positive. */
export const leaseErrors = (r: ResourceInfo, obj: JsonObject): ReadonlyArray<FieldError> => {
  if (r.plural !== "leases") return []
  const d = getPath(obj, ["spec", "leaseDurationSeconds"])
  if (typeof d === "number" && d <= 0) {
    return [{ field: "spec.leaseDurationSeconds", type: "FieldValueInvalid", value: String(d), detail: "must be greater than 0" }]
  }
  return []
}

/**
 * A namespace DELETE: the namespace is marked and turns Terminating (the namespace controller,
 * `ClusterModel.finalizeNamespace`, removes it later). Undefined when it is already being deleted.
 */
export const terminatingNamespace = (stored: JsonObject, now: number): JsonObject | undefined => {
  if (metaOf(stored)["deletionTimestamp"] !== undefined) return undefined
  const next = clone(stored)
  metaOf(next)["deletionTimestamp"] = rfc3339(now)
  next["status"] = { phase: "Terminating" }
  return next
}

/**
 * The node lifecycle controller's part: the Node without the not-ready taint once its Ready
 * condition is True; undefined when there is nothing to change.
 */
export const withoutNotReadyTaint = (stored: JsonObject): JsonObject | undefined => {
  const conditions = getPath(stored, ["status", "conditions"])
  const ready = Array.isArray(conditions) && conditions.some((c) => isRecord(c) && c["type"] === "Ready" && c["status"] === "True")
  const spec = isRecord(stored["spec"]) ? stored["spec"] : {}
  const taints = Array.isArray(spec["taints"]) ? spec["taints"] : []
  const kept = taints.filter((t) => !(isRecord(t) && t["key"] === notReadyTaint.key))
  if (!ready || kept.length === taints.length) return undefined
  const next = clone(stored)
  next["spec"] = { ...spec, taints: kept }
  if (kept.length === 0) delete (next["spec"] as JsonObject)["taints"]
  return next
}
