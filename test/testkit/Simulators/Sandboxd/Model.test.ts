/**
 * The simulator model on TestClock (through the socket-free SandboxdClientSim): TTL clamp, the
 * reaper, hibernate/archive, warm refill and cold provisioning.
 */
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Fiber, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"
import * as SandboxdClientSim from "../../../../testkit/Layers/SandboxdClientSim.ts"
import { testConfig } from "../../../../testkit/Config.ts"
import { formatDeadline, ZERO_TIME } from "../../../../src/Schemas/Sandboxd.ts"
import { AppConfig } from "../../../../src/Services/Config.ts"
import * as Model from "../../../../testkit/Simulators/Sandboxd/Model.ts"
import { claimSpec, defaultSimOptions, ROOT_TOKEN } from "../../../support/Sandboxd.ts"

const SECOND = 1_000_000_000n

const setup = (options: Partial<Model.SandboxdSimOptions> = {}) =>
  Effect.gen(function*() {
    const sim = yield* Model.make({ ...defaultSimOptions, nanosecondDeadlines: false, ...options })
    const client = yield* SandboxdClientSim.make.pipe(
      Effect.provideService(Model.SandboxdSim, sim),
      Effect.provideService(AppConfig, testConfig({ sandboxdToken: Redacted.make(ROOT_TOKEN) }))
    )
    return { sim, client }
  })

const deadlineSeconds = (claim: Model.SimClaimView) => Number(claim.deadlineNanos / SECOND)

describe("TTL", () => {
  it.effect("≤ 0 → 5 minutes, positive values capped at 24 h", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup()
      for (const ttl of [0, -5, 60, 86_400, 100_000]) {
        yield* client.claim(claimSpec({ ttlSeconds: ttl, claimRef: `ns/ttl${ttl}` }))
      }
      const byRef = new Map((yield* sim.claims).map((c) => [c.claimRef, c]))
      assert.strictEqual(deadlineSeconds(byRef.get("ns/ttl0")!), 300)
      assert.strictEqual(deadlineSeconds(byRef.get("ns/ttl-5")!), 300)
      assert.strictEqual(deadlineSeconds(byRef.get("ns/ttl60")!), 60)
      assert.strictEqual(deadlineSeconds(byRef.get("ns/ttl86400")!), 86_400)
      assert.strictEqual(deadlineSeconds(byRef.get("ns/ttl100000")!), 86_400)
      assert.strictEqual(byRef.get("ns/ttl100000")!.leaseSeconds, 86_400)
    }))

  it.effect("the granted deadline in the reply matches the model, written in the configured zone", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 6, 27, 18, 15, 0))
      const { sim, client } = yield* setup({ zoneOffsetMinutes: 8 * 60 })
      const result = yield* client.claim(claimSpec({ ttlSeconds: 3600 }))
      const [claim] = yield* sim.claims
      assert.strictEqual(claim.deadline, "2026-07-28T03:15:00+08:00")
      assert.strictEqual(
        Option.map(result.deadline, DateTime.toEpochMillis).pipe(Option.getOrThrow),
        Date.UTC(2026, 6, 27, 19, 15, 0)
      )
    }))
})

