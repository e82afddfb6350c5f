/**
 * The image run as the chart runs it (security context, volumes, env and args from the rendered
 * DaemonSet: ./ChartPod.ts), against the simulators: prepare-state on a new state directory and on
 * one an older root-run release left; node registration and 50 Pods Running; `docker stop` inside
 * the chart's grace period; a restart that keeps every VM and claims nothing; and after
 * `docker kill` (SIGKILL), the next container taking the state lock over and adopting every claim.
 * Every daemon runs under the chart's read-only root filesystem, and no log says EROFS. The first
 * block prints the figures of the note (start to ready, idle RSS). The image runs as the chart
 * runs it (IMG-3 — the image runs as the chart runs it).
 */
import { assert, layer } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { Context, Effect, Layer, Option } from "effect"
import { Nodes } from "../../testkit/Simulators/Apiserver/Resources.ts"
import { createPod, httpGet, readClaimsFile, type StepFailed } from "../../testkit/Demo/Harness.ts"
import { lockPathFor } from "../../src/Store/StateLock.ts"
import { docker } from "./Docker.ts"
import { generateSelfSigned } from "../../src/Programs/Kubelet/SelfSigned.ts"
import { allRunning, daemonUid, newStateDir, prepareState, ready, type RunningDaemon, startDaemon, startWorld, virtualNode, withState, type World } from "./World.ts"

class ImageWorld extends Context.Service<ImageWorld, World>()("test/image/ImageWorld") {}

const statOf = (file: string) => {
  const stat = fs.statSync(file)
  return { uid: stat.uid, gid: stat.gid, mode: stat.mode & 0o7777 }
}

/** The live sandboxes' ids at sandboxd. */
const liveIds = (world: World) => Effect.map(world.cluster.sandboxd.claims, (claims) => claims.map((c) => c.id).sort())
/** How many claim requests sandboxd has had since its audit was last cleared. */
const claimRequests = (world: World) => Effect.map(world.cluster.sandboxd.audit, (entries) => entries.filter((e) => e.route === "claim").length)

/** `docker stop` with the chart's grace period: the exit code, and how long it took. */
const stopWithinGrace = (daemon: RunningDaemon) =>
  Effect.gen(function*() {
    const started = Date.now()
    yield* docker(["stop", "-t", String(daemon.graceSeconds), daemon.container.name])
    const took = Date.now() - started
    return { code: yield* daemon.container.wait, took }
  })

const assertNoEROFS = (daemon: RunningDaemon) =>
  Effect.map(daemon.container.logs, (logs) => assert.notMatch(logs, /EROFS|read-only file system/i, "nothing writes to the root filesystem"))

const lockNonce = (stateDir: string): string =>
  (JSON.parse(fs.readFileSync(lockPathFor(path.join(stateDir, "claims.json")), "utf8")) as { nonce: string }).nonce

const residentKb = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0)

