/**
 * The fault matrix, apiserver side: each fault between the daemon and the apiserver, over the
 * wire (a proxy in front of the in-memory apiserver), then convergence and the invariants of
 * ./world.ts. The Pods a case creates and deletes change in the apiserver while the daemon
 * cannot see them; it must catch up once the fault clears.
 */
import { assert } from "@effect/vitest"
import { Effect, Option, Result } from "effect"
import { createPod, readClaimsFile, type StepFailed, waitFor } from "../../testkit/Demo/Harness.ts"
import type { ModelSnapshot } from "../../testkit/Simulators/Apiserver/Model.ts"
import { Pods, Sandboxes } from "../../testkit/Simulators/Apiserver/Resources.ts"
import type { FaultAction, ProxiedRequest } from "../support/FaultProxy.ts"
import { Pass } from "../support/FaultProxy.ts"
import { afterThat, allOf, counted, faulted, having, metric, scrape, total } from "./receipts.ts"
import { describeState, type FaultCase, heldIds, invariants, podsNow, prepare, type Receipt, running, type World } from "./world.ts"

const isWatch = (request: ProxiedRequest) => /[?&]watch=(true|1)/.test(request.url)
const isStatusWrite = (request: ProxiedRequest) => request.method === "PUT" && /\/pods\/[^/]+\/status$/.test(request.url.split("?")[0] ?? "")

const status = (code: number, reason: string, message: string) =>
  JSON.stringify({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code })

/** A rule for some requests; existing connections (the open watch) are cut when it is armed and cleared. */
const onRequests = (matches: (request: ProxiedRequest) => boolean, action: FaultAction, met: Receipt): FaultCase => ({
  arm: (world) =>
    Effect.sync(() => {
      world.apiserver.setRule((request) => (matches(request) ? action : Pass))
      world.apiserver.resetAll()
    }),
  disarm: (world) =>
    Effect.sync(() => {
      world.apiserver.clear()
      world.apiserver.resetAll()
    }),
  met
})

const every = () => true

const requests = "vk_sandbox_apiserver_requests_total"
const restarts = "vk_sandbox_watch_restarts_total"
/** The proxy answered the daemon's re-established watch with the fault. */
const watchFaulted = faulted("its watch met the fault", "apiserver", isWatch)
/** The daemon counted a request answered with `code`. */
const answered = (code: number) => counted(`it counted a request answered ${code}`, requests, having(`code="${code}"`))

