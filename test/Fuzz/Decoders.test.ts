/**
 * Property-based fuzzing of every decoder and pure rule that reads text from outside: Pod
 * annotations, ownerReferences and the delete-verdict table, sandboxd bodies, the claims file,
 * the kubelet route table, Go durations and Kubernetes quantities.
 *
 * The properties: nothing throws or dies, whatever the input; what has an encoder round-trips;
 * and the verdict table releases only for one of its release reasons, each backed by the
 * evidence it names. Run counts are kept modest so the whole file takes a few seconds.
 */
import { assert, describe, it } from "@effect/vitest"
import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node"
import { DateTime, Effect, Exit, Layer, Option, Redacted, Result } from "effect"
import fc from "fast-check"
import { parseGoDurationNanos, parseGoDuration } from "../../src/Cli/GoDuration.ts"
import { parseCapacityQuantity, parseQuantity } from "../../src/Cli/Quantity.ts"
import {
  interpretClaim,
  interpretHealthz,
  interpretInfo,
  interpretList,
  interpretRelease
} from "../../src/Sandboxd/Replies.ts"
import * as OwnerResolverKube from "../../src/Programs/Authorization/OwnerResolverKube.ts"
import { controllerRefsOf, ownerGvrOf, pluralOf } from "../../src/Programs/Authorization/OwnerGvr.ts"
import { matchRoute } from "../../src/Programs/Kubelet/Routes.ts"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import { decodeClaimsFile, decodeClaimsValue } from "../../src/Schemas/ClaimsFile/Decode.ts"
import { encodeClaimsFile } from "../../src/Schemas/ClaimsFile/Encode.ts"
import { formatTimestamp, parseTimestamp } from "../../src/Schemas/ClaimsFile/Time.ts"
import type { ReleaseReason } from "../../src/Schemas/DeleteVerdict.ts"
import type { ClaimId, PodKey } from "../../src/Schemas/Ids.ts"
import {
  type Annotations,
  isServedRuntime,
  parseTtlSeconds,
  PodAnnotation,
  requestedRuntime
} from "../../src/Schemas/PodAnnotations.ts"
import { formatDeadline, parseDeadline } from "../../src/Schemas/Sandboxd.ts"
import {
  KubeApi,
  KubeForbidden,
  KubeNotFound,
  KubeUnavailable,
  type OwnerObject,
  type OwnerRef
} from "../../src/Services/KubeApi.ts"
import { OwnerResolver } from "../../src/Services/OwnerResolver.ts"

const runs = { numRuns: 400 }

/** JSON as a server could send it, and the text around it. */
const jsonText = fc.oneof(fc.json(), fc.string(), fc.string({ unit: "binary" }))

// ---- Pod annotations ---------------------------------------------------------------------------

const ttl = (value: unknown) => parseTtlSeconds({ [PodAnnotation.ttlSeconds]: value } as unknown as Annotations)

