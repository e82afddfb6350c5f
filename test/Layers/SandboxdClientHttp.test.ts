/**
 * The live HTTP SandboxdClient against the sandboxd simulator over real loopback HTTP.
 * Every status and body mapping of the client is exercised here.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, DateTime, Duration, Effect, Fiber, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"
import * as SandboxdClientHttp from "../../src/Layers/SandboxdClientHttp.ts"
import { testConfig } from "../../testkit/Config.ts"
import type { ClaimId } from "../../src/Schemas/Ids.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import { KnownSecrets } from "../../src/Services/KnownSecrets.ts"
import { claimFailureKind, type SandboxdListError } from "../../src/Services/SandboxdClient.ts"
import { SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { claimSpec, clientFor, ROOT_TOKEN, startSim, TEMPLATE } from "../support/Sandboxd.ts"
import { eventually, flushIO } from "../support/Wait.ts"

const epochMillis = (deadline: Option.Option<DateTime.Utc>): number =>
  Option.match(deadline, { onNone: () => -1, onSome: DateTime.toEpochMillis })


/**
 * The client's deadlines on a TestClock of their own (the simulator keeps real time): a request
 * times out when the test moves the clock, never because a loaded machine was slow to answer.
 */
const clientClock = (sim: { readonly audit: Effect.Effect<ReadonlyArray<unknown>> }) =>
  Effect.gen(function*() {
    const clock = yield* TestClock.make()
    const run = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Clock.Clock, clock)
    /** Returns once the simulator has received `count` requests in all (the receipt). */
    const received = (count: number) =>
      eventually(`request ${count} at the simulator`, Effect.map(sim.audit, (audit) => audit.length >= count))
    /** Forks `call` on the TestClock and returns once the simulator has received its request. */
    const sent = <A, E, R>(call: Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        const seen = (yield* sim.audit).length
        const fiber = yield* Effect.forkChild(run(call))
        yield* received(seen + 1)
        return fiber
      })
    /** `call`'s failure once the clock has moved `after` past the simulator receiving it. */
    const failsAfter = <A, E, R>(call: Effect.Effect<A, E, R>, after: Duration.Input) =>
      Effect.gen(function*() {
        const fiber = yield* sent(Effect.flip(call))
        yield* clock.adjust(after)
        return yield* Fiber.join(fiber)
      })
    return { clock, run, received, sent, failsAfter }
  })

