/**
 * Pure facts about Pods that the controller decides on (PC-06 — what changes
 * enqueue a Pod; SY-04 — what 'running' means; CU-03 — known Pods are updated, not created).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { same } from "./Canonical.ts"

export const uidOf = (pod: V1Pod): string => pod.metadata?.uid ?? ""

export const isTerminal = (pod: V1Pod): boolean => pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed"

export const isDeleting = (pod: V1Pod): boolean => pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null

/** SY-04: some container is neither terminated nor waiting (init containers ignored). */
export const isRunning = (pod: V1Pod): boolean =>
  (pod.status?.containerStatuses ?? []).some((status) => status.state?.terminated === undefined && status.state?.waiting === undefined)

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
