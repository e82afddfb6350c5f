/**
 * The Pod list read as its bytes arrive (`podListReader`, over `ListBody`) is the list its Schema
 * reads (`podListOfJson` on the whole body's JSON.parse): the same Pods in order, the same
 * undecodable ones (INF-1), the same resourceVersion, or the same refusal (not a list, no items),
 * for lists of generated Pods, changed Pods and any JSON, cut into chunks anywhere and broken by
 * byte edits. Where the two may differ is stated as a rule below and checked exactly.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { type PodListReading, podListOfJson, podListOfRead, podListReader } from "../../src/Kube/PodList.ts"
import { Pod } from "../../src/Schemas/Pod/Schema.ts"
import { anyCuts, anyEdits, applyEdits, cutsFor, type Edit, pushChunks, tokenEdits } from "../support/BodyBytes.ts"
import { changedOf, type Json, sentOf } from "../support/Generated.ts"

/** The fast reader: the body pushed in chunks. */
const streamed = (body: Buffer, cuts: ReadonlyArray<number>): PodListReading => podListOfRead(pushChunks(podListReader(), body, cuts))
/** The Schema reading: the whole body's text parsed, then its Schema. */
const bySchema = (body: Buffer): PodListReading => {
  let json: unknown
  try {
    json = JSON.parse(body.toString("utf8"))
  } catch {
    return { _tag: "NotAList" }
  }
  return podListOfJson(json)
}

/** Bytes of a JSON string's inside as sent, escapes and raw bytes included (no quote ends it early). */
const stringInside = fc.array(
  fc.oneof(
    fc.integer({ min: 0, max: 0xff }).filter((b) => b !== 0x22 && b !== 0x5c).map((b) => [b]),
    fc.integer({ min: 0, max: 0xff }).map((b) => [0x5c, b]),
    fc.constantFrom([0x5c, 0x22], [0x5c, 0x5c]),
    fc.constantFrom(..."\\u0069tems \\u006detadata items metadata".split(" ").map((text) => Array.from(Buffer.from(text))))
  ),
  { maxLength: 6 }
).map((pieces) => Buffer.from(pieces.flat()))
/** Bracket-balanced bytes (brackets of either kind) with strings and other bytes inside: not always JSON. */
const balanced: fc.Arbitrary<Buffer> = fc.letrec<{ value: Buffer }>((tie) => ({
  value: fc.tuple(
    fc.constantFrom(0x5b, 0x7b),
    fc.array(
      fc.oneof(
        { depthSize: "small" },
        fc.uint8Array({ maxLength: 4 }).map((bytes) => Buffer.from(bytes.filter((b) => ![0x22, 0x5c, 0x5b, 0x5d, 0x7b, 0x7d].includes(b)))),
        stringInside.map((inside) => Buffer.concat([Buffer.from(`"`), inside, Buffer.from(`"`)])),
        tie("value")
      ),
      { maxLength: 4 }
    ),
    fc.constantFrom(0x5d, 0x7d)
  ).map(([open, inside, close]) => Buffer.concat([Buffer.from([open]), ...inside, Buffer.from([close])]))
})).value

/** A member's name as sent: text (JSON.stringify writes it), or raw bytes between its quotes (escapes, control bytes). */
type Name = string | { readonly raw: Buffer }
/** An item, and the metadata.managedFields put in it when its metadata is an object: JSON, raw bytes, or none. */
interface Item {
  readonly json: Json
  readonly managed: Json | { readonly raw: Buffer } | undefined
}
type Member = { readonly name: Name; readonly value: Json } | { readonly name: Name; readonly items: ReadonlyArray<Item> }
type Indent = 0 | 1 | "\t"

const isRaw = (value: unknown): value is { readonly raw: Buffer } =>
  typeof value === "object" && value !== null && "raw" in value && Buffer.isBuffer(value.raw)
const isObject = (value: unknown): value is { [key: string]: Json } => typeof value === "object" && value !== null && !Array.isArray(value)
const MARK = "\u0001managedFields\u0001"

