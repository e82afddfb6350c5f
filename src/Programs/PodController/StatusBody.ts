/**
 * The body of a status write for a provider push: the pushed status as the server will store it,
 * built on the apiserver's current Pod, and whether writing it would change anything (ST-13 — an
 * unchanged status is not written).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Option, Schema } from "effect"
import { dropNulls, slimStatus } from "../../Schemas/Pod/Decode.ts"
import { copyPlain } from "../../Schemas/Pod/Kept.ts"
import { type Pod, type PodStatus, PodStatus as PodStatusSchema } from "../../Schemas/Pod/Schema.ts"
import { same } from "./Canonical.ts"
import { applyReadinessGates, type Condition, keepForeignConditions, withTransitionTimes } from "./Conditions.ts"
import { uidOf } from "./PodFacts.ts"

const byType = (a: Condition, b: Condition) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0)

/**
 * Whether two statuses are alike, the order of their conditions aside (ST-12 — other writers' Pod
 * conditions survive status writes): conditions are keyed by type (a strategic merge patch merges
 * them by it), and a writer that puts its condition before ours would otherwise make each check
 * find a change to write (a reorder). The sort runs only when the plain comparison fails.
 */
const sameStatus = (a: PodStatus | undefined, b: PodStatus | undefined): boolean => {
  if (same(a, b)) return true
  const x = a?.conditions
  const y = b?.conditions
  if (a === undefined || b === undefined || x === undefined || y === undefined || x.length < 2 || x.length !== y.length) {
    return false
  }
  return same({ ...a, conditions: [...x].sort(byType) }, { ...b, conditions: [...y].sort(byType) })
}

/** What a status write would change: status, labels and annotations (the pods/status strategy). */
export const statusWriteIsNoop = (apiPod: Pod, pushed: Pod): boolean =>
  sameStatus(apiPod.status, pushed.status) &&
  same(apiPod.metadata?.annotations, pushed.metadata?.annotations) &&
  same(apiPod.metadata?.labels, pushed.metadata?.labels)

type StringMap = { readonly [key: string]: string }

/**
 * Three-way merge of one metadata map: the keys the provider changed relative to the Pod it was
 * handed (`base`) are applied onto the apiserver's current map (`current`); every other key keeps
 * the apiserver's value. Without a known base, only keys the apiserver lacks are added.
 */
export const mergeProviderMap = (
  base: StringMap | undefined,
  pushed: StringMap | undefined,
  current: StringMap | undefined,
  hasBase: boolean
): StringMap | undefined => {
  const out: Record<string, string> = { ...current }
  const keys = new Set([...Object.keys(hasBase ? base ?? {} : {}), ...Object.keys(pushed ?? {})])
  for (const key of keys) {
    const after = pushed?.[key]
    if (!hasBase) {
      if (after !== undefined && !(key in out)) out[key] = after
      continue
    }
    if (base?.[key] === after) continue
    if (after === undefined) delete out[key]
    else out[key] = after
  }
  return Object.keys(out).length === 0 && current === undefined ? undefined : out
}

/**
 * The status strings the apiserver's types mark `omitempty` (of those the slim status holds): a
 * string set to "" is stored as "" but never served, so the Pod read back lacks it.
 */
const omittedWhenEmpty = ["phase", "reason", "message", "hostIP", "podIP", "qosClass"] as const

/**
 * A status as the apiserver will store it when written to pods/status of `current` (ST-13 — an
 * unchanged status is not written): an empty `omitempty` string is left out, as the server serves
 * it; the server keeps the Pod's QoS class (fixed at creation) when the write leaves it out, and
 * fills `podIPs` from `podIP` (and back). Comparing this, not the raw push, with the stored status
 * is what makes an unchanged status compare equal (times are compared at whole seconds by
 * `canonical`).
 */
export const asServerStores = (status: PodStatus, current: Pod): PodStatus => {
  const out: { -readonly [K in keyof PodStatus]: PodStatus[K] } = { ...status }
  for (const field of omittedWhenEmpty) if (out[field] === "") delete out[field]
  const qos = current.status?.qosClass
  if (out.qosClass === undefined && qos !== undefined) out.qosClass = qos
  if (out.podIP !== undefined && out.podIP !== "" && (out.podIPs === undefined || out.podIPs.length === 0)) {
    out.podIPs = [{ ip: out.podIP }]
  }
  if ((out.podIP === undefined || out.podIP === "") && out.podIPs !== undefined && out.podIPs.length > 0) {
    out.podIP = out.podIPs[0]!.ip
  }
  return out
}

