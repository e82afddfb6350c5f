/**
 * The slim Pod decode: `decodePod` reads a served Pod without the Schema walk when it has the
 * usual shape, and must give exactly what the Schema decode gives for every input (the same
 * fields in the same key order, the same None). fast-check generates the inputs: Pods drawn from
 * the Schema itself (so a field added to `Pod` and forgotten by the fast reader shows up here),
 * as the apiserver serves them, then changed (the apiserver's `null`s, unknown fields, values of
 * another type, `__proto__` keys), and any JSON at all.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import fc from "fast-check"
import { decodePod, decodePodBySchema, dropNulls, UNDECODABLE_ERROR_LIMIT, undecodablePod } from "../../src/Schemas/Pod/Decode.ts"
import { Pod } from "../../src/Schemas/Pod/Schema.ts"
import { changedOf, sentOf } from "../support/Generated.ts"

const servedPod = sentOf(Pod)
const changedPod = changedOf(servedPod, {
  others: [null, 7, "7", true, [], {}, "2026-07-28T02:15:00Z", "2026-13-28T02:15:00Z"],
  unknownField: ["unknownField", { nested: [1, null, "x"] }],
  proto: { name: "p" }
})

/** Both decodes agree: the same Option, the same Dates, and the same key order (JSON text). Each gets its own copy. */
const assertSame = (input: unknown) => {
  const fast = decodePod(structuredClone(input))
  const schema = decodePodBySchema(structuredClone(input))
  assert.deepStrictEqual(fast, schema)
  assert.strictEqual(JSON.stringify(fast), JSON.stringify(schema))
  return Option.isSome(schema)
}

/** Whether an object anywhere in `value` has a member that is `null` (what `dropNulls` drops). */
const holdsNullMember = (value: unknown): boolean =>
  typeof value === "object" && value !== null &&
  (Array.isArray(value) ? value.some(holdsNullMember) : Object.values(value).some((v) => v === null || holdsNullMember(v)))

describe("decodePod", () => {
  it("gives what the Schema decode gives, on Pods as served, changed, and on any JSON", () => {
    let readable = 0
    let unreadable = 0
    fc.assert(
      fc.property(fc.oneof({ arbitrary: servedPod, weight: 1 }, { arbitrary: changedPod, weight: 3 }, { arbitrary: fc.jsonValue(), weight: 1 }), (input) => {
        if (assertSame(input)) readable++
        else unreadable++
      }),
      { numRuns: 1500 }
    )
    // The inputs reach both outcomes (inputs that always broke the Pod would test little).
    assert.isAbove(readable, 150)
    assert.isAbove(unreadable, 150)
  })

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

  it("leaves the value it reads as it was, nulls, __proto__ keys and all", () => {
    let copied = 0
    fc.assert(
      fc.property(fc.oneof(servedPod, changedPod, fc.jsonValue()), (input) => {
        const before = structuredClone(input)
        decodePod(input)
        undecodablePod(input)
        const slim = dropNulls(input)
        assert.deepStrictEqual(input, before)
        // Only what holds a null is copied, and the copy holds none: a value without one comes
        // back itself.
        if (slim !== input) {
          copied++
          assert.isTrue(holdsNullMember(input), "copied only for a null member")
          assert.isFalse(holdsNullMember(slim), "the copy holds no null member")
        } else assert.isFalse(holdsNullMember(input))
      }),
      { numRuns: 500 }
    )
    // The inputs reach the copying path (`changedPod` puts nulls in about half the time).
    assert.isAbove(copied, 50)
    // A parsed `__proto__` key is a member like any other: kept as an own member, nulls dropped
    // inside it, the prototype of neither value touched.
    const text = `{"metadata":{"name":"p","__proto__":{"polluted":null,"kept":1}},"spec":null}`
    const input = JSON.parse(text)
    const slim = dropNulls(input)
    assert.strictEqual(JSON.stringify(input), text)
    assert.strictEqual(JSON.stringify(slim), `{"metadata":{"name":"p","__proto__":{"kept":1}}}`)
    assert.strictEqual(Object.getPrototypeOf((slim as { metadata: object }).metadata), Object.prototype)
    assert.isFalse("polluted" in {})
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
