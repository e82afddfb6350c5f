/**
 * What the pod registry strategy adds to the generic object rules: defaults and a reset status on
 * create, validation (containers, pod and host IPs, the few spec fields an update may change), the
 * v1 conversion of podIP/podIPs, whole-second status times, the grace period of a graceful delete,
 * what a pods/status write keeps from storage, and pods/binding. Plain functions; the model decides
 * when each applies.
 */
import { getPath, sameValue } from "./Fields.ts"
import { clone, isRecord } from "./Patch.ts"
import { metaOf, rfc3339, str } from "./Objects.ts"
import { conflict, type ApiStatusError, type FieldError, type JsonObject } from "./Status.ts"

const ipv4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/
const isIPv6 = (s: string): boolean => {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || !s.includes(":")) return false
  const dbl = s.split("::")
  if (dbl.length > 2) return false
  const groups = s.replace("::", ":x:").split(":").filter((g) => g !== "")
  const v4Tail = groups.length > 0 && groups[groups.length - 1].includes(".")
  if (v4Tail && !ipv4.test(groups[groups.length - 1])) return false
  const hex = groups.filter((g) => g !== "x" && !g.includes("."))
  if (!hex.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return false
  const count = hex.length + (v4Tail ? 2 : 0)
  return dbl.length === 2 ? count < 8 : count === 8
}
export const isIP = (s: string): boolean => ipv4.test(s) || isIPv6(s)

/** The pod strategy on create: spec defaults under the given spec, and a status reset to Pending. Changes `obj`. */
export const podDefaults = (obj: JsonObject): void => {
  const spec = isRecord(obj["spec"]) ? obj["spec"] : {}
  obj["spec"] = {
    restartPolicy: "Always",
    terminationGracePeriodSeconds: 30,
    dnsPolicy: "ClusterFirst",
    schedulerName: "default-scheduler",
    enableServiceLinks: true,
    securityContext: {},
    ...spec
  }
  const containers = Array.isArray((obj["spec"] as JsonObject)["containers"]) ? (obj["spec"] as JsonObject)["containers"] as Array<unknown> : []
  const hasResources = containers.some((c) => isRecord(c) && isRecord(c["resources"]) && Object.keys(c["resources"]).length > 0)
  // the pod strategy resets status on create
  obj["status"] = { phase: "Pending", qosClass: hasResources ? "Burstable" : "BestEffort" }
}

/** Validation of any pod write: at least one container; every pod and host IP an IP; hostIPs starting with hostIP. */
export const podErrors = (obj: JsonObject): ReadonlyArray<FieldError> => {
  const errors: Array<FieldError> = []
  const spec = isRecord(obj["spec"]) ? obj["spec"] : {}
  if (!Array.isArray(spec["containers"]) || spec["containers"].length === 0) {
    errors.push({ field: "spec.containers", type: "FieldValueRequired", detail: "" })
  }
  const status = isRecord(obj["status"]) ? obj["status"] : {}
  const ipErrors = (field: "podIPs" | "hostIPs") => {
    const list = status[field]
    if (!Array.isArray(list)) return
    list.forEach((e, i) => {
      const ip = isRecord(e) ? e["ip"] : undefined
      if (typeof ip !== "string" || !isIP(ip)) {
        errors.push({
          field: `status.${field}[${i}]`,
          type: "FieldValueInvalid",
          value: JSON.stringify(ip ?? ""),
          detail: "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        })
      }
    })
  }
  ipErrors("podIPs")
  // hostIP is not synced into hostIPs on decoding (podIP is): a hostIPs list must start with hostIP
  const hostIPs = Array.isArray(status["hostIPs"]) ? status["hostIPs"] : []
  if (hostIPs.length > 0) {
    const first = isRecord(hostIPs[0]) ? hostIPs[0]["ip"] : undefined
    if (first !== (status["hostIP"] ?? "")) {
      errors.push({ field: "status.hostIPs[0].ip", type: "FieldValueInvalid", value: JSON.stringify(first ?? ""), detail: "must be equal to `hostIP`" })
    }
  }
  ipErrors("hostIPs")
  return errors
}

/** Pod spec with the fields an update may change blanked out (image, activeDeadlineSeconds, tolerations, grace). */
const mutableSpec = (spec: Record<string, unknown>): Record<string, unknown> => {
  const c = clone(spec)
  delete c["activeDeadlineSeconds"]
  delete c["tolerations"]
  delete c["terminationGracePeriodSeconds"]
  for (const k of ["containers", "initContainers"]) {
    const list = c[k]
    if (Array.isArray(list)) c[k] = list.map((x) => (isRecord(x) ? { ...x, image: "" } : x))
  }
  return c
}

/** Validation of a pod update: the spec may change only in the fields the strategy allows. */
export const podUpdateErrors = (obj: JsonObject, old: JsonObject): ReadonlyArray<FieldError> => {
  const a = isRecord(obj["spec"]) ? mutableSpec(obj["spec"]) : {}
  const b = isRecord(old["spec"]) ? mutableSpec(old["spec"]) : {}
  if (sameValue(a, b)) return []
  return [{
    field: "spec",
    type: "FieldValueForbidden",
    detail:
      "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
  }]
}

/** PodStatus's string fields that the API types mark `omitempty`. */
const omitemptyStatusStrings = ["phase", "message", "reason", "nominatedNodeName", "hostIP", "podIP", "qosClass", "resize"] as const

/**
 * A pod status string written as "" is the field's zero value: the server stores it as such and
 * its JSON leaves it out (`omitempty`), so the Pod it serves (the write's reply, a read, a watch
 * event) has no such field. Dropped here at write time, which serves the same (the daemon's
 * no-op comparison counts on it: ST-13 — an unchanged status is not written). Changes `pod`.
 */
export const dropEmptyStatusStrings = (pod: JsonObject): void => {
  const status = pod["status"]
  if (!isRecord(status)) return
  for (const field of omitemptyStatusStrings) if (status[field] === "") delete status[field]
}

/**
 * The v1 ⇄ internal conversion of a pod's IPs: podIP wins when it disagrees with podIPs[0] (and fills an
 * empty podIPs), and podIP is written back as podIPs[0]. hostIP/hostIPs get no such sync. Changes `pod`.
 */
export const syncPodIPs = (pod: JsonObject): void => {
  const status = pod["status"]
  if (!isRecord(status)) return
  const podIP = typeof status["podIP"] === "string" ? status["podIP"] : ""
  const podIPs = Array.isArray(status["podIPs"]) ? status["podIPs"] : []
  if (podIP !== "" && (podIPs.length === 0 || !isRecord(podIPs[0]) || podIPs[0]["ip"] !== podIP)) status["podIPs"] = [{ ip: podIP }]
  const synced = Array.isArray(status["podIPs"]) ? status["podIPs"] : []
  if (podIP === "" && synced.length > 0 && isRecord(synced[0]) && typeof synced[0]["ip"] === "string") status["podIP"] = synced[0]["ip"]
}

const fractionalTime = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.\d+(Z|[+-]\d{2}:\d{2})$/

/** metav1.Time in a pod's status (startTime, condition and container state times) keeps whole seconds. Changes `pod`. */
export const truncatePodTimes = (pod: JsonObject): void => {
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item)
      return
    }
    if (!isRecord(value)) return
    for (const [key, field] of Object.entries(value)) {
      if (typeof field === "string" && /(Time|At)$/.test(key)) {
        const match = fractionalTime.exec(field)
        if (match !== null) {
          const parsed = new Date(field)
          value[key] = Number.isNaN(parsed.getTime()) ? field : rfc3339(parsed.getTime())
        }
      } else visit(field)
    }
  }
  visit(pod["status"])
}

