/**
 * Generated wire input for the proofs that a fast reader gives what its Schema gives: values drawn
 * from the Schema itself (effect's own generator, seeded by fast-check, so a field added to the
 * Schema and forgotten by the fast reader shows up), encoded to the JSON a peer sends, and then
 * changed by fast-check (`null`s, values of another type, unknown fields, `__proto__` keys).
 */
import { Arbitrary, Effect, Option, Schema } from "effect"
import fc from "fast-check"

export type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }

/**
 * `schema`'s values as sent: drawn by effect's generator (the seed and size from fast-check),
 * encoded, and put through JSON. A value that does not encode (a Date past year 9999) is skipped.
 */
export const sentOf = <S extends Schema.Codec<unknown, unknown>>(schema: S, maxSize = 6): fc.Arbitrary<Json> => {
  const values = Arbitrary.schema(schema)
  const encode = Schema.encodeOption(schema)
  return fc.tuple(fc.nat(), fc.integer({ min: 1, max: maxSize }))
    .map(([seed, size]) => {
      const [value] = Effect.runSync(Arbitrary.sampleEffect(values, { count: 1, seed, size }))
      return Option.getOrUndefined(Option.map(encode(value), (wire) => JSON.parse(JSON.stringify(wire)) as Json))
    })
    .filter((wire): wire is Json => wire !== undefined)
}

export interface Changes {
  /** What a changed scalar becomes: values of other types, and near misses of the format's own. */
  readonly others: ReadonlyArray<Json>
  /** A member no version of the format has, added to changed objects. */
  readonly unknownField: readonly [string, Json]
  /** The value of a `__proto__` key (an own member once parsed), now and then added to an object. */
  readonly proto: Json
}

/** A copy of `value` with some members changed, each roll below `rate` changing one. */
const change = (value: Json, roll: () => number, rate: number, changes: Changes): Json => {
  if (Array.isArray(value)) return value.map((item) => (roll() < rate / 4 ? null : change(item, roll, rate, changes)))
  if (value === null || typeof value !== "object") {
    if (roll() >= rate / 4) return value
    return changes.others[Math.floor(roll() * changes.others.length) % changes.others.length]!
  }
  const out: { [key: string]: Json } = {}
  for (const [key, field] of Object.entries(value)) out[key] = roll() < rate / 3 ? null : change(field, roll, rate, changes)
  if (roll() < rate) out[changes.unknownField[0]] = changes.unknownField[1]
  if (roll() < rate / 10) {
    Object.defineProperty(out, "__proto__", { value: changes.proto, enumerable: true, writable: true, configurable: true })
  }
  return out
}

/** Values of `sent` changed by fast-check's rolls, at a rate from rare to most members. */
export const changedOf = (sent: fc.Arbitrary<Json>, changes: Changes): fc.Arbitrary<Json> =>
  fc.tuple(
    sent,
    fc.constantFrom(0.05, 0.2, 0.5),
    fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 40 })
  ).map(([value, rate, rolls]) => {
    let next = 0
    return change(value, () => rolls[next++ % rolls.length]!, rate, changes)
  })