/**
 * The envelope written out. `sent`: as the fast reader gets it, raw managedFields values included.
 * `meant`: what the stated rule says it reads: a raw managedFields value as `null`. `lenient`:
 * where the fast reader checks less than JSON.parse (the managedFields arrays and objects): byte
 * edits are kept out of them.
 * `tokens`: the envelope's and the items array's own brackets, commas, colons and quotes, and
 * each item's first and last byte.
 */
const write = (members: ReadonlyArray<Member>, indent: Indent, view: "sent" | "meant") => {
  const parts: Array<Buffer> = []
  const lenient: Array<readonly [number, number]> = []
  const tokens: Array<number> = []
  let at = 0
  const put = (bytes: Buffer | string, isLenient = false) => {
    const buffer = typeof bytes === "string" ? Buffer.from(bytes, "utf8") : bytes
    if (isLenient) lenient.push([at, at + buffer.length])
    parts.push(buffer)
    at += buffer.length
  }
  const token = (text: string) => {
    for (const [i, c] of [...text].entries()) if (c.trim() !== "") tokens.push(at + i)
    put(text)
  }
  const space = indent === 0 ? "" : "\n"
  const json = (value: Json) => JSON.stringify(value, null, indent)
  const putItem = (item: Item) => {
    const { managed } = item
    if (managed === undefined || !isObject(item.json) || !isObject(item.json["metadata"])) return put(json(item.json))
    const text = json({ ...item.json, metadata: { ...item.json["metadata"], managedFields: MARK } })
    const [head, tail, ...more] = text.split(JSON.stringify(MARK))
    assert.strictEqual(more.length, 0)
    put(head!)
    if (isRaw(managed)) put(view === "sent" ? managed.raw : "null", true)
    else put(json(managed), typeof managed === "object" && managed !== null)
    put(tail!)
  }
  token("{")
  members.forEach((member, i) => {
    token(`${i === 0 ? "" : ","}${space}"`)
    const { name } = member
    put(isRaw(name) ? name.raw : JSON.stringify(name).slice(1, -1))
    token(`":${space}`)
    if ("value" in member) return put(json(member.value))
    token("[")
    member.items.forEach((item, j) => {
      token(j === 0 ? space : `,${space}`)
      const start = at
      putItem(item)
      tokens.push(start, at - 1)
    })
    token("]")
  })
  token(`${space}}`)
  return { body: Buffer.concat(parts), lenient, tokens }
}

const servedPod = sentOf(Pod)
const changedPod = changedOf(servedPod, {
  others: [null, 7, "7", true, [], {}, "2026-07-28T02:15:00Z"],
  unknownField: ["unknownField", { nested: [1, null, "x"] }],
  proto: { name: "p" }
})
/**
 * A served Pod with one metadata field of another type (a Pod the slim Pod refuses, INF-1), or
 * with a `managedFields` member where the fast reader must not cut it.
 */
const refusedPod = fc.tuple(
  servedPod,
  fc.constantFrom<[string, Json]>(
    ["name", 7],
    ["namespace", []],
    ["labels", { team: 7 }],
    ["uid", true],
    ["labels", { managedFields: [{ manager: "m" }] }],
    ["annotations", { managedFields: "x" }],
    ["ownerReferences", [{ managedFields: [] }]]
  )
)
  .map(([pod, [field, value]]) => isObject(pod) ? { ...pod, metadata: { ...(isObject(pod["metadata"]) ? pod["metadata"] : {}), [field]: value } } : pod)
const managedJson = fc.oneof(
  fc.array(fc.record({ manager: fc.string(), operation: fc.constantFrom("Update", "Apply"), fieldsV1: fc.dictionary(fc.string(), fc.constant({})) }), {
    maxLength: 2
  }),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>
)
const item = (raw: boolean): fc.Arbitrary<Item> =>
  fc.record({
    json: fc.oneof(
      { arbitrary: servedPod, weight: 4 },
      { arbitrary: changedPod, weight: 2 },
      { arbitrary: refusedPod, weight: 2 },
      { arbitrary: fc.jsonValue() as fc.Arbitrary<Json>, weight: 1 }
    ),
    managed: raw
      ? fc.oneof(fc.constant(undefined), managedJson, { arbitrary: balanced.map((bytes) => ({ raw: bytes })), weight: 3 })
      : fc.oneof(fc.constant(undefined), managedJson)
  })