describe("reaper", () => {
  it.effect("destroys a claim once its deadline has passed; release then reports AlreadyGone", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup()
      const claim = yield* client.claim(claimSpec({ ttlSeconds: 60 }))
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual((yield* client.listSandboxes).length, 1)
      yield* TestClock.adjust("6 seconds")
      assert.deepStrictEqual(yield* client.listSandboxes, [])
      assert.strictEqual((yield* sim.claims).length, 0)
      assert.strictEqual(yield* client.release(claim.id, claim.token), "AlreadyGone")
    }))

  it.effect("a hibernated claim is archived at its deadline (zero time = kept forever)", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup({ archiveOnExpiry: true })
      const claim = yield* client.claim(claimSpec({ ttlSeconds: 60 }))
      const plain = yield* client.claim(claimSpec({ ttlSeconds: 60, claimRef: "ns/plain" }))
      yield* sim.hibernate(claim.id)
      const before = yield* client.listSandboxes
      assert.isTrue(before.find((r) => r.id === claim.id)!.hibernated)
      assert.isFalse(before.find((r) => r.id === plain.id)!.hibernated)
      yield* TestClock.adjust("65 seconds")
      const rows = yield* client.listSandboxes
      assert.deepStrictEqual(rows.map((r) => r.id), [claim.id])
      const row = rows[0]
      assert.isTrue(row.archived)
      assert.isFalse(row.hibernated)
      assert.isTrue(Option.isNone(row.deadline))
      assert.strictEqual((yield* sim.claims)[0].deadline, "0001-01-01T00:00:00Z")
      yield* TestClock.adjust("25 hours")
      assert.strictEqual((yield* client.listSandboxes).length, 1)
      assert.strictEqual(yield* client.release(plain.id, plain.token), "AlreadyGone")
    }))

  it.effect("without archiving a hibernated claim is destroyed at its deadline", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup()
      const claim = yield* client.claim(claimSpec({ ttlSeconds: 60 }))
      yield* sim.hibernate(claim.id)
      yield* TestClock.adjust("65 seconds")
      assert.deepStrictEqual(yield* client.listSandboxes, [])
    }))

  it.effect("archive rewrites the deadline to the retention end; the reaper purges after it", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup({ archiveRetention: "1 hour" })
      const claim = yield* client.claim(claimSpec({ ttlSeconds: 60 }))
      yield* TestClock.adjust("10 seconds")
      yield* sim.archive(claim.id)
      const [row] = yield* client.listSandboxes
      assert.isTrue(row.archived)
      assert.strictEqual(Option.map(row.deadline, DateTime.toEpochMillis).pipe(Option.getOrThrow), 3_610_000)
      yield* TestClock.adjust("59 minutes")
      assert.strictEqual((yield* client.listSandboxes).length, 1)
      yield* TestClock.adjust("2 minutes")
      assert.deepStrictEqual(yield* client.listSandboxes, [])
    }))

  it.effect("a wake from the archive starts a fresh lease of the granted length", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup()
      const claim = yield* client.claim(claimSpec({ ttlSeconds: 120 }))
      yield* sim.archive(claim.id)
      yield* TestClock.adjust("1 hour")
      yield* sim.wake(claim.id)
      const [view] = yield* sim.claims
      assert.isFalse(view.archived)
      assert.strictEqual(deadlineSeconds(view), 3600 + 120)
    }))
})

describe("lifecycle observer", () => {
  it.effect("is told of every VM's start (with its token) and its end: released, reaped or forgotten", () =>
    Effect.gen(function*() {
      const events: Array<Model.SimLifecycleEvent> = []
      const { sim, client } = yield* setup({ onLifecycle: (event) => void events.push(event) })
      const released = yield* client.claim(claimSpec({ ttlSeconds: 60, claimRef: "ns/a" }))
      const reaped = yield* client.claim(claimSpec({ ttlSeconds: 60, claimRef: "ns/b" }))
      const forgotten = yield* client.claim(claimSpec({ ttlSeconds: 600, claimRef: "ns/c" }))
      yield* client.release(released.id, released.token)
      yield* sim.forget(forgotten.id)
      yield* TestClock.adjust("70 seconds")
      const seen = events.map((e) => (e._tag === "Claimed" ? `+${e.claimRef} ${e.leaseSeconds}s` : `-${e.claimRef} ${e.how}`))
      assert.deepStrictEqual(seen, ["+ns/a 60s", "+ns/b 60s", "+ns/c 600s", "-ns/a released", "-ns/c forgotten", "-ns/b reaped"])
      const first = events[0]
      assert.strictEqual(first?._tag === "Claimed" ? first.token : "", Redacted.value(released.token))
      assert.strictEqual(events.filter((e) => e._tag === "Ended" && e.id === reaped.id).length, 1)
    }))
})

