/**
 * Pure facts about Pods that the controller decides on (PC-06 — what changes
 * enqueue a Pod; SY-04 — what 'running' means; CU-03 — known Pods are updated, not created).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Option, Schema } from "effect"
import { dropNulls, slimStatus } from "../../Schemas/Pod/Decode.ts"
import { copyPlain } from "../../Schemas/Pod/Kept.ts"
import { type Pod, type PodStatus, PodStatus as PodStatusSchema } from "../../Schemas/Pod/Schema.ts"


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

/** Not a leaf of `canonical`'s JSON: an array or a (non-Date) object. */
const container: unique symbol = Symbol("container")
/** Left out of an object by `canonical` (undefined, and what JSON drops: functions, symbols). */
const absent: unique symbol = Symbol("absent")

/** What `canonical` writes for a value that is no array or object, with `absent` for what it leaves out. */
const leafOf = (value: unknown): unknown => {
  if (value instanceof Date) return secondsOf(value)
  switch (typeof value) {
    case "string": {
      if (!RFC3339.test(value)) return value
      const parsed = new Date(value)
      return Number.isNaN(parsed.getTime()) ? value : secondsOf(parsed)
    }
    case "number":
      return Number.isFinite(value) ? value : null
    case "undefined":
    case "function":
    case "symbol":
      return absent
    case "object":
      return value === null ? null : container
    default:
      return value
  }
}

/** The members `canonical` writes of an object (`__proto__` is lost by its copy). */
const membersOf = (value: object): Set<string> => {
  const keys = new Set<string>()
  for (const key of Object.keys(value)) {
    if (key !== "__proto__" && leafOf((value as Record<string, unknown>)[key]) !== absent) keys.add(key)
  }
  return keys
}

const sameIn = (a: unknown, b: unknown, inArray: boolean): boolean => {
  let x = leafOf(a)
  let y = leafOf(b)
  if (x !== container || y !== container) {
    // in an array JSON writes what it leaves out elsewhere as null
    if (inArray) {
      if (x === absent) x = null
      if (y === absent) y = null
    }
    return x === y
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!sameIn(a[i], b[i], true)) return false
    return true
  }
  const ra = a as Record<string, unknown>
  const rb = b as Record<string, unknown>
  const keys = membersOf(ra)
  const other = membersOf(rb)
  if (keys.size !== other.size) return false
  for (const key of keys) {
    if (!other.has(key) || !sameIn(ra[key], rb[key], false)) return false
  }
  return true
}

/**
 * `canonical(a) === canonical(b)` without building either string: the same walk, compared as it
 * goes (this runs for every watch event, on each field `shouldReconcile` compares).
 */
export const sameCanonical = (a: unknown, b: unknown): boolean => sameIn(a, b, false)

const same = (a: unknown, b: unknown) => sameCanonical(a ?? null, b ?? null)

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

type Condition = NonNullable<PodStatus["conditions"]>[number]

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
 * The condition types a node agent owns (ST-12): a push that leaves one out removes it, so a
 * Failed status, which carries no conditions, does not keep the Running status's Ready True.
 */
const agentConditionTypes: ReadonlySet<string> = new Set([
  "PodScheduled",
  "Initialized",
  "ContainersReady",
  "Ready",
  "PodReadyToStartContainers"
])

/**
 * INF-1 — a Pod the daemon cannot decode is left out: what a status patch of `status` sets of the
 * conditions: the node agent's own types it has, and the types it leaves out, to delete. Any other
 * condition in `status` is another writer's as the last good Pod had it (ST-12): not sent, so the
 * server keeps the one it stores, which may be newer than the daemon could read.
 */
export const agentConditionsOf = (status: PodStatus): { readonly status: PodStatus; readonly removed: ReadonlyArray<string> } => {
  const own = (status.conditions ?? []).filter((condition) => agentConditionTypes.has(condition.type))
  const removed = [...agentConditionTypes].filter((type) => !own.some((condition) => condition.type === type))
  const { conditions: _conditions, ...rest } = status
  return { status: own.length === 0 ? rest : { ...rest, conditions: own }, removed }
}