const listMetadata = fc.oneof(
  { arbitrary: fc.record({ resourceVersion: fc.string(), continue: fc.string() }, { requiredKeys: [] }), weight: 4 },
  { arbitrary: fc.constantFrom(null, { resourceVersion: null }, { resourceVersion: 7 }, [], "9"), weight: 1 }
)
const envelopeValue = fc.oneof(fc.constantFrom("PodList", "v1", "Status"), fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>)
/** An envelope: some of its usual members in any order, mostly with items; names raw now and then when `raw`. */
const envelope = (raw: boolean): fc.Arbitrary<Array<Member>> =>
  fc.tuple(
    fc.uniqueArray(fc.constantFrom("kind", "apiVersion", "metadata", "continue", "__proto__"), { maxLength: 4 }),
    fc.array(envelopeValue, { minLength: 4, maxLength: 4 }),
    listMetadata,
    fc.oneof(
      { arbitrary: fc.array(item(raw), { maxLength: 4 }).map((items) => ({ items })), weight: 6 },
      { arbitrary: envelopeValue.map((value) => ({ value })), weight: 1 },
      { arbitrary: fc.constant(undefined), weight: 1 }
    ),
    fc.nat(4),
    raw ? fc.array(fc.tuple(fc.nat(5), stringInside, envelopeValue), { maxLength: 2 }) : fc.constant([])
  ).map(([names, values, metadata, items, itemsAt, raws]) => {
    const members = names.map((name, i): Member => ({ name, value: name === "metadata" ? metadata : values[i]! }))
    if (items !== undefined) members.splice(Math.min(itemsAt, members.length), 0, { name: "items", ...items })
    for (const [at, bytes, value] of raws) {
      // a second items or metadata member is the rule of its own below
      if (["items", "metadata"].includes(String(parseName(bytes)))) continue
      members.splice(Math.min(at, members.length), 0, { name: { raw: bytes }, value })
    }
    return members
  })
/** What JSON.parse makes of a name's bytes (undefined when it refuses them). */
const parseName = (inside: Buffer): unknown => {
  try {
    return JSON.parse(Buffer.concat([Buffer.from(`"`), inside, Buffer.from(`"`)]).toString("utf8"))
  } catch {
    return undefined
  }
}
const indent = fc.constantFrom<Indent>(0, 1, "\t")

