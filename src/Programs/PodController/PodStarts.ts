/**
 * MON-5 — one observation per Pod start: `vk_sandbox_pod_start_duration_seconds` times each Pod
 * this daemon starts, from the informer handing it to the pod queue (the queue stage's start) to
 * the apiserver acknowledging its Running status write (the status_write stage's end). Not from
 * creationTimestamp: its one-second resolution is coarser than a whole warm start.
 */
import type { PodKey } from "../../Schemas/Ids.ts"
import type { Pod } from "../../Schemas/Pod/Schema.ts"
import { isDeleting, isTerminal, uidOf } from "./PodFacts.ts"

/**
 * The first sighting per key of a Pod not yet started (its UID and when). The rule: only these
 * methods read or write it, and none of them yields. A timing starts only for a Pod neither
 * Running, ended nor being deleted (a restarted daemon listing a Running Pod it re-adopts starts
 * none) and ends at the first acknowledged write of Running (observed once) or of an ending, or
 * when the Pod is deleted or gone. A Pod someone else ends with no spec change keeps its entry
 * until it is deleted.
 */
export class PodStarts {
  private readonly since = new Map<PodKey, { readonly uid: string; readonly at: number }>()

  /** The informer handed `key` to the queue at `now` (epoch millis); `pod` is what it holds now. */
  seen(key: PodKey, pod: Pod | undefined, now: number): void {
    const entry = this.since.get(key)
    if (entry !== undefined && (pod === undefined || entry.uid !== uidOf(pod))) this.since.delete(key)
    if (pod === undefined) return
    // Running: the watch may bring the start's own write back before its reply, which ends it.
    if (pod.status?.phase === "Running") return
    if (isTerminal(pod) || isDeleting(pod)) this.since.delete(key)
    else if (!this.since.has(key)) this.since.set(key, { uid: uidOf(pod), at: now })
  }

  /**
   * The apiserver acknowledged, at `now`, a status write of `key` that stored `written`: the
   * seconds since the Pod was first seen when that write made it Running, else undefined.
   */
  acknowledged(key: PodKey, written: Pod, now: number): number | undefined {
    const entry = this.since.get(key)
    if (entry === undefined || entry.uid !== uidOf(written)) return undefined
    const running = written.status?.phase === "Running"
    if (running || isTerminal(written)) this.since.delete(key)
    return running ? (now - entry.at) / 1000 : undefined
  }

  /** Keys whose start is being timed (a leak check). */
  keys(): ReadonlyArray<PodKey> {
    return [...this.since.keys()]
  }
}