describe("fuzz: Pod annotations", () => {
  it("the TTL grammar: decided edge cases", () => {
    const decided: ReadonlyArray<readonly [string, number | "invalid"]> = [
      ["+5", 5],
      ["00012", 12],
      ["-0", 0],
      ["0", 0],
      ["9223372036854775807", Number.MAX_SAFE_INTEGER], // 2^63 − 1: valid, capped at 2^53 − 1
      ["9223372036854775808", "invalid"], // 2^63: beyond 64 bits
      ["-1", "invalid"],
      [" 5", "invalid"],
      ["5 ", "invalid"],
      ["1_000", "invalid"],
      ["0x10", "invalid"],
      ["1e3", "invalid"],
      ["5.0", "invalid"],
      ["++5", "invalid"],
      ["+", "invalid"],
      ["٣", "invalid"] // a non-ASCII digit
    ]
    for (const [text, expected] of decided) {
      const result = ttl(text)
      assert.deepStrictEqual(Result.isSuccess(result) ? result.success : "invalid", expected, JSON.stringify(text))
    }
  })

  it("any annotation value: a non-negative safe integer or TtlAnnotationInvalid, never a throw", () =>
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[+-]?[0-9]{1,25}$/), fc.jsonValue()), (value) => {
        const result = ttl(value)
        if (Result.isSuccess(result)) {
          assert.isTrue(Number.isSafeInteger(result.success) && result.success >= 0)
        } else {
          assert.strictEqual(result.failure._tag, "TtlAnnotationInvalid")
        }
      }),
      runs
    ))

  it("round trip: every value in [0, 2^53 − 1] written in base 10 (with leading zeros or a plus) reads back", () =>
    fc.assert(
      fc.property(fc.maxSafeNat(), fc.nat({ max: 5 }), fc.boolean(), (n, zeros, plus) => {
        const text = `${plus ? "+" : ""}${"0".repeat(zeros)}${n}`
        assert.deepStrictEqual(Result.getOrUndefined(ttl(text)), n)
      }),
      runs
    ))

  it("found by fuzzing: a TTL value that is not a string is read as its JSON text, never a thrown schema error", () => {
    assert.strictEqual(Result.getOrUndefined(ttl(5)), 5)
    for (const value of [5e-324, -1, { a: 1 }, [1], true]) {
      const result = ttl(value)
      assert.isTrue(Result.isFailure(result) && result.failure._tag === "TtlAnnotationInvalid", JSON.stringify(value))
    }
    assert.strictEqual(Result.getOrUndefined(ttl(null)), 86_400, "null counts as absent, like the empty string")
    assert.strictEqual(requestedRuntime({ [PodAnnotation.runtime]: 7 } as unknown as Annotations), "7")
  })

  it("any annotation map: runtime and TTL rules never throw", () =>
    fc.assert(
      fc.property(fc.option(fc.dictionary(fc.string(), fc.string()), { nil: undefined }), (annotations) => {
        assert.isString(requestedRuntime(annotations))
        assert.isBoolean(isServedRuntime(annotations))
        parseTtlSeconds(annotations)
      }),
      runs
    ))
})

// ---- ownerReferences and the verdict table -------------------------------------------------------

const anyRef = fc.oneof(
  fc.record({
    apiVersion: fc.oneof(fc.constantFrom("v1", "apps/v1", "agents.x-k8s.io/v1beta1", "", "/v1", "a/b/c"), fc.string()),
    kind: fc.oneof(fc.constantFrom("Sandbox", "ReplicaSet", "Policy", "Box", ""), fc.string()),
    name: fc.oneof(fc.constantFrom("sb", "other"), fc.string()),
    uid: fc.oneof(fc.constantFrom("u1", "u2", ""), fc.string()),
    controller: fc.option(fc.boolean(), { nil: undefined })
  }, { requiredKeys: [] }),
  fc.jsonValue()
)

const podWith = (refs: unknown): V1Pod => ({ metadata: { namespace: "team-a", name: "web", uid: "p", ownerReferences: refs } }) as unknown as V1Pod

describe("fuzz: ownerReferences", () => {
  it("controllerRefsOf, ownerGvrOf and pluralOf never throw on any JSON", () =>
    fc.assert(
      fc.property(fc.oneof(fc.array(anyRef, { maxLength: 4 }), fc.jsonValue()), (refs) => {
        for (const ref of controllerRefsOf(podWith(refs))) {
          assert.strictEqual(ref.controller, true)
          const gvr = ownerGvrOf(ref)
          if (Option.isSome(gvr)) assert.notStrictEqual(gvr.value.version, "")
        }
      }),
      runs
    ))

  it("pluralOf: lower case, never shorter than the kind", () =>
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), (kind) => {
        const plural = pluralOf(kind)
        assert.strictEqual(plural, plural.toLowerCase())
        assert.isAtLeast(plural.length, kind.toLowerCase().length)
      }),
      runs
    ))
})

/** What the stubbed apiserver answers to the owner GET. */
type OwnerAnswer =
  | { readonly _tag: "Found"; readonly name: string | undefined; readonly uid: string; readonly deletionTimestamp: string | undefined }
  | { readonly _tag: "NotFound"; readonly detailsName: string | undefined }
  | { readonly _tag: "Forbidden" }
  | { readonly _tag: "Unavailable" }