describe("claim", () => {
  it.live("a warm hit returns id, token, owner_addr and the granted deadline", () =>
    Effect.gen(function*() {
      const { sim, url, address } = yield* startSim()
      const client = yield* clientFor(url)
      const before = Date.now()
      const result = yield* client.claim(claimSpec())
      assert.match(result.id, /^sb_[0-9a-f]{16}$/)
      assert.match(Redacted.value(result.token), /^[0-9a-f]{32}$/)
      assert.strictEqual(result.ownerAddr, `127.0.0.1:${address.port}`)
      const deadline = epochMillis(result.deadline)
      assert.isAtLeast(deadline, before + 86_400_000 - 1)
      assert.isAtMost(deadline, Date.now() + 86_400_000 + 1)
      const claims = yield* sim.claims
      assert.strictEqual(claims.length, 1)
      assert.strictEqual(claims[0].id, result.id)
      assert.strictEqual(claims[0].token, Redacted.value(result.token))
      assert.strictEqual(claims[0].claimRef, "team-a/review-bot-7f3k2")
    }))

  it.live("sends the node token and a body with empty fields omitted", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(url)
      yield* client.claim(claimSpec({ net: "", size: "", ttlSeconds: 0 }))
      yield* client.claim(claimSpec({ net: "none", size: "small", ttlSeconds: 60, template: "base:24.04" }))
      const audit = yield* sim.audit
      assert.strictEqual(audit.length, 2)
      assert.strictEqual(audit[0].method, "POST")
      assert.strictEqual(audit[0].path, "/v1/claim")
      assert.strictEqual(audit[0].authorization, `Bearer ${ROOT_TOKEN}`)
      assert.strictEqual(audit[0].auth, "root")
      assert.strictEqual(audit[0].contentType, "application/json")
      assert.deepStrictEqual(JSON.parse(audit[0].body), { template: TEMPLATE, claim_ref: "team-a/review-bot-7f3k2" })
      assert.deepStrictEqual(JSON.parse(audit[1].body), {
        template: "base:24.04",
        net: "none",
        size: "small",
        ttl_seconds: 60,
        claim_ref: "team-a/review-bot-7f3k2"
      })
    }))

  it.live("list and info carry the node token; healthz carries none", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(url)
      yield* client.listSandboxes
      yield* client.info
      yield* client.healthz
      const audit = yield* sim.audit
      assert.deepStrictEqual(audit.map((e) => [e.method, e.path, e.authorization ?? "", e.body]), [
        ["GET", "/v1/sandboxes", `Bearer ${ROOT_TOKEN}`, ""],
        ["GET", "/v1/info", `Bearer ${ROOT_TOKEN}`, ""],
        ["GET", "/healthz", "", ""]
      ])
    }))

  it.live("a claim body over 1 MiB is refused by the simulator with 400", () =>
    Effect.gen(function*() {
      const { url } = yield* startSim()
      const client = yield* clientFor(url)
      const error = yield* Effect.flip(client.claim(claimSpec({ claimRef: "x".repeat(1024 * 1024 + 1) })))
      assert.deepInclude(error, { _tag: "SandboxdHttpError", status: 400, message: "invalid request body" })
    }))

  it.live("sends no Authorization header when the node token is empty", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim({ rootToken: "", tenantTokens: [] })
      const client = yield* clientFor(url, { sandboxdToken: Redacted.make("") })
      yield* client.claim(claimSpec())
      yield* client.listSandboxes
      yield* client.info
      const audit = yield* sim.audit
      assert.deepStrictEqual(audit.map((e) => e.auth), ["none", "none", "none"])
      assert.deepStrictEqual(audit.map((e) => e.authorization), [undefined, undefined, undefined])
    }))

  it.live("parses deadlines with any offset and nanoseconds (simulator in UTC+08:00)", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim({ zoneOffsetMinutes: 8 * 60 })
      const client = yield* clientFor(url)
      const result = yield* client.claim(claimSpec({ ttlSeconds: 600 }))
      const [claim] = yield* sim.claims
      assert.match(claim.deadline, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{1,9}\+08:00$/)
      assert.strictEqual(epochMillis(result.deadline), Number(claim.deadlineNanos / 1_000_000n))
    }))

  it.live("parses a hand-written offset/nanosecond deadline and ignores unknown fields", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      yield* sim.injectFault(
        "claim",
        SimFault.body(
          200,
          `{"id":"sb_4f9a0c2e7b1d3a65","token":"9c1e77d03ab24f5e8d61c2b0f4a39e17","deadline":"2026-07-28T10:15:00.123456789+08:00","owner_addr":"10.0.0.5:7777","from_checkpoint":"x","net_route":{"a":1}}\n`
        )
      )
      const client = yield* clientFor(url)
      const result = yield* client.claim(claimSpec())
      assert.strictEqual(result.id, "sb_4f9a0c2e7b1d3a65")
      assert.strictEqual(Redacted.value(result.token), "9c1e77d03ab24f5e8d61c2b0f4a39e17")
      assert.strictEqual(result.ownerAddr, "10.0.0.5:7777")
      assert.strictEqual(epochMillis(result.deadline), Date.UTC(2026, 6, 28, 2, 15, 0, 123))
    }))

  it.live("the zero-time deadline is no known expiry; an absent deadline is an invalid reply", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      yield* sim.injectFault(
        "claim",
        SimFault.body(200, `{"id":"sb_0000000000000001","token":"t","deadline":"0001-01-01T00:00:00Z"}`),
        { times: 1 }
      )
      yield* sim.injectFault("claim", SimFault.body(200, `{"id":"sb_0000000000000002","token":"t"}`), { times: 1 })
      const client = yield* clientFor(url)
      const zero = yield* client.claim(claimSpec())
      assert.isTrue(Option.isNone(zero.deadline))
      assert.strictEqual(zero.ownerAddr, "")
      const absent = yield* Effect.flip(client.claim(claimSpec()))
      assert.strictEqual(absent._tag, "SandboxdDecodeError")
      assert.strictEqual(claimFailureKind(absent), "Unknown")
    }))

  it.live("a redirect, a {} body and a 429 are NoWarmCapacity", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim({ mesh: { peers: ["10.0.0.6:7777", "10.0.0.7:7777"] } })
      const client = yield* clientFor(url)
      // A template without a warm pool on a mesh node: the real redirect path.
      const redirect = yield* Effect.flip(client.claim(claimSpec({ template: "cold:1" })))
      assert.strictEqual(redirect._tag, "NoWarmCapacity")
      assert.include(redirect.message, "10.0.0.6:7777")
      yield* sim.injectFault("claim", SimFault.body(200, "{}\n"), { times: 1 })
      const empty = yield* Effect.flip(client.claim(claimSpec()))
      assert.strictEqual(empty._tag, "NoWarmCapacity")
      yield* sim.setDraining(true)
      const draining = yield* Effect.flip(client.claim(claimSpec()))
      assert.strictEqual(draining._tag, "NoWarmCapacity")
      assert.include(draining.message, "node draining")
      assert.strictEqual((yield* sim.claims).length, 0)
    }))

  it.live("max_claims gives 429 → NoWarmCapacity; a single-node warm miss provisions", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim({ maxClaims: 3, coldProvisionDelay: "20 millis" })
      const client = yield* clientFor(url)
      yield* client.claim(claimSpec())
      yield* client.claim(claimSpec())
      // The pool (target 2) is empty now: the third claim is cold-provisioned, not refused.
      const cold = yield* client.claim(claimSpec())
      assert.match(cold.id, /^sb_/)
      const refused = yield* Effect.flip(client.claim(claimSpec()))
      assert.strictEqual(refused._tag, "NoWarmCapacity")
      assert.include(refused.message, "3 live claims, cap 3")
      assert.strictEqual((yield* sim.claims).length, 3)
    }))

  for (const status of [401, 403]) {
    it.live(`${status} to a claim is SandboxdUnauthorized, whose message never quotes sandboxd's body`, () =>
      Effect.gen(function*() {
        const { sim, url } = yield* startSim()
        yield* sim.injectFault("claim", SimFault.status(status, "Bearer s3cret was refused"), { times: 1 })
        const client = yield* clientFor(url)
        const refused = yield* Effect.flip(client.claim(claimSpec()))
        assert.deepInclude(refused, {
          _tag: "SandboxdUnauthorized",
          operation: "claim",
          status,
          message: `sandboxd refused the node token (HTTP ${status}); check --sandboxd-token-file`
        })
      }))
  }

  for (const status of [400, 409, 500]) {
    it.live(`${status} with and without an error body is SandboxdHttpError`, () =>
      Effect.gen(function*() {
        const { sim, url } = yield* startSim()
        yield* sim.injectFault("claim", SimFault.status(status, `boom ${status}`), { times: 1 })
        yield* sim.injectFault("claim", SimFault.status(status), { times: 1 })
        const client = yield* clientFor(url)
        const withBody = yield* Effect.flip(client.claim(claimSpec()))
        const withoutBody = yield* Effect.flip(client.claim(claimSpec()))
        assert.deepInclude(withBody, { _tag: "SandboxdHttpError", operation: "claim", status, message: `boom ${status}` })
        assert.deepInclude(withoutBody, { _tag: "SandboxdHttpError", operation: "claim", status, message: "" })
      }))
  }

  it.live("the simulator's own 400/409 replies carry their messages; its 401 is SandboxdUnauthorized", () =>
    Effect.gen(function*() {
      const { url } = yield* startSim()
      const client = yield* clientFor(url)
      const badSize = yield* Effect.flip(client.claim(claimSpec({ size: "huge" })))
      assert.deepInclude(badSize, { status: 400, message: `invalid pool key: unknown size "huge"` })
      const egress = yield* Effect.flip(client.claim(claimSpec({ net: "egress" })))
      assert.deepInclude(egress, { status: 409, message: "node has no egress attachment (bridge or network)" })
      const wrongToken = yield* clientFor(url, { sandboxdToken: Redacted.make("nope") })
      const unauthorized = yield* Effect.flip(wrongToken.claim(claimSpec()))
      assert.deepInclude(unauthorized, { _tag: "SandboxdUnauthorized", status: 401 })
    }))

  it.live("a non-JSON error body is quoted by a short safe excerpt; a 200 with malformed JSON is a decode error", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      yield* sim.injectFault("claim", SimFault.body(502, "<html>bad gateway</html>", "text/html"), { times: 1 })
      yield* sim.injectFault("claim", SimFault.body(200, `{"id":"sb_1",`), { times: 1 })
      yield* sim.injectFault("claim", SimFault.body(200, `{"id":42}`), { times: 1 })
      const client = yield* clientFor(url)
      const gateway = yield* Effect.flip(client.claim(claimSpec()))
      assert.deepInclude(gateway, {
        _tag: "SandboxdHttpError",
        status: 502,
        message: "non-JSON body: <html>bad gateway</html>"
      })
      const malformed = yield* Effect.flip(client.claim(claimSpec()))
      assert.strictEqual(malformed._tag, "SandboxdDecodeError")
      const wrongType = yield* Effect.flip(client.claim(claimSpec()))
      assert.strictEqual(wrongType._tag, "SandboxdDecodeError")
    }))

  it.live("a malformed claim response never puts its token into the error", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const token = "0123456789abcdef0123456789abcdef"
      yield* sim.injectFault("claim", SimFault.body(200, `{"id":"sb_0000000000000001","token":${token}x}`), { times: 1 })
      yield* sim.injectFault("claim", SimFault.body(200, `{"id":"sb_0000000000000001","token":["${token}"]}`), { times: 1 })
      const client = yield* clientFor(url)
      for (let i = 0; i < 2; i++) {
        const error = yield* Effect.flip(client.claim(claimSpec()))
        assert.strictEqual(error._tag, "SandboxdDecodeError")
        const text = JSON.stringify(error) + String(error.message)
        for (let at = 0; at + 6 <= token.length; at++) assert.notInclude(text, token.slice(at, at + 6))
      }
    }))

  it.live("an error body is read up to 64 KiB", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const long = "x".repeat(100 * 1024)
      yield* sim.injectFault("claim", SimFault.body(500, JSON.stringify({ error: long })), { times: 1 })
      yield* sim.injectFault("claim", SimFault.body(500, JSON.stringify({ error: "short" })), { times: 1 })
      const client = yield* clientFor(url)
      // Cut at 64 KiB the JSON no longer parses: only a short excerpt is quoted, and the call still ends.
      const truncated = yield* Effect.flip(client.claim(claimSpec()))
      assert.strictEqual(truncated._tag, "SandboxdHttpError")
      assert.isAtMost(truncated.message.length, 200)
      assert.isTrue(truncated.message.startsWith(`non-JSON body: {"error":"`), truncated.message)
      const next = yield* Effect.flip(client.claim(claimSpec()))
      assert.deepInclude(next, { status: 500, message: "short" })
    }))
})

