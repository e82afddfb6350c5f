/**
 * The slim Pod decode: `decodePod` reads a served Pod without the Schema walk when it has the
 * usual shape, and must give exactly what the Schema decode gives for every input (the same
 * fields in the same key order, the same None). Compared on Pods generated from the Schema itself
 * (so a field added to `Pod` and forgotten by the fast readers shows up here), with the
 * apiserver's `null`s, unknown fields and wrong types sprinkled in.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Option, Schema } from "effect"
import fc from "fast-check"
import { decodePod, decodePodBySchema, Pod, UNDECODABLE_ERROR_LIMIT, undecodablePod } from "../../src/Schemas/Pod.ts"

/** A small deterministic generator (the mutations must be the same on every run). */
const prng = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0
    return state / 2 ** 32
  }
}

type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }

/** Copies `value`, changing some members: a `null`, an unknown field, a value of another type, or a `__proto__` key. */
const mutate = (value: Json, random: () => number, rate: number): Json => {
  if (Array.isArray(value)) return value.map((item) => (random() < rate / 4 ? null : mutate(item, random, rate)))
  if (value === null || typeof value !== "object") {
    if (random() >= rate / 4) return value
    const others: Array<Json> = [null, 7, "7", true, [], {}, "2026-07-28T02:15:00Z", "2026-13-28T02:15:00Z"]
    return others[Math.floor(random() * others.length)]!
  }
  const out: { [key: string]: Json } = {}
  for (const [key, field] of Object.entries(value)) {
    const roll = random()
    if (roll < rate / 3) out[key] = null
    else out[key] = mutate(field, random, rate)
  }
  if (random() < rate) out["unknownField"] = { nested: [1, null, "x"] }
  if (random() < rate / 10) Object.defineProperty(out, "__proto__", { value: { name: "p" }, enumerable: true, writable: true, configurable: true })
  return out
}

// Dates past year 9999 or before year 0 do not print as the apiserver's RFC 3339: such Pods are skipped.
const encode = Schema.encodeOption(Pod)

/** Both decodes agree: the same Option, the same Dates, and the same key order (JSON text). */
const assertSame = (input: unknown) => {
  const fast = decodePod(input)
  const schema = decodePodBySchema(input)
  assert.deepStrictEqual(fast, schema)
  assert.strictEqual(JSON.stringify(fast), JSON.stringify(schema))
}