const ownerAnswer: fc.Arbitrary<OwnerAnswer> = fc.oneof(
  fc.record({
    _tag: fc.constant("Found" as const),
    name: fc.option(fc.constantFrom("sb", "other", ""), { nil: undefined }),
    uid: fc.constantFrom("u1", "u2", ""),
    deletionTimestamp: fc.option(fc.constantFrom("2026-01-01T00:00:00Z", ""), { nil: undefined })
  }),
  fc.record({ _tag: fc.constant("NotFound" as const), detailsName: fc.option(fc.constantFrom("sb", "other", ""), { nil: undefined }) }),
  fc.constant({ _tag: "Forbidden" as const }),
  fc.constant({ _tag: "Unavailable" as const })
)

// The verdict reads owners only: a KubeApi with getOwner alone (the cast keeps this stub from
// breaking each time the service grows a method the verdict never calls).
const kubeAnswering = (answer: OwnerAnswer, asked: Array<OwnerRef>) =>
  Layer.succeed(
    KubeApi,
    ({
      getOwner: (ref) => {
        asked.push(ref)
        switch (answer._tag) {
          case "Found":
            return Effect.succeed<OwnerObject>({ name: answer.name, uid: answer.uid, deletionTimestamp: answer.deletionTimestamp, raw: {} })
          case "NotFound":
            return Effect.fail(
              new KubeNotFound({
                operation: "getOwner",
                message: "not found",
                ...(answer.detailsName === undefined ? {} : { details: { name: answer.detailsName } })
              })
            )
          case "Forbidden":
            return Effect.fail(new KubeForbidden({ operation: "getOwner", message: "forbidden" }))
          case "Unavailable":
            return Effect.fail(new KubeUnavailable({ operation: "getOwner", status: 503, message: "unavailable" }))
        }
      }
    } satisfies Pick<KubeApi["Service"], "getOwner">) as unknown as KubeApi["Service"]
  )

const releaseReasons: ReadonlySet<ReleaseReason> = new Set(["BarePod", "OwnerGone", "OwnerTerminating", "OwnerUidRotated"])

describe("fuzz: the delete-verdict table", () => {
  it.effect("a release always has one of the release reasons, and the evidence that reason names", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(fc.oneof(fc.array(anyRef, { maxLength: 3 }), fc.jsonValue()), ownerAnswer, async (refs, answer) => {
          const pod = podWith(refs)
          const asked: Array<OwnerRef> = []
          const exit = await Effect.runPromiseExit(
            OwnerResolver.use((resolver) => resolver.verdictFor(pod)).pipe(
              Effect.provide(OwnerResolverKube.layer.pipe(Layer.provide(kubeAnswering(answer, asked))))
            )
          )
          assert.isTrue(Exit.isSuccess(exit), `the verdict never fails or dies: ${String(exit)}`)
          if (!Exit.isSuccess(exit)) return
          const verdict = exit.value
          const controllers = controllerRefsOf(pod)
          if (controllers.length !== 1) {
            // none: bare; more than one: no owner is asked and nothing is released
            assert.strictEqual(verdict._tag === "Release" ? verdict.reason : "Preserve", controllers.length === 0 ? "BarePod" : "Preserve")
            assert.strictEqual(asked.length, 0)
            return
          }
          if (verdict._tag === "Preserve") return
          assert.isTrue(releaseReasons.has(verdict.reason), verdict.reason)
          const owner = controllers[0] as V1OwnerReference
          // a release with a controller always asked about exactly that owner, by name
          assert.deepStrictEqual(asked.map((ref) => ref.name), [owner.name ?? ""])
          switch (verdict.reason) {
            case "BarePod":
              assert.fail("a Pod with a controller is not bare")
              break
            case "OwnerGone":
              assert.isTrue(answer._tag === "NotFound" && answer.detailsName === (owner.name ?? ""))
              break
            case "OwnerTerminating":
              assert.isTrue(answer._tag === "Found" && answer.name === (owner.name ?? "") && (answer.deletionTimestamp ?? "") !== "")
              break
            case "OwnerUidRotated":
              assert.isTrue(
                answer._tag === "Found" && answer.name === (owner.name ?? "") && (owner.uid ?? "") !== "" && owner.uid !== answer.uid
              )
              break
          }
        }),
        { numRuns: 300 }
      )
    ))
})

