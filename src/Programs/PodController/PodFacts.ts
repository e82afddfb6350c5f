/**
 * Pure facts about Pods that the controller decides on (virtual-kubelet PC-06, SY-04, CU-03).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { type PodKey, podKeyOf } from "../../Schemas/Ids.ts"

export const keyOfPod = (pod: V1Pod): PodKey => podKeyOf(pod.metadata?.namespace ?? "", pod.metadata?.name ?? "")

export const uidOf = (pod: V1Pod): string => pod.metadata?.uid ?? ""

export const isTerminal = (pod: V1Pod): boolean => pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed"

export const isDeleting = (pod: V1Pod): boolean => pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null

/** SY-04: some container is neither terminated nor waiting (init containers ignored). */
export const isRunning = (pod: V1Pod): boolean =>
  (pod.status?.containerStatuses ?? []).some((status) => status.state?.terminated === undefined && status.state?.waiting === undefined)

/**
 * A canonical JSON form for comparisons: keys sorted, undefined dropped, and every timestamp
 * (a Date from client-node, or an RFC 3339 string) reduced to whole seconds, the precision the
 * apiserver stores (metav1.Time).
 */
export const canonical = (value: unknown): string => JSON.stringify(normalize(value))

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

const normalize = (value: unknown): unknown => {
  if (value instanceof Date) return secondsOf(value)
  if (typeof value === "string" && RFC3339.test(value)) {
    const parsed = new Date(value)
    return Number.isNaN(parsed.getTime()) ? value : secondsOf(parsed)
  }
  if (Array.isArray(value)) return value.map(normalize)
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) {
      const field = (value as Record<string, unknown>)[key]
      if (field !== undefined) out[key] = normalize(field)
    }
    return out
  }
  return value
}

const secondsOf = (date: Date) => `t${Math.floor(date.getTime() / 1000)}`

const same = (a: unknown, b: unknown) => canonical(a ?? null) === canonical(b ?? null)

/** PC-06: a change the provider must see (status, resourceVersion and managedFields do not count). */
export const shouldReconcile = (previous: V1Pod, next: V1Pod): boolean =>
  !same(previous.spec?.containers, next.spec?.containers) ||
  !same(previous.spec?.initContainers, next.spec?.initContainers) ||
  !same(previous.spec?.ephemeralContainers, next.spec?.ephemeralContainers) ||
  !same(previous.spec?.activeDeadlineSeconds, next.spec?.activeDeadlineSeconds) ||
  !same(previous.spec?.tolerations, next.spec?.tolerations) ||
  !same(previous.metadata?.labels, next.metadata?.labels) ||
  !same(previous.metadata?.annotations, next.metadata?.annotations) ||
  !same(previous.metadata?.deletionGracePeriodSeconds, next.metadata?.deletionGracePeriodSeconds) ||
  !same(previous.metadata?.deletionTimestamp, next.metadata?.deletionTimestamp) ||
  uidOf(previous) !== uidOf(next)

/** CU-03: the fields whose difference makes an updatePod. */
export const podsEqual = (a: V1Pod, b: V1Pod): boolean =>
  same(a.spec?.containers, b.spec?.containers) &&
  same(a.spec?.initContainers, b.spec?.initContainers) &&
  same(a.spec?.ephemeralContainers, b.spec?.ephemeralContainers) &&
  same(a.spec?.activeDeadlineSeconds, b.spec?.activeDeadlineSeconds) &&
  same(a.spec?.tolerations, b.spec?.tolerations) &&
  same(a.metadata?.labels, b.metadata?.labels) &&
  same(a.metadata?.annotations, b.metadata?.annotations)

/** What a status write would change: status, labels and annotations (the pods/status strategy). */
export const statusWriteIsNoop = (apiPod: V1Pod, pushed: V1Pod): boolean =>
  same(apiPod.status, pushed.status) &&
  same(apiPod.metadata?.annotations, pushed.metadata?.annotations) &&
  same(apiPod.metadata?.labels, pushed.metadata?.labels)
