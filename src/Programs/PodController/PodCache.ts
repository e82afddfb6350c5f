/**
 * The informer's state: the slim Pod of each key, the keys whose newest version cannot be decoded
 * (INF-1 — a Pod the daemon cannot decode is left out), the newest resourceVersion seen and whether
 * the first list is in. The rule: only these methods read or write it, and none of them yields, so
 * each check-and-set is atomic. The informer's list + watch fiber is its writer; the status
 * writer's re-reads and replies go through `store` and `written`, each one method call.
 */
import { type PodKey, podKeyOfPod } from "../../Schemas/Ids.ts"
import type { Pod } from "../../Schemas/Pod/Schema.ts"
import { shouldReconcile, uidOf } from "./PodFacts.ts"

/**
 * True when resourceVersion `a` is older than `b`. Versions are opaque to clients except that
 * the apiserver hands out increasing integers (etcd revisions); anything else compares as not older.
 */
export const resourceVersionOlder = (a: string, b: string): boolean =>
  /^\d+$/.test(a) && /^\d+$/.test(b) && (a.length !== b.length ? a.length < b.length : a < b)

export class PodCache {
  private readonly pods = new Map<PodKey, Pod>()
  /**
   * Keys whose newest version cannot be decoded, each with that version's resourceVersion (the
   * one logged). Empty but for such Pods: the good path only reads its size.
   */
  private readonly undecodable = new Map<PodKey, string>()
  /** `undecodable.size` as last reported (`unreadableCountChanged`). */
  private reportedUnreadable = 0
  /** The newest resourceVersion seen (list, event or bookmark). */
  newestSeen = ""
  /** The first complete list is in (readiness). */
  synced = false

  get(key: PodKey): Pod | undefined {
    return this.pods.get(key)
  }

  has(key: PodKey): boolean {
    return this.pods.has(key)
  }

  get size(): number {
    return this.pods.size
  }

  values(): Array<Pod> {
    return [...this.pods.values()]
  }

  /** The newest version of the key's Pod cannot be decoded (INF-1). */
  unreadable(key: PodKey): boolean {
    return this.undecodable.size !== 0 && this.undecodable.has(key)
  }

  /** Stores `pod`; true when the provider must see the change. */
  store(pod: Pod): boolean {
    const key = podKeyOfPod(pod)
    const previous = this.pods.get(key)
    this.pods.set(key, pod)
    // Readable again: a create left alone while it was not (INF-1) runs now.
    if (this.undecodable.size !== 0 && this.undecodable.delete(key)) return true
    return previous === undefined || shouldReconcile(previous, pod)
  }

  /** Marks `key` unreadable at `resourceVersion`; false when that version was already noted. */
  noteUndecodable(key: PodKey, resourceVersion: string): boolean {
    if (this.undecodable.get(key) === resourceVersion) return false
    this.undecodable.set(key, resourceVersion)
    return true
  }

  /** The Pod left the apiserver; true when it was unreadable. */
  remove(key: PodKey): boolean {
    this.pods.delete(key)
    return this.undecodable.delete(key)
  }

  /** Keys a list that names only `listed` lacks: cached ones, and ones only known as unreadable. */
  vanished(listed: ReadonlySet<PodKey>): Array<PodKey> {
    const gone = [...this.pods.keys()].filter((key) => !listed.has(key))
    for (const key of this.undecodable.keys()) if (!listed.has(key) && !this.pods.has(key)) gone.push(key)
    return gone
  }

  /** A write's reply replaces `before`, unless the watch already brought something else. */
  written(before: Pod, after: Pod): void {
    const key = podKeyOfPod(before)
    const current = this.pods.get(key)
    if (current !== undefined && uidOf(current) === uidOf(after) && current.metadata?.resourceVersion === before.metadata?.resourceVersion) {
      this.pods.set(key, after)
    }
  }

  /** `rv` is the newest seen unless an older one (a server that went backwards is found by a list). */
  advance(rv: string): void {
    if (!resourceVersionOlder(rv, this.newestSeen)) this.newestSeen = rv
  }

  /** The count of unreadable keys moved since it was last taken (`unreadableCountChanged`). */
  get unreadableMoved(): boolean {
    return this.undecodable.size !== this.reportedUnreadable
  }

  /** The count of unreadable keys when it moved since the last call, else undefined (one comparison). */
  unreadableCountChanged(): number | undefined {
    if (this.undecodable.size === this.reportedUnreadable) return undefined
    this.reportedUnreadable = this.undecodable.size
    return this.reportedUnreadable
  }
}