// ---- sandboxd bodies -----------------------------------------------------------------------------

const listedRow = fc.record({
  id: fc.stringMatching(/^sb_[0-9a-f]{1,16}$/),
  claim_ref: fc.string(),
  hibernated: fc.boolean(),
  archived: fc.boolean(),
  failed: fc.string(),
  key: fc.record({ template: fc.string(), net: fc.string(), size: fc.string() })
})

/** A body that is nearly a listing: the right outer shape, rows of any JSON. */
const nearListing = fc.oneof(
  fc.record({ sandboxes: fc.array(fc.oneof(listedRow, fc.jsonValue(), fc.dictionary(fc.constantFrom("id", "deadline", "key", "hibernated", "claim_ref"), fc.jsonValue())), { maxLength: 4 }) }),
  fc.record({ sandboxes: fc.jsonValue() }),
  fc.record({ pools: fc.array(fc.record({ key: fc.jsonValue(), warm: fc.jsonValue(), target: fc.jsonValue() }, { requiredKeys: [] }), { maxLength: 3 }) }),
  fc.jsonValue()
).map((value) => JSON.stringify(value))

describe("fuzz: sandboxd bodies", () => {
  it("any status and body: each interpreter gives a value or a typed error, never a throw", () =>
    fc.assert(
      fc.property(fc.oneof(fc.constantFrom(200, 204, 404, 409, 429, 500), fc.integer({ min: 0, max: 999 })), fc.oneof(jsonText, nearListing), (status, body) => {
        const reply = { status, body }
        const results: ReadonlyArray<Result.Result<unknown, { readonly _tag: string }>> = [
          interpretList(reply),
          interpretInfo(reply),
          interpretClaim(reply),
          interpretRelease(reply),
          interpretHealthz(reply)
        ]
        for (const result of results) {
          if (Result.isFailure(result)) assert.isString(result.failure._tag)
        }
      }),
      { numRuns: 600 }
    ))

  it("round trip: a listing of valid rows decodes to one row per id, first occurrence, fields intact", () =>
    fc.assert(
      fc.property(fc.array(listedRow, { maxLength: 8 }), (rows) => {
        const decoded = Result.getOrThrow(interpretList({ status: 200, body: JSON.stringify({ sandboxes: rows }) }))
        const firsts = rows.filter((row, i) => rows.findIndex((r) => r.id === row.id) === i)
        assert.deepStrictEqual(
          decoded.map((row) => [row.id, row.claimRef, row.hibernated, row.archived, row.failed, row.key]),
          firsts.map((row) => [row.id, row.claim_ref, row.hibernated, row.archived, row.failed, row.key])
        )
      }),
      runs
    ))

  it("found by fuzzing: an instant before 1970 with a sub-millisecond part is formatted, not garbled", () => {
    assert.strictEqual(formatDeadline(-1n, 0), "1969-12-31T23:59:59.999999999Z")
    assert.strictEqual(formatDeadline(-1_500_000n, 60), "1970-01-01T00:59:59.9985+01:00")
  })

  it("deadlines: any text parses or is None; formatted instants read back to the millisecond", () => {
    fc.assert(fc.property(fc.string(), (text) => void parseDeadline(text)), runs)
    fc.assert(
      fc.property(
        fc.bigInt({ min: -62_135_596_800_000_000_000n + 86_400_000_000_000n, max: 253_402_300_799_000_000_000n - 86_400_000_000_000n }),
        fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }),
        (nanos, offset) => {
          const parsed = parseDeadline(formatDeadline(nanos, offset))
          const millis = nanos / 1_000_000n - (nanos < 0n && nanos % 1_000_000n !== 0n ? 1n : 0n)
          assert.deepStrictEqual(Option.map(parsed, DateTime.toEpochMillis), Option.some(Number(millis)))
        }
      ),
      runs
    )
  })
})

// ---- the claims file ------------------------------------------------------------------------------

