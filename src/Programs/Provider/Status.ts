/**
 * The synthetic statuses the provider reports (CRT-20 — push Running; CRT-21 — the Running
 * status; LEASE-3 — lease-expired status; UPD-4 — GetPodStatus). Pure builders: they take
 * the Pod, the claim and the resolved IP, and return new objects.
 */
import type { V1ContainerStatus, V1Pod, V1PodStatus } from "@kubernetes/client-node"
import { DateTime, Option } from "effect"
import type { ClaimRecord } from "../../Schemas/Claims.ts"
import type { LostRow } from "../../Services/ClaimTable.ts"
import { copyPlain } from "../../Schemas/Pod/Kept.ts"
import { PodAnnotation } from "../../Schemas/PodAnnotations.ts"
import type { PodIp } from "./PodIp.ts"

export const LeaseExpiredReason = "SandboxLeaseExpired"

const toDate = (time: Option.Option<DateTime.Utc>): Date | undefined =>
  Option.isSome(time) ? DateTime.toDateUtc(time.value) : undefined

const imageId = (claim: ClaimRecord): string => `sandboxd://${claim.id}`

/** RFC 3339 in UTC at second precision, as metav1.Time prints it. */
export const formatSeconds = (time: DateTime.Utc): string =>
  DateTime.formatIso(time).replace(/\.[0-9]+Z$/, "Z")

/**
 * CRT-21: Running, Ready, one ready container per spec container. Its conditions turned True when
 * the claim was made, so the claim time is their `lastTransitionTime`: the same on every push
 * (no write of an unchanged status), and what a workload controller's `minReadySeconds` counts
 * from (a Ready condition without one never counts as available). A Pod that adopted a VM claimed
 * for an earlier Pod (CRT-4 — atomic adoption) did not exist at the claim time: its conditions date
 * from its own creation, the later of the two, or a `minReadySeconds` would count from before the
 * Pod was made.
 */
export const runningStatus = (pod: V1Pod, claim: ClaimRecord, ip: PodIp): V1PodStatus => {
  const startedAt = toDate(claim.claimedAt)
  const created = pod.metadata?.creationTimestamp
  const becameTrue = startedAt !== undefined && created instanceof Date && created.getTime() > startedAt.getTime()
    ? created
    : startedAt
  const since = becameTrue === undefined ? {} : { lastTransitionTime: becameTrue }
  const address = ip._tag === "None" ? "" : ip.ip
  const containerStatuses: Array<V1ContainerStatus> = (pod.spec?.containers ?? []).map((container) => ({
    name: container.name,
    ready: true,
    state: { running: startedAt === undefined ? {} : { startedAt } },
    image: container.image ?? "",
    imageID: imageId(claim),
    restartCount: 0
  }))
  const status: V1PodStatus = {
    phase: "Running",
    conditions: [
      { type: "Initialized", status: "True", ...since },
      { type: "Ready", status: "True", ...since },
      { type: "PodScheduled", status: "True", ...since }
    ],
    containerStatuses
  }
  // ST-13 — an unchanged status is not written: no address, no hostIP. The apiserver stores an
  // empty hostIP as no hostIP; pushed as "", the status never compared equal to the Pod it serves
  // and was written again on every push.
  if (address !== "") {
    status.hostIP = address
    status.podIP = address
    status.podIPs = [{ ip: address }]
  }
  if (startedAt !== undefined) status.startTime = startedAt
  return status
}

/** CRT-20: a copy of the Pod with the claim-id annotation and the Running status. */
export const runningPod = (pod: V1Pod, claim: ClaimRecord, ip: PodIp): V1Pod => {
  const copy = copyPlain(pod)
  copy.metadata = {
    ...copy.metadata,
    annotations: { ...copy.metadata?.annotations, [PodAnnotation.claimId]: claim.id }
  }
  copy.status = runningStatus(pod, claim, ip)
  return copy
}

/** UPD-4 step 2: the tracked Pod's own status with the phase forced to Pending. */
export const pendingStatus = (pod: V1Pod): V1PodStatus => ({ ...copyPlain(pod.status ?? {}), phase: "Pending" })

/** LEASE-3: the lease-expired status's message, naming the deadline. */
export const leaseExpiredMessage = (claim: ClaimRecord): string => {
  const endedAt = Option.isSome(claim.deadline) ? formatSeconds(claim.deadline.value) : "an unknown time"
  return `sandbox lease ended at ${endedAt}; sandboxd reaps the microVM at its deadline`
}

