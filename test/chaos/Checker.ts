/**
 * The chaos run's checker: every property of Safety.ts and Liveness.ts over one recorded history,
 * and the report a person reads (the bounds it judged with, each property's result, and for each
 * violation the faults active before it).
 */
import type { FinalState, HistoryEvent } from "./History.ts"
import { faultsBefore, indexHistory } from "./HistoryIndex.ts"
import { goneOwnersReleased, heldWithinLease, noDoubtLeft, podsRun } from "./Liveness.ts"
import {
  type Bounds,
  noKeyWithTwoVms,
  noReleaseWhileOwnerAlive,
  noRunningWithoutRow,
  noTokenShown,
  noVmWithoutHolder,
  type PropertyResult
} from "./Safety.ts"

export type { Bounds, PropertyResult }

export interface CheckResult {
  readonly properties: ReadonlyArray<PropertyResult>
  readonly ok: boolean
  readonly report: string
}

/** Every property over the history (its `final` snapshot included), with the report. */
export const check = (events: ReadonlyArray<HistoryEvent>, node: string, bounds: Bounds): CheckResult => {
  const index = indexHistory(events)
  const final = index.final
  const properties: Array<PropertyResult> = [
    noVmWithoutHolder(events, index),
    noKeyWithTwoVms(index, bounds),
    noRunningWithoutRow(events, index, node),
    noReleaseWhileOwnerAlive(index),
    noTokenShown(events)
  ]
  if (final === undefined) {
    properties.push({ id: "L*", kind: "liveness", title: "the state at the end", checked: 0, violations: [{ at: 0, text: "no final snapshot was recorded" }] })
  } else {
    properties.push(podsRun(index, final, node), goneOwnersReleased(index, final), heldWithinLease(index, final, bounds), noDoubtLeft(final))
  }
  const ok = properties.every((p) => p.violations.length === 0)
  const lines = [
    `bounds: settled within ${bounds.settleMs / 1000} s of the last fault (a claim in doubt: + ${bounds.claimSettleMs / 1000} s; ` +
    `a VM past its lease: + ${bounds.leaseWatchMs / 1000} s lease watch + ${bounds.reapMs / 1000} s reaper; ` +
    `a row of an ended VM: + ${bounds.leaseWatchMs / 1000} s lease watch + ${bounds.resyncMs / 1000} s resync)`,
    ...index.phases.map((p) => `${p.phase}: ${p.detail}`)
  ]
  for (const property of properties) {
    lines.push(`${property.violations.length === 0 ? "ok  " : "FAIL"} ${property.id} ${property.title}: checked ${property.checked}, violations ${property.violations.length}`)
    for (const violation of property.violations.slice(0, 5)) {
      lines.push(`       ${violation.text}`)
      const active = faultsBefore(index, violation.at)
      lines.push(`         faults active before it: ${active.length === 0 ? "none" : active.join("; ")}`)
    }
    if (property.violations.length > 5) lines.push(`       … and ${property.violations.length - 5} more`)
  }
  return { properties, ok, report: lines.join("\n") }
}

/**
 * Whether the run has settled on `state`: the end-state properties hold on it (used to end the
 * settle period early; the final judgement is `check`'s).
 */
export const settledOn = (events: ReadonlyArray<HistoryEvent>, state: FinalState, node: string, bounds: Bounds): ReadonlyArray<string> => {
  const index = { ...indexHistory(events), final: state }
  const pending = [
    podsRun(index, state, node),
    goneOwnersReleased(index, state),
    heldWithinLease(index, state, bounds),
    noDoubtLeft(state),
    noRunningWithoutRow([], index, node),
    noVmWithoutHolder([], index)
  ]
  return pending.flatMap((p) => p.violations.map((v) => `${p.id} ${v.text}`))
}