describe("release", () => {
  it.live("204 → Released with the claim's own token; again → AlreadyGone (404)", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(url)
      const claim = yield* client.claim(claimSpec())
      yield* sim.clearAudit
      assert.strictEqual(yield* client.release(claim.id, claim.token), "Released")
      assert.strictEqual(yield* client.release(claim.id, claim.token), "AlreadyGone")
      const audit = yield* sim.audit
      assert.strictEqual(audit[0].path, `/v1/sandboxes/${claim.id}/release`)
      assert.strictEqual(audit[0].authorization, `Bearer ${Redacted.value(claim.token)}`)
      assert.strictEqual(audit[0].auth, "claim")
      assert.strictEqual(audit[0].body, "")
      assert.strictEqual(audit[0].contentType, undefined)
      assert.strictEqual((yield* sim.claims).length, 0)
    }))

  it.live("a wrong token is 404 (AlreadyGone) and releases nothing; the root token releases any id", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(url)
      const claim = yield* client.claim(claimSpec())
      assert.strictEqual(yield* client.release(claim.id, Redacted.make("ffffffffffffffffffffffffffffffff")), "AlreadyGone")
      assert.strictEqual((yield* sim.claims).length, 1)
      assert.strictEqual(yield* client.release(claim.id, Redacted.make(ROOT_TOKEN)), "Released")
      assert.strictEqual((yield* sim.claims).length, 0)
    }))

  it.live("an empty claim token sends no header and gets 401", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(url)
      const claim = yield* client.claim(claimSpec())
      const error = yield* Effect.flip(client.release(claim.id, Redacted.make("")))
      assert.deepInclude(error, { _tag: "SandboxdHttpError", operation: "release", status: 401, message: "missing bearer token" })
      const audit = yield* sim.audit
      assert.strictEqual(audit[1].authorization, undefined)
      assert.strictEqual((yield* sim.claims).length, 1)
    }))

  it.live("500 (with and without body) and an unexpected 200 are SandboxdHttpError", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(url)
      const claim = yield* client.claim(claimSpec())
      yield* sim.injectFault("release", SimFault.status(500, "release failed"), { times: 1 })
      yield* sim.injectFault("release", SimFault.status(500), { times: 1 })
      yield* sim.injectFault("release", SimFault.body(200, "{}"), { times: 1 })
      assert.deepInclude(yield* Effect.flip(client.release(claim.id, claim.token)), {
        status: 500,
        message: "release failed"
      })
      assert.deepInclude(yield* Effect.flip(client.release(claim.id, claim.token)), { status: 500, message: "" })
      assert.deepInclude(yield* Effect.flip(client.release(claim.id, claim.token)), { status: 200 })
      assert.strictEqual(yield* client.release(claim.id, claim.token), "Released")
    }))

  it.live("an empty id fails locally without a request", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(url)
      const error = yield* Effect.flip(client.release("" as ClaimId, Redacted.make("t")))
      assert.strictEqual(error._tag, "SandboxdHttpError")
      assert.strictEqual((yield* sim.audit).length, 0)
    }))

  it.live("a token HTTP cannot carry or an id that is not valid text is a local error, never a defect", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(url)
      const claim = yield* client.claim(claimSpec())
      yield* sim.clearAudit
      // A claim token with a control character (JSON can carry one) and an id with a lone surrogate.
      const badToken = yield* Effect.flip(client.release(claim.id, Redacted.make("0d4c9a17\ne2b85f36")))
      assert.deepInclude(badToken, { _tag: "SandboxdHttpError", operation: "release", status: 0 })
      assert.notInclude(badToken.message, "0d4c9a17")
      const badId = yield* Effect.flip(client.release("sb_\ud800" as ClaimId, claim.token))
      assert.deepInclude(badId, { _tag: "SandboxdHttpError", operation: "release", status: 0 })
      // The node token too: the claim fails typed rather than dying.
      const badNodeToken = yield* clientFor(url, { sandboxdToken: Redacted.make("root\u20actoken") })
      assert.deepInclude(yield* Effect.flip(badNodeToken.claim(claimSpec())), { _tag: "SandboxdHttpError", status: 0 })
      assert.strictEqual((yield* sim.audit).length, 0)
      // Nothing was held: the client still works.
      assert.strictEqual(yield* client.release(claim.id, claim.token), "Released")
    }))
})