/** LEASE-3: Failed/SandboxLeaseExpired, every container terminated at the deadline; no IPs, no conditions. */
export const leaseExpiredStatus = (pod: V1Pod, claim: ClaimRecord): V1PodStatus => {
  const finishedAt = toDate(claim.deadline)
  const containerStatuses: Array<V1ContainerStatus> = (pod.spec?.containers ?? []).map((container) => ({
    name: container.name,
    ready: false,
    state: {
      terminated: {
        exitCode: 1,
        reason: LeaseExpiredReason,
        ...(finishedAt === undefined ? {} : { finishedAt })
      }
    },
    image: container.image ?? "",
    imageID: imageId(claim),
    restartCount: 0
  }))
  const status: V1PodStatus = {
    phase: "Failed",
    reason: LeaseExpiredReason,
    message: leaseExpiredMessage(claim),
    containerStatuses
  }
  const startTime = toDate(claim.claimedAt)
  if (startTime !== undefined) status.startTime = startTime
  return status
}

/**
 * LEASE-4 — the lease watch, step 5: a copy of the tracked Pod carrying the lease-expired status
 * (no claim-id added).
 */
export const leaseExpiredPod = (pod: V1Pod, claim: ClaimRecord): V1Pod => {
  const copy = copyPlain(pod)
  copy.status = leaseExpiredStatus(pod, claim)
  return copy
}

/**
 * LEASE-10 — a lease that ran out while the daemon was down ends the Pod as lease-expired: the
 * status of a Pod whose row is Lost (VER-7 — a lost sandbox's row outlives restarts until its Pod
 * is settled: its VM confirmed gone). A row whose lease had run out when its VM was found gone
 * (`leaseEnded`, decided then and kept: `lostStateAt`) most likely lost its VM to that lease (it
 * ended while the daemon was down, so no lease watch saw it end): the Pod ends lease-expired
 * (LEASE-3), as a running daemon would have ended it. Otherwise the VM went early: SandboxLost.
 * Either way that Pod generation is never given another VM.
 */
export const lostRowStatus = (pod: V1Pod, lost: LostRow): V1PodStatus =>
  lost.leaseEnded ? leaseExpiredStatus(pod, lost.record) : sandboxLostStatus(pod, lost.record.id, lost.record.claimedAt)

/** A copy of the Pod carrying `lostRowStatus`. */
export const lostRowPod = (pod: V1Pod, lost: LostRow): V1Pod => {
  const copy = copyPlain(pod)
  copy.status = lostRowStatus(pod, lost)
  return copy
}

export const SandboxLostReason = "SandboxLost"

/** SandboxLost's message: the Pod's status and the create's refusal say the same. */
export const sandboxLostMessage = (id: string): string =>
  `sandbox ${id} is gone: sandboxd confirmed it no longer holds it; this pod is not given another`

/**
 * The Warning Event of a Pod ended because its VM is gone: LeaseExpired when the lease had run out
 * (LEASE-10), else SandboxLost. One reason and one text whichever path ends the Pod (the lease
 * watch, a verification pass, a create refused for its Lost row), so the Event matches the Pod's
 * reason and its aggregate keeps one message.
 */
export const lostVmEvent = (id: string, leaseEnded: boolean): { readonly reason: string; readonly message: string } =>
  leaseEnded
    ? { reason: "LeaseExpired", message: `sandbox ${id} lease ended; the microVM is reaped at the deadline` }
    : { reason: SandboxLostReason, message: `sandbox ${id} is gone (sandboxd confirmed it); the pod is not given another` }

/**
 * Failed/SandboxLost: sandboxd confirmed the Pod's sandbox `id` gone before its lease ended (every
 * container terminated, no IPs, no conditions). The Pod is never given another sandbox.
 */
export const sandboxLostStatus = (pod: V1Pod, id: string, claimedAt: Option.Option<DateTime.Utc>): V1PodStatus => {
  const containerStatuses: Array<V1ContainerStatus> = (pod.spec?.containers ?? []).map((container) => ({
    name: container.name,
    ready: false,
    state: { terminated: { exitCode: 1, reason: SandboxLostReason } },
    image: container.image ?? "",
    imageID: `sandboxd://${id}`,
    restartCount: 0
  }))
  const status: V1PodStatus = {
    phase: "Failed",
    reason: SandboxLostReason,
    message: sandboxLostMessage(id),
    containerStatuses
  }
  const startTime = toDate(claimedAt)
  if (startTime !== undefined) status.startTime = startTime
  return status
}
