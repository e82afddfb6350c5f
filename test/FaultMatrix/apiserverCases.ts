/**
 * The fault matrix, apiserver side: each fault between the daemon and the apiserver, over the
 * wire (a proxy in front of the in-memory apiserver), then convergence and the invariants of
 * ./world.ts. The Pods a case creates and deletes change in the apiserver while the daemon
 * cannot see them; it must catch up once the fault clears.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { createPod, readClaimsFile, type StepFailed } from "../../testkit/Demo/Harness.ts"
import type { ModelSnapshot } from "../../testkit/Simulators/Apiserver/Model.ts"
import { Pods } from "../../testkit/Simulators/Apiserver/Resources.ts"
import type { FaultAction, ProxiedRequest } from "../support/FaultProxy.ts"
import { Pass } from "../support/FaultProxy.ts"
import { type FaultCase, heldIds, invariants, podsNow, prepare, type World } from "./world.ts"

const isWatch = (request: ProxiedRequest) => /[?&]watch=(true|1)/.test(request.url)
const isStatusWrite = (request: ProxiedRequest) => request.method === "PUT" && /\/pods\/[^/]+\/status$/.test(request.url.split("?")[0] ?? "")

const status = (code: number, reason: string, message: string) =>
  JSON.stringify({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code })

/** A rule for some requests; existing connections (the open watch) are cut when it is armed and cleared. */
const onRequests = (matches: (request: ProxiedRequest) => boolean, action: FaultAction): FaultCase => ({
  arm: (world) =>
    Effect.sync(() => {
      world.apiserver.setRule((request) => (matches(request) ? action : Pass))
      world.apiserver.resetAll()
    }),
  disarm: (world) =>
    Effect.sync(() => {
      world.apiserver.clear()
      world.apiserver.resetAll()
    })
})

const every = () => true

export const apiserverCases: ReadonlyArray<readonly [string, FaultCase]> = [
  ["connection refused", {
    arm: (world) => world.apiserver.refuse(),
    disarm: (world) => world.apiserver.accept()
  }],
  ["black-holed (requests read, never answered)", onRequests(every, { _tag: "Hang" })],
  ["a 409 storm on status writes", onRequests(isStatusWrite, { _tag: "Reply", status: 409, body: status(409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again") })],
  ["410 Gone on every watch", onRequests(isWatch, { _tag: "Reply", status: 410, body: status(410, "Expired", "too old resource version: 1 (2)") })],
  ["429 with Retry-After on every request", onRequests(every, {
    _tag: "Reply",
    status: 429,
    body: status(429, "TooManyRequests", "too many requests"),
    headers: { "retry-after": "1" }
  })],
  ["500 on every request", onRequests(every, { _tag: "Reply", status: 500, body: status(500, "InternalError", "etcdserver: request timed out") })],
  ["503 with a non-Status body on every request", onRequests(every, { _tag: "Reply", status: 503, body: "upstream connect error", headers: { "content-type": "text/plain" } })],
  ["every watch closed at once, with no events", onRequests(isWatch, { _tag: "Reply", status: 200, body: "" })]
]

/**
 * The apiserver comes back on another store: its Pods, owners, Node and Lease are those of the
 * snapshot, its resourceVersions are lower than the ones the daemon holds, every watch is cut.
 * Pods made after the snapshot are simply gone (no delete was ever sent), and so are their owners.
 *
 * Only safety is checked here. The re-established watch asks for a resourceVersion the server no
 * longer has, and the server keeps such a watch open and silent; the daemon relists when it ends
 * with nothing delivered, i.e. after its watch timeout (300 s), which is beyond this suite's
 * budget. Until then the invariants must hold: nothing released, no token lost, every Running
 * Pod still backed by its row.
 */
const restoreFlow = (world: World, snapshotOf: () => ModelSnapshot, prepareFirst: boolean) =>
  Effect.gen(function*() {
    const { cluster } = world
    const snapshot = snapshotOf()
    // after a first restore the daemon is blind: nothing new can reach Running to prepare with
    if (prepareFirst) yield* prepare(world)
    const stored = snapshot.store.get(`${Pods.group}/${Pods.plural}`)
    const inSnapshot = new Set([...(stored?.keys() ?? [])].map((key) => key.split("/").at(-1)))
    const vanished = podsNow(cluster).filter((pod) => !inSnapshot.has(pod.name)).map((pod) => pod.name)
    assert.isAbove(vanished.length, 0, "the restore drops Pods")
    // a relist may still come (it would release them on the restored server's word)
    world.bareDeleted.count += vanished.length
    world.ownersDropped.value = true
    const heldBefore = yield* heldIds(world)
    cluster.model.restore(snapshot)
    world.apiserver.resetAll()
    yield* createPod(cluster, "after the restore", `fresh-${world.next()}`)
    yield* Effect.sleep("3 seconds")
    yield* invariants(world)
    // nothing the daemon held before the restore was released without a Pod deleted or vanished
    const heldAfter = yield* heldIds(world)
    const vanishedClaims = new Set(vanished.map((name) => readClaimsFile(cluster)[`${cluster.namespace}/${name}`]?.["id"]))
    for (const id of heldBefore) {
      if (!heldAfter.has(id)) assert.isTrue(vanishedClaims.has(id), `claim ${id} released although its Pod did not vanish`)
    }
  })

export const restoreCases: ReadonlyArray<readonly [string, (world: World) => Effect.Effect<void, StepFailed>]> = [
  ["restored from a backup (resourceVersions go backwards, Pods made since gone): safe while the watch is blind", (world) => {
    const backup = world.cluster.model.snapshot()
    return restoreFlow(world, () => backup, true)
  }],
  ["then restarted on an empty store (every Pod, owner, Node and Lease gone): safe while the watch is blind", (world) =>
    restoreFlow(world, () => world.emptySnapshot, false)]
]
