/**
 * Wire schemas, deadline parsing/formatting and the pod annotation rules (CRT-1 — annotation keys;
 * CRT-2 — empty means absent; CRT-6 — TTL annotation).
 */
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Option, Result } from "effect"
import * as fc from "fast-check"
import { interpretClaim, interpretInfo, interpretList } from "../../src/Sandboxd/Replies.ts"
import {
  annotationValue,
  isServedRuntime,
  parseTtlSeconds,
  PodAnnotation,
  requestedRuntime
} from "../../src/Schemas/PodAnnotations.ts"
import {
  claimRequestBody,
  deadlineMillisByPattern,
  formatDeadline,
  parseDeadline
} from "../../src/Schemas/Sandboxd.ts"
import {
  claimFailureKind,
  NoWarmCapacity,
  SandboxdDecodeError,
  SandboxdHttpError,
  SandboxdTimeout,
  SandboxdUnreachable
} from "../../src/Services/SandboxdClient.ts"

const millis = (text: string | undefined) => Option.map(parseDeadline(text), DateTime.toEpochMillis)

describe("parseDeadline", () => {
  it("accepts any offset and up to 9 fractional digits", () => {
    assert.deepStrictEqual(millis("2026-07-28T10:15:00.123456789+08:00"), Option.some(Date.UTC(2026, 6, 28, 2, 15, 0, 123)))
    assert.deepStrictEqual(millis("2026-07-28T02:15:00.482913377Z"), Option.some(Date.UTC(2026, 6, 28, 2, 15, 0, 482)))
    assert.deepStrictEqual(millis("2026-07-27T21:45:00.5-04:30"), Option.some(Date.UTC(2026, 6, 28, 2, 15, 0, 500)))
    assert.deepStrictEqual(millis("2026-07-28T02:15:00Z"), Option.some(Date.UTC(2026, 6, 28, 2, 15, 0)))
    assert.deepStrictEqual(millis("2026-07-28T02:15:00+00:00"), Option.some(Date.UTC(2026, 6, 28, 2, 15, 0)))
    assert.deepStrictEqual(millis("2024-02-29T00:00:00Z"), Option.some(Date.UTC(2024, 1, 29)))
  })

  it("the zero time, absent, empty and unparsable deadlines are no known expiry", () => {
    for (const text of [undefined, "", "0001-01-01T00:00:00Z", "0001-01-01T08:00:00+08:00", "yesterday", "2026-07-28", "2026-07-28T02:15:00", "2026-07-28T02:15:00.1234567890Z", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-07-28T24:00:00Z", "2026-07-28 02:15:00Z"]) {
      assert.isTrue(Option.isNone(parseDeadline(text)), String(text))
    }
    assert.isTrue(Option.isNone(parseDeadline(null)))
  })

  it("a real year-1 instant other than the zero time is a deadline", () => {
    assert.isTrue(Option.isSome(parseDeadline("0001-01-01T00:00:01Z")))
  })

  it("read by position as the RFC 3339 pattern reads it: Go's output in any offset, and any change to it", () => {
    const zeroTime = deadlineMillisByPattern("0001-01-01T00:00:00Z")
    const pad = (n: number, w: number) => String(n).padStart(w, "0")
    // Fields past their ranges too (month 13, February 30th, hour 24, offset 24:00).
    const fields = fc.tuple(
      fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(1, 1900, 1970, 2000, 2024, 2100)),
      fc.integer({ min: 0, max: 13 }),
      fc.integer({ min: 0, max: 32 }),
      fc.integer({ min: 0, max: 25 }),
      fc.integer({ min: 0, max: 61 }),
      fc.integer({ min: 0, max: 61 }),
      fc.option(fc.stringMatching(/^[0-9]{0,11}$/), { nil: undefined }),
      fc.oneof(fc.constantFrom("Z", "z", "+00:00", "-00:00"), fc.tuple(fc.constantFrom("+", "-"), fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: 60 })).map(([sign, h, m]) => `${sign}${pad(h, 2)}:${pad(m, 2)}`)),
      fc.constantFrom("T", "t")
    ).map(([y, mo, d, h, mi, s, fraction, zone, t]) =>
      `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}${t}${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}${fraction === undefined ? "" : `.${fraction}`}${zone}`
    )
    const goWrites = fc.tuple(fc.bigInt({ min: -62_135_596_800_000_000_000n, max: 253_402_300_799_999_999_999n }), fc.integer({ min: -1439, max: 1439 }))
      .map(([nanos, offset]) => formatDeadline(nanos, offset))
    const texts = fc.oneof(fields, goWrites)
    const changed = fc.tuple(texts, fc.nat(), fc.string({ unit: "binary", maxLength: 2 }), fc.nat(2))
      .map(([text, at, insert, removed]) => {
        const i = at % (text.length + 1)
        return text.slice(0, i) + insert + text.slice(i + removed)
      })
    fc.assert(
      fc.property(fc.oneof(texts, changed), (text) => {
        const byPattern = deadlineMillisByPattern(text)
        const expected = byPattern === undefined || byPattern === zeroTime ? Option.none() : Option.some(byPattern)
        assert.deepStrictEqual(millis(text), expected, text)
      }),
      { numRuns: 5000 }
    )
  })
})