describe("list and info", () => {
  it.live("lists rows with claim_ref, deadlines, hibernated/archived/failed and the pool key", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim({ zoneOffsetMinutes: -5 * 60 - 30 })
      const client = yield* clientFor(url)
      const a = yield* client.claim(claimSpec({ claimRef: "team-a/a" }))
      const b = yield* client.claim(claimSpec({ claimRef: "", template: "base:24.04", size: "" }))
      const c = yield* client.claim(claimSpec({ claimRef: "team-a/c", template: "base:24.04", size: "" }))
      yield* sim.hibernate(a.id)
      yield* sim.archive(b.id)
      yield* sim.markFailed(c.id, "vmm exited")
      const rows = yield* client.listSandboxes
      assert.deepStrictEqual(rows.map((r) => r.id), [a.id, b.id, c.id].sort())
      const byId = new Map(rows.map((r) => [r.id, r]))
      const rowA = byId.get(a.id)!
      assert.deepStrictEqual(rowA.key, { template: TEMPLATE, net: "none", size: "medium" })
      assert.strictEqual(rowA.claimRef, "team-a/a")
      assert.isTrue(rowA.hibernated)
      assert.strictEqual(epochMillis(rowA.deadline), epochMillis(a.deadline))
      const rowB = byId.get(b.id)!
      assert.strictEqual(rowB.claimRef, "")
      assert.isTrue(rowB.archived)
      assert.isFalse(rowB.hibernated)
      assert.isTrue(Option.isNone(rowB.deadline))
      assert.strictEqual(byId.get(c.id)!.failed, "vmm exited")
    }))

  it.live("an empty listing is [] only for {\"sandboxes\":[]}", () =>
    Effect.gen(function*() {
      const { url } = yield* startSim()
      const client = yield* clientFor(url)
      assert.deepStrictEqual(yield* client.listSandboxes, [])
    }))

  for (const body of ["{}", "null", `{"sandboxes":null}`, `{"sandboxes":[{"id":"sb_1",`, ""]) {
    it.live(`a list body of ${JSON.stringify(body)} is a SandboxdListError(decode), never []`, () =>
      Effect.gen(function*() {
        const { sim, url } = yield* startSim()
        yield* sim.injectFault("list", SimFault.body(200, body))
        const client = yield* clientFor(url)
        const error = yield* Effect.flip(client.listSandboxes)
        assert.strictEqual(error._tag, "SandboxdListError")
        assert.strictEqual(error.operation, "list")
        assert.strictEqual(error.reason._tag, "SandboxdDecodeError")
      }))
  }

  it.live("a list body over 16 MiB is refused with a clear decode error", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const row = `{"id":"sb_0123456789abcdef","key":{"template":"t","net":"none","size":"small"},"deadline":"2026-07-28T02:15:00Z","hibernated":false},`
      const rows = row.repeat(Math.ceil((17 * 1024 * 1024) / row.length))
      yield* sim.injectFault("list", SimFault.body(200, `{"sandboxes":[${rows.slice(0, -1)}]}`))
      const client = yield* clientFor(url)
      const error = yield* Effect.flip(client.listSandboxes)
      assert.strictEqual(error.reason._tag, "SandboxdDecodeError")
      assert.include(error.reason.message, "16 MiB")
    }))

  it.live("list and info are root-only: a tenant gets 403, a wrong token 401, as SandboxdListError(SandboxdUnauthorized)", () =>
    Effect.gen(function*() {
      const { url } = yield* startSim()
      const tenant = yield* clientFor(url, { sandboxdToken: Redacted.make("tenant-token") })
      const forbidden = yield* Effect.flip(tenant.listSandboxes)
      assert.deepInclude(forbidden.reason, { _tag: "SandboxdUnauthorized", status: 403 })
      const infoForbidden = yield* Effect.flip(tenant.info)
      assert.strictEqual(infoForbidden.operation, "info")
      assert.deepInclude(infoForbidden.reason, { _tag: "SandboxdUnauthorized", status: 403 })
      const wrong = yield* clientFor(url, { sandboxdToken: Redacted.make("wrong") })
      assert.deepInclude((yield* Effect.flip(wrong.listSandboxes)).reason, { _tag: "SandboxdUnauthorized", status: 401 })
    }))

  it.live("info flattens pools (warm, target) and reflects warm consumption", () =>
    Effect.gen(function*() {
      const { url } = yield* startSim({ refillDelay: "1 hour" })
      const client = yield* clientFor(url)
      yield* client.claim(claimSpec())
      const info = yield* client.info
      assert.deepStrictEqual(info.pools, [
        { template: "base:24.04", net: "none", size: "small", warm: 4, target: 4 },
        { template: TEMPLATE, net: "none", size: "medium", warm: 1, target: 2 }
      ])
    }))

  it.live("an info body of {} or malformed JSON is a SandboxdListError(decode)", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      yield* sim.injectFault("info", SimFault.body(200, "{}"), { times: 1 })
      yield* sim.injectFault("info", SimFault.body(200, "{"), { times: 1 })
      const client = yield* clientFor(url)
      assert.strictEqual((yield* Effect.flip(client.info)).reason._tag, "SandboxdDecodeError")
      assert.strictEqual((yield* Effect.flip(client.info)).reason._tag, "SandboxdDecodeError")
    }))

  it.live("an unknown route is the plain-text 404 page: SandboxdHttpError quoting the page", () =>
    Effect.gen(function*() {
      const { url } = yield* startSim()
      // A base URL with a path prefix the simulator does not serve.
      const client = yield* clientFor(`${url}/nope/`)
      const error = yield* Effect.flip(client.listSandboxes)
      assert.deepInclude(error.reason, { _tag: "SandboxdHttpError", status: 404, message: "non-JSON body: 404 page not found" })
    }))
})