describe("pools and provisioning", () => {
  it.effect("a warm hit consumes the pool, which refills after the refill delay", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup({ refillDelay: "30 seconds" })
      yield* client.claim(claimSpec())
      yield* client.claim(claimSpec())
      const medium = (pools: ReadonlyArray<Model.SimPoolView>) => pools.find((p) => p.size === "medium")!
      assert.deepInclude(medium(yield* sim.pools), { warm: 0, refilling: 2, target: 2 })
      assert.deepInclude((yield* client.info).pools.find((p) => p.size === "medium")!, { warm: 0, target: 2 })
      yield* TestClock.adjust("30 seconds")
      assert.deepInclude(medium(yield* sim.pools), { warm: 2, refilling: 0 })
    }))

  it.effect("a warm miss cold-provisions after the configured delay (no 429)", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup({ coldProvisionDelay: "8 seconds" })
      const fiber = yield* Effect.forkChild(client.claim(claimSpec({ template: "cold:1" })), { startImmediately: true })
      yield* TestClock.adjust("7 seconds")
      assert.isUndefined(fiber.pollUnsafe())
      assert.strictEqual((yield* sim.claims).length, 0)
      yield* TestClock.adjust("1 second")
      const claim = yield* Fiber.join(fiber)
      assert.deepStrictEqual((yield* sim.claims).map((c) => c.id), [claim.id])
      assert.deepStrictEqual((yield* sim.claims)[0].key, { template: "cold:1", net: "none", size: "medium" })
    }))

  it.effect("a claim being provisioned counts against max_claims", () =>
    Effect.gen(function*() {
      const { client } = yield* setup({ maxClaims: 1, coldProvisionDelay: "8 seconds" })
      const fiber = yield* Effect.forkChild(client.claim(claimSpec({ template: "cold:1" })), { startImmediately: true })
      yield* TestClock.adjust("1 second")
      const refused = yield* Effect.flip(client.claim(claimSpec()))
      assert.strictEqual(refused._tag, "NoWarmCapacity")
      yield* TestClock.adjust("8 seconds")
      yield* Fiber.join(fiber)
    }))

  it.effect("a hung reply times out on the client's clock", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup()
      yield* sim.injectFault("claim", Model.SimFault.hang, { times: 1 })
      const fiber = yield* Effect.forkChild(Effect.flip(client.claim(claimSpec())), { startImmediately: true })
      yield* TestClock.adjust(Duration.seconds(10))
      const error = yield* Fiber.join(fiber)
      assert.deepInclude(error, { _tag: "SandboxdTimeout", timeoutMillis: 10_000 })
      assert.strictEqual((yield* sim.stats).inFlight, 0)
    }))
})

describe("body caps (the same as the HTTP client's)", () => {
  it.effect("a list body over 16 MiB is a decode error; an error body is read up to 64 KiB", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup()
      const row = `{"id":"sb_0123456789abcdef","claim_ref":"${"x".repeat(1000)}"},`
      const rows = row.repeat(Math.ceil((16 * 1024 * 1024) / row.length))
      yield* sim.injectFault("list", Model.SimFault.body(200, `{"sandboxes":[${rows.slice(0, -1)}]}`), { times: 1 })
      const listError = yield* Effect.flip(client.listSandboxes)
      assert.deepInclude(listError.reason, { _tag: "SandboxdDecodeError", operation: "list" })
      assert.include(listError.message, "16 MiB")
      // An error field past 64 KiB is cut off, so the body no longer parses: only a short excerpt comes out.
      yield* sim.injectFault("claim", Model.SimFault.status(500, "e".repeat(70 * 1024)), { times: 1 })
      const cut = yield* Effect.flip(client.claim(claimSpec()))
      assert.deepInclude(cut, { _tag: "SandboxdHttpError", status: 500 })
      assert.isAtMost(cut.message.length, 200)
      yield* sim.injectFault("release", Model.SimFault.status(500, "release failed"), { times: 1 })
      const claim = yield* client.claim(claimSpec())
      assert.deepInclude(yield* Effect.flip(client.release(claim.id, claim.token)), { status: 500, message: "release failed" })
      assert.strictEqual(yield* client.release(claim.id, claim.token), "Released")
    }))
})

