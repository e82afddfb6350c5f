import { assert, describe, it } from "@effect/vitest"
import { DateTime, Effect, Option, Redacted, Result } from "effect"
import * as fc from "fast-check"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import type { ClaimIntent } from "../../src/Schemas/Claims.ts"
import { decodeClaimsDocument, decodeClaimsDocumentInFull, decodeClaimsFile } from "../../src/Schemas/ClaimsFile/Decode.ts"
import { compareKeys, encodeClaimMember, encodeClaimsFile, goJsonString, membersAfterClaims } from "../../src/Schemas/ClaimsFile/Encode.ts"
import { readWrittenText } from "../../src/Schemas/ClaimsFile/Reader.ts"
import type { ClaimsDocument } from "../../src/Schemas/ClaimsFile/Schema.ts"
import { formatTimestamp, parseTimestamp, writtenTimeAt } from "../../src/Schemas/ClaimsFile/Time.ts"
import type { ClaimId, PodKey } from "../../src/Schemas/Ids.ts"

const at = (iso: string) => DateTime.makeUnsafe(iso)
const millisOf = (text: string): number | null => {
  const parsed = parseTimestamp(text)
  if (Result.isFailure(parsed)) return null
  return Option.match(parsed.success, { onNone: () => -1, onSome: DateTime.toEpochMillis })
}

// A file exactly as the Go reference writes it: compact, sorted keys, fixed field order,
// address omitted when empty, podUID always, timestamps at second precision.
const referenceFile = `{"claims":{` +
  `"default/a":{"id":"sb_00000000000000a1","token":"tok-a","address":"10.0.0.5:7777","podUID":"uid-a","claimedAt":"2026-07-27T02:15:00Z","deadline":"2026-07-28T02:15:00Z"},` +
  `"default/b":{"id":"sb_00000000000000b2","token":"t\\u003cb\\u003e\\u0026\\"q\\"","podUID":"","claimedAt":"2026-07-27T02:16:01Z"},` +
  `"team-x/z":{"id":"sb_00000000000000c3","token":"tok-z","address":"[fd00::1]:7777","podUID":"uid-z","claimedAt":"2026-01-02T03:04:05Z"}` +
  `}}`

