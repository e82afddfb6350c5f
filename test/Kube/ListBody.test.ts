/**
 * The list reader hands over the same items a whole-body JSON.parse finds (with each item's
 * metadata.managedFields as null), in order, for any JSON the items and envelope may hold
 * (escapes, brackets and multi-byte characters inside strings, whitespace between tokens); it
 * says Malformed for a body cut short or missing a separator, and stops when told. Read chunk by
 * chunk, it gives exactly what it gives for the whole body pushed as one buffer, for any body,
 * broken ones included, cut anywhere. That the Pod list it reads is the one the list's Schema
 * reads is proven in PodListSchema.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import fc from "fast-check"
import * as ListBody from "../../src/Kube/ListBody.ts"
import { anyCuts, anyEdits, applyEdits, cutsFor, pushChunks } from "../support/BodyBytes.ts"

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
    // member names are read as JSON.parse reads them: escapes decoded, a raw control byte or a bad escape refused
    assert.deepStrictEqual(collect(`{"\\u0069tems":[{"n":1}],"meta\\u0064ata":{}}`), { result: { _tag: "Read", metadata: "{}", items: true }, items: [{ n: 1 }] })
    for (
      const malformed of [
        ``,
        `[]`,
        `{"items":[{}{}]}`,
        `{"items":[{}],}`,
        `{"items":[{},]}`,
        `{"items":[,{}]}`,
        `{"items":[1]}`,
        `{"items":[{}] "kind":"PodList"}`,
        `{"kind":PodList,"items":[]}`,
        `{"items":[],"items":[]}`,
        `{"items":[]}x`,
        `{"ki\nnd":1,"items":[]}`,
        `{"k\\x":1,"items":[]}`,
        `{"k\\u00e":1,"items":[]}`,
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
  const refused = (json: unknown) => JSON.stringify(json)

  it("decodes every item in order, with the metadata as text and whether the list had items", () => {
    assert.deepStrictEqual(ListBody.readList(Buffer.from(`{"metadata":{"resourceVersion":"7"},"items":[{"n":1},{"n":2}]}`), names, refused), {
      _tag: "Read",
      items: [1, 2],
      undecodable: [],
      metadata: `{"resourceVersion":"7"}`,
      hasItems: true
    })
    assert.deepStrictEqual(ListBody.readList(Buffer.from(`{"kind":"Status"}`), names, refused), {
      _tag: "Read",
      items: [],
      undecodable: [],
      metadata: undefined,
      hasItems: false
    })
  })

  it("INF-1: an item the decoder refuses is handed to `undecodable` and the read goes on; an item that is not JSON, or a body of another shape, is Malformed", () => {
    assert.deepStrictEqual(ListBody.readList(Buffer.from(`{"items":[{"n":1},{"n":"two"},{"n":3},{"m":4}]}`), names, refused), {
      _tag: "Read",
      items: [1, 3],
      undecodable: [`{"n":"two"}`, `{"m":4}`],
      metadata: undefined,
      hasItems: true
    })
    // balanced and separated, as the scan checks, but not JSON inside: the item's own parse refuses it
    assert.deepStrictEqual(ListBody.readList(Buffer.from(`{"items":[{"n":1},{"n":tru}]}`), names, refused), { _tag: "Malformed" })
    assert.deepStrictEqual(ListBody.readList(Buffer.from(`{"items":[{"n":1}`), names, refused), { _tag: "Malformed" })
  })
})

/** Items and outcome of the chunked scan and of the whole body pushed as one buffer, with a callback refusing item `stopAt`. */
const bothScans = (body: Buffer, cuts: ReadonlyArray<number>, stopAt: number) => {
  const scanBy = (run: (item: (text: string) => boolean) => ListBody.ListScan) => {
    const items: Array<string> = []
    const result = run((text) => {
      items.push(text)
      return items.length !== stopAt
    })
    return { items, result }
  }
  return {
    chunked: scanBy((item) => pushChunks(ListBody.scanner(item), body, cuts)),
    whole: scanBy((item) => ListBody.scan(body, item))
  }
}

/** A list body, or one broken by a few byte edits (a token lost or doubled, a UTF-8 sequence cut, trailing garbage). */
const anyBody = fc.tuple(list, fc.constantFrom(0, 1, "\t"), anyEdits).map(([value, indent, edits]) =>
  applyEdits(Buffer.from(JSON.stringify(value, null, indent), "utf8"), edits)
)