describe("transport", () => {
  it.live("a trailing slash in the URL is tolerated", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(`${url}///`)
      yield* client.claim(claimSpec())
      yield* client.listSandboxes
      assert.deepStrictEqual((yield* sim.audit).map((e) => e.path), ["/v1/claim", "/v1/sandboxes"])
    }))

  it.live("healthz is an unauthenticated GET", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(url)
      yield* client.healthz
      const [entry] = yield* sim.audit
      assert.deepInclude(entry, { method: "GET", path: "/healthz", auth: "none" })
      yield* sim.injectFault("healthz", SimFault.status(503, "draining"), { times: 1 })
      assert.deepInclude(yield* Effect.flip(client.healthz), { _tag: "SandboxdHttpError", status: 503 })
    }))

  it.live("a hung response is SandboxdTimeout after --sandboxd-timeout", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      yield* sim.injectFault("claim", SimFault.hang, { times: 1 })
      yield* sim.injectFault("list", SimFault.hang, { times: 1 })
      const client = yield* clientFor(url, { sandboxdTimeout: Duration.millis(150) })
      const clock = yield* clientClock(sim)
      const claiming = yield* clock.sent(Effect.flip(client.claim(claimSpec())))
      yield* clock.clock.adjust("149 millis")
      assert.isUndefined(claiming.pollUnsafe(), "still waiting before --sandboxd-timeout")
      yield* clock.clock.adjust("1 millis")
      const error = yield* Fiber.join(claiming)
      assert.deepInclude(error, { _tag: "SandboxdTimeout", operation: "claim", timeoutMillis: 150 })
      const listError = yield* clock.failsAfter(client.listSandboxes, "150 millis")
      assert.strictEqual(listError.reason._tag, "SandboxdTimeout")
      // The hung exchange was abandoned: the simulator sees the client go away.
      yield* eventually("no request in flight at the simulator", Effect.map(sim.stats, (stats) => stats.inFlight === 0))
      // And the client still works afterwards.
      yield* clock.run(client.claim(claimSpec()))
    }))

  it.live("a reply hung mid-body (headers sent, body never finished) is SandboxdTimeout too", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      yield* sim.injectFault("list", SimFault.stall(200, `{"sandboxes":[`), { times: 1 })
      yield* sim.injectFault("claim", SimFault.stall(500, `{"error":"provi`), { times: 1 })
      const client = yield* clientFor(url, { sandboxdTimeout: Duration.millis(150) })
      const clock = yield* clientClock(sim)
      const listError = yield* clock.failsAfter(client.listSandboxes, "150 millis")
      assert.deepInclude(listError.reason, { _tag: "SandboxdTimeout", operation: "list" })
      assert.deepInclude(yield* clock.failsAfter(client.claim(claimSpec()), "150 millis"), {
        _tag: "SandboxdTimeout",
        operation: "claim"
      })
      assert.strictEqual((yield* clock.run(client.listSandboxes)).length, 0)
    }))

  it.live("timeouts and interruptions return their permits: max-concurrency 2 still serves afterwards", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      yield* sim.injectFault("list", SimFault.hang)
      yield* sim.injectFault("info", SimFault.stall(200, `{"pools":[`))
      const client = yield* clientFor(url, { sandboxdTimeout: Duration.millis(40), sandboxdMaxConcurrency: 2 })
      // The client's deadlines run on a TestClock: they fire when the test moves it, never because
      // a loaded machine was slow to send a request or read a reply.
      const clock = yield* TestClock.make()
      const onTestClock = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Clock.Clock, clock)
      const hanging: ReadonlyArray<Effect.Effect<unknown, SandboxdListError>> = [
        ...Array.from({ length: 6 }, () => client.listSandboxes),
        ...Array.from({ length: 6 }, () => client.info)
      ]
      const calls = yield* Effect.forEach(hanging, (call) => Effect.forkChild(onTestClock(Effect.flip(call))))
      // Each step times out the (at most two) requests holding a permit; the others wait for one.
      while (calls.some((call) => call.pollUnsafe() === undefined)) {
        yield* clock.adjust(Duration.millis(40))
        yield* flushIO
      }
      const failures = yield* Effect.forEach(calls, Fiber.join)
      assert.deepStrictEqual(new Set(failures.map((e) => e.reason._tag)), new Set(["SandboxdTimeout"]))
      // Callers that give up on their own (an outer deadline, shorter than the client's) while
      // sandboxd holds their request must not keep a permit either.
      for (const call of hanging) {
        const seen = (yield* sim.audit).length
        const caller = yield* Effect.forkChild(onTestClock(Effect.flip(Effect.timeout(call, "10 millis"))))
        yield* eventually("the next request at the simulator", Effect.map(sim.audit, (audit) => audit.length > seen))
        yield* clock.adjust(Duration.millis(10))
        const error = yield* Fiber.join(caller)
        assert.strictEqual(error._tag, "TimeoutError")
      }
      // A leaked permit would leave these waiting for one (the test then times out).
      yield* sim.clearFaults
      const claim = yield* onTestClock(client.claim(claimSpec()))
      assert.match(claim.id, /^sb_/)
      assert.strictEqual((yield* onTestClock(client.listSandboxes)).length, 1)
    }))

  it.live("a base URL with a path prefix keeps the prefix", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(`${url}/base/`)
      // The simulator serves no prefix, so the prefixed route is its plain 404 page.
      const error = yield* Effect.flip(client.listSandboxes)
      assert.deepInclude(error.reason, { _tag: "SandboxdHttpError", status: 404, message: "non-JSON body: 404 page not found" })
      assert.deepStrictEqual((yield* sim.audit).map((e) => e.path), ["/base/v1/sandboxes"])
    }))

  it.live("slow provisioning beyond the timeout is SandboxdTimeout", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim({ coldProvisionDelay: "400 millis" })
      const client = yield* clientFor(url, { sandboxdTimeout: Duration.millis(100) })
      const clock = yield* clientClock(sim)
      const error = yield* clock.failsAfter(client.claim(claimSpec({ template: "cold:1" })), "100 millis")
      assert.strictEqual(error._tag, "SandboxdTimeout")
      yield* sim.setColdProvisionDelay(0)
      const ok = yield* clock.run(client.claim(claimSpec({ template: "cold:1" })))
      assert.match(ok.id, /^sb_/)
    }))

  it.live("connection refused is SandboxdUnreachable", () =>
    Effect.gen(function*() {
      const port = yield* Effect.scoped(Effect.map(startSim(), (s) => s.address.port))
      const client = yield* clientFor(`http://127.0.0.1:${port}`)
      const error = yield* Effect.flip(client.claim(claimSpec()))
      assert.strictEqual(error._tag, "SandboxdUnreachable")
      assert.include(error.message, "ECONNREFUSED")
      const listError = yield* Effect.flip(client.listSandboxes)
      assert.strictEqual(listError.reason._tag, "SandboxdUnreachable")
      const healthError = yield* Effect.flip(client.healthz)
      assert.strictEqual(healthError._tag, "SandboxdUnreachable")
    }))

  it.live("a dropped connection and a reply cut mid-body are SandboxdUnreachable", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      yield* sim.injectFault("claim", SimFault.drop, { times: 1 })
      yield* sim.injectFault("list", SimFault.truncate(200, `{"sandboxes":[`), { times: 1 })
      const client = yield* clientFor(url)
      assert.strictEqual((yield* Effect.flip(client.claim(claimSpec())))._tag, "SandboxdUnreachable")
      assert.strictEqual((yield* Effect.flip(client.listSandboxes)).reason._tag, "SandboxdUnreachable")
    }))

  it.live("a reply lost after sandboxd committed: the claim exists although the client saw a failure", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      yield* sim.injectFault("claim", SimFault.loseReply("drop"), { times: 1 })
      yield* sim.injectFault("claim", SimFault.loseReply("hang"), { times: 1 })
      const client = yield* clientFor(url, { sandboxdTimeout: Duration.millis(150) })
      const clock = yield* clientClock(sim)
      const dropped = yield* clock.run(Effect.flip(client.claim(claimSpec({ claimRef: "ns/dropped" }))))
      assert.strictEqual(dropped._tag, "SandboxdUnreachable")
      assert.strictEqual((yield* clock.failsAfter(client.claim(claimSpec({ claimRef: "ns/hung" })), "150 millis"))._tag, "SandboxdTimeout")
      const refs = (yield* clock.run(client.listSandboxes)).map((row) => row.claimRef).sort()
      assert.deepStrictEqual(refs, ["ns/dropped", "ns/hung"])
    }))

  it.live("never more than --sandboxd-max-concurrency requests in flight; the rest wait their turn", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim({ pools: [] })
      yield* sim.injectFault("*", SimFault.latency("60 millis"))
      const client = yield* clientFor(url, { sandboxdMaxConcurrency: 2 })
      const calls = Array.from({ length: 6 }, (_, i) => client.claim(claimSpec({ claimRef: `ns/p${i}` })))
      const fiber = yield* Effect.forkChild(
        Effect.all([...calls, client.listSandboxes, client.info], { concurrency: "unbounded" })
      )
      const results = yield* Fiber.join(fiber)
      assert.strictEqual(results.length, 8)
      const stats = yield* sim.stats
      assert.strictEqual(stats.requests, 8)
      assert.strictEqual(stats.maxInFlight, 2)
    }))

  it.live("waiting for a permit does not count against the request timeout", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim({ pools: [] })
      yield* sim.injectFault("*", SimFault.latency("80 millis"))
      const client = yield* clientFor(url, { sandboxdMaxConcurrency: 1, sandboxdTimeout: Duration.millis(400) })
      const clock = yield* clientClock(sim)
      const calls = yield* Effect.forkChild(
        clock.run(Effect.all(Array.from({ length: 4 }, () => client.claim(claimSpec())), { concurrency: "unbounded" }))
      )
      // Serialised: a request reaches sandboxd only after the one before it returned. The clock
      // moves 150 ms as each arrives: by the last, the callers have waited 600 ms in all, yet a
      // request's own time (at most two such moves, if the one before it returned first) stays
      // inside 400 ms.
      for (let request = 1; request <= 4; request++) {
        yield* clock.received(request)
        yield* clock.clock.adjust("150 millis")
      }
      const results = yield* Fiber.join(calls)
      assert.strictEqual(results.length, 4)
      assert.strictEqual((yield* sim.stats).maxInFlight, 1)
    }))

  it.live("without the bound, the same load does reach the simulator concurrently", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim({ pools: [] })
      yield* sim.injectFault("*", SimFault.latency("60 millis"))
      const client = yield* clientFor(url, { sandboxdMaxConcurrency: 64 })
      yield* Effect.all(Array.from({ length: 6 }, () => client.claim(claimSpec())), { concurrency: "unbounded" })
      assert.strictEqual((yield* sim.stats).maxInFlight, 6)
    }))
})

