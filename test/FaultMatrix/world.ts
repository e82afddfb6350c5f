/**
 * The fault-matrix world: the real daemon (a child process) against both simulators, each behind
 * a fault-injecting proxy (test/support/FaultProxy.ts). A case arms a fault, does what users do
 * while it lasts, clears it, waits for convergence and checks `invariants` on apiserver state,
 * sandboxd state, the claims file and /metrics, never on log text.
 * Real time (`it.live`): the daemon is another process with its own clock.
 */
import { assert } from "@effect/vitest"
import { type Duration, Effect, Option, Result } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  type Cluster,
  type JsonObject,
  createPod,
  createSandbox,
  deletePod,
  getPod,
  httpGet,
  type PodView,
  readClaimsFile,
  spawnDaemon,
  startCluster,
  type StepFailed,
  viewPod,
  waitFor
} from "../../testkit/Demo/Harness.ts"
import type { ModelSnapshot } from "../../testkit/Simulators/Apiserver/Model.ts"
import { Pods } from "../../testkit/Simulators/Apiserver/Resources.ts"
import * as FaultProxy from "../support/FaultProxy.ts"

export interface World {
  readonly cluster: Cluster
  readonly sandboxd: FaultProxy.FaultProxy
  readonly apiserver: FaultProxy.FaultProxy
  readonly metricsUrl: string
  readonly output: () => string
  /**
   * Claims of owned Pods deleted while their owner lived, with that owner's name: held while it
   * lives (AUTH-9 — a preserved VM is released once its owner goes).
   */
  readonly preserved: Map<string, string>
  /** Bare Pods deleted so far: the upper bound of Release verdicts. */
  readonly bareDeleted: { count: number }
  /** A sequence for unique names. */
  readonly next: () => number
  /** The apiserver's store before the daemon started: what a restart on an empty etcd comes back to. */
  readonly emptySnapshot: ModelSnapshot
  /** Owners may now be gone by the apiserver's word (a restore dropped them): OwnerGone releases are authorized. */
  readonly ownersDropped: { value: boolean }
}

/** Both simulators, both proxies, the daemon pointed at the proxies; all gone with the scope. */
export const startWorld = Effect.gen(function*() {
  const cluster = yield* startCluster({ warmPerPool: 24, nodeName: "vk-faults" })
  const emptySnapshot = cluster.model.snapshot()
  const sandboxd = yield* FaultProxy.make(cluster.sandboxdUrl)
  const apiserver = yield* FaultProxy.make(cluster.apiserver.url)
  // the same kubeconfig (token included), naming the proxy
  const kubeconfigPath = path.join(cluster.dir, "kubeconfig-proxied")
  const original = fs.readFileSync(cluster.kubeconfigPath, "utf8")
  fs.writeFileSync(kubeconfigPath, original.split(cluster.apiserver.url).join(apiserver.url), { mode: 0o600 })
  const daemon = yield* spawnDaemon(
    { ...cluster, kubeconfigPath, sandboxdUrl: sandboxd.url },
    // a silent watch checks the apiserver's resourceVersion after 2 s (15 s by default): the
    // restore cases converge within the suite's budget
    { extraArgs: ["--sandboxd-timeout", "1s", "--watch-check-interval", "2s"] }
  )
  yield* waitFor(
    "start",
    "/readyz 200",
    httpGet(`${daemon.metricsUrl}/readyz`).pipe(Effect.map(Option.filter((r) => r.status === 200))),
    // a loaded machine (the full suite on two shared cores) has taken over 20 s to start it
    { timeout: "45 seconds", describe: daemon.output }
  )
  let sequence = 0
  return {
    cluster,
    sandboxd,
    apiserver,
    metricsUrl: daemon.metricsUrl,
    output: daemon.output,
    preserved: new Map<string, string>(),
    bareDeleted: { count: 0 },
    next: () => ++sequence,
    emptySnapshot,
    ownersDropped: { value: false }
  } satisfies World
})