describe("ListBody.scanner, chunk by chunk", () => {
  it("hands over the same items, metadata and outcome as for the whole body in one buffer, for any body cut anywhere", () =>
    fc.assert(
      fc.property(anyBody, anyCuts, fc.nat({ max: 6 }), (body, cuts, stopAt) => {
        const { chunked, whole } = bothScans(body, cutsFor(body, cuts), stopAt)
        assert.deepStrictEqual(chunked, whole)
      }),
      { numRuns: 1000 }
    ))

  it("a body with every kind of string content gives the same for each place one cut can fall, and cut after every byte", () => {
    const tricky = ["\\", "\"", "\\\"", "q\\", "é", "雪", "\u{1F600}", "\u0000", "}]{[", "\\u00e9", "managedFields"].join(" ")
    const served = {
      kind: "PodList",
      [tricky]: tricky,
      metadata: { resourceVersion: "9", [tricky]: tricky },
      items: [
        { metadata: { name: tricky, managedFields: [{ manager: tricky, fieldsV1: { [tricky]: {} } }], labels: { [tricky]: tricky } } },
        { metadata: { managedFields: tricky }, spec: { managedFields: [tricky] } },
        { metadata: { managedFields: { [tricky]: [[tricky], {}] } }, status: tricky }
      ]
    }
    for (const indent of [0, 2]) {
      const body = Buffer.from(JSON.stringify(served, null, indent), "utf8")
      const expected = bothScans(body, [], 0).whole
      assert.strictEqual(expected.result._tag, "Read")
      assert.deepStrictEqual(expected.items.map((text) => JSON.parse(text)), served.items.map(expectedItem))
      for (let cut = 0; cut <= body.length; cut++) assert.deepStrictEqual(bothScans(body, [cut], 0).chunked, expected, `cut at ${cut}`)
      assert.deepStrictEqual(bothScans(body, cutsFor(body, "every byte"), 0).chunked, expected)
    }
  })

  it("an item is handed over as soon as its closing brace has come, before the rest of the body", () => {
    const seen: Array<string> = []
    const reader = ListBody.scanner((text) => {
      seen.push(text)
      return true
    })
    assert.isTrue(reader.push(Buffer.from(`{"metadata":{},"items":[{"n":"a`)))
    assert.deepStrictEqual(seen, [])
    assert.isTrue(reader.push(Buffer.from(`b"}`)))
    assert.deepStrictEqual(seen, [`{"n":"ab"}`])
    assert.isTrue(reader.push(Buffer.from(`,{"n":2}`)))
    assert.deepStrictEqual(seen, [`{"n":"ab"}`, `{"n":2}`])
    assert.isTrue(reader.push(Buffer.from(`]}`)))
    assert.deepStrictEqual(reader.end(), { _tag: "Read", metadata: "{}", items: true })
  })

  it("says so as soon as the outcome is known: a refused item or a broken byte ends the read there", () => {
    const stopped = ListBody.scanner((text) => text !== `{"n":2}`)
    assert.isTrue(stopped.push(Buffer.from(`{"items":[{"n":1},`)))
    assert.isFalse(stopped.push(Buffer.from(`{"n":2},{"n":3}`)))
    assert.isFalse(stopped.push(Buffer.from(`]}`)))
    assert.deepStrictEqual(stopped.end(), { _tag: "Stopped" })
    const broken = ListBody.scanner(() => true)
    assert.isTrue(broken.push(Buffer.from(`{"items":[{"n":1}`)))
    assert.isFalse(broken.push(Buffer.from(` {"n":2}]}`)))
    assert.deepStrictEqual(broken.end(), { _tag: "Malformed" })
    // an item never ended is Malformed only once the body has ended
    const unended = ListBody.scanner(() => true)
    assert.isTrue(unended.push(Buffer.from(`{"items":[{"n":"`)))
    assert.isTrue(unended.push(Buffer.from("x".repeat(100_000))))
    assert.deepStrictEqual(unended.end(), { _tag: "Malformed" })
  })

  it("listReader decodes chunk by chunk exactly as readList decodes the whole body", () => {
    const refused = (json: unknown) => JSON.stringify(json)
    const decode = (json: unknown) =>
      typeof json === "object" && json !== null && !("extra" in json) ? Option.some(json) : Option.none()
    fc.assert(
      fc.property(anyBody, anyCuts, (body, cuts) => {
        assert.deepStrictEqual(pushChunks(ListBody.listReader(decode, refused), body, cutsFor(body, cuts)), ListBody.readList(body, decode, refused))
      }),
      runs
    )
  })
})
