/**
 * A status's conditions as a node agent keeps them: the agent's own types and another writer's
 * (ST-12 — other writers' Pod conditions survive status writes), Ready under readiness gates,
 * readiness dropped on a provider failure, and each condition's transition time.
 */
import type { Pod, PodStatus } from "../../Schemas/Pod/Schema.ts"

export type Condition = NonNullable<PodStatus["conditions"]>[number]

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
 * write: ST-13 — an unchanged status is not written), else the condition's own (the Running
 * status's claim time), else `now`, when its status changes with this write. `now` lands only in
 * a body that differs from the Pod anyway (a status changed, or a time the Pod lacks), so the
 * no-op check never depends on it. `status` itself when nothing changes (the 10k restart's
 * re-attached Pods: no allocation).
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