/** The Pods of the namespace as the apiserver holds them. */
export const podsNow = (cluster: Cluster): ReadonlyArray<PodView> => {
  const listed = cluster.model.list(Pods, cluster.namespace)
  const items = Result.isSuccess(listed) ? listed.success["items"] : undefined
  return Array.isArray(items) ? items.map((item: JsonObject) => viewPod(item)) : []
}

export const describeState = (world: World) => () =>
  `pods: ${JSON.stringify(podsNow(world.cluster).map((p) => [p.name, p.phase, p.reason, p.deleting]))}; ` +
  `claims file: ${JSON.stringify(Object.keys(readClaimsFile(world.cluster)))}; daemon output tail: ${world.output().slice(-2500)}`

export const running = (world: World, name: string, timeout: Duration.Input = "25 seconds") =>
  waitFor(
    "convergence",
    `${name} Running with a claim`,
    Effect.sync(() => Option.filter(getPod(world.cluster, name), (p) => p.phase === "Running" && p.claimId !== "")),
    { timeout, describe: describeState(world) }
  )

const gone = (world: World, name: string) =>
  waitFor(
    "convergence",
    `${name} removed from the apiserver`,
    Effect.sync(() => (Option.isNone(getPod(world.cluster, name)) ? Option.some(true) : Option.none())),
    { timeout: "25 seconds", describe: describeState(world) }
  )

export const heldIds = (world: World) => Effect.map(world.cluster.sandboxd.claims, (claims) => new Set(claims.map((c) => c.id)))

/** A bare and an owned Pod, Running, for a case to delete while its fault lasts. */
export const prepare = (world: World) =>
  Effect.gen(function*() {
    const n = world.next()
    const bare = `bare-${n}`
    const owned = `owned-${n}`
    const ownerUid = yield* createSandbox(world.cluster, "prepare", `owner-${n}`)
    yield* createPod(world.cluster, "prepare", bare)
    yield* createPod(world.cluster, "prepare", owned, { owner: { name: `owner-${n}`, uid: ownerUid } })
    const bareClaim = (yield* running(world, bare)).claimId
    const ownedClaim = (yield* running(world, owned)).claimId
    return { n, bare, owned, bareClaim, ownedClaim }
  })

/** What shows that the daemon met a fault (./receipts.ts). */
export interface Receipt {
  /** What the daemon did, for the message when it never does. */
  readonly expectation: string
  /** Started just before the fault is armed; the probe says whether the daemon has met it since. */
  readonly start: (world: World) => Effect.Effect<Effect.Effect<boolean>, StepFailed>
}

export interface FaultCase {
  readonly arm: (world: World) => Effect.Effect<void>
  readonly disarm: (world: World) => Effect.Effect<void>
  /** The fault lasts until the daemon has met it: this receipt, never a span of time. */
  readonly met: Receipt
  /** Checks of its own once converged. */
  readonly check?: (world: World) => Effect.Effect<void>
}

/**
 * One case: prepare two Pods, arm the fault, create one Pod and delete the two prepared ones,
 * hold the fault until the daemon has met it, clear it; then everything must converge and the
 * invariants hold.
 */
