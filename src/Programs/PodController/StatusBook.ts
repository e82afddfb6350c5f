/**
 * The status writer's state per key: the push waiting to be written (and since when), what was
 * last written (the status repair's reference, and the version its write got), and the last two
 * Pods handed to the provider (the base of a label and annotation merge). The rule: only these
 * methods read or write it, and none of them yields; a check that spans a write (the push still
 * the pending one once it is written) is a compare-and-set here.
 */
import type { PodKey } from "../../Schemas/Ids.ts"
import type { Pod } from "../../Schemas/Pod/Schema.ts"
import { sameCanonical } from "./Canonical.ts"
import { hasForeignConditions } from "./Conditions.ts"
import { uidOf } from "./PodFacts.ts"
import type { Pushed } from "./StatusBody.ts"

/** What the merge needs of a Pod handed to the provider. */
interface Handed {
  readonly uid: string
  readonly resourceVersion: string | undefined
  readonly labels: Readonly<Record<string, string>> | undefined
  readonly annotations: Readonly<Record<string, string>> | undefined
}

const handedOf = (pod: Pod): Handed => ({
  uid: uidOf(pod),
  resourceVersion: pod.metadata?.resourceVersion,
  labels: pod.metadata?.labels,
  annotations: pod.metadata?.annotations
})

const asBase = (handed: Handed): Pod => ({
  metadata: {
    uid: handed.uid,
    ...(handed.resourceVersion === undefined ? {} : { resourceVersion: handed.resourceVersion }),
    ...(handed.labels === undefined ? {} : { labels: handed.labels }),
    ...(handed.annotations === undefined ? {} : { annotations: handed.annotations })
  }
})

/**
 * `push` as kept once `stored`, the Pod at the version its write got, is what the write stored:
 * that Pod's status stands for the push (the same status as the server keeps it), and so do its
 * labels and annotations where they equal the push's, so the key keeps no objects of its own
 * next to the informer's. Not a status holding another writer's conditions (ST-12 — other writers'
 * Pod conditions survive status writes): the push would then seem to set them, and a later change
 * of theirs would be repaired away.
 */
const keptAs = (push: Pushed, stored: Pod): Pushed => {
  const labels = stored.metadata?.labels
  const annotations = stored.metadata?.annotations
  const status = stored.status
  return {
    ...push,
    status: status === undefined || hasForeignConditions(push.status, status) ? push.status : status,
    labels: labels !== undefined && sameCanonical(labels, push.labels) ? labels : push.labels,
    annotations: annotations !== undefined && sameCanonical(annotations, push.annotations) ? annotations : push.annotations
  }
}

export class StatusBook {
  /** The newest push per key not yet written. */
  private readonly pending = new Map<PodKey, Pushed>()
  /** When the oldest push of `pending` arrived, per key: the status_write stage ends when it is written. */
  private readonly pushedAt = new Map<PodKey, number>()
  /** The last push written or found already in place, per key (status repair). */
  private readonly lastPushed = new Map<PodKey, Pushed>()
  /**
   * The resourceVersion the apiserver gave the write of `lastPushed`, per key: a Pod observed
   * at that version is exactly what that write stored, so the repair check has nothing to do
   * (the watch delivers every Pod's own status write back once).
   */
  private readonly lastPushedVersion = new Map<PodKey, string>()
  /** The last two Pods handed to the provider per key, newest last. */
  private readonly handedPods = new Map<PodKey, ReadonlyArray<Handed>>()

  pendingOf(key: PodKey): Pushed | undefined {
    return this.pending.get(key)
  }

  hasPending(key: PodKey): boolean {
    return this.pending.has(key)
  }

  pushedSince(key: PodKey): number | undefined {
    return this.pushedAt.get(key)
  }

  lastPush(key: PodKey): Pushed | undefined {
    return this.lastPushed.get(key)
  }

  /**
   * A provider push at `now`: the newest wins, but one for an older Pod of the same name (which
   * could never be written) does not displace a queued push for the Pod the apiserver has now
   * (`currentUid`). False when it was dropped.
   */
  queuePush(key: PodKey, pushed: Pushed, currentUid: string | undefined, now: number): boolean {
    const queued = this.pending.get(key)
    if (queued !== undefined && queued.uid === currentUid && pushed.uid !== currentUid) return false
    this.pending.set(key, pushed)
    if (!this.pushedAt.has(key)) this.pushedAt.set(key, now)
    return true
  }

  /**
   * `pushed`, read by `lastPush` before the repair check, is written again (status repair), unless
   * a newer push waits: only while it is still the key's last push. A write that landed meanwhile
   * (the check yields) made a newer push the last, which must not be overwritten by this older
   * one; a Pod forgotten meanwhile has none. False when it is no longer the last push.
   */
  queueRepair(key: PodKey, pushed: Pushed): boolean {
    if (this.lastPushed.get(key) !== pushed) return false
    if (!this.pending.has(key)) this.pending.set(key, pushed)
    return true
  }

  /** `push` is written or dropped: it leaves, unless a newer push took its place meanwhile. */
  settle(key: PodKey, push: Pushed): void {
    if (this.pending.get(key) !== push) return
    this.pending.delete(key)
    this.pushedAt.delete(key)
  }

  /**
   * `push` is what the server has now for the Pod `still` (the informer's, of the push's UID),
   * its write given `version` (none when nothing was written). The informer holding the Pod at
   * that version holds what the write stored (its reply, or its watch event when that came first
   * and so skipped the repair): kept as `keptAs` says.
   */
  recordWritten(key: PodKey, push: Pushed, still: Pod, version: string | undefined): void {
    this.lastPushed.set(key, version !== undefined && still.metadata?.resourceVersion === version ? keptAs(push, still) : push)
    if (version === undefined) this.lastPushedVersion.delete(key)
    else this.lastPushedVersion.set(key, version)
  }

  /**
   * The repair's short cut: `pod` is at the version the last push's write got, so it is exactly
   * what that write stored, and the key keeps the informer's status (`keptAs`). False otherwise.
   */
  storedByLastWrite(key: PodKey, pushed: Pushed, pod: Pod): boolean {
    const version = pod.metadata?.resourceVersion
    if (version === undefined || this.lastPushedVersion.get(key) !== version) return false
    if (pod.status !== undefined && pod.status !== pushed.status) this.lastPushed.set(key, keptAs(pushed, pod))
    return true
  }

  /** The Pod handed to createPod/updatePod (a later push is a copy of it). */
  handed(key: PodKey, pod: Pod): void {
    const previous = this.handedPods.get(key) ?? []
    this.handedPods.set(key, [...previous.slice(-1), handedOf(pod)])
  }

  /** The Pod a push was made from, for the three-way merge of labels and annotations. */
  baseFor(key: PodKey, push: Pushed): Pod | undefined {
    const found = (this.handedPods.get(key) ?? []).find((pod) => pod.uid === push.uid && pod.resourceVersion === push.resourceVersion)
    return found === undefined ? undefined : asBase(found)
  }

  /** The Pod is gone: all but a pending push goes (its write finds the Pod gone and ends it). */
  forget(key: PodKey): void {
    this.lastPushed.delete(key)
    this.lastPushedVersion.delete(key)
    this.handedPods.delete(key)
  }

  retainedKeys(): ReadonlySet<PodKey> {
    return new Set([...this.pending.keys(), ...this.lastPushed.keys(), ...this.lastPushedVersion.keys(), ...this.handedPods.keys()])
  }
}