const wholeSecond = fc.integer({ min: -62_135_596_800 + 86_400, max: 253_402_300_799 }).map((s) => DateTime.makeUnsafe(s * 1000))

const claimRecord: fc.Arbitrary<ClaimRecord> = fc.record({
  id: fc.string({ minLength: 1 }).map((s) => s as ClaimId),
  // What the file accepts as a token: non-empty visible ASCII.
  token: fc.stringMatching(/^[\x21-\x7e]{1,40}$/).map((s) => Redacted.make(s)),
  address: fc.string(),
  podUID: fc.string(),
  claimedAt: fc.option(wholeSecond, { nil: undefined }).map(Option.fromUndefinedOr),
  deadline: fc.option(wholeSecond, { nil: undefined }).map(Option.fromUndefinedOr)
})

const comparable = (rows: ReadonlyMap<PodKey, ClaimRecord>) =>
  [...rows].map(([key, r]) => [
    key,
    r.id,
    Redacted.value(r.token),
    r.address,
    r.podUID,
    Option.map(r.claimedAt, DateTime.toEpochMillis),
    Option.map(r.deadline, DateTime.toEpochMillis)
  ]).sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1))

describe("fuzz: the claims file", () => {
  it.effect("any text: the decoder gives a table or ClaimsFileDecodeError, never a defect", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(fc.oneof(jsonText, fc.record({ claims: fc.dictionary(fc.string(), fc.jsonValue()) }).map((v) => JSON.stringify(v))), async (text) => {
          const exit = await Effect.runPromiseExit(decodeClaimsFile(text))
          if (Exit.isFailure(exit)) {
            assert.isTrue(Exit.hasFails(exit) && !Exit.hasDies(exit), String(exit))
          }
        }),
        runs
      )
    ))

  it.effect("a key named __proto__ is a row like any other, both ways", () =>
    Effect.gen(function*() {
      const text = `{"claims":{"__proto__":{"id":"x","token":"t","podUID":""},"a/b":{"id":"y","token":"t2","podUID":""}}}`
      const rows = yield* decodeClaimsFile(text)
      assert.deepStrictEqual([...rows.keys()], ["__proto__", "a/b"])
      assert.strictEqual(encodeClaimsFile(rows), text)
    }))

  it("any JSON value: decodeClaimsValue never throws", () =>
    fc.assert(fc.property(fc.jsonValue(), (value) => void decodeClaimsValue(value)), runs))

  it.effect("round trip: encode then decode gives the same rows (timestamps to the second)", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(fc.dictionary(fc.string(), claimRecord, { maxKeys: 5 }), async (object) => {
          // One claim id per row, as the file requires.
          const rows = new Map(Object.entries(object).map(([key, record], i) => [key as PodKey, { ...record, id: `${record.id}#${i}` as ClaimId }]))
          const decoded = await Effect.runPromise(decodeClaimsFile(encodeClaimsFile(rows)))
          assert.deepStrictEqual(comparable(decoded), comparable(rows))
        }),
        { numRuns: 200 }
      )
    ))

  it("timestamps: any text parses or fails with a message; formatted seconds read back", () => {
    fc.assert(fc.property(fc.string(), (text) => void parseTimestamp(text)), runs)
    fc.assert(
      fc.property(wholeSecond, (t) => {
        const back = Result.getOrThrow(parseTimestamp(formatTimestamp(t)))
        assert.deepStrictEqual(Option.map(back, DateTime.toEpochMillis), Option.some(DateTime.toEpochMillis(t)))
      }),
      runs
    )
  })
})

// ---- the kubelet route table -----------------------------------------------------------------------

