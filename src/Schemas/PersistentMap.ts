/**
 * An immutable map whose updates share structure with the map they came from (effect's
 * `HashMap`, a hash array mapped trie): `with` and `without` cost the same at 10,000 entries as
 * at 10, and the map they were called on is left exactly as it was. State kept in one `Ref` and
 * changed by pure functions gets an update per event that does not copy the collection, and every
 * reader keeps a consistent snapshot for as long as it holds the map.
 *
 * It reads as a `ReadonlyMap` (get, has, size, forEach, iteration), so code that only reads does
 * not care which map it has.
 */
import { HashMap, Option } from "effect"

export class PersistentMap<K, V> implements ReadonlyMap<K, V> {
  readonly #map: HashMap.HashMap<K, V>

  private constructor(map: HashMap.HashMap<K, V>) {
    this.#map = map
  }

  static empty<K, V>(): PersistentMap<K, V> {
    return new PersistentMap(HashMap.empty<K, V>())
  }

  static fromIterable<K, V>(entries: Iterable<readonly [K, V]>): PersistentMap<K, V> {
    return new PersistentMap(HashMap.fromIterable(entries))
  }

  get size(): number {
    return HashMap.size(this.#map)
  }

  get(key: K): V | undefined {
    return Option.getOrUndefined(HashMap.get(this.#map, key))
  }

  has(key: K): boolean {
    return HashMap.has(this.#map, key)
  }

  /** A map with `key` set to `value`; this one is unchanged. */
  with(key: K, value: V): PersistentMap<K, V> {
    return new PersistentMap(HashMap.set(this.#map, key, value))
  }

  /** A map without `key` (this same map when it has no such key); this one is unchanged. */
  without(key: K): PersistentMap<K, V> {
    return this.has(key) ? new PersistentMap(HashMap.remove(this.#map, key)) : this
  }

  /**
   * Several changes made as one: `f` gets a draft it may `set` and `remove` on, and the draft's
   * changes form the new map (this one is unchanged). Cheaper than one `with` per change.
   */
  withChanges(f: (draft: PersistentMapDraft<K, V>) => void): PersistentMap<K, V> {
    let changed = false
    const next = HashMap.mutate(this.#map, (draft) => {
      f({
        get: (key) => Option.getOrUndefined(HashMap.get(draft, key)),
        set: (key, value) => {
          changed = true
          HashMap.set(draft, key, value)
        },
        remove: (key) => {
          changed = true
          HashMap.remove(draft, key)
        }
      })
    })
    return changed ? new PersistentMap(next) : this
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void): void {
    HashMap.forEach(this.#map, (value, key) => callback(value, key, this))
  }

  entries(): MapIterator<[K, V]> {
    return each(HashMap.entries(this.#map))
  }

  keys(): MapIterator<K> {
    return each(HashMap.keys(this.#map))
  }

  values(): MapIterator<V> {
    return each(HashMap.values(this.#map))
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries()
  }
}

/** The trie's iterator as the built-in kind a `ReadonlyMap` hands out. */
function* each<A>(iterator: Iterable<A>): Generator<A, undefined, unknown> {
  yield* iterator
  return undefined
}

/** What `withChanges` lets its function do. */
export interface PersistentMapDraft<K, V> {
  readonly get: (key: K) => V | undefined
  readonly set: (key: K, value: V) => void
  readonly remove: (key: K) => void
}
