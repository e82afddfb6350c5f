/**
 * The audit-only orphan scan (ORPH-1 — orphan scan cadence; ORPH-4 — orphan scan logs changes only)
 * against the sandboxd simulator over HTTP: the verdicts, once-per-transition logging, a failed
 * listing skipping the cycle, the cadence on the TestClock, and — in every case — not one release
 * request in the simulator's audit log.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, DateTime, Duration, Effect, Fiber, Logger, Metric, Option, References } from "effect"
import { TestClock } from "effect/testing"
import * as OrphanScanner from "../../src/Programs/OrphanScanner.ts"
import { type ClaimRecord, ClaimState } from "../../src/Schemas/Claims.ts"
import { type ClaimId, type PodKey, podKeyOf } from "../../src/Schemas/Ids.ts"
import { ClaimDoubts } from "../../src/Services/ClaimDoubts.ts"
import { ClaimTable } from "../../src/Services/ClaimTable.ts"
import { PodLifecycle } from "../../src/Services/PodLifecycle.ts"
import { SandboxdClient } from "../../src/Services/SandboxdClient.ts"
import { SandboxdSim, SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { straySandboxes } from "../../src/Services/Metrics.ts"
import { deleteWorld, RecordedEvents, Template } from "./Authorization/world.ts"
import { makeLogCapture } from "../support/Logs.ts"
import { recording, sleepReceipts } from "../support/Receipts.ts"
import * as Wait from "../support/Wait.ts"

const { lines, logger: capture } = makeLogCapture()

/** Lets real sockets make progress until `check` holds. */
const eventually = <E, R>(check: Effect.Effect<boolean, E, R>) => Wait.eventually("the scan's outcome", check)

const webKey = podKeyOf("default", "web") as PodKey
const apiKey = podKeyOf("default", "api") as PodKey

/** A real sandbox claimed straight from sandboxd with this claim_ref ("" = none). */
const claimWithRef = (claimRef: string) =>
  SandboxdClient.use((client) => client.claim({ template: Template, net: "", size: "", ttlSeconds: 0, claimRef }))

const recordOf = (claimed: { readonly id: ClaimId; readonly token: ClaimRecord["token"] }) =>
  Effect.map(DateTime.now, (now): ClaimRecord => ({
    id: claimed.id,
    token: claimed.token,
    address: "",
    podUID: "uid",
    claimedAt: Option.some(now),
    deadline: Option.none()
  }))

/** Puts durable rows in the table (loaded, then vouched for by a listing). */
const holdRows = (rows: ReadonlyMap<PodKey, ClaimRecord>) =>
  ClaimTable.use((table) =>
    Effect.gen(function*() {
      yield* table.loadQuarantined(rows)
      yield* table.judgeQuarantined(
        new Map([...rows].map(([k, r]) => [k, r.id])),
        new Map([...rows].map(([, r]) => [r.id, Option.none()])),
        DateTime.makeUnsafe(0)
      )
    })
  )

const sandboxdCalls = (route: "release" | "list") =>
  Effect.map(SandboxdSim.use((sim) => sim.audit), (audit) => audit.filter((entry) => entry.route === route).length)

const verdictLines = () =>
  lines.filter((l) =>
    l.message.startsWith("possible orphan") || l.message.startsWith("claimed outside") || l.message.startsWith("claim references")
  )

const summary = (verdicts: ReadonlyArray<OrphanScanner.OrphanVerdict> | undefined) =>
  verdicts === undefined ? undefined : verdicts.map((v) => `${v._tag}:${v.id}`).sort()

const inWorld = <A, E, R>(effect: Effect.Effect<A, E, R>, interval: Duration.Input = "60 seconds") =>
  effect.pipe(
    Effect.provide(deleteWorld({ config: { orphanScanInterval: Duration.fromInputUnsafe(interval) } }), { local: true }),
    Effect.provide(Logger.layer([capture]))
  )

/**
 * The scene: web holds claim W (listed), api holds claim A that sandboxd no longer has (stale),
 * O is listed with no claim_ref (orphan), S is listed with claim_ref "default/web" but is not
 * web's claim (stray), E is listed with claim_ref "other/job" (external).
 */
