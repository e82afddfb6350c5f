/**
 * The list reader hands over the same items a whole-body JSON.parse finds (with each item's
 * metadata.managedFields as null), in order, for any JSON the items and envelope may hold
 * (escapes, brackets and multi-byte characters inside strings, whitespace between tokens); it
 * says Malformed for a body cut short or missing a separator, and stops when told.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import fc from "fast-check"
import * as ListBody from "../../src/Kube/ListBody.ts"

const runs = { numRuns: 300 }

type Json = ReturnType<typeof JSON.parse>

/** What the reader should hand over for `item`: the item with an array/object managedFields as null. */
const expectedItem = (item: Json): Json => {
  const metadata = item?.metadata
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) return item
  const managed = metadata.managedFields
  if (typeof managed !== "object" || managed === null) return item
  return { ...item, metadata: { ...metadata, managedFields: null } }
}

const collect = (text: string) => {
  const items: Array<Json> = []
  const result = ListBody.scan(Buffer.from(text, "utf8"), (itemText) => {
    items.push(JSON.parse(itemText))
    return true
  })
  return { result, items }
}

/** Strings that stress the scan: quotes, backslashes, brackets, multi-byte characters. */
const trickyString = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.constantFrom("\"", "\\", "\\\"", "{", "}", "[", "]", ":", ",", "é", "雪", "\u{1F600}", "\u0000", "managedFields", "metadata", "items")
)
const value: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.jsonValue(),
    trickyString,
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(trickyString, tie("value"), { maxKeys: 3 })
  )
})).value
const metadataOf = fc.record(
  { name: trickyString, managedFields: value, labels: fc.dictionary(trickyString, trickyString, { maxKeys: 2 }) },
  { requiredKeys: [] }
)
const item = fc.record(
  { metadata: fc.oneof(metadataOf, value), spec: value, status: value, extra: value },
  { requiredKeys: [] }
)
const list = fc.record(
  {
    kind: fc.constant("PodList"),
    apiVersion: fc.constant("v1"),
    metadata: fc.record({ resourceVersion: fc.string(), continue: fc.string() }, { requiredKeys: [] }),
    items: fc.array(item, { maxLength: 5 })
  },
  { requiredKeys: ["items"] }
)
/** The body as the apiserver writes it (compact) or with whitespace between every token. */
const bodyOf = (value: Json, indent: number) => JSON.stringify(value, null, indent)