export const runCase = (world: World, fault: FaultCase) =>
  Effect.gen(function*() {
    const { n, bare, owned, bareClaim, ownedClaim } = yield* prepare(world)
    const fresh = `fresh-${n}`
    const met = yield* fault.met.start(world)
    yield* fault.arm(world)
    yield* createPod(world.cluster, "during the fault", fresh)
    yield* deletePod(world.cluster, "during the fault", bare)
    yield* deletePod(world.cluster, "during the fault", owned)
    world.bareDeleted.count++
    world.preserved.set(ownedClaim, `owner-${n}`)
    yield* waitFor(
      "fault",
      `the daemon met the fault: ${fault.met.expectation}`,
      Effect.map(met, (yes) => (yes ? Option.some(true) : Option.none())),
      { timeout: "25 seconds", describe: describeState(world) }
      // cleared even when it never met the daemon: the next case starts without it
    ).pipe(Effect.ensuring(fault.disarm(world)))

    // convergence: the new Pod runs, both deleted Pods leave, the bare one's claim is released
    yield* running(world, fresh)
    yield* gone(world, bare)
    yield* gone(world, owned)
    yield* waitFor(
      "convergence",
      `the bare Pod's claim ${bareClaim} released`,
      Effect.map(heldIds(world), (held) => (held.has(bareClaim) ? Option.none() : Option.some(true))),
      { timeout: "25 seconds", describe: describeState(world) }
    )
    yield* invariants(world)
    if (fault.check !== undefined) yield* fault.check(world)
  })

/**
 * The three invariants, on the state of the world right now (after convergence):
 * - no Running Pod without a durable row: every Running Pod's claim id is in the claims file and
 *   held by sandboxd;
 * - no lost token: every claim sandboxd holds is in the claims file with the same token;
 * - no release without owner authority: the claim of every owned Pod deleted so far (its owner
 *   alive) is still held, and every Release verdict counted is BarePod (or OwnerGone, once a
 *   restore dropped owners: their preserved VMs are then released, AUTH-9).
 */
export const invariants = (world: World) =>
  Effect.gen(function*() {
    const { cluster } = world
    const file = readClaimsFile(cluster)
    const held = yield* cluster.sandboxd.claims
    const heldById = new Map(held.map((c) => [c.id, c]))
    const fileById = new Map(Object.entries(file).map(([key, row]) => [String(row["id"]), { key, token: String(row["token"]) }]))

    // no Running Pod without a durable row
    for (const pod of podsNow(cluster)) {
      if (pod.phase !== "Running") continue
      const row = file[`${cluster.namespace}/${pod.name}`]
      assert.strictEqual(row?.["id"], pod.claimId, `Running ${pod.name} has its row in the claims file`)
      assert.isTrue(heldById.has(pod.claimId), `Running ${pod.name}'s claim is held by sandboxd`)
    }
    // no lost token: what sandboxd holds, the file holds, with the same token
    for (const claim of held) {
      const row = fileById.get(claim.id)
      assert.isDefined(row, `claim ${claim.id} (${claim.claimRef}) held by sandboxd is in the claims file`)
      assert.isTrue(row?.token === claim.token, `claim ${claim.id}: the file's token is sandboxd's`)
    }
    // no release without owner authority
    for (const id of world.preserved.keys()) {
      assert.isTrue(heldById.has(id), `preserved claim ${id} (owner alive) is still held`)
    }
    const metrics = yield* httpGet(`${world.metricsUrl}/metrics`)
    assert.isTrue(Option.isSome(metrics), "metrics answer")
    const body = Option.getOrElse(Option.map(metrics, (m) => m.body), () => "")
    let releases = 0
    for (const line of body.split("\n")) {
      // a verdict is counted each time a delete is decided (a failed release is decided again)
      if (line.startsWith("vk_sandbox_delete_verdicts_total{") && line.includes(`verdict="Release"`)) {
        const allowed = world.ownersDropped.value ? /reason="(BarePod|OwnerGone)"/ : /reason="BarePod"/
        assert.match(line, allowed, `a release only with the owner's authority: ${line}`)
      }
      if (line.startsWith("vk_sandbox_releases_total{") && !line.includes(`result="failed"`)) {
        releases += Number(line.slice(line.lastIndexOf(" ") + 1))
      }
    }
    assert.isAtMost(releases, world.bareDeleted.count, "no more completed releases than bare Pods deleted")
    const heldGauge = /^vk_sandbox_claims_held(?:\{[^}]*\})? (\d+)$/m.exec(body)
    assert.strictEqual(Number(heldGauge?.[1]), Object.keys(file).length, "claims_held is the file's row count")
  })