const scene = Effect.gen(function*() {
  const w = yield* claimWithRef(webKey)
  const a = yield* claimWithRef(apiKey)
  const o = yield* claimWithRef("")
  const s = yield* claimWithRef(webKey)
  const e = yield* claimWithRef("other/job")
  yield* holdRows(new Map([[webKey, yield* recordOf(w)], [apiKey, yield* recordOf(a)]]))
  // gone from the node out of band (no release request)
  yield* SandboxdSim.use((sim) => sim.forget(a.id))
  return { w, a, o, s, e }
})

describe("OrphanScanner.scanOnce", () => {
  it.effect("orphan, stray, external and stale verdicts, each logged with its keys; nothing released", () =>
    inWorld(Effect.gen(function*() {
      lines.length = 0
      const { a, e, o, s, w } = yield* scene
      const scanner = yield* OrphanScanner.make
      const verdicts = yield* scanner.scanOnce
      assert.deepStrictEqual(summary(verdicts), [`External:${e.id}`, `Orphan:${o.id}`, `Stale:${a.id}`, `Stray:${s.id}`].sort())
      assert.isFalse((verdicts ?? []).some((v) => v.id === w.id), "our own listed claim is no verdict")
      const stray = verdicts?.find((v) => v._tag === "Stray")
      assert.strictEqual(stray?._tag === "Stray" ? stray.pod : undefined, webKey)
      const stale = verdicts?.find((v) => v._tag === "Stale")
      assert.strictEqual(stale?._tag === "Stale" ? stale.pod : undefined, apiKey)

      const logged = verdictLines()
      assert.strictEqual(logged.length, 4)
      const byId = (id: string) => logged.find((l) => l.annotations["sandbox"] === id)
      assert.strictEqual(byId(o.id)?.message, "possible orphan; audit-only, retaining")
      assert.include(byId(s.id)?.message ?? "", "possible orphan")
      assert.strictEqual(byId(s.id)?.annotations["pod"], webKey)
      assert.strictEqual(byId(e.id)?.message, "claimed outside this provider; not an orphan candidate")
      assert.strictEqual(byId(e.id)?.annotations["claimRef"], "other/job")
      assert.strictEqual(byId(a.id)?.message, "claim references a sandbox no longer on the node")
      assert.strictEqual(byId(a.id)?.annotations["pod"], apiKey)

      // audit only: the table and sandboxd are as they were
      const state = yield* ClaimTable.use((table) => table.state)
      assert.deepStrictEqual([...state.rows.keys()].sort(), [apiKey, webKey].sort())
      assert.strictEqual((yield* SandboxdSim.use((sim) => sim.claims)).length, 4)
      assert.strictEqual(yield* sandboxdCalls("release"), 0)
    })))

  it.effect("a lost claim response leaves a stray of this node: reported as a possible orphan naming the pod key, kept (ORPH-5)", () =>
    inWorld(Effect.gen(function*() {
      lines.length = 0
      const provider = yield* PodLifecycle
      // sandboxd claims the VM but the reply never arrives: the provider holds no claim for web
      yield* SandboxdSim.use((sim) => sim.injectFault("claim", SimFault.loseReply("drop"), { times: 1 }))
      const pod = { metadata: { namespace: "default", name: "web", uid: "uid-web", annotations: { "sandbox.cocoonstack.io/template": Template } }, spec: { containers: [{ name: "main", image: "python:3.12" }] } }
      yield* Effect.exit(provider.createPod(pod))
      assert.isTrue(Option.isNone(yield* ClaimTable.use((table) => table.held(webKey))))
      const [lost] = yield* SandboxdSim.use((sim) => sim.claims)
      assert.strictEqual(lost?.claimRef, webKey)
      // As in the daemon: the key has no row and no tracked Pod (a Pod is tracked once it runs);
      // only its doubt makes it this node's.
      const state = yield* ClaimTable.use((table) => table.state)
      assert.isFalse(state.pods.has(webKey))
      assert.isTrue(Option.isSome(yield* ClaimDoubts.use((doubts) => doubts.get(webKey))))
      const verdicts = yield* (yield* OrphanScanner.make).scanOnce
      assert.deepStrictEqual(verdicts, [{ _tag: "Stray", id: lost!.id as ClaimId, pod: webKey }])
      const [line] = verdictLines()
      assert.include(line?.message ?? "", "possible orphan")
      assert.strictEqual(line?.annotations["pod"], webKey)
      assert.strictEqual(line?.annotations["sandbox"], lost!.id)
      assert.strictEqual((yield* SandboxdSim.use((sim) => sim.claims)).length, 1, "retained")
      assert.strictEqual(yield* sandboxdCalls("release"), 0)
      // Counted in the stray gauge and announced once by a Node Event naming it.
      assert.strictEqual((yield* Metric.value(straySandboxes)).value, 1)
      const nodeEvents = (yield* RecordedEvents.use((e) => e.all)).filter((e) => e.involved.kind === "Node")
      assert.deepStrictEqual(nodeEvents.map((e) => [e.type, e.reason]), [["Warning", "StraySandboxes"]])
      assert.include(nodeEvents[0]!.message, lost!.id)
      assert.include(nodeEvents[0]!.message, webKey)
      yield* (yield* OrphanScanner.make).scanOnce
      assert.strictEqual((yield* RecordedEvents.use((e) => e.all)).filter((e) => e.involved.kind === "Node").length, 2,
        "a fresh scanner has no memory: it announces again")
      // Once a row holds it, it is no stray: the gauge drops to 0.
      yield* SandboxdSim.use((sim) => sim.forget(lost!.id))
      yield* (yield* OrphanScanner.make).scanOnce
      assert.strictEqual((yield* Metric.value(straySandboxes)).value, 0)
    })))

  it.effect("tentative and quarantined claims count as ours", () =>
    inWorld(Effect.gen(function*() {
      const w = yield* claimWithRef(webKey)
      const a = yield* claimWithRef(apiKey)
      yield* ClaimTable.use((table) => table.loadQuarantined(new Map([[apiKey, { ...a, address: "", podUID: "", claimedAt: Option.none(), deadline: Option.none() }]])))
      yield* ClaimTable.use((table) => table.recordTentative(webKey, { ...w, address: "", podUID: "", claimedAt: Option.none(), deadline: Option.none() }, { metadata: { namespace: "default", name: "web", uid: "u" } }))
      const verdicts = yield* (yield* OrphanScanner.make).scanOnce
      assert.deepStrictEqual(verdicts, [])
      assert.strictEqual(yield* sandboxdCalls("release"), 0)
    })))

  it.effect("a verdict is logged once per transition: not again next cycle, again after it disappears and comes back", () =>
    inWorld(Effect.gen(function*() {
      lines.length = 0
      const { o } = yield* scene
      const scanner = yield* OrphanScanner.make
      yield* scanner.scanOnce
      assert.strictEqual(verdictLines().length, 4)
      yield* scanner.scanOnce
      assert.strictEqual(verdictLines().length, 4, "the second cycle logs nothing new")

      // the orphan becomes a claim of ours (its verdict disappears) …
      const orphanKey = podKeyOf("default", "adopted") as PodKey
      const orphanRecord = yield* recordOf(o)
      yield* ClaimTable.use((table) =>
        table.modify((state) => {
          const rows = state.rows.with(orphanKey, { record: orphanRecord, state: ClaimState.Durable() })
          return [undefined, { ...state, rows }] as const
        })
      )
      const withoutOrphan = yield* scanner.scanOnce
      assert.strictEqual(withoutOrphan?.length, 3)
      assert.isFalse((withoutOrphan ?? []).some((v) => v.id === o.id))
      assert.strictEqual(verdictLines().length, 4, "the others unchanged, nothing logged")
      const orphanLines = () => verdictLines().filter((l) => l.annotations["sandbox"] === o.id)
      assert.strictEqual(orphanLines().length, 1)
      // … and comes back: logged again
      yield* ClaimTable.use((table) => table.dropClaim(orphanKey, o.id))
      const back = yield* scanner.scanOnce
      assert.isTrue((back ?? []).some((v) => v._tag === "Orphan" && v.id === o.id))
      assert.strictEqual(orphanLines().length, 2)
      assert.strictEqual(verdictLines().length, 5, "only the orphan again")
      yield* scanner.scanOnce
      assert.strictEqual(verdictLines().length, 5)
      assert.strictEqual(yield* sandboxdCalls("release"), 0)
    })))

  for (const failure of [
    { name: "a 500", fault: SimFault.status(500, "boom") },
    { name: "a {} body", fault: SimFault.body(200, "{}") }
  ]) {
    it.effect(`a failed listing (${failure.name}) skips the cycle and leaves the verdict memory untouched`, () =>
      inWorld(Effect.gen(function*() {
        lines.length = 0
        yield* scene
        const scanner = yield* OrphanScanner.make
        yield* scanner.scanOnce
        assert.strictEqual(verdictLines().length, 4)
        yield* SandboxdSim.use((sim) => sim.injectFault("list", failure.fault, { times: 1 }))
        const skipped = yield* scanner.scanOnce
        assert.isUndefined(skipped, "skipped, not zero sandboxes")
        assert.strictEqual(verdictLines().length, 4, "no stale verdicts for every claim")
        assert.strictEqual(lines.filter((l) => l.message.startsWith("sandboxd list failed")).length, 1)
        // the next good cycle compares against the cycle before the failure: nothing is new
        const next = yield* scanner.scanOnce
        assert.strictEqual(next?.length, 4)
        assert.strictEqual(verdictLines().length, 4)
        assert.strictEqual(yield* sandboxdCalls("release"), 0)
        assert.strictEqual((yield* ClaimTable.use((table) => table.state)).rows.size, 2)
      })))

    it.effect(`a failed listing (${failure.name}) as the very first cycle reports nothing`, () =>
      inWorld(Effect.gen(function*() {
        lines.length = 0
        yield* scene
        yield* SandboxdSim.use((sim) => sim.injectFault("list", failure.fault, { times: 1 }))
        assert.isUndefined(yield* (yield* OrphanScanner.make).scanOnce)
        assert.strictEqual(verdictLines().length, 0)
        assert.strictEqual(yield* sandboxdCalls("release"), 0)
      })))
  }
})

