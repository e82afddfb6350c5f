/**
 * An immutable map whose updates share structure with the map they came from (effect's `HashMap`):
 * `with` and `without` cost the same at 10,000 entries as at 10 and leave the original as it was,
 * so state kept in one `Ref` gets a cheap update per event and every reader a consistent snapshot.
 * It reads as a `ReadonlyMap`, so code that only reads does not care which map it has.
 */
import { HashMap, Option } from "effect"

export class PersistentMap<K, V> implements ReadonlyMap<K, V> {
  /** The trie; made from `#plain` on the first single-key update when the map was built from one. */
  #trie: HashMap.HashMap<K, V> | undefined
  /** The entries when the map was built whole (`fromMap`): a built-in Map nothing ever changes. */
  readonly #plain: ReadonlyMap<K, V> | undefined

  private constructor(trie: HashMap.HashMap<K, V> | undefined, plain?: ReadonlyMap<K, V>) {
    this.#trie = trie
    this.#plain = plain
  }

  static empty<K, V>(): PersistentMap<K, V> {
    return new PersistentMap<K, V>(HashMap.empty<K, V>())
  }

  static fromIterable<K, V>(entries: Iterable<readonly [K, V]>): PersistentMap<K, V> {
    return new PersistentMap(HashMap.fromIterable(entries))
  }

  /**
   * A map of `entries`, which it takes over: the caller never changes `entries` again. Built whole
   * at once (a table loaded at startup), it is read as the built-in Map it is; a trie is made
   * of it only when it is first updated (once per map, then every update costs what a trie's
   * does), unless a batch changes a large share of it (`withChanges`), which makes another
   * built-in Map instead. Keys are strings, which the built-in Map and the trie compare alike.
   */
  static fromMap<K extends string, V>(entries: Map<K, V>): PersistentMap<K, V> {
    return new PersistentMap<K, V>(undefined, entries)
  }

  /** The trie of these entries (made once from the built-in Map when the map was built from one). */
  #asTrie(): HashMap.HashMap<K, V> {
    if (this.#trie === undefined) this.#trie = HashMap.fromIterable(this.#plain!)
    return this.#trie
  }

  get size(): number {
    return this.#plain !== undefined ? this.#plain.size : HashMap.size(this.#trie!)
  }

  get(key: K): V | undefined {
    return this.#plain !== undefined ? this.#plain.get(key) : Option.getOrUndefined(HashMap.get(this.#trie!, key))
  }

  has(key: K): boolean {
    return this.#plain !== undefined ? this.#plain.has(key) : HashMap.has(this.#trie!, key)
  }

  /** A map with `key` set to `value`; this one is unchanged. */
  with(key: K, value: V): PersistentMap<K, V> {
    return new PersistentMap(HashMap.set(this.#asTrie(), key, value))
  }

  /** A map without `key` (this same map when it has no such key); this one is unchanged. */
  without(key: K): PersistentMap<K, V> {
    return this.has(key) ? new PersistentMap(HashMap.remove(this.#asTrie(), key)) : this
  }

  /**
   * Several changes made as one: `f` gets a draft it may `set` and `remove` on, and the draft's
   * changes form the new map (this one is unchanged). Cheaper than one `with` per change.
   * `expected`: about how many keys `f` changes, when known. On a map built whole (`fromMap`) a
   * batch expected to change at least a quarter of it (a startup verification judging every
   * loaded row) is made on a copy of the built-in Map, which costs less than as many trie updates;
   * any other batch is made on the trie, so that what it costs does not grow with the map (after
   * the first change of a `fromMap` map, which builds the trie once).
   */
  withChanges(f: (draft: PersistentMapDraft<K, V>) => void, expected = 0): PersistentMap<K, V> {
    const plain = this.#plain
    if (plain !== undefined && expected * 4 >= plain.size) {
      let changed = false
      const next = new Map(plain)
      f({
        get: (key) => next.get(key),
        set: (key, value) => {
          changed = true
          next.set(key, value)
        },
        remove: (key) => {
          changed = true
          next.delete(key)
        }
      })
      return changed ? new PersistentMap<K, V>(undefined, next) : this
    }
    // The trie is opened for changes at the first change: a batch that changes nothing makes no
    // trie of a map built whole.
    let draft: HashMap.HashMap<K, V> | undefined
    const open = () => (draft ??= HashMap.beginMutation(this.#asTrie()))
    f({
      get: (key) =>
        draft === undefined ? this.get(key) : Option.getOrUndefined(HashMap.get(draft, key)),
      set: (key, value) => void HashMap.set(open(), key, value),
      remove: (key) => void HashMap.remove(open(), key)
    })
    return draft === undefined ? this : new PersistentMap(HashMap.endMutation(draft))
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void): void {
    if (this.#plain !== undefined) this.#plain.forEach((value, key) => callback(value, key, this))
    else HashMap.forEach(this.#trie!, (value, key) => callback(value, key, this))
  }

  entries(): MapIterator<[K, V]> {
    return this.#plain !== undefined ? this.#plain.entries() : each(HashMap.entries(this.#trie!))
  }

  keys(): MapIterator<K> {
    return this.#plain !== undefined ? this.#plain.keys() : each(HashMap.keys(this.#trie!))
  }

  values(): MapIterator<V> {
    return this.#plain !== undefined ? this.#plain.values() : each(HashMap.values(this.#trie!))
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