/**
 * A provider's status (client-node typed, `Date` or RFC 3339 times) → the slim status, as its
 * JSON would be read back: unknown fields dropped, `null`s left out. None when it is not a status.
 *
 * The provider's own statuses (`Provider/Status.ts`) hold `Date`s and no `null` or `undefined`
 * member: they are read as they are, a `Date` being what the wire form decodes back to. Anything
 * else (a time as text, a `null`) goes through its JSON, which is what the apiserver would read.
 */
export const wireStatus = (status: unknown): Option.Option<PodStatus> => {
  const direct = slimStatus(status)
  return Option.isSome(direct) ? direct : Option.flatMap(
    Option.liftThrowable(() => dropNulls(JSON.parse(JSON.stringify(status ?? {}))))(),
    decodeStatus
  )
}

const decodeStatus = Schema.decodeUnknownOption(PodStatusSchema)

/**
 * The body of a status write for a provider push (ST-06 — status write shape; PIT-06 — status
 * writes carry labels and annotations), built on the apiserver's current Pod (its metadata, so
 * finalizers and the like are written back unchanged): the pushed status as the server will store
 * it, with the current Pod's foreign conditions kept (ST-12) and Ready as the Pod's readiness gates
 * make it (ST-14 — a Pod with readiness gates is Ready only when every gate is True), and labels
 * and annotations merged so a label or annotation edit made after the provider was handed the Pod
 * is not reverted, while the provider's own additions (the claim-id annotation) still go through. `base` is the Pod the push was made from. None when the push
 * carries no readable status.
 */
export const statusWriteBody = (push: V1Pod, current: Pod, base: Pod | undefined, now: number): Option.Option<Pod> =>
  Option.map(pushedOf(push), (pushed) => pushedBody(pushed, current, base, now))

/**
 * What a status write and the status repair need of a provider push, and all the status writer
 * keeps of one per key: the Pod's UID and resourceVersion (which Pod it was made from), its
 * labels and annotations (the three-way merge) and its status as read back from the wire. Not
 * the pushed Pod itself: its spec, containers and the rest of its metadata are the provider's.
 */
export interface Pushed {
  readonly uid: string
  readonly resourceVersion: string | undefined
  readonly labels: StringMap | undefined
  readonly annotations: StringMap | undefined
  readonly status: PodStatus
}

/**
 * The slim facts of a push; None when it carries no readable status. The maps are the push's own
 * objects (the provider builds a new Pod per push and never changes one), so keeping them keeps
 * nothing else of it. The status is copied (`copyPlain`): the schema decoder builds its arrays by
 * appending, which leaves each with room for 17 items, about 110 bytes per array kept.
 */
export const pushedOf = (push: V1Pod): Option.Option<Pushed> =>
  Option.map(wireStatus(push.status), (status) => ({
    uid: uidOf(push),
    resourceVersion: push.metadata?.resourceVersion,
    labels: push.metadata?.labels,
    annotations: push.metadata?.annotations,
    status: copyPlain(status)
  }))

/**
 * `statusWriteBody` of a push already read (`pushedOf`); `now` is the write's time in epoch millis
 * (CRT-21 — the Running status).
 */
export const pushedBody = (push: Pushed, current: Pod, base: Pod | undefined, now: number): Pod => {
  const status = push.status
  const hasBase = base !== undefined && uidOf(base) === push.uid
  const labels = mergeProviderMap(base?.metadata?.labels, push.labels, current.metadata?.labels, hasBase)
  const annotations = mergeProviderMap(
    base?.metadata?.annotations,
    push.annotations,
    current.metadata?.annotations,
    hasBase
  )
  const { labels: _labels, annotations: _annotations, ...rest } = current.metadata ?? {}
  return {
    ...current,
    metadata: {
      ...rest,
      ...(labels === undefined ? {} : { labels: { ...labels } }),
      ...(annotations === undefined ? {} : { annotations: { ...annotations } })
    },
    status: withTransitionTimes(
      applyReadinessGates(keepForeignConditions(asServerStores(status, current), current), current),
      current,
      status,
      now
    )
  }
}
