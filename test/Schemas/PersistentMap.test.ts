import { assert, describe, it } from "@effect/vitest"
import { Equal, Hash } from "effect"
import * as fc from "fast-check"
import { PersistentMap } from "../../src/Schemas/PersistentMap.ts"

/** A key that counts how often the map hashes or compares it: the work an update does. */
class CountedKey implements Equal.Equal {
  static work = 0
  readonly name: string
  constructor(name: string) {
    this.name = name
  }
  [Hash.symbol](): number {
    CountedKey.work++
    return Hash.string(this.name)
  }
  [Equal.symbol](that: Equal.Equal): boolean {
    CountedKey.work++
    return that instanceof CountedKey && that.name === this.name
  }
}

/** One update of a property test's sequence, on keys `k0`..`k40`. */
const op = fc.oneof(
  fc.record({ kind: fc.constant("set" as const), key: fc.integer({ min: 0, max: 40 }), value: fc.integer() }),
  fc.record({ kind: fc.constant("remove" as const), key: fc.integer({ min: 0, max: 40 }) })
)
type Op = typeof op extends fc.Arbitrary<infer A> ? A : never

const apply = (o: Op, set: (k: string, v: number) => void, remove: (k: string) => void) =>
  o.kind === "set" ? set(`k${o.key}`, o.value) : remove(`k${o.key}`)

/** `map` reads as `model` through every read a `ReadonlyMap` has. */
const assertReadsLike = (map: PersistentMap<string, number>, model: ReadonlyMap<string, number>) => {
  assert.strictEqual(map.size, model.size)
  assert.deepStrictEqual([...map.entries()].sort(), [...model.entries()].sort())
  assert.deepStrictEqual([...map.keys()].sort(), [...model.keys()].sort())
  assert.deepStrictEqual([...map.values()].sort(), [...model.values()].sort())
  for (let i = 0; i <= 40; i++) {
    assert.strictEqual(map.get(`k${i}`), model.get(`k${i}`))
    assert.strictEqual(map.has(`k${i}`), model.has(`k${i}`))
  }
  const seen: Array<[string, number]> = []
  map.forEach((v, k, self) => {
    assert.strictEqual(self, map)
    seen.push([k, v])
  })
  assert.deepStrictEqual(seen.sort(), [...model.entries()].sort())
}

describe("PersistentMap", () => {
  it("an update touches a few keys, not the collection: the same work at 10,000 entries as at 10", () => {
    const workOfOneUpdate = (size: number) => {
      let map = PersistentMap.empty<CountedKey, number>()
      for (let i = 0; i < size; i++) map = map.with(new CountedKey(`ns/pod-${i}`), i)
      CountedKey.work = 0
      const changed = map.with(new CountedKey("ns/pod-3"), -1).without(new CountedKey("ns/pod-4"))
      const work = CountedKey.work
      assert.strictEqual(changed.size, size - 1)
      return work
    }
    const small = workOfOneUpdate(10)
    const large = workOfOneUpdate(10_000)
    // A copy of the map would hash or compare every one of the 10,000 keys.
    assert.isAtMost(large, small + 4)
    assert.isAtMost(large, 16)
  })

  it("with, without and withChanges leave the map they were called on as it was (a held state stays a snapshot)", () => {
    const before = PersistentMap.fromIterable([["a", 1], ["b", 2]])
    const set = before.with("c", 3)
    const removed = before.without("a")
    const batch = before.withChanges((draft) => {
      draft.set("a", 10)
      draft.remove("b")
      draft.set("d", draft.get("a") ?? 0)
    })
    assert.deepStrictEqual([...before].sort(), [["a", 1], ["b", 2]])
    assert.deepStrictEqual([...set].sort(), [["a", 1], ["b", 2], ["c", 3]])
    assert.deepStrictEqual([...removed], [["b", 2]])
    assert.deepStrictEqual([...batch].sort(), [["a", 10], ["d", 10]])
    assert.strictEqual(before.without("absent"), before, "removing a missing key is no change")
    assert.strictEqual(before.withChanges(() => {}), before, "an empty batch is no change")
  })

  it("reads like the Map it replaces after any sequence of updates", () => {
    fc.assert(fc.property(fc.array(op, { maxLength: 200 }), fc.boolean(), (ops, batched) => {
      const model = new Map<string, number>()
      let map = PersistentMap.empty<string, number>()
      for (const o of ops) apply(o, (k, v) => model.set(k, v), (k) => model.delete(k))
      if (batched) map = map.withChanges((draft) => ops.forEach((o) => apply(o, draft.set, draft.remove)))
      else for (const o of ops) apply(o, (k, v) => (map = map.with(k, v)), (k) => (map = map.without(k)))
      assertReadsLike(map, model)
    }))
  })
  it("a map built whole (fromMap) reads and updates like the Map it replaces, small batches and large, and never changes the Map it took", () => {
    const initial = fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer()), { selector: ([k]) => k, maxLength: 40 })
    fc.assert(fc.property(initial, fc.array(op, { maxLength: 60 }), fc.constantFrom("single", "batch", "batches"), fc.nat(60), (start, ops, how, expected) => {
      const entries = start.map(([k, v]): [string, number] => [`k${k}`, v])
      const taken = new Map(entries)
      const base = PersistentMap.fromMap(taken)
      const model = new Map(entries)
      for (const o of ops) apply(o, (k, v) => model.set(k, v), (k) => model.delete(k))
      let map = base
      if (how === "batch") {
        // One batch: a large share of the map is made on a copy of the built-in Map, a small one on a trie.
        map = map.withChanges((draft) =>
          ops.forEach((o) => {
            apply(o, draft.set, draft.remove)
            // The draft reads its own changes.
            assert.strictEqual(draft.get(`k${o.key}`), o.kind === "set" ? o.value : undefined)
          }), ops.length)
      } else if (how === "batches") {
        for (const o of ops) map = map.withChanges((draft) => apply(o, draft.set, draft.remove), expected)
      } else {
        for (const o of ops) apply(o, (k, v) => (map = map.with(k, v)), (k) => (map = map.without(k)))
      }
      assertReadsLike(map, model)
      // The map it was built from, and the map itself, are a snapshot whatever was done after.
      assert.deepStrictEqual([...taken], entries)
      assert.deepStrictEqual([...base], entries)
      assert.strictEqual(base.size, entries.length)
    }))
  })

  it("a map built whole hands back itself for an empty batch or a missing key's removal", () => {
    const base = PersistentMap.fromMap(new Map([["a", 1]]))
    assert.strictEqual(base.withChanges(() => {}), base)
    assert.strictEqual(base.without("absent"), base)
    // A batch that only reads is no change either, whichever way it would have been made.
    for (const expected of [0, 1]) {
      assert.strictEqual(base.withChanges((draft) => void assert.strictEqual(draft.get("a"), 1), expected), base)
    }
    const trie = PersistentMap.fromIterable([["a", 1]])
    assert.strictEqual(trie.withChanges((draft) => void assert.strictEqual(draft.get("a"), 1)), trie)
  })
})
