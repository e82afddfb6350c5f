/**
 * The NodeInventory publisher against the in-memory API server over HTTP (through the live
 * KubeApi layer) and the sandboxd simulator over HTTP (through the live client), on TestClock.
 * A small recording proxy sits between the KubeApi client and the apiserver so the tests see
 * the wire request itself (method, content type, query, body), not only what was stored.
 * Real I/O does not follow TestClock, so the tests wait in real turns for writes to land.
 */
import { KubeConfig } from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, Layer, Metric, Option, Redacted, References } from "effect"
import { TestClock } from "effect/testing"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { makeClaimTable } from "../../src/Layers/ClaimTableRef.ts"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"
import * as SandboxdClientHttp from "../../src/Layers/SandboxdClientHttp.ts"
import { KnownSecrets } from "../../src/Services/KnownSecrets.ts"
import {
  entriesOf,
  inventoryBody,
  type InventorySources,
  poolsOf,
  publishOnce,
  runPublisher
} from "../../src/Programs/InventoryPublisher.ts"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import { testConfig } from "../../testkit/Config.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import { inventoryInterval, inventoryLastSuccess, inventoryPublishes, labelled } from "../../src/Services/Metrics.ts"
import type { ClaimId, PodKey } from "../../src/Schemas/Ids.ts"
import { KubeApi } from "../../src/Services/KubeApi.ts"
import { type ClaimSpec, type ClaimResult, SandboxdClient } from "../../src/Services/SandboxdClient.ts"
import { ClusterModel } from "../../testkit/Simulators/Apiserver/Model.ts"
import { NodeInventories } from "../../testkit/Simulators/Apiserver/Resources.ts"
import { make as makeSandboxdSim, SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { serve as serveSandboxd } from "../../testkit/Simulators/Sandboxd/Server.ts"
import { recording, sleepReceipts } from "../support/Receipts.ts"
import { eventually } from "../support/Wait.ts"
import { makeLogCapture } from "../support/Logs.ts"
import { InventoryPublisherLayer } from "../../src/Programs/Loops.ts"
import { ClaimTable } from "../../src/Services/ClaimTable.ts"
import { serveModel } from "../support/Apiserver.ts"

const NODE = "node1-sandboxd"
const ADVERTISE = "10.0.0.5:7777"
const ROOT_TOKEN = "0d4c9a17e2b85f36a1c07be94d2f6e58"
const AGENT = "ghcr.io/acme/agent-runtime:1.4.2"
const BASE = "base:24.04"
const START = Date.parse("2026-07-27T02:15:00.000Z")
const INTERVAL = Duration.seconds(30)
const INVENTORY_PATH = `/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories/${NODE}`

// ---- the recording proxy ------------------------------------------------------------------------

interface Recorded {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly contentType: string | undefined
  readonly body: string
  status: number | undefined
}

/** A loopback HTTP proxy in front of `target` that keeps every request and its answer's status. */
const recordingProxy = (target: string) =>
  Effect.gen(function*() {
    const seen: Array<Recorded> = []
    const upstream = new URL(target)
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const body = Buffer.concat(chunks)
        const url = new URL(req.url ?? "/", "http://proxy.invalid")
        const entry: Recorded = {
          method: req.method ?? "",
          path: url.pathname,
          query: url.searchParams,
          contentType: req.headers["content-type"],
          body: body.toString("utf8"),
          status: undefined
        }
        seen.push(entry)
        const forward = http.request({
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host }
        }, (answer) => {
          entry.status = answer.statusCode
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        })
        forward.on("error", () => res.destroy())
        forward.end(body)
      })
    })
    const port = yield* Effect.acquireRelease(
      Effect.callback<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    return { url: `http://127.0.0.1:${port}`, seen }
  })

// ---- waiting in real turns ----------------------------------------------------------------------


// ---- the world ----------------------------------------------------------------------------------

interface StoredInventory {
  readonly apiVersion: string
  readonly kind: string
  readonly metadata: {
    readonly name: string
    readonly resourceVersion: string
    readonly managedFields?: ReadonlyArray<{ readonly manager: string; readonly operation: string }>
  } & Record<string, unknown>
  readonly node: string
  readonly entries?: ReadonlyArray<Record<string, string>>
  readonly address?: string
  readonly pools?: ReadonlyArray<Record<string, unknown>>
  readonly [key: string]: unknown
}