const segment = fc.oneof(fc.constantFrom("", "healthz", "exec", "attach", "portForward", "containerLogs", "stats", "summary", "metrics", "resource", "pods", "runningpods", "ns", "..", "%2F"), fc.string())
const pathOf = fc.array(segment, { maxLength: 6 }).map((parts) => `/${parts.join("/")}`)
const method = fc.oneof(fc.constantFrom("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "CONNECT", "get", "post"), fc.string())

describe("fuzz: the kubelet route table", () => {
  it("any method and path: a route, never a throw; 405 lists the methods the path accepts, not the one used", () =>
    fc.assert(
      fc.property(method, fc.oneof(pathOf, fc.string()), (m, path) => {
        const route = matchRoute(m, path)
        if (route._tag === "MethodNotAllowed") {
          assert.isAbove(route.allow.length, 0)
          assert.notInclude(route.allow, m.toUpperCase())
          // the same path with an allowed method is served
          assert.notInclude(["NotFound", "MethodNotAllowed"], matchRoute(route.allow[0]!, path)._tag)
        }
        // methods match case-insensitively
        assert.deepStrictEqual(matchRoute(m.toLowerCase(), path), matchRoute(m.toUpperCase(), path))
      }),
      { numRuns: 600 }
    ))

  it("streaming routes with any non-empty names are 501, whatever the names", () =>
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1 }).filter((s) => !s.includes("/")), { minLength: 3, maxLength: 3 }), (names) => {
        for (const feature of ["exec", "attach", "containerLogs"]) {
          assert.strictEqual(matchRoute("GET", `/${feature}/${names.join("/")}`)._tag, "NotImplemented")
        }
        assert.strictEqual(matchRoute("POST", `/portForward/${names.slice(0, 2).join("/")}`)._tag, "NotImplemented")
      }),
      runs
    ))
})

// ---- Go durations and quantities ---------------------------------------------------------------------

const units: ReadonlyArray<readonly [string, bigint]> = [["h", 3_600_000_000_000n], ["m", 60_000_000_000n], ["s", 1_000_000_000n], ["ms", 1_000_000n], ["us", 1_000n], ["µs", 1_000n], ["ns", 1n]]

describe("fuzz: Go durations", () => {
  it("any text: nanoseconds or a message, never a throw; the Duration form never throws either", () =>
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[+-]?([0-9]{0,22}(\.[0-9]{0,12})?(h|m|s|ms|us|ns|µs|x)?){1,4}$/)), (text) => {
        const nanos = parseGoDurationNanos(text)
        if (Result.isSuccess(nanos)) {
          assert.isTrue(nanos.success >= -(1n << 63n) && nanos.success < 1n << 63n)
        } else {
          assert.isString(nanos.failure)
        }
        parseGoDuration(text)
      }),
      { numRuns: 600 }
    ))

  it("round trip: a sum of whole terms in any units reads back as its nanoseconds", () =>
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat({ max: 100_000 }), fc.constantFrom(...units)), { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        (terms, negative) => {
          const text = `${negative ? "-" : ""}${terms.map(([n, [unit]]) => `${n}${unit}`).join("")}`
          const total = terms.reduce((sum, [n, [, nanos]]) => sum + BigInt(n) * nanos, 0n)
          assert.deepStrictEqual(Result.getOrUndefined(parseGoDurationNanos(text)), negative ? -total : total)
        }
      ),
      runs
    ))
})

describe("fuzz: quantities", () => {
  it("any text: a quantity or a message, never a throw; a capacity is never negative", () =>
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[+-]?[0-9]{0,20}(\.[0-9]{0,6})?([eE][+-]?[0-9]{1,12}|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$/)), (text) => {
        const quantity = parseQuantity(text)
        if (Result.isSuccess(quantity)) assert.strictEqual(quantity.success.text, text)
        const capacity = parseCapacityQuantity(text)
        if (Result.isSuccess(capacity)) assert.isFalse(capacity.success.value < 0)
      }),
      { numRuns: 600 }
    ))

  it("round trip: an integer with a binary or decimal suffix keeps its text and its value", () =>
    fc.assert(
      fc.property(fc.nat({ max: 1_000_000 }), fc.constantFrom(["", 1], ["k", 1e3], ["M", 1e6], ["G", 1e9], ["Ki", 1024], ["Mi", 1024 ** 2], ["Gi", 1024 ** 3]), (n, [suffix, factor]) => {
        const parsed = Result.getOrThrow(parseQuantity(`${n}${suffix}`))
        assert.deepStrictEqual([parsed.text, parsed.value], [`${n}${suffix}`, n * (factor as number)])
      }),
      runs
    ))
})