describe("ListBody.scan", () => {
  it("hands over each item as a whole-body parse finds it, managedFields as null, and the metadata as text", () =>
    fc.assert(
      fc.property(list, fc.constantFrom(0, 1, 2, "\t"), (value, indent) => {
        const text = JSON.stringify(value, null, indent)
        const { items, result } = collect(text)
        const whole = JSON.parse(text)
        assert.deepStrictEqual(items, whole.items.map(expectedItem))
        assert.strictEqual(result._tag, "Read")
        if (result._tag !== "Read") return
        assert.isTrue(result.items)
        assert.deepStrictEqual(result.metadata === undefined ? undefined : JSON.parse(result.metadata), whole.metadata)
      }),
      runs
    ))

  it("cuts only metadata.managedFields of an item: not one elsewhere, nor one of the list", () => {
    const served = {
      metadata: { resourceVersion: "9", managedFields: [{ manager: "list" }] },
      items: [{
        metadata: { name: "a", managedFields: [{ manager: "m", fieldsV1: { "f:status": { "f:phase": {} } } }], labels: { managedFields: "x" } },
        spec: { managedFields: [1] },
        status: { metadata: { managedFields: [2] } }
      }]
    }
    const { items, result } = collect(bodyOf(served, 0))
    assert.deepStrictEqual(items, [{
      metadata: { name: "a", managedFields: null, labels: { managedFields: "x" } },
      spec: { managedFields: [1] },
      status: { metadata: { managedFields: [2] } }
    }])
    assert.deepStrictEqual(result, { _tag: "Read", metadata: JSON.stringify(served.metadata), items: true })
  })

  it("every body cut short is Malformed", () =>
    fc.assert(
      fc.property(list, fc.nat(), (value, at) => {
        const text = bodyOf(value, 0)
        const cut = text.slice(0, at % text.length)
        assert.strictEqual(ListBody.scan(Buffer.from(cut, "utf8"), () => true)._tag, "Malformed")
      }),
      runs
    ))

  it("names what a body lacks: no items member, items that are not an array, members it cannot read", () => {
    assert.deepStrictEqual(collect(`{"kind":"Status","metadata":{}}`).result, { _tag: "Read", metadata: "{}", items: false })
    assert.deepStrictEqual(collect(`{"items":null}`).result, { _tag: "Read", metadata: undefined, items: false })
    assert.deepStrictEqual(collect(`{}`).result, { _tag: "Read", metadata: undefined, items: false })
    assert.deepStrictEqual(collect(` {"items":[]} \n`).result, { _tag: "Read", metadata: undefined, items: true })
    for (
      const malformed of [
        ``,
        `[]`,
        `{"items":[{}{}]}`,
        `{"items":[{}],}`,
        `{"items":[1]}`,
        `{"items":[{}] "kind":"PodList"}`,
        `{"kind":PodList,"items":[]}`,
        `{"items":[],"items":[]}`,
        `{"items":[]}x`,
        `{"items":[{"a":"\\"}]}`
      ]
    ) {
      assert.strictEqual(collect(malformed).result._tag, "Malformed", malformed)
    }
  })

  it("hands over items larger than its first scratch space, and a small item after a large one whole", () => {
    const big = (n: number, fill: string) => ({
      metadata: { name: fill.repeat(n), managedFields: [{ manager: "m".repeat(n) }], labels: { a: "雪".repeat(n) } },
      spec: { containers: [{ name: "main" }] }
    })
    const items = [big(5000, "x"), big(1, "y"), big(20_000, "é"), big(3, "z"), { metadata: { managedFields: {} } }]
    const { items: read, result } = collect(bodyOf({ items }, 0))
    assert.deepStrictEqual(read, items.map(expectedItem))
    assert.strictEqual(result._tag, "Read")
  })

  it("stops at the first item the caller refuses", () => {
    const seen: Array<string> = []
    const result = ListBody.scan(Buffer.from(`{"items":[{"n":1},{"n":2},{"n":3}]}`), (text) => {
      seen.push(text)
      return seen.length < 2
    })
    assert.deepStrictEqual(result, { _tag: "Stopped" })
    assert.deepStrictEqual(seen, [`{"n":1}`, `{"n":2}`])
  })
})

describe("ListBody.readList", () => {
  const names = (json: unknown) =>
    typeof json === "object" && json !== null && "n" in json && typeof json.n === "number" ? Option.some(json.n) : Option.none()

  it("decodes every item in order, with the metadata as text and whether the list had items", () => {
    assert.deepStrictEqual(ListBody.readList(Buffer.from(`{"metadata":{"resourceVersion":"7"},"items":[{"n":1},{"n":2}]}`), names), {
      _tag: "Read",
      items: [1, 2],
      metadata: `{"resourceVersion":"7"}`,
      hasItems: true
    })
    assert.deepStrictEqual(ListBody.readList(Buffer.from(`{"kind":"Status"}`), names), {
      _tag: "Read",
      items: [],
      metadata: undefined,
      hasItems: false
    })
  })

  it("an item the decoder refuses is Undecodable; an item that is not JSON, or a body of another shape, is Malformed", () => {
    assert.deepStrictEqual(ListBody.readList(Buffer.from(`{"items":[{"n":1},{"n":"two"},{"n":3}]}`), names), { _tag: "Undecodable" })
    // balanced and separated, as the scan checks, but not JSON inside: the item's own parse refuses it
    assert.deepStrictEqual(ListBody.readList(Buffer.from(`{"items":[{"n":1},{"n":tru}]}`), names), { _tag: "Malformed" })
    assert.deepStrictEqual(ListBody.readList(Buffer.from(`{"items":[{"n":1}`), names), { _tag: "Malformed" })
  })
})