describe("ClaimsFile", () => {
  it.effect("a file in the reference's exact format decodes and re-encodes byte-identically", () =>
    Effect.gen(function*() {
      const rows = yield* decodeClaimsFile(referenceFile)
      assert.strictEqual(rows.size, 3)
      const b = rows.get("default/b" as PodKey)!
      assert.strictEqual(Redacted.value(b.token), `t<b>&"q"`)
      assert.strictEqual(b.address, "")
      assert.isTrue(Option.isNone(b.deadline))
      assert.strictEqual(String(b.token), "<redacted>")
      assert.strictEqual(encodeClaimsFile(rows), referenceFile)
    }))

  it("encodes a fresh table as {\"claims\":{}}", () => {
    assert.strictEqual(encodeClaimsFile(new Map()), `{"claims":{}}`)
  })

  it("writes fields in the reference's order, with its omissions, keys sorted, seconds cut", () => {
    const row = (id: string, extra: Partial<ClaimRecord> = {}): ClaimRecord => ({
      id: id as ClaimId,
      token: Redacted.make("t"),
      address: "",
      podUID: "",
      claimedAt: Option.none(),
      deadline: Option.none(),
      ...extra
    })
    const rows = new Map<PodKey, ClaimRecord>([
      ["ns/b" as PodKey, row("2", { claimedAt: Option.some(at("2026-07-27T02:15:00.999Z")), address: "h:1" })],
      ["ns/a" as PodKey, row("1", { deadline: Option.some(at("2026-07-27T02:15:59.5Z")) })]
    ])
    assert.strictEqual(
      encodeClaimsFile(rows),
      `{"claims":{"ns/a":{"id":"1","token":"t","podUID":"","deadline":"2026-07-27T02:15:59Z"},` +
        `"ns/b":{"id":"2","token":"t","address":"h:1","podUID":"","claimedAt":"2026-07-27T02:15:00Z"}}}`
    )
  })

  it.effect("loads indented files, fractional seconds, any offset, nulls, unknown keys", () =>
    Effect.gen(function*() {
      const rows = yield* decodeClaimsFile(`{
  "version": 7,
  "claims": {
    "ns/p": {
      "id": "sb_1", "token": "t", "address": null, "podUID": "u", "extra": {"x": [1]},
      "claimedAt": "2026-07-27T04:15:00.123456789+02:00",
      "deadline": null
    },
    "ns/q": { "id": "sb_2", "token": "t2", "claimedAt": "0001-01-01T00:00:00Z", "deadline": "2026-07-27T02:15:00-00:30" }
  }
}`)
      const p = rows.get("ns/p" as PodKey)!
      assert.strictEqual(DateTime.formatIso(Option.getOrThrow(p.claimedAt)), "2026-07-27T02:15:00.123Z")
      assert.isTrue(Option.isNone(p.deadline))
      assert.strictEqual(p.address, "")
      const q = rows.get("ns/q" as PodKey)!
      assert.isTrue(Option.isNone(q.claimedAt), "Go's zero time reads as none")
      assert.strictEqual(DateTime.formatIso(Option.getOrThrow(q.deadline)), "2026-07-27T02:45:00.000Z")
      assert.strictEqual(q.podUID, "")
    }))

  it.effect("a file without a claims object ({}, {\"claims\":null}, other members only) is refused, never an empty table", () =>
    Effect.gen(function*() {
      for (const text of [`{}`, `{"claims":null}`, `{"other":1}`, ` { } `]) {
        const error = yield* Effect.flip(decodeClaimsFile(text))
        assert.strictEqual(error._tag, "ClaimsFileDecodeError", text)
        assert.include(error.message, `no "claims" object`, text)
      }
      assert.strictEqual((yield* decodeClaimsFile(`{"claims":{}}`)).size, 0, "an empty table is {\"claims\":{}}")
    }))

  it.effect("refuses, with the line and column, a key or field written twice, an empty or unprintable token, one id under two keys", () =>
    Effect.gen(function*() {
      const row = (id: string, token = "t") => `{"id":"${id}","token":"${token}","podUID":""}`
      const cases: ReadonlyArray<readonly [string, string]> = [
        [`{"claims":{"ns/a":${row("x")},\n  "ns/a":${row("y")}}}`, `row "ns/a" (line 2 column 3): the key is written twice`],
        [`{"claims":{"ns/a":{"id":"x","token":"t","id":"y"}}}`, `row "ns/a" (line 1 column 12): field "id" written twice (line 1 column 41)`],
        [`{"claims":{},"claims":{}}`, `member "claims" written twice (line 1 column 14)`],
        [`{"claims":{"ns/a":${row("x", "")}}}`, `row "ns/a" (line 1 column 12): empty token`],
        [`{"claims":{"ns/a":${row("x", "to\\nken")}}}`, `row "ns/a" (line 1 column 12): the token holds characters other than visible ASCII`],
        [`{"claims":{"ns/a":${row("x", "t\u00e9")}}}`, `the token holds characters other than visible ASCII`],
        [`{"claims":{"ns/a":${row("x", "a b")}}}`, `the token holds characters other than visible ASCII`],
        [
          `{\n"claims":{\n"ns/a":${row("sb_1")},\n"ns/b":${row("sb_1")}}}`,
          `row "ns/b" (line 4 column 1): claim id "sb_1" is already the claim of row "ns/a"`
        ]
      ]
      for (const [text, message] of cases) {
        const error = yield* Effect.flip(decodeClaimsFile(text))
        assert.strictEqual(error._tag, "ClaimsFileDecodeError", text)
        assert.include(error.message, message, text)
      }
      // The token itself is never quoted.
      const secret = "tok_secret_4f9a"
      const error = yield* Effect.flip(decodeClaimsFile(`{"claims":{"ns/a":${row("x", `${secret}\\u0007`)}}}`))
      assert.notInclude(error.message, secret)
    }))

  it.effect("unknown fields, top level and in rows, are kept exactly through a rewrite; files without them stay byte-exact", () =>
    Effect.gen(function*() {
      const newer = `{"claims":{` +
        `"ns/a":{"id":"sb_1","token":"t1","podUID":"u","claimedAt":"2026-07-27T02:15:00Z","sentAtNanos":1780000000123456789,"origin":{"by":"v2","tags":["a b"]}},` +
        `"ns/b":{"id":"sb_2","token":"t2","podUID":""}` +
        `},"leases":{"ns/c":{"uid":"u3"}},"format":2}`
      const document = Result.getOrThrow(decodeClaimsDocument(newer))
      assert.strictEqual(document.unknownMembers, `"leases":{"ns/c":{"uid":"u3"}},"format":2`)
      assert.strictEqual(document.rows.get("ns/a" as PodKey)?.unknownFields, `"sentAtNanos":1780000000123456789,"origin":{"by":"v2","tags":["a b"]}`)
      assert.isUndefined(document.rows.get("ns/b" as PodKey)?.unknownFields)
      assert.strictEqual(encodeClaimsFile(document.rows, document.unknownMembers), newer, "numbers past 2^53 kept digit for digit")
      // Indented input: the unknown values are kept compact (whitespace inside strings kept).
      const indented = Result.getOrThrow(decodeClaimsDocument(`{
  "claims": {
    "ns/a": { "id": "sb_1", "token": "t", "extra": { "x": [ 1, "a  b" ] } }
  },
  "later": [ true, null ]
}`))
      assert.strictEqual(indented.unknownMembers, `"later":[true,null]`)
      assert.strictEqual(indented.rows.get("ns/a" as PodKey)?.unknownFields, `"extra":{"x":[1,"a  b"]}`)
      // A row the daemon changes keeps the fields it does not know.
      const changed = new Map(document.rows).set("ns/a" as PodKey, { ...document.rows.get("ns/a" as PodKey)!, podUID: "u2" })
      assert.include(encodeClaimsFile(changed), `"podUID":"u2","claimedAt":"2026-07-27T02:15:00Z","sentAtNanos":1780000000123456789`)
      assert.strictEqual(Result.getOrThrow(decodeClaimsDocument(referenceFile)).unknownMembers, "")
    }))

  it("any unknown members and fields (any JSON, any keys) come back exactly as written", () => {
    const extraKey = fc.string().filter((k) => k !== "claims" && k !== "intents")
    const rowExtraKey = fc.string().filter((k) => !["id", "token", "address", "podUID", "claimedAt", "deadline", "owner"].includes(k))
    const members = (key: fc.Arbitrary<string>) =>
      fc.uniqueArray(fc.tuple(key, fc.jsonValue()), { selector: ([k]) => k, maxLength: 4 })
        .map((pairs) => pairs.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(","))
    fc.assert(
      fc.property(members(extraKey), members(rowExtraKey), (top, inRow) => {
        const record: ClaimRecord = {
          id: "sb_1" as ClaimId,
          token: Redacted.make("t"),
          address: "",
          podUID: "",
          claimedAt: Option.none(),
          deadline: Option.none(),
          ...(inRow === "" ? {} : { unknownFields: inRow })
        }
        const text = encodeClaimsFile(new Map([["ns/a" as PodKey, record]]), top)
        const document = Result.getOrThrow(decodeClaimsDocument(text))
        assert.strictEqual(document.unknownMembers, top)
        assert.strictEqual(document.rows.get("ns/a" as PodKey)?.unknownFields, inRow === "" ? undefined : inRow)
        assert.strictEqual(encodeClaimsFile(document.rows, document.unknownMembers), text)
      }),
      { numRuns: 300 }
    )
  })

  it.effect("rejects empty text, truncated JSON, a top-level array, bad rows and bad timestamps", () =>
    Effect.gen(function*() {
      for (
        const text of [
          "",
          `{"claims":{"ns/a":{"id":"x"`,
          `[]`,
          `null`,
          `{"claims":[]}`,
          `{"claims":{"ns/a":null}}`,
          `{"claims":{"ns/a":{"token":"t"}}}`,
          `{"claims":{"ns/a":{"id":1,"token":"t"}}}`,
          `{"claims":{"ns/a":{"id":"x","token":"t","deadline":"tomorrow"}}}`,
          `{"claims":{"ns/a":{"id":"x","token":"t","deadline":"2026-02-30T00:00:00Z"}}}`
        ]
      ) {
        const error = yield* Effect.flip(decodeClaimsFile(text))
        assert.strictEqual(error._tag, "ClaimsFileDecodeError", text)
      }
    }))

  it.effect("a file that is not JSON is reported by position, never by quoting it (it holds tokens)", () =>
    Effect.gen(function*() {
      const token = "tok_4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
      for (
        const text of [
          `{"claims":{"ns/a":{"id":"x","token":${token}}}}`,
          `{"claims":{"ns/a":{"id":"x","token":"${token}"x}}}`,
          `{"claims":{"ns/a":{"id":"x","token":"${token}`
        ]
      ) {
        const error = yield* Effect.flip(decodeClaimsFile(text))
        assert.match(error.message, /^invalid JSON/, text)
        for (let i = 0; i + 4 <= token.length; i++) assert.notInclude(error.message, token.slice(i, i + 4), text)
      }
      const truncated = yield* Effect.flip(decodeClaimsFile(`{"claims":{"ns/a":{"id":"x","token":"${token}"`))
      assert.include(truncated.message, `at position ${token.length + 38}`)
    }))

  it.effect("a preserved row's owner (AUTH-9) is written after the known fields and read back by the full decode; the fast reader leaves such a file to it", () =>
    Effect.gen(function*() {
      const owner = { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", name: "b<ox>", uid: "uid-box" }
      const record: ClaimRecord = {
        id: "sb_00000000000000a1" as ClaimId,
        token: Redacted.make("tok"),
        address: "",
        podUID: "uid-a",
        claimedAt: Option.some(at("2026-07-27T02:15:00Z")),
        deadline: Option.none(),
        owner
      }
      const text = encodeClaimsFile(new Map([["ns/a" as PodKey, record]]), "")
      assert.strictEqual(
        text,
        `{"claims":{"ns/a":{"id":"sb_00000000000000a1","token":"tok","podUID":"uid-a","claimedAt":"2026-07-27T02:15:00Z",` +
          `"owner":{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","name":"b\\u003cox\\u003e","uid":"uid-box"}}}}`
      )
      assert.isUndefined(readWrittenText(text), "the text-only reading takes no row with an owner")
      const document = yield* Effect.fromResult(decodeClaimsDocument(text))
      assert.deepStrictEqual(document.rows.get("ns/a" as PodKey)?.owner, owner)
      assert.isUndefined(document.rows.get("ns/a" as PodKey)?.unknownFields, "a known field, not an unknown one")
      assert.strictEqual(encodeClaimsFile(document.rows, ""), text, "written back as it was")
      // Without an owner the row is the reference's, byte for byte.
      const { owner: _, ...plain } = record
      assert.notInclude(encodeClaimsFile(new Map([["ns/a" as PodKey, plain]]), ""), "owner")
    }))

  it("parses RFC 3339 like Go and formats at second precision in UTC", () => {
    assert.strictEqual(millisOf("2026-07-27T02:15:00Z"), Date.UTC(2026, 6, 27, 2, 15, 0))
    assert.strictEqual(millisOf("2026-07-27T02:15:00.5Z"), Date.UTC(2026, 6, 27, 2, 15, 0, 500))
    assert.strictEqual(millisOf("2026-07-27T07:45:00+05:30"), Date.UTC(2026, 6, 27, 2, 15, 0))
    assert.strictEqual(millisOf("2026-07-27 02:15:00Z"), null)
    assert.strictEqual(millisOf("2026-07-27T02:15:00"), null)
    assert.strictEqual(millisOf("2026-13-01T00:00:00Z"), null)
    assert.strictEqual(formatTimestamp(at("2026-07-27T02:15:00.999Z")), "2026-07-27T02:15:00Z")
    assert.strictEqual(formatTimestamp(at("1969-12-31T23:59:59.5Z")), "1969-12-31T23:59:59Z")
  })

  it("escapes strings as Go's encoding/json does and sorts keys by code point", () => {
    assert.strictEqual(goJsonString(`a<b>&c\u2028\u2029"\\\n`), `"a\\u003cb\\u003e\\u0026c\\u2028\\u2029\\"\\\\\\n"`)
    const keys = ["b", "a", "\uffff", "\u{1F600}", "B"].sort(compareKeys)
    assert.deepStrictEqual(keys, ["B", "a", "b", "\uffff", "\u{1F600}"])
  })

  // ---- the fast reader of a file as written: proven equal to the full decode -----------------

  const wholeSecond = fc.integer({ min: 1, max: 253_402_300_799 }).map((t) => DateTime.makeUnsafe(t * 1000))
  const table = fc.uniqueArray(
    fc.record({
      key: fc.oneof(fc.constantFrom("ns/a", "ns/b", "team-x/web-0", "123", "__proto__", "a<b>&"), fc.string()),
      id: fc.oneof(fc.constantFrom("sb_1", "sb_2"), fc.string({ minLength: 1 })),
      token: fc.stringMatching(/^[\x21-\x7e]{1,20}$/),
      address: fc.oneof(fc.constant(""), fc.string()),
      podUID: fc.string(),
      claimedAt: fc.option(wholeSecond, { nil: undefined }),
      deadline: fc.option(wholeSecond, { nil: undefined }),
      owner: fc.option(fc.record({ apiVersion: fc.constantFrom("v1", "agents.x-k8s.io/v1beta1"), kind: fc.string(), name: fc.string(), uid: fc.string() }), {
        freq: 8,
        nil: undefined
      })
    }),
    { selector: (row) => row.key, maxLength: 6 }
  ).map((rows) => {
    // One claim id per row, as the file requires.
    const ids = new Set<string>()
    return new Map<PodKey, ClaimRecord>(rows.filter((row) => !ids.has(row.id) && ids.add(row.id)).map((row) => [row.key as PodKey, {
      id: row.id as ClaimId,
      token: Redacted.make(row.token),
      address: row.address,
      podUID: row.podUID,
      claimedAt: Option.fromUndefinedOr(row.claimedAt),
      deadline: Option.fromUndefinedOr(row.deadline),
      ...(row.owner === undefined ? {} : { owner: row.owner })
    }]))
  })
  const intents = fc.uniqueArray(fc.record({ key: fc.string(), podUID: fc.string(), sentAt: wholeSecond }), { selector: (i) => i.key, maxLength: 3 })
    .map((list) => new Map<PodKey, ClaimIntent>(list.map((i) => [i.key as PodKey, { key: i.key as PodKey, podUID: i.podUID, sentAt: i.sentAt }])))
  const written = fc.tuple(table, intents).map(([rows, held]) => encodeClaimsFile(rows, membersAfterClaims(held, "")))

  /** A decode result as plain data (a Redacted token compares equal to any other). */
  const view = (result: Result.Result<ClaimsDocument, { readonly message: string }>) =>
    Result.match(result, {
      onFailure: (error) => ({ error: error.message }),
      onSuccess: (document) => ({
        rows: [...document.rows].map(([key, r]) => ({
          ...r,
          key,
          token: Redacted.value(r.token),
          claimedAt: Option.map(r.claimedAt, DateTime.toEpochMillis),
          deadline: Option.map(r.deadline, DateTime.toEpochMillis)
        })),
        // In key order: the full decode lists them in JSON.parse's order (array-index keys first), the others in the file's.
        intents: [...document.intents].sort(([a], [b]) => compareKeys(a, b)).map(([key, i]) => ({ ...i, key, sentAt: DateTime.toEpochMillis(i.sentAt) })),
        unknownMembers: document.unknownMembers
      })
    })

  /**
   * Strings the writer escapes somewhere in the text, a `__proto__` key, or a row's owner (AUTH-9 —
   * a preserved VM is released once its owner goes): left to the full decode.
   */
  const escapesOrProto = (text: string) => /[\\\u0000-\u001f<>&\u2028\u2029\ud800-\udfff]|"__proto__":|"owner":\{"apiVersion"/.test(text)
  // Keys, podUIDs and addresses from every UTF-16 code unit (control characters, lone surrogates).
  const anyUnitTable = fc.uniqueArray(
    fc.record({
      key: fc.string({ unit: "binary", maxLength: 8 }),
      podUID: fc.string({ unit: "binary", maxLength: 8 }),
      address: fc.string({ unit: "binary", maxLength: 8 }),
      claimedAt: fc.option(wholeSecond, { nil: undefined })
    }),
    { selector: (row) => row.key, maxLength: 5 }
  ).map((rows) =>
    new Map<PodKey, ClaimRecord>(rows.map((row, i) => [row.key as PodKey, {
      id: `sb_${i}` as ClaimId,
      token: Redacted.make(`tok-${i}`),
      address: row.address,
      podUID: row.podUID,
      claimedAt: Option.fromUndefinedOr(row.claimedAt),
      deadline: Option.none()
    }]))
  )

  it("a written file with nothing escaped is read from its text alone, to what the full decode gives, each row's span its encoding", () => {
    fc.assert(
      fc.property(fc.oneof(written, fc.tuple(anyUnitTable, intents).map(([rows, held]) => encodeClaimsFile(rows, membersAfterClaims(held, "")))), (text) => {
        const read = readWrittenText(text)
        assert.strictEqual(read === undefined, escapesOrProto(text), text)
        if (read === undefined) return
        assert.deepStrictEqual(view(Result.succeed(read)), view(decodeClaimsDocumentInFull(text)))
        assert.strictEqual(encodeClaimsFile(read.rows, membersAfterClaims(read.intents, "")), text)
        const spans = read.writtenMembers!
        assert.strictEqual(spans.starts.length, read.rows.size)
        let i = 0
        for (const [key, record] of read.rows) {
          assert.strictEqual(text.slice(spans.starts[i], spans.ends[i]), encodeClaimMember(key, record))
          i++
        }
      }),
      { numRuns: 500 }
    )
  })

  it("the text-only reading refuses a file with any one character the writer escapes, ASCII or not, and reads it with any other", () => {
    const units = [
      ...Array.from({ length: 0x80 }, (_, c) => c),
      0x80, 0xe9, 0x7ff, 0x800, 0x2028, 0x2029, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xfffd, 0xffff
    ]
    for (const unit of units) {
      const c = String.fromCharCode(unit)
      for (
        const text of [
          `{"claims":{"ns/a${c}":{"id":"x","token":"t","podUID":""}}}`,
          `{"claims":{"ns/a":{"id":"x","token":"t","podUID":"${c}"}}}`
        ]
      ) {
        const escaped = /[\\\u0000-\u001f<>&\u2028\u2029\ud800-\udfff]/.test(c)
        // (a raw quote ends the string early: no file the reader takes)
        assert.strictEqual(readWrittenText(text) === undefined, escaped || c === `"`, JSON.stringify(text))
        assert.deepStrictEqual(view(decodeClaimsDocument(text)), view(decodeClaimsDocumentInFull(text)), JSON.stringify(text))
      }
    }
  })

  it("a written timestamp is read by position as parseTimestamp reads it, and refused where it refuses", () => {
    const zeroTime = new Date(0).setUTCFullYear(1, 0, 1)
    const pad = (n: number, w: number) => String(n).padStart(w, "0")
    const stamp = fc.tuple(
      fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(1, 1900, 1970, 2000, 2100, 2400)),
      fc.integer({ min: 0, max: 13 }),
      fc.integer({ min: 0, max: 32 }),
      fc.integer({ min: 0, max: 25 }),
      fc.integer({ min: 0, max: 61 }),
      fc.integer({ min: 0, max: 61 })
    ).map(([y, mo, d, h, mi, s]) => `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}Z`)
    const changed = fc.tuple(stamp, fc.nat(19), fc.string({ unit: "binary", minLength: 1, maxLength: 1 }))
      .map(([text, i, c]) => text.slice(0, i) + c + text.slice(i + 1))
    fc.assert(
      fc.property(fc.oneof(stamp, changed), fc.string({ maxLength: 3 }), (text, before) => {
        const expected = parseTimestamp(text)
        const got = writtenTimeAt(before + text + `"`, before.length)
        if (Result.isFailure(expected)) assert.isNaN(got, text)
        else assert.strictEqual(got, Option.match(expected.success, { onNone: () => zeroTime, onSome: DateTime.toEpochMillis }), text)
      }),
      { numRuns: 5000 }
    )
  })

  it("any change to a written file: the decode gives what the full decode gives (the same rows, or the same error)", () => {
    const edit = fc.oneof(
      // anything inserted anywhere (a space, a member, a key written twice, a stray byte)
      fc.tuple(fc.nat(), fc.oneof(
        fc.constantFrom(" ", "\n", ",", "}", `"x":1,`, `"id":"sb_9",`, `"token":"",`, `"claimedAt":"2026-07-27T02:15:00.5Z",`, `"ns/a":{"id":"sb_1","token":"t","podUID":""},`),
        fc.string({ maxLength: 3 }),
        // what the writer escapes, written raw
        fc.constantFrom("<", ">", "&", "\u2028", "\u2029", "\u0001", "\ud800", "\udc00")
      )).map(([at, insert]) => (text: string) => text.slice(0, at % (text.length + 1)) + insert + text.slice(at % (text.length + 1))),
      // a span removed, or a span written twice
      fc.tuple(fc.nat(), fc.nat({ max: 80 }), fc.boolean()).map(([at, length, twice]) => (text: string) => {
        const from = at % (text.length + 1)
        const span = text.slice(from, from + length)
        return text.slice(0, from) + (twice ? span + span : "") + text.slice(from + length)
      }),
      // one character replaced
      fc.tuple(fc.nat(), fc.string({ minLength: 1, maxLength: 1 })).map(([at, c]) => (text: string) => {
        const i = at % Math.max(1, text.length)
        return text.slice(0, i) + c + text.slice(i + 1)
      })
    )
    fc.assert(
      fc.property(written, fc.array(edit, { minLength: 1, maxLength: 3 }), (text, edits) => {
        const changed = edits.reduce((t, f) => f(t), text)
        const decoded = decodeClaimsDocument(changed)
        assert.deepStrictEqual(view(decoded), view(decodeClaimsDocumentInFull(changed)), changed)
        // The spans handed to the store's encoder are each row's own encoding, or not given.
        const spans = Result.isSuccess(decoded) ? decoded.success.writtenMembers : undefined
        if (spans !== undefined && Result.isSuccess(decoded)) {
          assert.strictEqual(encodeClaimsFile(decoded.success.rows, membersAfterClaims(decoded.success.intents, "")), changed)
          let i = 0
          for (const [key, record] of decoded.success.rows) {
            assert.strictEqual(changed.slice(spans.starts[i], spans.ends[i]), encodeClaimMember(key, record), changed)
            i++
          }
        }
      }),
      { numRuns: 2000 }
    )
  })

  it("what the fast reader leaves to the full decode: spacing, unknown fields, repeated keys, unsorted keys, fractional or zero times, a bad token, one id twice", () => {
    const row = (id: string, rest = "") => `{"id":"${id}","token":"t","podUID":""${rest}}`
    for (
      const text of [
        `{"claims":{"ns/a":${row("x")}}}\n`,
        `{"claims":{"ns/a":${row("x", `,"extra":1`)}}}`,
        `{"claims":{"ns/a":${row("x")}},"other":true}`,
        `{"claims":{"ns/a":${row("x")},"ns/a":${row("y")}}}`,
        `{"claims":{"ns/a":${row("x", `,"claimedAt":"2026-07-27T02:15:00.5Z"`)}}}`,
        `{"claims":{"ns/a":${row("x", `,"claimedAt":"0001-01-01T00:00:00Z"`)}}}`,
        `{"claims":{"ns/a":{"id":"x","token":"","podUID":""}}}`,
        `{"claims":{"ns/a":${row("x")},"ns/b":${row("x")}}}`,
        `{"claims":{"ns/a":{"id":"x","token":"t","address":"","podUID":""}}}`,
        `{"claims":{},"intents":{}}`,
        `{"claims":{"ns/b":${row("x")},"ns/a":${row("y")}}}`,
        `{"claims":{},"intents":{"ns/b":{"podUID":"","sentAt":"2026-07-27T02:15:00Z"},"ns/a":{"podUID":"","sentAt":"2026-07-27T02:15:00Z"}}}`,
        // what the writer escapes, written raw (JSON allows it; the writer never writes it so)
        ...["<", ">", "&", "\u2028", "\u2029", "\ud800"].flatMap((c) => [
          `{"claims":{"ns/a${c}":${row("x")}}}`,
          `{"claims":{"ns/a":${row(`x${c}`)}}}`,
          `{"claims":{"ns/a":{"id":"x","token":"t","address":"${c}","podUID":""}}}`,
          `{"claims":{"ns/a":${row("x")}},"intents":{"ns/a":{"podUID":"${c}","sentAt":"2026-07-27T02:15:00Z"}}}`
        ])
      ]
    ) {
      assert.isUndefined(readWrittenText(text), text)
      const decoded = decodeClaimsDocument(text)
      assert.isUndefined(Result.isSuccess(decoded) ? decoded.success.writtenMembers : undefined, text)
      assert.deepStrictEqual(view(decodeClaimsDocument(text)), view(decodeClaimsDocumentInFull(text)), text)
    }
  })
})