const setup = Effect.gen(function*() {
  yield* TestClock.setTime(START)
  const model = new ClusterModel()
  const { apiserver, kubeconfigPath } = yield* serveModel(model)
  const proxy = yield* recordingProxy(apiserver.url)
  const kubeconfigText = yield* Effect.promise(() => fs.readFile(kubeconfigPath, "utf8"))
  const kubeConfig = new KubeConfig()
  // the client talks to the proxy, which forwards to the apiserver
  kubeConfig.loadFromString(kubeconfigText.split(apiserver.url).join(proxy.url))
  const kube = yield* KubeApiClientNode.make(kubeConfig, {
    ...KubeApiClientNode.defaultOptions,
    // a request in flight while TestClock jumps must not time out
    callTimeout: "1 hour",
    qps: 1000,
    burst: 1000
  })

  const sim = yield* makeSandboxdSim({
    rootToken: ROOT_TOKEN,
    ownerAddr: ADVERTISE,
    nanosecondDeadlines: false,
    pools: [
      { template: AGENT, net: "none", size: "medium", target: 2 },
      { template: BASE, net: "none", size: "small", target: 4 }
    ]
  })
  const sandboxdAddress = yield* serveSandboxd(sim, { host: "127.0.0.1", port: 0 })
  const config = testConfig({
    nodeName: NODE,
    sandboxdUrl: sandboxdAddress.url,
    sandboxdAdvertiseAddr: ADVERTISE,
    sandboxdToken: Redacted.make(ROOT_TOKEN),
    sandboxdTimeout: Duration.hours(1),
    publishInventory: true,
    publishInterval: INTERVAL
  })
  const sandboxd = yield* SandboxdClientHttp.make.pipe(Effect.provideService(AppConfig, config), Effect.provide(KnownSecrets.none))

  // This node's claims, as the daemon keeps them; addressById is built from it as the daemon does.
  const { table } = yield* makeClaimTable
  const sources: InventorySources = {
    addressById: Effect.map(table.state, (state) => {
      const byId = new Map<ClaimId, string>()
      for (const row of state.rows.values()) if (row.record.address !== "") byId.set(row.record.id, row.record.address)
      return byId as ReadonlyMap<ClaimId, string>
    })
  }
  // The clients as the publisher sees them note each call and its TestClock time.
  const sandboxdCalls = recording(sandboxd)
  const kubeCalls = recording(kube)
  const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(
      Effect.provideService(AppConfig, config),
      Effect.provideService(KubeApi, kubeCalls.service),
      Effect.provideService(SandboxdClient, sandboxdCalls.service)
    )
  /** The TestClock times at which the publisher listed sandboxd, and applied the inventory. */
  const listedAt = () => sandboxdCalls.named("listSandboxes").map((call) => call.at)
  const appliedAt = () => kubeCalls.named("applyNodeInventory").map((call) => call.at)
  const stored = () => model.peek(NodeInventories, "", NODE) as StoredInventory | undefined
  const applies = () => proxy.seen.filter((r) => r.path === INVENTORY_PATH)
  /** Answered applies (the request reached the server and came back). */
  const answered = () => applies().filter((r) => r.status !== undefined)
  return { model, sim, sandboxd, kube, table, sources, provide, stored, applies, answered, config, listedAt, appliedAt }
})

const spec = (template: string, size: string, claimRef: string): ClaimSpec => ({
  template,
  net: "",
  size,
  ttlSeconds: 86_400,
  claimRef
})

const recordOf = (claim: ClaimResult): ClaimRecord => ({
  id: claim.id,
  token: claim.token,
  address: claim.ownerAddr,
  podUID: "uid",
  claimedAt: Option.none(),
  deadline: claim.deadline
})