describe("decodePod", () => {
  it.effect("gives what the Schema decode gives, on generated Pods as served and mutated", () =>
    Effect.gen(function*() {
      const pods = yield* Arbitrary.sampleEffect(Arbitrary.schema(Pod), { count: 400, seed: 18, size: 4 })
      const random = prng(18)
      let readable = 0
      let unreadable = 0
      let encoded = 0
      for (const pod of pods) {
        const wire = encode(pod)
        if (Option.isNone(wire)) continue
        encoded++
        const served = JSON.parse(JSON.stringify(wire.value)) as Json
        assertSame(served)
        for (const rate of [0.05, 0.2, 0.5]) {
          const mutated = mutate(served, random, rate)
          assertSame(mutated)
          if (Option.isSome(decodePodBySchema(mutated))) readable++
          else unreadable++
        }
      }
      // The mutations reach both outcomes (a mutation that always broke the Pod would test little).
      assert.isAbove(encoded, 200)
      assert.isAbove(readable, 100)
      assert.isAbove(unreadable, 100)
    }))

  it("reads a served Pod with the apiserver's nulls and the fields it does not keep", () => {
    const served = {
      kind: "Pod",
      apiVersion: "v1",
      metadata: {
        name: "web",
        namespace: "team-a",
        uid: "u-1",
        resourceVersion: "42",
        creationTimestamp: "2026-07-28T02:15:00Z",
        deletionTimestamp: null,
        labels: { app: "web", gone: null },
        managedFields: [{ manager: "kubelet", time: "2026-07-28T02:15:00Z", fieldsV1: { "f:status": {} } }]
      },
      spec: { nodeName: "vk", containers: [{ name: "main", image: "python", resources: {} }], tolerations: null, dnsPolicy: "ClusterFirst" },
      status: {
        phase: "Running",
        conditions: [{ type: "Ready", status: "True", lastProbeTime: null, lastTransitionTime: "2026-07-28T02:15:01Z" }],
        startTime: "2026-07-28T02:15:00Z",
        containerStatuses: [{ name: "main", ready: true, restartCount: 0, image: "python", imageID: "x", state: { running: { startedAt: null } } }]
      }
    }
    assert.deepStrictEqual(
      decodePod(served),
      Option.some({
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: "web",
          namespace: "team-a",
          uid: "u-1",
          resourceVersion: "42",
          creationTimestamp: new Date("2026-07-28T02:15:00Z"),
          labels: { app: "web" }
        },
        spec: { nodeName: "vk", containers: [{ name: "main", image: "python" }] },
        status: {
          phase: "Running",
          conditions: [{ type: "Ready", status: "True", lastTransitionTime: new Date("2026-07-28T02:15:01Z") }],
          startTime: new Date("2026-07-28T02:15:00Z"),
          containerStatuses: [{ name: "main", ready: true, restartCount: 0, image: "python", imageID: "x", state: { running: {} } }]
        }
      })
    )
    assertSame(served)
  })

  it("reads a time as the Schema does, in range or not: whole seconds, leap days, years before 100, hour 24, second 60", () => {
    // two digits, biased to the edges of each field's range (and past them)
    const pair = fc.oneof(
      fc.integer({ min: 0, max: 99 }),
      fc.constantFrom(0, 1, 12, 13, 19, 20, 23, 24, 28, 29, 30, 31, 32, 59, 60, 99)
    ).map((n) => String(n).padStart(2, "0"))
    const wireTime = fc.tuple(pair, pair, pair, pair, pair, pair, pair).map(([c, y, mo, d, h, mi, s]) => `${c}${y}-${mo}-${d}T${h}:${mi}:${s}Z`)
    // the fast path's exact shape, or one step from it: a fraction, an offset, lower case, a letter for a digit
    const nearTime = fc.tuple(wireTime, fc.constantFrom("", ".5Z", "+01:00", "lower", "letter", "short")).map(([t, change]) =>
      change === "" ? t
      : change === "lower" ? t.toLowerCase()
      : change === "letter" ? `${t.slice(0, 6)}x${t.slice(7)}`
      : change === "short" ? t.slice(1)
      : `${t.slice(0, -1)}${change}`
    )
    fc.assert(
      fc.property(nearTime, (time) => {
        const served = { metadata: { creationTimestamp: time }, status: { startTime: time, conditions: [{ type: "Ready", status: "True", lastTransitionTime: time }] } }
        assertSame(served)
      }),
      { numRuns: 3000 }
    )
    // the instants themselves, not only agreement: a leap day, the first year the fast path reads, the last second of a year
    for (const time of ["2024-02-29T23:59:59Z", "0100-03-01T00:00:00Z", "1999-12-31T23:59:59Z", "1969-07-20T20:17:40Z"]) {
      const pod = decodePod({ metadata: { creationTimestamp: time } })
      assert.deepStrictEqual(Option.map(pod, (p) => p.metadata?.creationTimestamp?.getTime()), Option.some(new Date(time).getTime()), time)
    }
  })

  it("refuses what the Schema refuses", () => {
    for (
      const bad of [
        null,
        [],
        "pod",
        { metadata: [] },
        { spec: {} },
        { spec: { containers: [null] } },
        { metadata: { creationTimestamp: "2026-13-28T02:15:00Z" } },
        { metadata: { creationTimestamp: "yesterday" } },
        { metadata: { labels: { app: 7 } } },
        { status: { containerStatuses: [{ name: "main" }] } }
      ]
    ) {
      assert.isTrue(Option.isNone(decodePod(bad)), JSON.stringify(bad))
      assertSame(bad)
    }
  })
})

describe("undecodablePod (INF-1)", () => {
  it("names a refused Pod by its metadata and says why, scrubbed of credentials and control characters", () => {
    const token = "0123456789abcdef0123456789abcdef"
    const json = {
      metadata: { namespace: "team-a", name: "p", uid: "u-1", resourceVersion: "42", labels: { [`${token}\nforged`]: 7 } },
      spec: { containers: [{ name: "main" }] }
    }
    assert.isTrue(Option.isNone(decodePod(json)))
    const seen = undecodablePod(json)
    assert.deepStrictEqual(
      { namespace: seen.namespace, name: seen.name, uid: seen.uid, resourceVersion: seen.resourceVersion },
      { namespace: "team-a", name: "p", uid: "u-1", resourceVersion: "42" }
    )
    assert.match(seen.error, /labels/)
    assert.notInclude(seen.error, token)
    assert.include(seen.error, "[redacted]")
    assert.notMatch(seen.error, /[\n\r]/)
    assert.isAtMost(seen.error.length, UNDECODABLE_ERROR_LIMIT + 1)
  })

  it("metadata that is not readable leaves the identity empty, never throws", () => {
    assert.deepStrictEqual(
      [undecodablePod(null), undecodablePod({ metadata: { name: 5, namespace: ["x"] } })].map((p) => [p.namespace, p.name, p.uid]),
      [["", "", ""], ["", "", ""]]
    )
  })
})
