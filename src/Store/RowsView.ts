import type { ClaimRecord } from "../Schemas/Claims.ts"
import type { PodKey } from "../Schemas/Ids.ts"

/**
 * The rows of one write without copying the table: a read-only view of a map that nobody changes
 * after the view is taken (an immutable state's map, or one its owner copies before its next
 * change), keeping the rows `include` accepts, as `project` maps them. That makes it a consistent
 * snapshot at the price of a filter on each read, instead of a copy of every row per write.
 */
export class RowsView<R> implements ReadonlyMap<PodKey, ClaimRecord> {
  readonly #base: ReadonlyMap<PodKey, R>
  readonly #include: (key: PodKey, row: R) => boolean
  readonly #project: (row: R) => ClaimRecord
  #size = -1
  constructor(
    base: ReadonlyMap<PodKey, R>,
    include: (key: PodKey, row: R) => boolean,
    project: (row: R) => ClaimRecord
  ) {
    this.#base = base
    this.#include = include
    this.#project = project
  }
  get size(): number {
    if (this.#size < 0) {
      let n = 0
      this.#base.forEach((row, key) => {
        if (this.#include(key, row)) n++
      })
      this.#size = n
    }
    return this.#size
  }
  get(key: PodKey): ClaimRecord | undefined {
    const row = this.#base.get(key)
    return row !== undefined && this.#include(key, row) ? this.#project(row) : undefined
  }
  has(key: PodKey): boolean {
    return this.get(key) !== undefined
  }
  forEach(callback: (record: ClaimRecord, key: PodKey, map: ReadonlyMap<PodKey, ClaimRecord>) => void): void {
    this.#base.forEach((row, key) => {
      if (this.#include(key, row)) callback(this.#project(row), key, this)
    })
  }
  // Iteration (not on the write path, which uses forEach and get) goes through a copy, made once.
  #copy: Map<PodKey, ClaimRecord> | undefined
  #materialized(): Map<PodKey, ClaimRecord> {
    if (this.#copy === undefined) {
      const copy = new Map<PodKey, ClaimRecord>()
      this.forEach((record, key) => copy.set(key, record))
      this.#copy = copy
    }
    return this.#copy
  }
  entries(): MapIterator<[PodKey, ClaimRecord]> {
    return this.#materialized().entries()
  }
  keys(): MapIterator<PodKey> {
    return this.#materialized().keys()
  }
  values(): MapIterator<ClaimRecord> {
    return this.#materialized().values()
  }
  [Symbol.iterator](): MapIterator<[PodKey, ClaimRecord]> {
    return this.entries()
  }
}