describe("stalled replies", () => {
  it.effect("a reply stalled mid-body times out, as over HTTP; a cut one is unreachable", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup()
      yield* sim.injectFault("list", Model.SimFault.stall(200, `{"sandboxes":[`), { times: 1 })
      yield* sim.injectFault("list", Model.SimFault.truncate(200, `{"sandboxes":[`), { times: 1 })
      const fiber = yield* Effect.forkChild(Effect.flip(client.listSandboxes), { startImmediately: true })
      yield* TestClock.adjust(Duration.seconds(10))
      assert.strictEqual((yield* Fiber.join(fiber)).reason._tag, "SandboxdTimeout")
      assert.strictEqual((yield* Effect.flip(client.listSandboxes)).reason._tag, "SandboxdUnreachable")
    }))
})

describe("audit", () => {
  it.effect("records what was sent, and proves that no release happened", () =>
    Effect.gen(function*() {
      const { sim, client } = yield* setup()
      const claim = yield* client.claim(claimSpec())
      yield* client.listSandboxes
      const audit = yield* sim.audit
      assert.deepStrictEqual(audit.map((e) => [e.method, e.path, e.auth]), [
        ["POST", "/v1/claim", "root"],
        ["GET", "/v1/sandboxes", "root"]
      ])
      assert.isFalse(audit.some((e) => e.route === "release"))
      yield* client.release(claim.id, claim.token)
      assert.deepInclude((yield* sim.audit)[2], { route: "release", auth: "claim" })
    }))

  it.effect("unknown paths get the plain-text 404 page and wrong methods a 405", () =>
    Effect.gen(function*() {
      const { sim } = yield* setup()
      const missing = yield* sim.handle({ method: "GET", path: "/v2/nothing", body: "" })
      assert.deepInclude(missing, { _tag: "Reply", status: 404, body: "404 page not found\n" })
      const wrongMethod = yield* sim.handle({ method: "GET", path: "/v1/claim", body: "" })
      assert.deepInclude(wrongMethod, { _tag: "Reply", status: 405 })
      const badBody = yield* sim.handle({
        method: "POST",
        path: "/v1/claim",
        authorization: `Bearer ${ROOT_TOKEN}`,
        body: "{"
      })
      assert.deepInclude(badBody, { _tag: "Reply", status: 400, body: `{"error":"invalid request body"}\n` })
    }))
})