describe("formatDeadline", () => {
  it("writes Go's RFC 3339 with trimmed nanoseconds in the given offset", () => {
    const nanos = BigInt(Date.UTC(2026, 6, 28, 2, 15, 0)) * 1_000_000n + 123_456_789n
    assert.strictEqual(formatDeadline(nanos, 0), "2026-07-28T02:15:00.123456789Z")
    assert.strictEqual(formatDeadline(nanos, 480), "2026-07-28T10:15:00.123456789+08:00")
    assert.strictEqual(formatDeadline(nanos, -330), "2026-07-27T20:45:00.123456789-05:30")
    assert.strictEqual(formatDeadline(BigInt(Date.UTC(2026, 6, 28, 2, 15, 0, 100)) * 1_000_000n, 0), "2026-07-28T02:15:00.1Z")
    assert.strictEqual(formatDeadline(BigInt(Date.UTC(2026, 6, 28)) * 1_000_000n, 60), "2026-07-28T01:00:00+01:00")
  })

  it("round-trips through parseDeadline at millisecond precision", () => {
    const nanos = BigInt(Date.UTC(2030, 0, 1, 12, 0, 0, 999)) * 1_000_000n + 999_999n
    for (const offset of [-720, -330, 0, 345, 840]) {
      assert.deepStrictEqual(millis(formatDeadline(nanos, offset)), Option.some(Date.UTC(2030, 0, 1, 12, 0, 0, 999)))
    }
  })
})

describe("claim request body", () => {
  it("omits empty net/size/claim_ref and a zero ttl_seconds", () => {
    assert.deepStrictEqual(claimRequestBody({ template: "t", net: "", size: "", ttlSeconds: 0, claimRef: "" }), {
      template: "t"
    })
    assert.strictEqual(
      JSON.stringify(claimRequestBody({ template: "t", net: "egress", size: "large", ttlSeconds: 86400, claimRef: "a/b" })),
      `{"template":"t","net":"egress","size":"large","ttl_seconds":86400,"claim_ref":"a/b"}`
    )
  })
})

