import { assert, describe, it } from "@effect/vitest"
import { DateTime, Option, Redacted } from "effect"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import { encodeClaimsFile } from "../../src/Schemas/ClaimsFile/Encode.ts"
import { readWrittenText } from "../../src/Schemas/ClaimsFile/Reader.ts"
import { type ClaimId, type PodKey, podKeyOf } from "../../src/Schemas/Ids.ts"
import { makeClaimsEncoder } from "../../src/Store/ClaimsEncoder.ts"

const record = (n: number): ClaimRecord => ({
  id: `sb_${n.toString(16).padStart(16, "0")}` as ClaimId,
  token: Redacted.make(`tok-${n}`),
  address: "10.0.0.1:7777",
  podUID: `uid-${n}`,
  claimedAt: Option.some(DateTime.makeUnsafe(Date.UTC(2026, 6, 27, 2, 15, n % 60))),
  deadline: Option.none()
})
const key = (n: number): PodKey => podKeyOf("ns", `pod-${n}`)
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")

describe("ClaimsEncoder", () => {
  it("a fresh table is {\"claims\":{}}, and so is a table emptied after rows", () => {
    const encode = makeClaimsEncoder()
    assert.strictEqual(text(encode(new Map())), `{"claims":{}}`)
    assert.strictEqual(text(encode(new Map([[key(1), record(1)]]))), encodeClaimsFile(new Map([[key(1), record(1)]])))
    assert.strictEqual(text(encode(new Map())), `{"claims":{}}`)
  })

  it("rows come out sorted by key whatever order the map iterates in", () => {
    const encode = makeClaimsEncoder()
    const rows = new Map<PodKey, ClaimRecord>([[key(9), record(9)], [key(1), record(1)], [key(5), record(5)]])
    const out = JSON.parse(text(encode(rows))) as { claims: Record<string, unknown> }
    assert.deepStrictEqual(Object.keys(out.claims), [key(1), key(5), key(9)])
  })

  it("the top-level members after claims follow the claims object, and can change between calls", () => {
    const encode = makeClaimsEncoder()
    const rows = new Map([[key(1), record(1)], [key(2), record(2)]])
    for (const other of ["", `"intents":{}`, `"intents":{"ns/x":{"uid":"u"}},"format":2`, ""]) {
      assert.strictEqual(text(encode(rows, other)), encodeClaimsFile(rows, other), other)
    }
    assert.isTrue(text(encode(rows, `"format":2`)).endsWith(`}},"format":2}`))
  })

  it("a row's unknown fields are written after its known ones", () => {
    const encode = makeClaimsEncoder()
    const rows = new Map([[key(1), { ...record(1), unknownFields: `"n":1` }]])
    assert.include(text(encode(rows)), `"claimedAt":"2026-07-27T02:15:01Z","n":1}`)
  })

  it("a new record object under an unchanged key is re-encoded, never served from the cache", () => {
    const encode = makeClaimsEncoder()
    encode(new Map([[key(1), record(1)], [key(2), record(2)]]))
    const next = new Map([[key(1), record(1)], [key(2), { ...record(2), address: "10.9.9.9:1" }]])
    assert.strictEqual(text(encode(next)), encodeClaimsFile(next))
  })

  it("the cached encoder always equals a fresh encoding: exactly the rows given (random churn)", () => {
    const encode = makeClaimsEncoder()
    const rows = new Map<PodKey, ClaimRecord>()
    let seed = 7
    const rand = (m: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % m
    }
    for (let round = 0; round < 300; round++) {
      const ops = 1 + rand(round % 10 === 0 ? 60 : 3)
      for (let i = 0; i < ops; i++) {
        const k = key(rand(80))
        if (rand(3) === 0) rows.delete(k)
        else rows.set(k, record(rand(1000)))
      }
      const view = new Map([...rows].filter(() => rand(10) !== 0)) // some rows excluded from this write
      assert.strictEqual(Buffer.from(encode(view)).toString("utf8"), encodeClaimsFile(view))
      if (round % 7 === 0) assert.strictEqual(Buffer.from(encode(view)).toString("utf8"), encodeClaimsFile(view), "unchanged")
    }
  })

  /** A file as the writer writes it, read by the fast reader: its rows (the records the encoder is seeded with) and spans. */
  const written = (rows: ReadonlyMap<PodKey, ClaimRecord>) => {
    const file = encodeClaimsFile(rows)
    const document = readWrittenText(file)!
    return { file, rows: document.rows, spans: document.writtenMembers! }
  }

  it("seeded with a loaded file, an unchanged row is copied from the file's bytes, a changed one encoded", () => {
    const loaded = written(new Map([[key(1), record(1)], [key(2), record(2)], [key(3), record(3)]]))
    // Marks the loaded bytes: a row copied from them shows it, a row encoded again does not.
    const marked = Buffer.from(loaded.file.replaceAll("tok-", "tok_"))
    const encode = makeClaimsEncoder()
    encode.seed(marked, loaded.rows, loaded.spans.starts, loaded.spans.ends)
    const rows = new Map(loaded.rows)
    rows.set(key(2), { ...rows.get(key(2))! }) // an equal copy is a change: encoded, not copied
    const out = text(encode(rows))
    assert.strictEqual(out, encodeClaimsFile(rows).replace("tok-1", "tok_1").replace("tok-3", "tok_3"))
    assert.deepStrictEqual(encode.held(), { outputBytes: Buffer.byteLength(out), rowTexts: 0 })
  })

  it("after a seed, every output equals a fresh encoding of exactly the rows given (random churn)", () => {
    let seed = 11
    const rand = (m: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % m
    }
    for (let run = 0; run < 20; run++) {
      const initial = new Map<PodKey, ClaimRecord>()
      for (let i = 0; i < rand(40); i++) initial.set(key(rand(80)), record(rand(1000)))
      const loaded = written(initial)
      const encode = makeClaimsEncoder()
      encode.seed(Buffer.from(loaded.file), loaded.rows, loaded.spans.starts, loaded.spans.ends)
      const rows = new Map(loaded.rows)
      // The first write: the table as loaded, with the intents member or not.
      const other = run % 2 === 0 ? "" : `"intents":{"ns/x":{"podUID":"u","sentAt":"2026-07-27T02:15:00Z"}}`
      assert.strictEqual(text(encode(rows, other)), encodeClaimsFile(rows, other), "as loaded")
      for (let round = 0; round < 30; round++) {
        for (let i = 0; i < 1 + rand(4); i++) {
          const k = key(rand(80))
          const r = rand(4)
          if (r === 0) rows.delete(k)
          else if (r === 1 && rows.has(k)) rows.set(k, { ...rows.get(k)!, podUID: `uid-${rand(5)}` })
          else rows.set(k, record(rand(1000)))
        }
        const view = new Map([...rows].filter(() => rand(10) !== 0))
        assert.strictEqual(text(encode(view)), encodeClaimsFile(view), `run ${run} round ${round}`)
      }
    }
  })

  it("a seed whose spans are not laid out as the writer writes them is not taken", () => {
    const two = written(new Map([[key(1), record(1)], [key(2), record(2)]]))
    const one = written(new Map([[key(1), record(1)]]))
    const { ends, starts } = two.spans
    for (
      const [what, loaded, s, e] of [
        ["shifted", two, starts.map((n) => n + 1), ends.map((n) => n + 1)],
        ["the only row shifted", one, one.spans.starts.map((n) => n - 1), one.spans.ends.map((n) => n - 1)],
        ["a gap between rows", two, [starts[0]!, starts[1]! + 1], [ends[0]!, ends[1]! + 1]],
        ["one span short", two, [starts[0]!], [ends[0]!]],
        // The first row is checked before the second one's order is found wrong: none of its
        // marked bytes may reach the output.
        ["keys out of order", { ...two, rows: new Map([...two.rows].reverse()) }, starts, ends]
      ] as const
    ) {
      const encode = makeClaimsEncoder()
      // Marked bytes: a seed taken would show them in the output.
      encode.seed(Buffer.from(loaded.file.replaceAll("tok-", "tok_")), loaded.rows, s, e)
      assert.strictEqual(text(encode(loaded.rows)), loaded.file, what)
    }
  })

  it("between calls it holds one buffer of the file's size and no bytes or text per row", () => {
    const encode = makeClaimsEncoder()
    const rows = new Map<PodKey, ClaimRecord>()
    for (let n = 0; n < 200; n++) rows.set(key(n), record(n))
    const first = encode(rows)
    assert.deepStrictEqual(encode.held(), { outputBytes: first.length, rowTexts: 0 })
    rows.set(key(7), { ...record(7), address: "10.9.9.9:1" })
    rows.delete(key(8))
    rows.set(key(500), record(500))
    const second = encode(rows)
    assert.deepStrictEqual(encode.held(), { outputBytes: second.length, rowTexts: 0 })
    assert.strictEqual(Buffer.from(second).toString("utf8"), encodeClaimsFile(rows))
  })

  it("the bytes a call returns are never overwritten by later calls", () => {
    const encode = makeClaimsEncoder()
    const rows = new Map([[key(1), record(1)], [key(2), record(2)]])
    const first = encode(rows)
    const copy = Buffer.from(first).toString("utf8")
    for (let n = 3; n < 8; n++) {
      rows.set(key(n), record(n))
      rows.delete(key(n - 2))
      encode(rows)
    }
    assert.strictEqual(Buffer.from(first).toString("utf8"), copy)
  })
})