/** A claim made straight against the simulator over HTTP (as the aggregated apiserver does): not in our table. */
const externalClaim = (sandboxdUrl: string, body: Record<string, unknown>) =>
  Effect.promise(async () => {
    const response = await fetch(`${sandboxdUrl}/v1/claim`, {
      method: "POST",
      headers: { authorization: `Bearer ${ROOT_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    return (await response.json()) as { id: string; token: string }
  })

/**
 * The world: two own claims (one hibernated), an external claim with a claim_ref (archived),
 * and a ref-less external claim. Own claims sit in the table as Quarantined and Tentative rows.
 */
const populate = (world: Effect.Success<typeof setup>) =>
  Effect.gen(function*() {
    const { sandboxd, sim, table, config } = world
    const reviewBot = yield* sandboxd.claim(spec(AGENT, "medium", "team-a/review-bot-7f3k2"))
    const notebook = yield* sandboxd.claim(spec(AGENT, "medium", "team-a/notebook-x9"))
    yield* sim.hibernate(notebook.id)
    const longrunner = yield* externalClaim(config.sandboxdUrl, {
      template: BASE,
      size: "small",
      ttl_seconds: 3600,
      claim_ref: "team-b/longrunner"
    })
    yield* sim.archive(longrunner.id)
    const sdk = yield* externalClaim(config.sandboxdUrl, { template: BASE, size: "small", ttl_seconds: 600 })
    yield* table.loadQuarantined(new Map([["team-a/notebook-x9" as PodKey, recordOf(notebook)]]))
    yield* table.recordTentative("team-a/review-bot-7f3k2" as PodKey, recordOf(reviewBot), {
      metadata: { namespace: "team-a", name: "review-bot-7f3k2", uid: "uid" }
    })
    return { reviewBot, notebook, longrunner, sdk }
  })

/**
 * Only the fields of INV-4 — the NodeInventory object, with the server's metadata reduced to the
 * name.
 */
const dataOf = (object: StoredInventory | undefined) => {
  if (object === undefined) return undefined
  const { metadata, ...rest } = object
  return { ...rest, metadata: { name: metadata.name } }
}

const row = (id: string, claimRef: string, hibernated = false) => ({
  id: id as ClaimId,
  claimRef,
  deadline: Option.none(),
  hibernated,
  archived: false,
  failed: "",
  key: { template: BASE, net: "none", size: "small" }
})

describe("InventoryPublisher pure parts", () => {
  it("entries sort byte-wise by name (upper case first, '-' before '_' before letters)", () => {
    const entries = entriesOf(
      [row("sb_2", "team_a/z"), row("sb_3", "team-a/x"), row("sb_1", ""), row("sb_4", "Team-b/y", true)],
      new Map([["sb_3" as ClaimId, "10.0.0.5:7777"], ["sb_9" as ClaimId, "10.0.0.5:7777"]])
    )
    assert.deepStrictEqual(entries, [
      { name: "Team-b/y", id: "sb_4", phase: "Hibernated", claimRef: "Team-b/y" },
      { name: "sb_1", id: "sb_1", phase: "Running", claimRef: "sb_1" },
      { name: "team-a/x", id: "sb_3", phase: "Running", claimRef: "team-a/x", addr: "10.0.0.5:7777" },
      { name: "team_a/z", id: "sb_2", phase: "Running", claimRef: "team_a/z" }
    ])
  })

  it("pools omit an empty net or size; the body omits empty entries, address and pools", () => {
    assert.deepStrictEqual(
      poolsOf({ pools: [{ template: "t", net: "", size: "", warm: 0, target: 0 }], draining: false }),
      [{ template: "t", warm: 0, target: 0 }]
    )
    assert.deepStrictEqual(inventoryBody("n", [], "", []), {
      apiVersion: "extensions.agents.x-k8s.io/v1beta1",
      kind: "NodeInventory",
      metadata: { name: "n" },
      node: "n"
    })
  })
})

describe("InventoryPublisher", () => {
  it.effect("the applied object is exactly the NodeInventory shape (INV-4), sent as a forced server-side apply", () =>
    Effect.gen(function*() {
      const world = yield* setup
      const claims = yield* populate(world)
      assert.isUndefined(world.stored(), "nothing writes the inventory before the publisher runs")

      const body = yield* world.provide(publishOnce(world.sources))

      // pools: the simulator's own numbers, warm after the four claims took theirs
      const pools = yield* world.sim.pools
      assert.deepStrictEqual(
        pools.map((p) => [p.template, p.warm, p.target]),
        [[BASE, 2, 4], [AGENT, 0, 2]],
        "fixture: warm differs from target, so a swapped field shows"
      )
      const expected = {
        apiVersion: "extensions.agents.x-k8s.io/v1beta1",
        kind: "NodeInventory",
        metadata: { name: NODE },
        node: NODE,
        entries: [
          { name: claims.sdk.id, id: claims.sdk.id, phase: "Running", claimRef: claims.sdk.id },
          {
            name: "team-a/notebook-x9",
            id: claims.notebook.id,
            phase: "Hibernated",
            claimRef: "team-a/notebook-x9",
            addr: ADVERTISE
          },
          {
            name: "team-a/review-bot-7f3k2",
            id: claims.reviewBot.id,
            phase: "Running",
            claimRef: "team-a/review-bot-7f3k2",
            addr: ADVERTISE
          },
          // archived, not hibernated: Running, as the reference publishes it; external: no addr
          { name: "team-b/longrunner", id: claims.longrunner.id, phase: "Running", claimRef: "team-b/longrunner" }
        ],
        address: ADVERTISE,
        // in sandboxd's order
        pools: [
          { template: BASE, net: "none", size: "small", warm: 2, target: 4 },
          { template: AGENT, net: "none", size: "medium", warm: 0, target: 2 }
        ]
      }
      assert.deepStrictEqual<unknown>(body, expected)

      // the wire request: one PATCH, apply-patch+yaml, fieldManager vk-sandbox, force=true, the body as JSON
      const [request, ...more] = world.applies()
      assert.strictEqual(more.length, 0)
      assert.strictEqual(request.method, "PATCH")
      assert.strictEqual(request.contentType, "application/apply-patch+yaml")
      assert.strictEqual(request.query.get("fieldManager"), "vk-sandbox")
      assert.strictEqual(request.query.get("force"), "true")
      assert.strictEqual(request.status, 201, "the first apply creates")
      assert.deepStrictEqual(JSON.parse(request.body), expected)
      // key order of entries as in INV-4 (name, id, phase, claimRef, addr)
      assert.deepStrictEqual(
        (JSON.parse(request.body) as { entries: Array<object> }).entries.map((e) => Object.keys(e).join(",")),
        ["name,id,phase,claimRef", "name,id,phase,claimRef,addr", "name,id,phase,claimRef,addr", "name,id,phase,claimRef"]
      )

      // the stored object: the same data, plus server metadata owned by vk-sandbox through Apply; no status
      const stored = world.stored()
      assert.deepStrictEqual(dataOf(stored), expected)
      assert.isUndefined(stored?.["status"])
      assert.deepStrictEqual(
        stored?.metadata.managedFields?.map((f) => [f.manager, f.operation]),
        [["vk-sandbox", "Apply"]]
      )

      // no token, neither a claim's nor the node's, anywhere in the request or the stored object
      const text = `${request.body}\n${JSON.stringify(stored)}`
      for (const token of [Redacted.value(claims.reviewBot.token), Redacted.value(claims.notebook.token), claims.longrunner.token, claims.sdk.token, ROOT_TOKEN]) {
        assert.isFalse(text.includes(token), "a token leaked into the inventory")
      }
    }))

  it.effect("a released sandbox is gone from the next publish (atomic lists, no stale entry)", () =>
    Effect.gen(function*() {
      const world = yield* setup
      const claims = yield* populate(world)
      yield* world.provide(publishOnce(world.sources))
      const first = world.stored()
      assert.strictEqual(first?.entries?.length, 4)

      assert.strictEqual(yield* world.sandboxd.release(claims.reviewBot.id, claims.reviewBot.token), "Released")
      // our table still holds the row: entries come from the listing, not the table
      yield* world.provide(publishOnce(world.sources))
      const second = world.stored()
      assert.notStrictEqual(second?.metadata.resourceVersion, first?.metadata.resourceVersion)
      assert.deepStrictEqual(second?.entries?.map((e) => e["name"]), [claims.sdk.id, "team-a/notebook-x9", "team-b/longrunner"])
      assert.strictEqual(world.answered().at(-1)?.status, 200, "a later apply updates")

      // everything gone: the entries field itself is dropped, and SSA removes it from the object
      yield* world.sim.forget(claims.notebook.id)
      yield* world.sim.forget(claims.longrunner.id)
      yield* world.sim.forget(claims.sdk.id)
      const body = yield* world.provide(publishOnce(world.sources))
      assert.isFalse("entries" in body)
      const third = world.stored()
      assert.isUndefined(third?.entries, "an empty live set leaves no entries behind")
      assert.strictEqual(third?.address, ADVERTISE)
      assert.strictEqual(third?.pools?.length, 2)
    }))

  it.effect("a failed listing (5xx, a {} body) or info call skips the publish and leaves the object as it was", () =>
    Effect.gen(function*() {
      const world = yield* setup
      yield* populate(world)
      yield* world.provide(publishOnce(world.sources))
      const before = world.stored()
      assert.isDefined(before)
      const appliesBefore = world.appliedAt().length

      const failures = [
        { route: "list" as const, fault: SimFault.status(500, "boom"), operation: "list" },
        { route: "list" as const, fault: SimFault.body(200, "{}"), operation: "list" },
        { route: "list" as const, fault: SimFault.body(200, `{"sandboxes":null}`), operation: "list" },
        { route: "info" as const, fault: SimFault.status(503, "busy"), operation: "info" },
        { route: "info" as const, fault: SimFault.body(200, "{}"), operation: "info" }
      ]
      for (const { route, fault, operation } of failures) {
        yield* world.sim.injectFault(route, fault, { times: 1 })
        const error = yield* Effect.flip(world.provide(publishOnce(world.sources)))
        assert.strictEqual(error._tag, "SandboxdListError")
        assert.strictEqual(error._tag === "SandboxdListError" ? error.operation : "", operation)
      }
      // Each publishOnce above has returned: an apply it sent would be noted.
      assert.strictEqual(world.appliedAt().length, appliesBefore, "no apply was attempted")
      assert.deepStrictEqual(world.stored(), before, "the previous object is untouched (same resourceVersion)")

      // and the next good tick publishes again
      yield* world.provide(publishOnce(world.sources))
      assert.strictEqual(world.appliedAt().length, appliesBefore + 1)
    }))

  it.effect("cadence: publishes at once, then every --publish-interval; failures never stop it", () =>
    Effect.gen(function*() {
      const world = yield* setup
      const claims = yield* populate(world)
      assert.isUndefined(world.stored(), "runPublisher is the only writer: no object before it runs")

      // The publish counters and the last success's time (seconds since the epoch, 0 before any).
      const outcomes = Effect.all({
        success: Effect.map(Metric.value(labelled(inventoryPublishes, { result: "success" })), (s) => s.count),
        failed: Effect.map(Metric.value(labelled(inventoryPublishes, { result: "failed" })), (s) => s.count),
        lastSuccess: Effect.map(Metric.value(inventoryLastSuccess), (s) => s.value)
      })
      const before = yield* outcomes
      // Each tick ends in the wait for the next: the publisher's sleeps are the ticks' receipts.
      const sleeps = yield* sleepReceipts
      const tickEnded = (n: number) => sleeps.asleep(INTERVAL, n)
      const fiber = yield* Effect.forkChild(world.provide(runPublisher(world.sources)).pipe(Effect.provideService(Clock.Clock, sleeps.clock)))
      yield* tickEnded(1)
      assert.strictEqual(world.answered().length, 1, "the immediate publish")
      assert.strictEqual(world.stored()?.entries?.length, 4)
      assert.deepStrictEqual(yield* outcomes, { success: before.success + 1, failed: before.failed, lastSuccess: START / 1000 })
      assert.strictEqual((yield* Metric.value(inventoryInterval)).value, 30)

      // nothing before the interval has passed (the times of the calls sent say so below)
      yield* TestClock.adjust(Duration.subtract(INTERVAL, Duration.millis(1)))
      yield* TestClock.adjust(Duration.millis(1))
      yield* tickEnded(2)
      assert.strictEqual(world.answered().length, 2, "the second publish")

      // an apply failure (5xx on the nodeinventories path) is logged, and the next tick publishes
      world.model.faults.failures.push({ path: "/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories", code: 500, times: 1 })
      yield* world.sandboxd.release(claims.reviewBot.id, claims.reviewBot.token)
      const rvBefore = world.stored()?.metadata.resourceVersion
      yield* TestClock.adjust(INTERVAL)
      yield* tickEnded(3)
      assert.strictEqual(world.answered()[2]?.status, 500, "the failed apply")
      assert.strictEqual(world.stored()?.metadata.resourceVersion, rvBefore)
      assert.deepStrictEqual(yield* outcomes, {
        success: before.success + 2,
        failed: before.failed + 1,
        lastSuccess: (START + Duration.toMillis(INTERVAL)) / 1000
      }, "a failed apply is counted and leaves the last success's time")
      yield* TestClock.adjust(INTERVAL)
      yield* tickEnded(4)
      assert.strictEqual(world.answered()[3]?.status, 200, "the publish after the failure")
      assert.strictEqual(world.stored()?.entries?.length, 3, "rebuilt from live state")

      // a failed listing skips a tick without an apply, and the loop carries on
      yield* world.sim.injectFault("list", SimFault.status(500, "boom"), { times: 1 })
      const skippedRv = world.stored()?.metadata.resourceVersion
      yield* TestClock.adjust(INTERVAL)
      yield* tickEnded(5)
      assert.strictEqual(world.applies().length, 4, "no apply for the skipped tick")
      assert.strictEqual(world.stored()?.metadata.resourceVersion, skippedRv)
      assert.strictEqual((yield* outcomes).failed, before.failed + 2, "a skipped tick is a failed publish")
      yield* TestClock.adjust(INTERVAL)
      yield* tickEnded(6)
      assert.strictEqual(world.answered().length, 5, "the publish after the skipped tick")
      const every = [0, 1, 2, 3, 4, 5].map((n) => START + n * Duration.toMillis(INTERVAL))
      assert.deepStrictEqual(world.listedAt(), every, "at once, then every interval, never before")
      assert.deepStrictEqual(world.appliedAt(), [...every.slice(0, 4), every[5]])

      assert.isUndefined(fiber.pollUnsafe(), "the publisher still runs")
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("each publish is logged at DEBUG with the node and the entry count, a failed one at ERROR with the node and its error (INV-7)", () =>
    Effect.gen(function*() {
      const world = yield* setup
      yield* populate(world)
      const logs = makeLogCapture()
      const sleeps = yield* sleepReceipts
      const fiber = yield* Effect.forkChild(
        world.provide(runPublisher(world.sources)).pipe(
          Effect.provide(logs.layer),
          Effect.provideService(References.MinimumLogLevel, "Debug"),
          Effect.provideService(Clock.Clock, sleeps.clock)
        )
      )
      yield* sleeps.asleep(INTERVAL, 1) // the immediate publish has ended
      const published = logs.lines.filter((line) => line.message === "node inventory published")
      assert.deepStrictEqual(published.map((line) => [line.level, line.annotations["node"], line.annotations["entries"]]), [["Debug", NODE, 4]])

      world.model.faults.failures.push({ path: "/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories", code: 500, times: 1 })
      yield* TestClock.adjust(INTERVAL)
      yield* sleeps.asleep(INTERVAL, 2) // the failed apply's tick has ended
      const failed = logs.lines.filter((line) => line.message === "node inventory publish failed; will retry on next tick")
      assert.deepStrictEqual(failed.map((line) => [line.level, line.annotations["node"], (line.annotations["error"] as { readonly _tag?: unknown })._tag]), [
        ["Error", NODE, "KubeUnavailable"]
      ])
      assert.strictEqual(logs.lines.filter((line) => line.message === "node inventory published").length, 1, "no success line for the failed one")
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("without --publish-inventory nothing is published: no apply, no object, no sandboxd call, however long it runs (INV-7)", () =>
    Effect.gen(function*() {
      const world = yield* setup
      yield* populate(world)
      const sandboxdCalls = recording(world.sandboxd)
      const build = (publishInventory: boolean) =>
        Layer.build(InventoryPublisherLayer).pipe(
          Effect.provideService(AppConfig, { ...world.config, publishInventory }),
          Effect.provideService(KubeApi, world.kube),
          Effect.provideService(SandboxdClient, sandboxdCalls.service),
          Effect.provideService(ClaimTable, world.table)
        )
      yield* Effect.scoped(Effect.gen(function*() {
        yield* build(false)
        // A publisher woken by the clock runs until it waits on sandboxd: its listing would be noted.
        for (let tick = 0; tick < 4; tick++) yield* TestClock.adjust(INTERVAL)
        assert.deepStrictEqual(sandboxdCalls.calls, [], "sandboxd was asked nothing for an inventory")
        assert.deepStrictEqual(world.applies(), [])
        assert.isUndefined(world.stored())
      }))
      // The same layer with the flag publishes at once: the test would see one.
      yield* Effect.scoped(Effect.gen(function*() {
        yield* build(true)
        yield* eventually("the publish with the flag", () => world.answered().length === 1)
      }))
    }))
})