/** A condition of `current` that is not `pushed`'s to set: neither the push nor the node agent has its type. */
const isForeign = (condition: Condition, pushed: PodStatus): boolean =>
  !agentConditionTypes.has(condition.type) &&
  (pushed.conditions === undefined || !pushed.conditions.some((own) => own.type === condition.type))

/**
 * ST-12: `pushed` with the current Pod's foreign conditions kept (another controller's: a
 * readiness gate, the eviction API's DisruptionTarget), after the push's own, in the order the
 * current Pod has them. A status write replaces the whole status, so leaving them out would
 * remove them, and their writer adding them back would make each watch event a write of ours.
 * `pushed` itself when there are none.
 */
export const keepForeignConditions = (pushed: PodStatus, current: Pod): PodStatus => {
  const conditions = current.status?.conditions
  if (conditions === undefined || !conditions.some((condition) => isForeign(condition, pushed))) return pushed
  const foreign = conditions.filter((condition) => isForeign(condition, pushed))
  return { ...pushed, conditions: [...(pushed.conditions ?? []), ...foreign] }
}

/**
 * The Ready condition's reason while a readiness gate holds a Pod whose containers are ready (ST-14
 * — a Pod with readiness gates is Ready only when every gate is True).
 */
export const ReadinessGatesNotReady = "ReadinessGatesNotReady"

const conditionOf = (status: PodStatus, type: string): Condition | undefined => {
  const conditions = status.conditions
  if (conditions === undefined) return undefined
  for (const condition of conditions) if (condition.type === type) return condition
  return undefined
}

/**
 * ST-14: `status` (a body's, its foreign conditions already kept) with Ready as a node agent sets
 * it for a Pod that declares readiness gates: True only when the containers are ready and every
 * gate's condition is present and True; otherwise False, with `ReadinessGatesNotReady` and the
 * gates not ready named when only the gates hold it. ContainersReady carries the containers' own
 * readiness: the push's ContainersReady when it has one, else its Ready. Since the body reads it
 * back, a status this built (the key's last push may be what a write stored: `keptAs`) builds
 * the same status again, so an unchanged gate is never a write and a gate turning True is one.
 * The gates' conditions themselves are their controllers': never set or changed here. `status`
 * itself for a Pod without gates (its Running status stays as built: CRT-21 — the Running status)
 * or a status without Ready (a Failed status: no conditions).
 */
export const applyReadinessGates = (status: PodStatus, current: Pod): PodStatus => {
  const gates = current.spec?.readinessGates
  if (gates === undefined || gates.length === 0) return status
  const ready = conditionOf(status, "Ready")
  if (ready === undefined) return status
  const containers = conditionOf(status, "ContainersReady") ?? ready
  const containersReady = containers.status === "True"
  const notReady = gates.filter((gate) => conditionOf(status, gate.conditionType)?.status !== "True").map((gate) => gate.conditionType)
  // Ready True carries no time of the push's: the push's says when the containers became ready,
  // not when the last gate did; `withTransitionTimes` keeps the Pod's or sets the write's.
  const nextReady: Condition = !containersReady
    ? (ready.status === "True" || ready.reason === ReadinessGatesNotReady ? { type: "Ready", status: "False" } : ready)
    : notReady.length === 0
    ? { type: "Ready", status: "True" }
    : {
      type: "Ready",
      status: "False",
      reason: ReadinessGatesNotReady,
      message: `readiness gates not True: ${notReady.join(", ")}`
    }
  const conditions: Array<Condition> = []
  let hasContainersReady = false
  for (const condition of status.conditions ?? []) {
    if (condition.type === "Ready") {
      conditions.push(nextReady)
    } else if (condition.type === "ContainersReady") {
      hasContainersReady = true
      conditions.push(condition)
    } else {
      conditions.push(condition)
    }
  }
  if (!hasContainersReady) {
    // the containers' readiness, since the time the push's Ready gives for it (the claim time)
    const since = containers.lastTransitionTime === undefined ? {} : { lastTransitionTime: containers.lastTransitionTime }
    conditions.splice(conditions.indexOf(nextReady) + 1, 0, {
      type: "ContainersReady",
      status: containersReady ? "True" : "False",
      ...since
    })
  }
  return { ...status, conditions }
}