describe("reply interpretation", () => {
  it("decodes the spec's list payload, rows in order, unknown fields ignored", () => {
    const body = `{"sandboxes":[
 {"id":"sb_1a2b3c4d5e6f7081","key":{"template":"ghcr.io/acme/agent-runtime:1.4.2","net":"none","size":"medium"},"deadline":"2026-07-28T02:15:00.482913377Z","hibernated":false,"claim_ref":"team-a/review-bot-7f3k2"},
 {"id":"sb_4f9a0c2e7b1d3a65","key":{"template":"ghcr.io/acme/agent-runtime:1.4.2","net":"none","size":"medium"},"deadline":"2026-07-28T03:40:12.001Z","hibernated":true,"claim_ref":"team-a/notebook-x9","claimed_at":"2026-07-27T02:15:00.48Z","cpu_count":2,"mem_total_bytes":1073741824,"on_expire":"destroy","tenant":"acme","metadata":{"k":"v"}},
 {"id":"sb_9e8d7c6b5a403122","key":{"template":"base:24.04","net":"none","size":"small"},"deadline":"0001-01-01T00:00:00Z","hibernated":false,"archived":true,"claim_ref":"team-b/longrunner"},
 {"id":"sb_c0ffee0012345678","key":{"template":"base:24.04","net":"none","size":"small"},"deadline":"2026-07-27T02:20:00Z","hibernated":false,"failed":"vmm exited"}
]}`
    const rows = Result.getOrThrow(interpretList({ status: 200, body }))
    assert.deepStrictEqual(rows.map((r) => r.id), ["sb_1a2b3c4d5e6f7081", "sb_4f9a0c2e7b1d3a65", "sb_9e8d7c6b5a403122", "sb_c0ffee0012345678"])
    assert.deepStrictEqual(rows.map((r) => r.claimRef), ["team-a/review-bot-7f3k2", "team-a/notebook-x9", "team-b/longrunner", ""])
    assert.deepStrictEqual(rows.map((r) => r.hibernated), [false, true, false, false])
    assert.deepStrictEqual(rows.map((r) => r.archived), [false, false, true, false])
    assert.deepStrictEqual(rows.map((r) => r.failed), ["", "", "", "vmm exited"])
    assert.isTrue(Option.isNone(rows[2].deadline))
    assert.deepStrictEqual(Option.map(rows[1].deadline, DateTime.toEpochMillis), Option.some(Date.UTC(2026, 6, 28, 3, 40, 12, 1)))
    assert.deepStrictEqual(rows[0].key, { template: "ghcr.io/acme/agent-runtime:1.4.2", net: "none", size: "medium" })
  })

  it("a row without an id, or a sandboxes value that is not an array, is a decode failure", () => {
    for (const body of [`{"sandboxes":[{"deadline":"2026-07-28T02:15:00Z"}]}`, `{"sandboxes":{}}`, `[]`, `{"sandboxes":[{"id":""}]}`]) {
      const result = interpretList({ status: 200, body })
      assert.isTrue(Result.isFailure(result) && result.failure._tag === "SandboxdDecodeError", body)
    }
  })

  it("a listing that repeats an id gives one row per id (the first), info one pool per key", () => {
    const row = (id: string, claimRef: string) => `{"id":"${id}","claim_ref":"${claimRef}","key":{"template":"t","net":"none","size":"small"}}`
    const rows = Result.getOrThrow(interpretList({
      status: 200,
      body: `{"sandboxes":[${row("sb_1", "a/x")},${row("sb_2", "a/y")},${row("sb_1", "a/z")},${row("sb_1", "a/x")}]}`
    }))
    assert.deepStrictEqual(rows.map((r) => [r.id, r.claimRef]), [["sb_1", "a/x"], ["sb_2", "a/y"]])
    const pool = (size: string, warm: number) => `{"key":{"template":"t","net":"none","size":"${size}"},"warm":${warm},"target":4}`
    const info = Result.getOrThrow(interpretInfo({ status: 200, body: `{"pools":[${pool("small", 1)},${pool("medium", 2)},${pool("small", 3)}]}` }))
    assert.deepStrictEqual(info.pools.map((p) => [p.size, p.warm]), [["small", 1], ["medium", 2]])
  })

  it("list rows tolerate null and missing optional fields", () => {
    const rows = Result.getOrThrow(interpretList({
      status: 200,
      body: `{"sandboxes":[{"id":"sb_1","deadline":null,"claim_ref":null,"hibernated":null,"key":null}]}`
    }))
    assert.deepStrictEqual(rows[0].key, { template: "", net: "", size: "" })
    assert.strictEqual(rows[0].claimRef, "")
    assert.isFalse(rows[0].hibernated)
    assert.isTrue(Option.isNone(rows[0].deadline))
  })

  it("decodes the spec's info payload", () => {
    const body = `{"pools":[
 {"key":{"template":"base:24.04","net":"none","size":"small"},"warm":4,"refilling":0,"target":4,"golden":true},
 {"key":{"template":"ghcr.io/acme/agent-runtime:1.4.2","net":"none","size":"medium"},"warm":1,"refilling":1,"target":2,"golden":true}],
 "claimed":4,"hibernated":1,"archived":1,"peers":["10.0.0.6:7777"],"templates":[],"advertise_addr":"10.0.0.5:7777"}`
    assert.deepStrictEqual(Result.getOrThrow(interpretInfo({ status: 200, body })).pools, [
      { template: "base:24.04", net: "none", size: "small", warm: 4, target: 4 },
      { template: "ghcr.io/acme/agent-runtime:1.4.2", net: "none", size: "medium", warm: 1, target: 2 }
    ])
  })

  it("a claim body of null or a redirect hands over nothing", () => {
    for (const body of ["null", `{"redirect":["10.0.0.6:7777"],"require_promoted":true}`, `{"id":""}`]) {
      const result = interpretClaim({ status: 200, body })
      assert.isTrue(Result.isFailure(result) && result.failure._tag === "NoWarmCapacity", body)
    }
  })

  const deadline = "2026-07-28T02:15:00.482913377Z"
  const valid = { id: "sb_4f9a0c2e7b1d3a65", token: "9c1e77d03ab24f5e8d61c2b0f4a39e17", deadline, owner_addr: "10.0.0.5:7777" }

  it("a valid claim reply is a known outcome; owner_addr may be absent", () => {
    const known = Result.getOrThrow(interpretClaim({ status: 200, body: JSON.stringify(valid) }))
    assert.strictEqual(known.id, valid.id)
    const { owner_addr: _, ...noOwner } = valid
    assert.strictEqual(Result.getOrThrow(interpretClaim({ status: 200, body: JSON.stringify(noOwner) })).ownerAddr, "")
  })

  it("an invalid claim reply is an unknown outcome whose error never quotes the token", () => {
    const invalid: ReadonlyArray<[string, Record<string, unknown>]> = [
      ["no token", { ...valid, token: undefined }],
      ["empty token", { ...valid, token: "" }],
      ["CR/LF token", { ...valid, token: "abc\r\nSet-Cookie: x" }],
      ["space in token", { ...valid, token: "abc def" }],
      ["oversize token", { ...valid, token: "t".repeat(600) }],
      ["100 KB id", { ...valid, id: "sb_" + "a".repeat(100 * 1024) }],
      ["id with a slash", { ...valid, id: "sb_1/../x" }],
      ["no deadline", { ...valid, deadline: undefined }],
      ["unparsable deadline", { ...valid, deadline: "tomorrow" }],
      ["owner_addr with a newline", { ...valid, owner_addr: "10.0.0.5:7777\nx" }]
    ]
    for (const [what, body] of invalid) {
      const result = interpretClaim({ status: 200, body: JSON.stringify(body) })
      assert.isTrue(Result.isFailure(result), what)
      if (Result.isSuccess(result)) continue
      assert.strictEqual(result.failure._tag, "SandboxdDecodeError", what)
      assert.strictEqual(claimFailureKind(result.failure), "Unknown", what)
      if (typeof body["token"] === "string" && body["token"].length > 0) {
        assert.notInclude(result.failure.message, body["token"].slice(0, 6), what)
      }
      assert.isAtMost(result.failure.message.length, 300, what)
    }
  })

  it("classifies failed claims: refused or never sent is Failed, anything that may have reached sandboxd is Unknown", () => {
    const failed = [
      new NoWarmCapacity({ message: "" }),
      new SandboxdHttpError({ operation: "claim", status: 400, message: "" }),
      new SandboxdHttpError({ operation: "claim", status: 0, message: "not sent" }),
      new SandboxdUnreachable({ operation: "claim", message: "refused", requestSent: false })
    ]
    const unknown = [
      new SandboxdTimeout({ operation: "claim", timeoutMillis: 1, message: "" }),
      new SandboxdUnreachable({ operation: "claim", message: "reset" }),
      new SandboxdDecodeError({ operation: "claim", message: "" }),
      new SandboxdHttpError({ operation: "claim", status: 504, message: "" })
    ]
    for (const error of failed) assert.strictEqual(claimFailureKind(error), "Failed", error.message)
    for (const error of unknown) assert.strictEqual(claimFailureKind(error), "Unknown", error.message)
  })

  it("CRT-23: a claim's HTTP status is sandboxd's no, except a 5xx other than 500, which only a gateway in between answers", () => {
    // sandboxd answers a claim with 200, 400, 401/403, 404 (unknown path), 409, 429 or its 500
    // "provisioning failed"; 501-599 come from a proxy that may have forwarded the claim.
    for (let status = 100; status <= 599; status++) {
      const interpreted = interpretClaim({ status, body: JSON.stringify({ error: "no" }) })
      if (status === 200) continue
      assert.isTrue(Result.isFailure(interpreted), String(status))
      if (Result.isSuccess(interpreted)) continue
      const expected = status > 500 ? "Unknown" : "Failed"
      assert.strictEqual(claimFailureKind(interpreted.failure), expected, `HTTP ${status}`)
    }
    for (const status of [502, 503, 504, 507, 520, 599]) {
      const error = new SandboxdHttpError({ operation: "claim", status, message: "" })
      assert.strictEqual(claimFailureKind(error), "Unknown", `HTTP ${status}`)
    }
    for (const status of [0, 400, 404, 409, 500]) {
      const error = new SandboxdHttpError({ operation: "claim", status, message: "" })
      assert.strictEqual(claimFailureKind(error), "Failed", `HTTP ${status}`)
    }
  })

  it("an error body that repeats a known token is scrubbed", () => {
    const secret = "root-token-0123"
    const result = interpretClaim({ status: 401, body: JSON.stringify({ error: `invalid api token ${secret}` }) }, [secret])
    assert.isTrue(Result.isFailure(result) && !result.failure.message.includes(secret))
  })
})