/**
 * The grace period a pod DELETE writes: as asked, else the pod's terminationGracePeriodSeconds (30 by
 * default); 0 for a pod never scheduled or already terminal, whatever was asked; negative means 1.
 */
export const podGracePeriod = (stored: JsonObject, requested: number | undefined): number => {
  const spec = isRecord(stored["spec"]) ? stored["spec"] : {}
  const status = isRecord(stored["status"]) ? stored["status"] : {}
  let period = requested ?? (typeof spec["terminationGracePeriodSeconds"] === "number" ? spec["terminationGracePeriodSeconds"] : 30)
  // the pod strategy: a pod never scheduled, or already terminal, goes at once whatever was asked
  if (str(spec["nodeName"]) === undefined || spec["nodeName"] === "") period = 0
  if (status["phase"] === "Succeeded" || status["phase"] === "Failed") period = 0
  return period < 0 ? 1 : period
}

/**
 * What a pods/status write keeps from storage besides the spec: the ownerReferences (old kubelets
 * corrupted them; labels, annotations, finalizers come from the request), the QoS class, fixed at
 * creation, and a condition's observedGeneration that the write leaves out, taken from the stored
 * condition of its type (a writer that does not know the field does not erase it; the real
 * kube-apiserver does the same, test/k8s/Differential.test.ts). Changes `next`, the object about
 * to be stored.
 */
export const keepOnStatusWrite = (next: JsonObject, stored: JsonObject): void => {
  const m = metaOf(next)
  const refs = metaOf(stored)["ownerReferences"]
  if (refs === undefined) delete m["ownerReferences"]
  else m["ownerReferences"] = clone(refs)
  const qos = getPath(stored, ["status", "qosClass"])
  if (qos !== undefined) next["status"] = { ...(isRecord(next["status"]) ? next["status"] : {}), qosClass: qos }
  const before = getPath(stored, ["status", "conditions"])
  const after = getPath(next, ["status", "conditions"])
  if (!Array.isArray(before) || !Array.isArray(after)) return
  for (const condition of after) {
    if (!isRecord(condition) || condition["observedGeneration"] !== undefined) continue
    const old = before.find((candidate) => isRecord(candidate) && candidate["type"] === condition["type"])
    if (isRecord(old) && typeof old["observedGeneration"] === "number") condition["observedGeneration"] = old["observedGeneration"]
  }
}

/**
 * pods/binding (what the scheduler does): the pod with spec.nodeName set, or the 409 Conflict for a
 * pod already assigned or being deleted.
 */
export const bindPod = (stored: JsonObject, name: string, nodeName: string): { readonly _tag: "Refused"; readonly error: ApiStatusError } | { readonly _tag: "Bound"; readonly pod: JsonObject } => {
  const spec = isRecord(stored["spec"]) ? stored["spec"] : {}
  const bound = str(spec["nodeName"]) ?? ""
  const binding = { group: "", plural: "pods/binding" }
  if (bound !== "") {
    return { _tag: "Refused", error: conflict(binding, name, `pod ${name} is already assigned to node "${bound}"`) }
  }
  if (metaOf(stored)["deletionTimestamp"] !== undefined) {
    return { _tag: "Refused", error: conflict(binding, name, `pod ${name} is being deleted, cannot be assigned to a host`) }
  }
  const next = clone(stored)
  next["spec"] = { ...spec, nodeName }
  return { _tag: "Bound", pod: next }
}