describe("error text is scrubbed of every claim token the daemon holds", () => {
  // Another Pod's claim token that looks like neither hex nor a long base64 run, so only its
  // name can catch it.
  const OTHER = "zq-other-pods-claim-wvx"
  const SECOND = "ghost.quarantined.key.y"

  it.live("JSON, HTML and plain-text error bodies on every route never carry a known token", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      const client = yield* clientFor(url, {}, [OTHER, SECOND])
      const quoted = `held by ${OTHER} and ${SECOND}`
      yield* sim.injectFault("claim", SimFault.status(409, quoted), { times: 1 })
      yield* sim.injectFault("claim", SimFault.status(429, quoted), { times: 1 })
      yield* sim.injectFault("claim", SimFault.body(502, `<html>${"x ".repeat(48)}${quoted}</html>`, "text/html"), {
        times: 1
      })
      yield* sim.injectFault("release", SimFault.status(403, quoted), { times: 2 })
      yield* sim.injectFault("list", SimFault.status(500, quoted), { times: 1 })
      yield* sim.injectFault("info", SimFault.status(500, quoted), { times: 1 })
      yield* sim.injectFault("get", SimFault.status(500, quoted), { times: 1 })
      yield* sim.injectFault("healthz", SimFault.body(503, quoted, "text/plain"), { times: 1 })
      const id = "sb_0000000000000001" as ClaimId
      // The HTML body is cut (120 characters) inside the first token: no prefix of it may survive.
      const failures = [
        yield* Effect.flip(client.claim(claimSpec())),
        yield* Effect.flip(client.claim(claimSpec())),
        yield* Effect.flip(client.claim(claimSpec())),
        yield* Effect.flip(client.release(id, Redacted.make("some-claim-token"))),
        yield* Effect.flip(client.releaseAsRoot(id)),
        yield* Effect.flip(client.listSandboxes),
        yield* Effect.flip(client.info),
        yield* Effect.flip(client.getSandbox(id)),
        yield* Effect.flip(client.healthz)
      ]
      for (const failure of failures) {
        const text = `${failure.message} ${JSON.stringify(failure)}`
        assert.include(text, "held by", `the failure stays visible: ${failure._tag}`)
        assert.include(text, "[redacted]")
        assert.notInclude(text, OTHER, failure._tag)
        assert.notInclude(text, SECOND, failure._tag)
        assert.notInclude(text, OTHER.slice(0, 8), failure._tag)
      }
    }))

  it.live("a successful reply never reads the known tokens", () =>
    Effect.gen(function*() {
      const { sim, url } = yield* startSim()
      let reads = 0
      const client = yield* SandboxdClientHttp.make.pipe(
        Effect.provideService(AppConfig, testConfig({ sandboxdUrl: url, sandboxdToken: Redacted.make(ROOT_TOKEN) })),
        Effect.provideService(
          KnownSecrets,
          KnownSecrets.of({ current: Effect.sync(() => (reads++, [Redacted.make(OTHER)])) })
        )
      )
      const claimed = yield* client.claim(claimSpec())
      yield* client.listSandboxes
      yield* client.release(claimed.id, claimed.token)
      assert.strictEqual(reads, 0)
      yield* sim.injectFault("release", SimFault.status(500, "busy"), { times: 1 })
      yield* Effect.flip(client.release(claimed.id, claimed.token))
      assert.strictEqual(reads, 1, "an error reply reads them once")
    }))
})
