/**
 * The apiserver model's storage, as etcd is to the real server: one bucket of objects per resource,
 * one resourceVersion counter shared by every resource, and the recent history of writes that watches
 * resume from. Every write goes through `commit`, which hands out the next resourceVersion, stores
 * the object in the key order the server writes, records the change and tells the listener (the
 * watch fan-out) before returning. No semantics here: validation and strategies are the callers'.
 */
import { clone } from "./Patch.ts"
import type { ResourceInfo } from "./Resources.ts"
import { inWireOrder, metaOf, objectKey, resourceKey } from "./Objects.ts"
import type { JsonObject } from "./Status.ts"

export type ChangeType = "ADDED" | "MODIFIED" | "DELETED"

/** One committed write: what a watch replays from history or receives as it happens. */
export interface HistoryEntry {
  readonly rv: number
  readonly resource: ResourceInfo
  readonly namespace: string
  readonly type: ChangeType
  readonly object: JsonObject
  /** the object before the write (undefined for a create): a watch needs it to see an object leave its selector */
  readonly prev: JsonObject | undefined
}

/** What `ClusterModel.snapshot` takes and `restore` puts back. */
export interface ModelSnapshot {
  readonly store: ReadonlyMap<string, ReadonlyMap<string, JsonObject>>
  readonly rv: number
}

export class ObjectStore {
  private readonly buckets = new Map<string, Map<string, JsonObject>>()
  private readonly entries: Array<HistoryEntry> = []
  private counter = 0
  private compacted = 0
  private readonly historySize: number
  private readonly onCommit: (entry: HistoryEntry) => void

  /**
   * @param historySize writes retained for watches; older ones are compacted away (all resources
   *   share the window, as they share etcd's revision)
   * @param onCommit called with every write, after it is stored and before `commit` returns
   */
  constructor(historySize: number, onCommit: (entry: HistoryEntry) => void) {
    this.historySize = historySize
    this.onCommit = onCommit
  }

  /** The last resourceVersion handed out. */
  get rv(): number {
    return this.counter
  }

  /** Watches and continue tokens from before this resourceVersion are too old (410). */
  get compactedRv(): number {
    return this.compacted
  }

  /** The retained writes, oldest first. */
  get history(): ReadonlyArray<HistoryEntry> {
    return this.entries
  }

  /** The resource's objects by `namespace/name` (the live map: callers must not change what they read). */
  bucket(r: ResourceInfo): Map<string, JsonObject> {
    let b = this.buckets.get(resourceKey(r))
    if (b === undefined) {
      b = new Map()
      this.buckets.set(resourceKey(r), b)
    }
    return b
  }

  /**
   * The stored object itself (not a copy), or undefined. `ns` is "" for cluster-scoped resources.
   * Never change it in place: a write stores a new object, and list replies keep each stored
   * object's bytes until it is replaced (`Paging.ts`), so an object changed in place would be listed
   * as it was.
   */
  lookup(r: ResourceInfo, ns: string, name: string): JsonObject | undefined {
    return this.bucket(r).get(objectKey(ns, name))
  }

  /**
   * Store (or, for DELETED, remove) `obj` at the next resourceVersion, which is written into `obj`'s
   * metadata; record the write and hand it to the listener. Returns a copy of what was stored.
   */
  commit(r: ResourceInfo, ns: string, name: string, type: ChangeType, obj: JsonObject, prev: JsonObject | undefined): JsonObject {
    this.counter += 1
    metaOf(obj)["resourceVersion"] = String(this.counter)
    const snapshot = inWireOrder(obj, r)
    if (type === "DELETED") this.bucket(r).delete(objectKey(ns, name))
    else this.bucket(r).set(objectKey(ns, name), snapshot)
    const entry: HistoryEntry = { rv: this.counter, resource: r, namespace: ns, type, object: snapshot, prev }
    this.entries.push(entry)
    while (this.entries.length > this.historySize) {
      const dropped = this.entries.shift()
      if (dropped !== undefined) this.compacted = dropped.rv
    }
    this.onCommit(entry)
    return clone(snapshot)
  }

  /** Forget all history: a watch from any resourceVersion before now gets 410. */
  compact(): void {
    this.entries.length = 0
    this.compacted = this.counter
  }

  snapshot(): ModelSnapshot {
    const store = new Map<string, Map<string, JsonObject>>()
    for (const [plural, bucket] of this.buckets) store.set(plural, new Map([...bucket].map(([k, o]) => [k, clone(o)])))
    return { store, rv: this.counter }
  }

  /** Objects and counter back to the snapshot; history is gone (everything before it is compacted). */
  restore(snapshot: ModelSnapshot): void {
    this.buckets.clear()
    for (const [plural, bucket] of snapshot.store) this.buckets.set(plural, new Map([...bucket].map(([k, o]) => [k, clone(o)])))
    this.counter = snapshot.rv
    this.entries.length = 0
    this.compacted = snapshot.rv
  }
}
