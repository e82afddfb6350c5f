/**
 * The Node, Lease and Event Schemas the KubeApi layer decodes replies with and encodes writes
 * with (src/Schemas), and the MicroTime form (six fractional digits) of lease and event times:
 * - any JSON is decoded to an object or None, never a throw;
 * - an object generated from the Schema, written and read back as the server would store it,
 *   reads back as itself (a lease PUT of what was read writes what the server has);
 * - formatMicroTime never throws, whatever text or Date it is given, and an RFC 3339 time keeps
 *   its instant to the microsecond.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Option, type Schema } from "effect"
import fc from "fast-check"
import { decodeEvent, encodeEvent, Event } from "../../src/Schemas/Event.ts"
import { decodeLease, encodeLease, Lease } from "../../src/Schemas/Lease.ts"
import { formatMicroTime } from "../../src/Schemas/MicroTime.ts"
import { decodeNode, encodeNode, Node } from "../../src/Schemas/Node.ts"
import { dropNulls } from "../../src/Schemas/Pod/Decode.ts"

const runs = { numRuns: 300 }

interface Codec<A> {
  readonly name: string
  readonly schema: Schema.Codec<A, unknown>
  readonly decode: (json: unknown) => Option.Option<A>
  readonly encode: (value: A) => Option.Option<unknown>
}

const codecs: ReadonlyArray<Codec<Node> | Codec<Lease> | Codec<Event>> = [
  { name: "Node", schema: Node, decode: decodeNode, encode: encodeNode },
  { name: "Lease", schema: Lease, decode: decodeLease, encode: encodeLease },
  { name: "Event", schema: Event, decode: decodeEvent, encode: encodeEvent }
]

/** As the wire carries it: JSON text, parsed again with the apiserver's nulls left out. */
const overTheWire = (value: unknown): unknown => dropNulls(JSON.parse(JSON.stringify(value)))

const roundTrip = <A>(codec: Codec<A>) =>
  Effect.gen(function*() {
    const values = yield* Arbitrary.sampleEffect(Arbitrary.schema(codec.schema), { count: 300, seed: 18, size: 4 })
    let checked = 0
    for (const value of values) {
      // Dates outside what RFC 3339 prints (before year 0, past 9999) do not encode: skipped.
      const wire = codec.encode(value)
      if (Option.isNone(wire)) continue
      const read = codec.decode(overTheWire(wire.value))
      assert.isTrue(Option.isSome(read), `${codec.name}: what was written does not read back`)
      if (Option.isNone(read)) continue
      // written again, it is the same JSON
      assert.deepStrictEqual(overTheWire(Option.getOrThrow(codec.encode(read.value))), overTheWire(wire.value))
      checked++
    }
    assert.isAbove(checked, 150, `${codec.name}: too few generated objects encoded`)
  })

describe("Node, Lease and Event schemas", () => {
  for (const codec of codecs) {
    it(`${codec.name}: any JSON decodes to an object or None, never a throw`, () =>
      fc.assert(
        fc.property(fc.jsonValue(), (json) => {
          const decoded = codec.decode(json)
          assert.isTrue(Option.isOption(decoded))
        }),
        runs
      ))

    it.effect(`${codec.name}: a generated object written and read back is itself`, () =>
      // the union of the three codecs is narrowed per element for the generic helper
      roundTrip(codec as Codec<unknown>))
  }

  it("a Lease's MicroTimes and an Event's eventTime leave with six fractional digits", () => {
    const lease = Option.getOrThrow(encodeLease({ spec: { renewTime: "2026-11-29T09:00:00Z", acquireTime: "2026-11-29T09:00:00.1234567Z" } }))
    assert.deepStrictEqual((lease as { spec: unknown }).spec, {
      renewTime: "2026-11-29T09:00:00.000000Z",
      acquireTime: "2026-11-29T09:00:00.123456Z"
    })
    const event = Option.getOrThrow(encodeEvent({ eventTime: "2026-11-29T09:00:00.5Z", series: { lastObservedTime: "2026-11-29T09:00:01Z" } }))
    assert.strictEqual((event as { eventTime: string }).eventTime, "2026-11-29T09:00:00.500000Z")
    assert.strictEqual((event as { series: { lastObservedTime: string } }).series.lastObservedTime, "2026-11-29T09:00:01.000000Z")
  })
})

describe("formatMicroTime", () => {
  it("pads, truncates and keeps offsets", () => {
    assert.strictEqual(formatMicroTime("2026-01-02T03:04:05Z"), "2026-01-02T03:04:05.000000Z")
    assert.strictEqual(formatMicroTime("2026-01-02T03:04:05.1234567Z"), "2026-01-02T03:04:05.123456Z")
    assert.strictEqual(formatMicroTime("2026-01-02T03:04:05.1+02:00"), "2026-01-02T03:04:05.100000+02:00")
    assert.strictEqual(formatMicroTime(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 7))), "2026-01-02T03:04:05.007000Z")
  })

  it("any text or Date: a string, never a throw; formatting twice changes nothing", () =>
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.date({ noInvalidDate: false }), fc.date({ noInvalidDate: true }).map((d) => d.toISOString())), (value) => {
        const once = formatMicroTime(value)
        assert.strictEqual(formatMicroTime(once), once)
      }),
      runs
    ))

  it("a Date past year 9999 (printed \"+010000-...\") is returned as printed, not formatted again without end", () => {
    assert.strictEqual(formatMicroTime(new Date(Date.UTC(10000, 0, 1))), "+010000-01-01T00:00:00.000Z")
    assert.strictEqual(formatMicroTime(new Date(Number.NaN)), "Invalid Date")
  })

  it("an RFC 3339 time keeps its instant to the microsecond, with exactly six digits", () =>
    fc.assert(
      fc.property(
        fc.date({ min: new Date("0001-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z"), noInvalidDate: true }),
        fc.integer({ min: 0, max: 999 }),
        fc.integer({ min: 0, max: 9 }),
        (date, micros, digits) => {
          const base = date.toISOString().slice(0, 19)
          const fraction = `${String(date.getUTCMilliseconds()).padStart(3, "0")}${String(micros).padStart(3, "0")}`
          const text = digits === 0 ? `${base}Z` : `${base}.${fraction.padEnd(9, "7").slice(0, digits)}Z`
          const formatted = formatMicroTime(text)
          assert.match(formatted, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
          const expected = digits === 0 ? "000000" : fraction.padEnd(9, "7").slice(0, Math.min(digits, 6)).padEnd(6, "0")
          assert.strictEqual(formatted, `${base}.${expected}Z`)
        }
      ),
      runs
    ))
})