describe("pod annotations", () => {
  it("CRT-2: an empty value counts as absent", () => {
    assert.deepStrictEqual(annotationValue({ [PodAnnotation.template]: "" }, PodAnnotation.template), Option.none())
    assert.deepStrictEqual(annotationValue({ [PodAnnotation.template]: "t" }, PodAnnotation.template), Option.some("t"))
    assert.deepStrictEqual(annotationValue(undefined, PodAnnotation.template), Option.none())
  })

  it("CRT-1: the runtime defaults to sandboxd and is compared exactly", () => {
    assert.isTrue(isServedRuntime({}))
    assert.isTrue(isServedRuntime({ [PodAnnotation.runtime]: "" }))
    assert.isTrue(isServedRuntime({ [PodAnnotation.runtime]: "sandboxd" }))
    assert.isFalse(isServedRuntime({ [PodAnnotation.runtime]: "Sandboxd" }))
    assert.isFalse(isServedRuntime({ [PodAnnotation.runtime]: " sandboxd" }))
    assert.strictEqual(requestedRuntime({ [PodAnnotation.runtime]: "vk-cocoon" }), "vk-cocoon")
  })

  it("CRT-6: TTL parsing as Go's Atoi, absent → 86400, negative rejected, 0 kept", () => {
    const ttl = (value?: string) =>
      parseTtlSeconds(value === undefined ? {} : { [PodAnnotation.ttlSeconds]: value })
    assert.deepStrictEqual(ttl(), Result.succeed(86_400))
    assert.deepStrictEqual(ttl(""), Result.succeed(86_400))
    assert.deepStrictEqual(ttl("0"), Result.succeed(0))
    assert.deepStrictEqual(ttl("-0"), Result.succeed(0))
    assert.deepStrictEqual(ttl("3600"), Result.succeed(3600))
    assert.deepStrictEqual(ttl("+60"), Result.succeed(60))
    assert.deepStrictEqual(ttl("007"), Result.succeed(7))
    // Valid int64 values beyond 2^53 − 1 are capped there exactly (never an inexact Number
    // that lies outside int64, as Number(9223372036854775807n) = 2^63 would).
    assert.deepStrictEqual(ttl("9007199254740991"), Result.succeed(Number.MAX_SAFE_INTEGER))
    for (const huge of ["9007199254740992", "9007199254740993", "9223372036854775807", "+09223372036854775807"]) {
      assert.deepStrictEqual(ttl(huge), Result.succeed(Number.MAX_SAFE_INTEGER), huge)
    }
    for (const bad of ["-1", " 60", "60 ", "1.5", "1_000", "0x10", "1e3", "9223372036854775808", "abc", "+", "--1"]) {
      const result = ttl(bad)
      assert.isTrue(Result.isFailure(result), bad)
      if (Result.isFailure(result)) {
        assert.strictEqual(result.failure.value, bad)
        assert.include(result.failure.message, PodAnnotation.ttlSeconds)
      }
    }
  })
})