describe("the Pod list read as it arrives is the list its Schema reads", () => {
  it("for well-formed bodies: generated, changed and any JSON, in any chunks", () => {
    const seen = { Read: 0, NotAList: 0, NoItems: 0, undecodable: 0 }
    fc.assert(
      fc.property(envelope(false), indent, anyCuts, (members, indent, cuts) => {
        const { body } = write(members, indent, "sent")
        const expected = bySchema(body)
        assert.deepStrictEqual(streamed(body, cutsFor(body, cuts)), expected)
        seen[expected._tag]++
        if (expected._tag === "Read") seen.undecodable += expected.list.undecodable.length
      }),
      { numRuns: 400 }
    )
    // every outcome is reached often enough to mean something
    assert.isAbove(seen.Read, 150)
    assert.isAbove(seen.NotAList, 25)
    assert.isAbove(seen.NoItems, 40)
    assert.isAbove(seen.undecodable, 50)
  })

  it("for bodies broken by byte edits outside the lenient place below, in any chunks", () => {
    let read = 0
    fc.assert(
      fc.property(envelope(false), indent, fc.oneof(anyEdits, tokenEdits), anyCuts, (members, indent, edits, cuts) => {
        const { body, lenient, tokens } = write(members, indent, "sent")
        const broken = applyEdits(body, edits, lenient, tokens)
        const expected = bySchema(broken)
        assert.deepStrictEqual(streamed(broken, cutsFor(broken, cuts)), expected)
        if (expected._tag === "Read") read++
      }),
      { numRuns: 1000 }
    )
    assert.isAbove(read, 60)
  })

  it("for every single edit of the envelope's and the items array's tokens", () => {
    const bytes = [0x7b, 0x7d, 0x5b, 0x5d, 0x2c, 0x3a, 0x22, 0x20]
    let read = 0
    fc.assert(
      fc.property(envelope(false), indent, (members, indent) => {
        const { body, lenient, tokens } = write(members, indent, "sent")
        for (const at of tokens) {
          const edits: Array<Edit> = [
            { at, onToken: false, kind: "delete", byte: 0 },
            ...bytes.flatMap((byte): Array<Edit> => [{ at, onToken: false, kind: "insert", byte }, { at, onToken: false, kind: "replace", byte }])
          ]
          for (const edit of edits) {
            const broken = applyEdits(body, [edit], lenient, tokens)
            const expected = bySchema(broken)
            assert.deepStrictEqual(streamed(broken, []), expected)
            if (expected._tag === "Read") read++
          }
        }
      }),
      { numRuns: 40 }
    )
    assert.isAbove(read, 100)
  })

  // The rule where the fast reader checks less than JSON.parse, for speed (most of a served Pod's
  // metadata): an item's metadata.managedFields array or object is only bracket-balanced, never
  // parsed, and reaches the Pod reader as null. Names sent with escapes or raw bytes are read as
  // JSON.parse reads them.
  it("rule: managedFields is skipped; otherwise as the Schema reads it, names of any bytes included", () => {
    let raw = 0
    let odd = 0
    fc.assert(
      fc.property(envelope(true), indent, anyCuts, (members, indent, cuts) => {
        const sent = write(members, indent, "sent").body
        const meant = write(members, indent, "meant").body
        if (!sent.equals(meant)) raw++
        if (members.some(({ name }) => isRaw(name))) odd++
        assert.deepStrictEqual(streamed(sent, cutsFor(sent, cuts)), bySchema(meant))
      }),
      { numRuns: 400 }
    )
    assert.isAbove(raw, 50)
    assert.isAbove(odd, 150)
  })

  // An envelope member given twice, which the apiserver never sends, is read by a rule of its own:
  // a second `items` array is not a list; after an `items` array, another `items` value is read
  // as any other member (JSON.parse keeps the last); of two `metadata`, only the last is read (the
  // first not even parsed). Any other member given twice is read as JSON.parse reads it.
  it("rule: an envelope member given twice", () => {
    const body = (text: string) => Buffer.from(text, "utf8")
    const pod = JSON.stringify({ metadata: { name: "a", namespace: "x" } })
    const list = (items: Array<unknown>, resourceVersion = "") => ({ _tag: "Read", list: { items, undecodable: [], resourceVersion } })
    const cases: Array<[string, unknown, unknown]> = [
      [`{"items":[],"items":[]}`, { _tag: "NotAList" }, list([])],
      [`{"items":[${pod}],"kind":"PodList","items":[]}`, { _tag: "NotAList" }, list([])],
      [`{"items":[${pod}],"\\u0069tems":[]}`, { _tag: "NotAList" }, list([])],
      [`{"items":[${pod}],"items":null}`, list([{ metadata: { name: "a", namespace: "x" } }]), { _tag: "NoItems" }],
      [`{"items":null,"items":[]}`, list([]), list([])],
      [`{"metadata":{"resourceVersion":"1"},"items":[],"metadata":{"resourceVersion":"2"}}`, list([], "2"), list([], "2")],
      [`{"metadata":tru,"items":[],"metadata":{"resourceVersion":"2"}}`, list([], "2"), { _tag: "NotAList" }],
      [`{"kind":"A","items":[],"kind":"B"}`, list([]), list([])],
      [`{"kind":"A","items":[],"kind":B}`, { _tag: "NotAList" }, { _tag: "NotAList" }]
    ]
    for (const [text, fast, schema] of cases) {
      for (const cuts of [[], cutsFor(body(text), "every byte")]) assert.deepStrictEqual(streamed(body(text), cuts), fast, text)
      assert.deepStrictEqual(bySchema(body(text)), schema, text)
    }
  })
})