/**
 * CU-05 — provider failure status: `status` with the node agent's readiness conditions (Ready,
 * ContainersReady) False, with `reason` and `now` as their `lastTransitionTime` (CRT-21: the time
 * their status changed): a Pod whose sandbox failed serves no traffic, whatever its status said
 * before. Other conditions are left as they are. `status` itself when neither is there or both are
 * False.
 */
export const withoutReadiness = (status: PodStatus, reason: string, now: number): PodStatus => {
  const conditions = status.conditions
  const isReadiness = (condition: Condition) =>
    (condition.type === "Ready" || condition.type === "ContainersReady") && condition.status !== "False"
  if (conditions === undefined || !conditions.some(isReadiness)) return status
  const since = wholeSeconds(now)
  return {
    ...status,
    conditions: conditions.map((condition) =>
      isReadiness(condition) ? { type: condition.type, status: "False", reason, lastTransitionTime: since } : condition
    )
  }
}

/** `millis` (the clock's) at whole seconds, the precision the apiserver stores a condition's time at. */
export const wholeSeconds = (millis: number): Date => new Date(Math.floor(millis / 1000) * 1000)

const sameSecond = (a: Date, b: Date): boolean => Math.floor(a.getTime() / 1000) === Math.floor(b.getTime() / 1000)

/**
 * CRT-21: `status` with a `lastTransitionTime` on each of its own conditions (not another
 * writer's: ST-12 keeps those whole), as a kubelet keeps them: the current Pod's condition of the
 * type when its status is the same (a kept time is no change, so an unchanged status is still no
 * write: ST-13), else the condition's own (the Running status's claim time), else `now`, when its
 * status changes with this write. `now` lands only in a body that differs from the Pod anyway (a
 * status changed, or a time the Pod lacks), so the no-op check never depends on it. `status`
 * itself when nothing changes (the 10k restart's re-attached Pods: no allocation).
 */
export const withTransitionTimes = (status: PodStatus, current: Pod, pushed: PodStatus, now: number): PodStatus => {
  const conditions = status.conditions
  if (conditions === undefined) return status
  const stored = current.status
  let out: Array<Condition> | undefined
  for (let i = 0; i < conditions.length; i++) {
    const condition = conditions[i]!
    if (isForeign(condition, pushed)) continue
    const was = stored === undefined ? undefined : conditionOf(stored, condition.type)
    const own = condition.lastTransitionTime
    const kept = was !== undefined && was.status === condition.status ? was.lastTransitionTime : undefined
    if (kept !== undefined ? own !== undefined && sameSecond(own, kept) : own !== undefined) continue
    out ??= conditions.slice()
    out[i] = { ...condition, lastTransitionTime: kept ?? wholeSeconds(now) }
  }
  return out === undefined ? status : { ...status, conditions: out }
}

/** Whether `stored` holds a condition `pushed` does not own (ST-12). */
export const hasForeignConditions = (pushed: PodStatus, stored: PodStatus): boolean =>
  stored.conditions !== undefined && stored.conditions.some((condition) => isForeign(condition, pushed))

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
 * make it (ST-14), and labels and annotations merged so a label or annotation edit made after the
 * provider was handed the Pod is not reverted, while the provider's own additions (the claim-id
 * annotation) still go through. `base` is the Pod the push was made from. None when the push
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

/** `statusWriteBody` of a push already read (`pushedOf`); `now` is the write's time in epoch millis (CRT-21). */
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