export const apiserverCases: ReadonlyArray<readonly [string, FaultCase]> = [
  ["connection refused", {
    arm: (world) => world.apiserver.refuse(),
    disarm: (world) => world.apiserver.accept(),
    // refused connections reach no proxy: the daemon's own counts. Two failed watches: the one
    // the refusal cut, and one begun after it.
    met: allOf(
      counted("it counted a request with no answer", requests, having(`code="error"`)),
      counted("two of its watches failed", restarts, having(`reason="failed"`), 2)
    )
  }],
  ["black-holed (requests read, never answered)", onRequests(every, { _tag: "Hang" }, allOf(
    watchFaulted,
    // no reply, so nothing the daemon counts before its own timeouts (10 s and more)
    faulted("a request other than its watch went unanswered", "apiserver", (request) => !isWatch(request))
  ))],
  ["a 409 storm on status writes", onRequests(
    isStatusWrite,
    { _tag: "Reply", status: 409, body: status(409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again") },
    allOf(
      faulted("a status write met the proxy's 409", "apiserver", isStatusWrite),
      counted("it counted a status write answered 409", requests, having(`resource="pods/status"`, `code="409"`))
    )
  )],
  ["410 Gone on every watch", onRequests(
    isWatch,
    { _tag: "Reply", status: 410, body: status(410, "Expired", "too old resource version: 1 (2)") },
    allOf(watchFaulted, counted("it restarted a watch answered 410", restarts, having(`reason="gone"`)))
  )],
  ["429 with Retry-After on every request", onRequests(every, {
    _tag: "Reply",
    status: 429,
    body: status(429, "TooManyRequests", "too many requests"),
    headers: { "retry-after": "1" }
  }, allOf(watchFaulted, answered(429)))],
  ["500 on every request", onRequests(
    every,
    { _tag: "Reply", status: 500, body: status(500, "InternalError", "etcdserver: request timed out") },
    allOf(watchFaulted, answered(500))
  )],
  ["503 with a non-Status body on every request", onRequests(
    every,
    { _tag: "Reply", status: 503, body: "upstream connect error", headers: { "content-type": "text/plain" } },
    allOf(watchFaulted, answered(503))
  )],
  ["every watch closed at once, with no events", onRequests(
    isWatch,
    { _tag: "Reply", status: 200, body: "" },
    // arming cuts the open watch, and a watch may end at its timeout: only a restart counted
    // after a faulted watch is the receipt (the fault stays armed, so every re-watch meets it)
    afterThat(watchFaulted, counted("it restarted a watch that closed with no events", restarts, having(`reason="closed"`)))
  )]
]

const backwards = `vk_sandbox_watch_restarts_total{reason="backwards"}`

/**
 * The apiserver comes back on another store: its Pods, owners, Node and Lease are those of the
 * snapshot, its resourceVersions are lower than the ones the daemon holds, every watch is cut.
 * Pods made after the snapshot are simply gone (no delete was ever sent), and so are their owners.
 *
 * The re-established watch asks for a resourceVersion the server no longer has; the server keeps
 * it open and silent (kube-apiserver delivers nothing older than the version asked for, bookmarks
 * included). The daemon (`--watch-check-interval 2s` here) finds the server's resourceVersion
 * older than its cache's and relists. Convergence: the Pod made after the restore goes Running,
 * `vk_sandbox_watch_restarts_total{reason="backwards"}` counts the restore, the vanished Pods
 * leave the claims file (the restored server says they and their owners are gone: released on
 * its word) and no request names them any more (their status writes ended); the invariants hold.
 */
const restoreFlow = (world: World, snapshotOf: () => ModelSnapshot) =>
  Effect.gen(function*() {
    const { cluster } = world
    const snapshot = snapshotOf()
    const { n, bare } = yield* prepare(world)
    // The cluster moves on after the backup, in what the daemon watches: 100 label changes of a
    // Pod on its node. The daemon then holds a resourceVersion 100 writes past the backup's, more
    // than it writes itself in the seconds before its check, so the restored server stays behind
    // it until then. (A check that comes after the restored server's version has passed the
    // daemon's cannot see that it went backwards; restoring with etcdutl --bump-revision
    // --mark-compacted closes that gap: the old versions answer 410 and the daemon relists.)
    for (let i = 0; i < 100; i++) {
      const patched = cluster.model.patch(Pods, cluster.namespace, bare, "merge", { metadata: { labels: { churn: String(i) } } })
      assert.isTrue(Result.isSuccess(patched), "churn")
    }
    // The receipt that the daemon has them: a Pod made after them goes Running (the watch
    // delivers in order). It is gone with the restore too.
    yield* createPod(cluster, "after the churn", `churned-${n}`)
    yield* running(world, `churned-${n}`)
    const stored = snapshot.store.get(`${Pods.group}/${Pods.plural}`)
    const inSnapshot = new Set([...(stored?.keys() ?? [])].map((key) => key.split("/").at(-1)))
    const vanished = podsNow(cluster).filter((pod) => !inSnapshot.has(pod.name)).map((pod) => pod.name)
    assert.isAbove(vanished.length, 0, "the restore drops Pods")
    const file = readClaimsFile(cluster)
    const vanishedClaims = new Set(vanished.map((name) => String(file[`${cluster.namespace}/${name}`]?.["id"])))
    // A preserved claim whose owner the restore drops is released on the restored server's word
    // too (AUTH-9 — a preserved VM is released once its owner goes: its owner is gone); the others
    // stay held.
    const owners = snapshot.store.get(`${Sandboxes.group}/${Sandboxes.plural}`)
    const ownersKept = new Set([...(owners?.keys() ?? [])].map((key) => key.split("/").at(-1)))
    const ownerless = [...world.preserved].filter(([, owner]) => !ownersKept.has(owner)).map(([id]) => id)
    for (const id of ownerless) world.preserved.delete(id)
    world.bareDeleted.count += ownerless.length
    // the relist releases them on the restored server's word (Pod gone, owner gone)
    world.bareDeleted.count += vanished.length
    world.ownersDropped.value = true
    const heldBefore = yield* heldIds(world)
    const backwardsBefore = yield* metric(world, backwards)
    cluster.model.restore(snapshot)
    world.apiserver.resetAll()
    const fresh = `fresh-${world.next()}`
    yield* createPod(cluster, "after the restore", fresh)

    yield* running(world, fresh)
    assert.isAbove(yield* metric(world, backwards), backwardsBefore, "the daemon saw the resourceVersion go backwards")
    yield* waitFor(
      "convergence",
      `the vanished Pods' rows leave the claims file (${vanished.join(", ")})`,
      Effect.sync(() => {
        const keys = Object.keys(readClaimsFile(cluster))
        return vanished.some((name) => keys.includes(`${cluster.namespace}/${name}`)) ? Option.none() : Option.some(true)
      }),
      { timeout: "25 seconds", describe: describeState(world) }
    )
    // the vanished Pods are out of the daemon's cache: nothing asks the apiserver about them, up
    // to a receipt of the daemon's later work: its cache holds just the apiserver's Pods (no
    // status write can be built for a Pod it lacks), and a Pod made after the mark goes Running
    // (a whole round of watch, claim and status writes)
    const mark = world.apiserver.seen.length
    yield* waitFor(
      "convergence",
      "the daemon's cache (vk_sandbox_pods) holds just the apiserver's Pods",
      Effect.map(scrape(world), Option.flatMap((values) => (total(values, "vk_sandbox_pods") === podsNow(cluster).length ? Option.some(true) : Option.none()))),
      { timeout: "25 seconds", describe: describeState(world) }
    )
    const marker = `marker-${world.next()}`
    yield* createPod(cluster, "after the relist", marker)
    yield* running(world, marker)
    const naming = () =>
      world.apiserver.seen.slice(mark).filter((request) =>
        vanished.some((name) => new RegExp(`/pods/${name}(/|$)`).test(request.url.split("?")[0] ?? ""))
      ).map((r) => `${r.method} ${r.url}`)
    assert.deepStrictEqual(naming(), [], "no request for a vanished Pod after the relist")
    yield* waitFor(
      "convergence",
      `the preserved claims whose owner the restore dropped released (${ownerless.join(", ")})`,
      Effect.map(heldIds(world), (held) => (ownerless.some((id) => held.has(id)) ? Option.none() : Option.some(true))),
      { timeout: "25 seconds", describe: describeState(world) }
    )
    yield* invariants(world)
    // again once all of it converged: a vanished key's backoff may outlast the marker
    assert.deepStrictEqual(naming(), [], "no request for a vanished Pod after the relist, at the end")
    // nothing the daemon held before the restore was released but the vanished Pods' claims and
    // the preserved ones whose owners went with it
    const heldAfter = yield* heldIds(world)
    for (const id of heldBefore) {
      if (!heldAfter.has(id)) assert.isTrue(vanishedClaims.has(id) || ownerless.includes(id), `claim ${id} released although its Pod did not vanish`)
    }
  })

export const restoreCases: ReadonlyArray<readonly [string, (world: World) => Effect.Effect<void, StepFailed>]> = [
  ["restored from a backup (resourceVersions go backwards, Pods made since gone): the daemon relists and converges", (world) => {
    const backup = world.cluster.model.snapshot()
    return restoreFlow(world, () => backup)
  }],
  ["then restarted on an empty store (every Pod, owner, Node and Lease gone): the daemon relists and converges", (world) =>
    restoreFlow(world, () => world.emptySnapshot)]
]