const pods = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(2, "0")}`)

const createAll = (world: World, names: ReadonlyArray<string>): Effect.Effect<void, StepFailed> =>
  Effect.forEach(names, (name) => createPod(world.cluster, "create", name), { discard: true })

/**
 * A daemon started on a state directory that already holds `claims` for `names`: once ready,
 * every Pod is Running on the same claim, sandboxd holds the same VMs, and it had no claim request.
 */
const restartKeepsEverything = (world: World, stateDir: string, names: ReadonlyArray<string>, claims: ReadonlyMap<string, string>) =>
  Effect.gen(function*() {
    const before = yield* liveIds(world)
    yield* world.cluster.sandboxd.clearAudit
    const daemon = yield* startDaemon(world, stateDir)
    const readyAt = yield* ready(daemon)
    assert.deepStrictEqual(yield* allRunning(world, stateDir, names), claims)
    assert.deepStrictEqual(yield* liveIds(world), before)
    assert.strictEqual(yield* claimRequests(world), 0)
    return { daemon, readyAt }
  })

const worldLayer = Layer.effect(ImageWorld, startWorld())

layer(worldLayer, { timeout: "60 seconds", excludeTestServices: true })("a new node: prepare-state, 50 Pods, stop, restart, kill", (it) => {
  const names = pods("burst", 50)
  let stateDir = ""
  let claims = new Map<string, string>()

  it.effect("prepare-state hands a new state directory (the kubelet's, root 0755) to the daemon's user; the daemon registers its node and runs 50 Pods; docker stop exits 0 inside the grace period", () =>
    Effect.gen(function*() {
      const world = yield* ImageWorld
      stateDir = newStateDir(world, "state-new")
      const prepared = yield* prepareState(world, stateDir)
      assert.strictEqual(prepared.code, 0, prepared.output)
      assert.match(prepared.stdout, /^prepare-state: .* owned by 65532:65532/)
      assert.deepStrictEqual(statOf(stateDir), { uid: daemonUid, gid: daemonUid, mode: 0o700 })

      const daemon = yield* startDaemon(world, stateDir)
      const readyAt = yield* ready(daemon)
      assert.isDefined(world.cluster.model.peek(Nodes, "", virtualNode), "the node is registered")
      const idleKb = residentKb(yield* daemon.container.hostPid)
      yield* createAll(world, names)
      claims = yield* allRunning(world, stateDir, names)
      assert.strictEqual(claims.size, 50)
      assert.deepStrictEqual((yield* liveIds(world)).length, 50)
      const busyKb = residentKb(yield* daemon.container.hostPid)
      assert.deepStrictEqual(statOf(path.join(stateDir, "claims.json")), { uid: daemonUid, gid: daemonUid, mode: 0o600 })

      const stopped = yield* stopWithinGrace(daemon)
      assert.strictEqual(stopped.code, 0, "exited by itself, before the grace period's SIGKILL")
      yield* assertNoEROFS(daemon)
      console.log(
        `image figures: start->ready ${readyAt - daemon.startedAt} ms, idle RSS ${Math.round(idleKb / 1024)} MB ` +
          `(50 Pods Running: ${Math.round(busyKb / 1024)} MB), docker stop ${stopped.took} ms (grace ${daemon.graceSeconds} s)`
      )
    }).pipe(Effect.scoped), 180_000)

  it.effect("a restart on the same state keeps every VM and makes no claim", () =>
    Effect.gen(function*() {
      const world = yield* ImageWorld
      const { daemon } = yield* restartKeepsEverything(world, stateDir, names, claims)
      // the next test kills this one
      const nonce = lockNonce(stateDir)
      yield* docker(["kill", daemon.container.name])
      assert.strictEqual(yield* daemon.container.wait, 137)
      yield* assertNoEROFS(daemon)
      assert.strictEqual(lockNonce(stateDir), nonce, "a killed holder leaves its lock behind")
    }).pipe(Effect.scoped), 180_000)

  it.effect("after docker kill, the next container takes the lock over and adopts every claim", () =>
    Effect.gen(function*() {
      const world = yield* ImageWorld
      const stale = lockNonce(stateDir)
      const { daemon, readyAt } = yield* restartKeepsEverything(world, stateDir, names, claims)
      assert.match(yield* daemon.container.logs, /taking over a stale state lock/)
      assert.notStrictEqual(lockNonce(stateDir), stale, "the lock is this container's")
      assert.deepStrictEqual(Object.keys(readClaimsFile(withState(world, stateDir))).length, 50)
      console.log(`image figures: after docker kill, the next container ready ${readyAt - daemon.startedAt} ms after docker run`)
      const stopped = yield* stopWithinGrace(daemon)
      assert.strictEqual(stopped.code, 0)
      yield* assertNoEROFS(daemon)
      assert.isFalse(fs.existsSync(lockPathFor(path.join(stateDir, "claims.json"))), "released at a clean stop")
    }).pipe(Effect.scoped), 180_000)
})

layer(worldLayer, { timeout: "60 seconds", excludeTestServices: true })("an upgrade from a root-run release", (it) => {
  it.effect("prepare-state hands over the root-owned directory and claims file an older release left; the daemon adopts its claims", () =>
    Effect.gen(function*() {
      const world = yield* ImageWorld
      const names = pods("older", 5)
      // the older release: the daemon as root, which made its state directory 0700
      const stateDir = newStateDir(world, "state-older")
      fs.chmodSync(stateDir, 0o700)
      const older = yield* startDaemon(world, stateDir, { user: "0:0" })
      yield* ready(older)
      yield* createAll(world, names)
      const claims = yield* allRunning(world, stateDir, names)
      assert.strictEqual((yield* stopWithinGrace(older)).code, 0)
      assert.deepStrictEqual(statOf(stateDir), { uid: 0, gid: 0, mode: 0o700 })
      assert.deepStrictEqual(statOf(path.join(stateDir, "claims.json")), { uid: 0, gid: 0, mode: 0o600 })

      const prepared = yield* prepareState(world, stateDir)
      assert.strictEqual(prepared.code, 0, prepared.output)
      for (const entry of [stateDir, path.join(stateDir, "claims.json")]) {
        const stat = statOf(entry)
        assert.deepStrictEqual([stat.uid, stat.gid], [daemonUid, daemonUid], entry)
      }
      // run again, it changes nothing
      const again = yield* prepareState(world, stateDir)
      assert.match(again.stdout, /\(0 entries changed\)/)

      const { daemon } = yield* restartKeepsEverything(world, stateDir, names, claims)
      assert.strictEqual((yield* stopWithinGrace(daemon)).code, 0)
      yield* assertNoEROFS(daemon)
    }).pipe(Effect.scoped), 180_000)

  it.effect("without --read-only, docker diff shows no changed path outside the mounted volumes", () =>
    Effect.gen(function*() {
      const world = yield* ImageWorld
      const stateDir = newStateDir(world, "state-diff")
      assert.strictEqual((yield* prepareState(world, stateDir)).code, 0)
      const daemon = yield* startDaemon(world, stateDir, { readOnlyRoot: false })
      yield* ready(daemon)
      const names = pods("diff", 3)
      yield* createAll(world, names)
      yield* allRunning(world, stateDir, names)
      assert.strictEqual((yield* stopWithinGrace(daemon)).code, 0)
      const inspect = yield* docker(["inspect", "-f", "{{range .Mounts}}{{.Destination}}\n{{end}}", daemon.container.name])
      const mounts = inspect.stdout.split("\n").filter((line) => line !== "")
      // a mount point, or a directory made to hold one
      const allowed = (changed: string) => mounts.some((mount) => mount === changed || mount.startsWith(`${changed}/`))
      const diff = (yield* docker(["diff", daemon.container.name])).stdout.split("\n").filter((line) => line !== "")
      assert.deepStrictEqual(diff.filter((line) => !allowed(line.slice(2))), [], `docker diff: ${diff.join("; ")}`)
    }).pipe(Effect.scoped), 180_000)
})

layer(worldLayer, { timeout: "60 seconds", excludeTestServices: true })("vk-cocoon's kubelet certificate (TLS-4)", (it) => {
  it.effect("prepare-state copies vk-cocoon's root-only pair for the daemon's user alone, and the daemon serves it; vk-cocoon's files stay as they were", () =>
    Effect.gen(function*() {
      const world = yield* ImageWorld
      const pair = yield* generateSelfSigned("vk-cocoon-node", "")
      fs.writeFileSync(path.join(world.vkCocoonDir, "vk-kubelet.crt"), pair.certPem, { mode: 0o644 })
      fs.writeFileSync(path.join(world.vkCocoonDir, "vk-kubelet.key"), pair.keyPem, { mode: 0o600 })
      const stateDir = newStateDir(world, "state-tls")
      const prepared = yield* prepareState(world, stateDir)
      assert.strictEqual(prepared.code, 0, prepared.output)
      assert.match(prepared.stdout, /kubelet pair \(optional\) to \/run\/vk-sandbox\/tls: .*vk-kubelet\.crt copied, .*vk-kubelet\.key copied/)
      assert.deepStrictEqual(statOf(path.join(world.tlsCopyDir, "tls.key")), { uid: daemonUid, gid: daemonUid, mode: 0o400 })
      assert.deepStrictEqual(statOf(path.join(world.vkCocoonDir, "vk-kubelet.key")), { uid: 0, gid: 0, mode: 0o600 })
      assert.deepStrictEqual(statOf(world.vkCocoonDir), { uid: 0, gid: 0, mode: 0o700 })

      const daemon = yield* startDaemon(world, stateDir)
      yield* ready(daemon)
      const logs = yield* daemon.container.logs
      assert.match(logs, /"msg":"starting virtual node".*"tls":"vk-cocoon"/)
      const metrics = yield* httpGet(`${daemon.metricsUrl}/metrics`)
      assert.match(Option.getOrThrow(metrics).body, /^vk_sandbox_kubelet_tls_info\{source="vk-cocoon"\} 1$/m)
      assert.strictEqual((yield* stopWithinGrace(daemon)).code, 0)
      yield* assertNoEROFS(daemon)
    }).pipe(Effect.scoped), 180_000)
})