describe("listing text", () => {
  const root = { authorization: `Bearer ${ROOT_TOKEN}` }
  const claimBody = (body: Record<string, unknown>) =>
    ({ method: "POST", path: "/v1/claim", ...root, contentType: "application/json", body: JSON.stringify(body) }) as const
  const bodyOf = (response: Model.SimResponse) => {
    assert.strictEqual(response._tag, "Reply")
    return response._tag === "Reply" ? response.body : ""
  }

  // The listing is written as text from per-claim pieces; this holds it byte for byte to what
  // JSON.stringify makes of the row objects sandboxd's listing has, rendered here from the model's
  // own state (deadlines formatted anew, so a stale rendered deadline would show).
  it.effect("is JSON.stringify of the rows, byte for byte, through hibernate, archive, wake and failure", () =>
    Effect.gen(function*() {
      const claimedAt = Date.UTC(2026, 6, 27, 18, 15, 0, 123)
      yield* TestClock.setTime(claimedAt)
      const offset = -(5 * 60 + 30)
      const { sim } = yield* setup({ zoneOffsetMinutes: offset, nanosecondDeadlines: true, archiveRetention: "1 hour" })
      const refs = ["team-a/one", "", "t\u00e9am \"b\"/tw\u2028o", "team-c/three", "team-d/four"]
      for (const [i, ref] of refs.entries()) {
        const template = i === 2 ? "odd \"template\" <&> \u00e9" : "base:24.04"
        bodyOf(yield* sim.handle(claimBody({ template, size: "small", ttl_seconds: 3600 * (i + 1), claim_ref: ref })))
      }
      const expected = (claimedAtOn: boolean) =>
        Effect.map(sim.claims, (views) => {
          const rows = [...views].sort((a, b) => (a.id < b.id ? -1 : 1)).map((v) => ({
            id: v.id,
            key: v.key,
            deadline: v.deadlineNanos === 0n ? ZERO_TIME : formatDeadline(v.deadlineNanos, offset),
            hibernated: v.hibernated,
            ...(v.archived ? { archived: true } : {}),
            ...(v.claimRef === "" ? {} : { claim_ref: v.claimRef }),
            ...(claimedAtOn ? { claimed_at: formatDeadline(BigInt(claimedAt) * 1_000_000n, offset) } : {}),
            ...(v.failed === "" ? {} : { failed: v.failed })
          }))
          return { rows, text: `${JSON.stringify({ sandboxes: rows })}\n` }
        })
      const list = (query = "") => Effect.map(sim.handle({ method: "GET", path: `/v1/sandboxes${query}`, ...root, body: "" }), bodyOf)

      assert.strictEqual(yield* list(), (yield* expected(true)).text)
      const ids = (yield* sim.claims).map((c) => c.id)
      yield* sim.hibernate(ids[0])
      yield* sim.archive(ids[1])
      yield* sim.markFailed(ids[2], "boot failed: \"disk\"\n\u0007 \u00e9")
      yield* TestClock.adjust(Duration.minutes(3))
      yield* sim.archive(ids[3])
      const changed = yield* expected(true)
      assert.strictEqual(yield* list(), changed.text)
      assert.isTrue(changed.rows.some((row) => row.archived === true) && changed.rows.some((row) => row.hibernated))
      // a woken archive gets a new deadline, which the listing must show (not the one rendered before)
      yield* sim.wake(ids[1])
      assert.strictEqual(yield* list(), (yield* expected(true)).text)
      // archived again later: only the deadline changes
      yield* TestClock.adjust(Duration.minutes(1))
      yield* sim.archive(ids[3])
      assert.strictEqual(yield* list(), (yield* expected(true)).text)
      // the claim_ref filter, and the by-id read (the row plus the claim's token)
      const filtered = (yield* expected(true)).rows.filter((row) => row.claim_ref === refs[2])
      assert.strictEqual(yield* list(`?claim_ref=${encodeURIComponent(refs[2])}`), `${JSON.stringify({ sandboxes: filtered })}\n`)
      const byId = yield* sim.handle({ method: "GET", path: `/v1/sandboxes/${filtered[0].id}`, ...root, body: "" })
      const token = (yield* sim.claims).find((c) => c.id === filtered[0].id)!.token
      assert.strictEqual(bodyOf(byId), `${JSON.stringify({ ...filtered[0], token })}\n`)
      // an older revision: no claimed_at, and no token on the by-id read
      yield* sim.setRevision({ claimedAt: false, byIdToken: false })
      const old = yield* expected(false)
      assert.strictEqual(yield* list(), old.text)
      const byIdOld = yield* sim.handle({ method: "GET", path: `/v1/sandboxes/${old.rows[0].id}`, ...root, body: "" })
      assert.strictEqual(bodyOf(byIdOld), `${JSON.stringify(old.rows[0])}\n`)
      // an empty listing
      for (const id of ids) yield* sim.forget(id)
      assert.strictEqual(yield* list(), `{"sandboxes":[]}\n`)
    }))
})