describe("OrphanScanner.run (ORPH-1)", () => {
  it.effect("the first scan one interval after start, then every interval; failures do not stop it; never a release", () =>
    inWorld(Effect.gen(function*() {
      lines.length = 0
      yield* scene
      // The loop's own client notes when each listing was asked for; its Clock, when it sleeps again.
      const client = recording(yield* SandboxdClient)
      const sleeps = yield* sleepReceipts
      const fiber = yield* Effect.forkChild(OrphanScanner.run.pipe(
        Effect.provideService(SandboxdClient, client.service),
        Effect.provideService(Clock.Clock, sleeps.clock)
      ))
      const asked = () => client.named("listSandboxes").map((call) => call.at)
      yield* sleeps.asleep("60 seconds", 1)
      yield* TestClock.adjust("60 seconds")
      yield* sleeps.asleep("60 seconds", 2) // the first cycle has ended
      assert.deepStrictEqual(asked(), [60_000], "the first scan one interval after the start, not before")
      assert.strictEqual(verdictLines().length, 4)
      // a failing cycle, then a good one: the loop goes on
      yield* SandboxdSim.use((sim) => sim.injectFault("list", SimFault.status(503, "busy"), { times: 1 }))
      yield* TestClock.adjust("60 seconds")
      yield* sleeps.asleep("60 seconds", 3)
      assert.isTrue(lines.some((l) => l.message.startsWith("sandboxd list failed")))
      yield* TestClock.adjust("30 seconds")
      yield* TestClock.adjust("30 seconds")
      yield* sleeps.asleep("60 seconds", 4)
      assert.deepStrictEqual(asked(), [60_000, 120_000, 180_000], "every interval, not before")
      assert.strictEqual(verdictLines().length, 4, "still once per transition across run cycles")
      assert.isUndefined(fiber.pollUnsafe(), "still running")
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(yield* sandboxdCalls("release"), 0)
    })))

  it.effect("an interval of 0 disables the scan", () =>
    inWorld(
      Effect.gen(function*() {
        yield* scene
        // Returns at once (a loop would never end, and the test would time out).
        yield* OrphanScanner.run
        assert.strictEqual(yield* sandboxdCalls("list"), 0)
        assert.strictEqual(yield* sandboxdCalls("release"), 0)
      }),
      0
    ))
})
