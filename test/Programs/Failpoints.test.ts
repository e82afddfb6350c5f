/**
 * Failpoints: the environment syntax, the actions, counts and chains, and what an armed `fail` or
 * `errno` does at the claim, release and commit places (the sandboxd simulator's audit log shows
 * what was sent).
 */
import { assert, describe, it } from "@effect/vitest"
import * as NFS from "node:fs"
import * as NOS from "node:os"
import * as NPath from "node:path"
import { Duration, Effect, Exit, Fiber, Option, Result } from "effect"
import { TestClock } from "effect/testing"
import { FAILPOINTS_ENV, failpointsFromEnvironment, parseFailpoints } from "../../src/Cli/Failpoints.ts"
import { nodeClaimsFileOps } from "../../src/Layers/ClaimsStoreFile.ts"
import * as FailpointDecorators from "../../src/Layers/FailpointDecorators.ts"
import { podKeyOf } from "../../src/Schemas/Ids.ts"
import { ClaimTable } from "../../src/Services/ClaimTable.ts"
import { failpointNames } from "../../src/Services/Failpoints.ts"
import { durableReplace } from "../../src/Store/DurableReplace.ts"
import { PodLifecycle } from "../../src/Services/PodLifecycle.ts"
import { SandboxdSim } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { armed } from "../support/Failpoints.ts"
import * as KubeApiMemory from "../../testkit/Layers/KubeApiMemory.ts"
import { ClaimsStoreMemoryControl } from "../../testkit/Layers/ClaimsStoreMemory.ts"
import { ClusterModel } from "../../testkit/Simulators/Apiserver/Model.ts"
import { Pods } from "../../testkit/Simulators/Apiserver/Resources.ts"
import { deleteWorld } from "./Authorization/world.ts"
import { pod, world } from "./Provider/harness.ts"

/** The claims file's steps as the daemon runs them with `text` armed. */
const armedOps = (text: string) => {
  const points = armed(text)
  return { ...points, ops: FailpointDecorators.make(points.points).fileOps(nodeClaimsFileOps) }
}

const routeCount = (route: "claim" | "release") =>
  Effect.map(SandboxdSim.use((sim) => sim.audit), (audit) => audit.filter((entry) => entry.route === route).length)

describe("failpoints: the environment variable", () => {
  it("unset or empty is inert", () => {
    for (const env of [{}, { [FAILPOINTS_ENV]: "" }, { [FAILPOINTS_ENV]: " ; " }]) {
      const points = failpointsFromEnvironment(env)
      assert.isTrue(Result.isSuccess(points))
      if (Result.isSuccess(points)) {
        assert.deepStrictEqual(points.success.armed, [])
        for (const name of failpointNames) assert.isUndefined(points.success.hitAsync(name))
      }
    }
  })

  it("parses crash, fail, delay(go duration) and N* counts", () => {
    const terms = parseFailpoints("claim-after-send=crash; push-before-write=delay(1.5s);release-before-send=2*fail")
    assert.isTrue(Result.isSuccess(terms))
    if (Result.isFailure(terms)) return
    assert.deepStrictEqual([...terms.success.keys()], ["claim-after-send", "push-before-write", "release-before-send"])
    assert.deepStrictEqual(terms.success.get("claim-after-send")?.action, { _tag: "Crash" })
    const delay = terms.success.get("push-before-write")?.action
    assert.strictEqual(delay?._tag === "Delay" ? Duration.toMillis(delay.duration) : -1, 1500)
    assert.deepStrictEqual(terms.success.get("release-before-send")?.count, Option.some(2))
  })

  it("refuses an unknown name, a malformed action, a bad duration and a point armed twice", () => {
    for (const [text, expected] of [
      ["claim-afte-send=crash", "unknown failpoint \"claim-afte-send\""],
      ["claim-after-send", "want name=action"],
      ["claim-after-send=explode", "unknown action \"explode\""],
      ["claim-after-send=delay(5)", "missing unit"],
      ["claim-after-send=crash;claim-after-send=fail", "armed twice"],
      ["claim-after-send=errno(EIO)", "errno is a file error, armed only at commit-before-fsync and commit-after-rename"],
      ["commit-before-fsync=errno(EPERM)", "errno(EPERM): want one of EIO, ENOSPC"],
      ["commit-before-fsync=off->errno(EIO)", "only the last step of a chain may go without N*"],
      ["commit-before-fsync=2*off->", "unknown action \"\""]
    ] as const) {
      const points = failpointsFromEnvironment({ [FAILPOINTS_ENV]: text })
      assert.isTrue(Result.isFailure(points), text)
      if (Result.isFailure(points)) assert.include(points.failure, expected, text)
    }
  })
})

describe("failpoints: actions", () => {
  it("a chain takes each step's count of hits in turn, then goes inert; off lets hits through", async () => {
    const { points } = armed("commit-before-fsync=2*off->2*errno(ENOSPC)->1*fail")
    assert.deepStrictEqual(points.armed, ["commit-before-fsync=2*off->2*errno(ENOSPC)->1*fail"])
    const outcome = (hit: Promise<void> | undefined) =>
      hit === undefined ? Promise.resolve("inert") : hit.then(() => "resolved", (e: unknown) => {
        const error = e as { code?: string; _tag?: string; syscall?: string }
        return error.code !== undefined ? `${error.code}/${error.syscall}` : String(error._tag)
      })
    const seen: Array<string> = []
    for (let i = 0; i < 6; i++) seen.push(await outcome(points.hitAsync("commit-before-fsync")))
    assert.deepStrictEqual(seen, ["inert", "inert", "ENOSPC/fsync", "ENOSPC/fsync", "FailpointFired", "inert"])
  })


  it.effect("crash ends the process (here: the injected crash runs and the fiber never resumes)", () =>
    Effect.gen(function*() {
      const { points, crashes } = armed("push-before-write=crash")
      const fiber = yield* Effect.forkChild(points.hit("push-before-write"))
      yield* Effect.yieldNow
      assert.strictEqual(crashes.count, 1)
      assert.isUndefined(fiber.pollUnsafe(), "nothing runs after a crash")
      yield* points.hit("push-after-write")
      assert.strictEqual(crashes.count, 1, "a point that is not armed does nothing")
    }))

  it.effect("fail is a typed FailpointFired, only for the first N hits when counted", () =>
    Effect.gen(function*() {
      const { points } = armed("release-before-send=2*fail")
      for (let i = 0; i < 2; i++) {
        const exit = yield* Effect.exit(points.hit("release-before-send"))
        assert.isTrue(Exit.isFailure(exit))
        assert.deepStrictEqual(Option.map(Exit.findErrorOption(exit), (e) => e.name), Option.some("release-before-send"))
      }
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(points.hit("release-before-send"))))
      assert.isUndefined(points.hitAsync("release-before-send"), "spent: inert again")
    }))

  it.effect("delay waits on the clock", () =>
    Effect.gen(function*() {
      const { points } = armed("push-after-write=delay(500ms)")
      const fiber = yield* Effect.forkChild(points.hit("push-after-write"))
      yield* TestClock.adjust("499 millis")
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(fiber)
    }))

  it("hitAsync: fail rejects with FailpointFired, crash calls the crash", async () => {
    const { points, crashes } = armed("push-before-write=fail;push-after-write=crash")
    const failed = await points.hitAsync("push-before-write")?.then(() => "resolved", (e: unknown) => e)
    assert.strictEqual((failed as { _tag?: string })._tag, "FailpointFired")
    void points.hitAsync("push-after-write")
    assert.strictEqual(crashes.count, 1)
  })
})

describe("failpoints on the claim and release paths", () => {
  it.effect("claim-before-send=fail: no claim request leaves, the create fails as unreachable", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const exit = yield* Effect.exit(provider.createPod(pod("web")))
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(yield* routeCount("claim"), 0)
      const error = Option.getOrThrow(Exit.findErrorOption(exit))
      assert.strictEqual(error._tag === "ClaimFailed" ? error.cause._tag : error._tag, "SandboxdUnreachable")
    }).pipe(Effect.provide(world({ failpoints: armed("claim-before-send=fail").points }), { local: true })))

  it.effect("claim-after-send=fail: sandboxd made the VM, the create sees a lost reply (timeout) and records nothing", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const exit = yield* Effect.exit(provider.createPod(pod("web")))
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(yield* routeCount("claim"), 1)
      assert.strictEqual((yield* SandboxdSim.use((sim) => sim.claims)).length, 1)
      const error = Option.getOrThrow(Exit.findErrorOption(exit))
      // A lost reply is an unknown outcome: the key is in doubt, not merely failed.
      assert.strictEqual(error._tag, "ClaimInDoubt")
      assert.strictEqual(error._tag === "ClaimInDoubt" ? error.cause?._tag : undefined, "SandboxdTimeout")
      assert.isTrue(Option.isNone(yield* ClaimTable.use((table) => table.held(podKeyOf("default", "web")))))
    }).pipe(Effect.provide(world({ failpoints: armed("claim-after-send=1*fail").points }), { local: true })))

  it.effect("release-before-send=fail: nothing is sent, ReleaseFailed, the claim stays; release-after-send=fail: sent, the claim stays for the retry", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const key = podKeyOf("default", "web")
      const bare = { ...pod("web"), metadata: { ...pod("web").metadata, uid: "uid-1" } }
      yield* provider.createPod(bare)
      const first = yield* Effect.exit(provider.deletePod(bare))
      assert.deepStrictEqual(Option.map(Exit.findErrorOption(first), (e) => e._tag), Option.some("ReleaseFailed"))
      assert.strictEqual(yield* routeCount("release"), 0)
      assert.isTrue(Option.isSome(yield* ClaimTable.use((table) => table.held(key))))
      const second = yield* Effect.exit(provider.deletePod(bare))
      assert.isTrue(Exit.isFailure(second))
      assert.strictEqual(yield* routeCount("release"), 1)
      assert.strictEqual((yield* SandboxdSim.use((sim) => sim.claims)).length, 0, "sandboxd released it")
      assert.isTrue(Option.isSome(yield* ClaimTable.use((table) => table.held(key))), "the reply was lost: kept")
      const third = yield* provider.deletePod(bare)
      assert.strictEqual(third._tag, "Released")
      assert.isTrue(Option.isNone(yield* ClaimTable.use((table) => table.held(key))))
    }).pipe(Effect.provide(deleteWorld({ failpoints: armed("release-before-send=1*fail;release-after-send=1*fail").points }), { local: true })))

  it.effect("delete-before-commit=fail: released, the row leaves the table, its removal is not written until the next commit", () =>
    Effect.gen(function*() {
      const provider = yield* PodLifecycle
      const control = yield* ClaimsStoreMemoryControl
      const bare = { ...pod("web"), metadata: { ...pod("web").metadata, uid: "uid-1" } }
      const other = { ...pod("api"), metadata: { ...pod("api").metadata, uid: "uid-2" } }
      yield* provider.createPod(bare)
      const released = yield* provider.deletePod(bare)
      assert.strictEqual(released._tag, "Released")
      assert.strictEqual(yield* routeCount("release"), 1)
      assert.isTrue(Option.isNone(yield* ClaimTable.use((table) => table.held(podKeyOf("default", "web")))))
      assert.isTrue((yield* control.disk).has(podKeyOf("default", "web")), "the removal's commit failed")
      // The next write (another Pod's claim) carries the removal.
      yield* provider.createPod(other)
      assert.deepStrictEqual([...(yield* control.disk).keys()], [podKeyOf("default", "api")])
    }).pipe(Effect.provide(deleteWorld({ failpoints: armed("delete-before-commit=fail").points }), { local: true })))
})

describe("failpoints on the status write", () => {
  it.effect("push-before-write=fail: nothing is written, KubeUnavailable; push-after-write=fail: written, the reply is lost", () =>
    Effect.gen(function*() {
      const model = new ClusterModel()
      assert.isTrue(Result.isSuccess(model.create(Pods, "default", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "web" },
        spec: { nodeName: "n1", containers: [{ name: "main", image: "python" }] }
      })))
      const { points } = armed("push-before-write=1*fail;push-after-write=1*fail")
      const kube = FailpointDecorators.make(points).kube(KubeApiMemory.make(model))
      const created = yield* kube.getPod("default", "web")
      const running = { ...created, status: { ...created.status, phase: "Running" } }
      const phase = Effect.map(kube.getPod("default", "web"), (p) => p.status?.phase)
      const before = yield* Effect.flip(kube.replacePodStatus(running))
      assert.deepStrictEqual([before._tag, yield* phase], ["KubeUnavailable", "Pending"])
      const after = yield* Effect.flip(kube.replacePodStatus(running))
      assert.deepStrictEqual([after._tag, yield* phase], ["KubeUnavailable", "Running"])
      const fresh = yield* kube.getPod("default", "web")
      const succeeded = { ...fresh, status: { ...fresh.status, phase: "Succeeded" } }
      assert.strictEqual((yield* kube.replacePodStatus(succeeded)).status?.phase, "Succeeded", "spent: inert again")
    }))
})

describe("failpoints on the commit path", () => {
  it("commit-before-fsync=fail: the write fails at fsync, the old file stays, no temp file is left", async () => {
    const dir = NFS.mkdtempSync(NPath.join(NOS.tmpdir(), "vk-fp-"))
    const path = NPath.join(dir, "claims.json")
    NFS.writeFileSync(path, "old")
    const { ops } = armedOps("commit-before-fsync=fail")
    const failed = { operation: "", path: "" }
    const error = await durableReplace(ops, path, Buffer.from("new"), failed).then(() => undefined, (e: unknown) => e)
    assert.strictEqual((error as { _tag?: string })._tag, "FailpointFired")
    assert.strictEqual(failed.operation, "fsync")
    assert.strictEqual(NFS.readFileSync(path, "utf8"), "old")
    assert.deepStrictEqual(NFS.readdirSync(dir), ["claims.json"])
    // commit-after-rename=crash: the new file is already in place when the process would end.
    const crashing = armedOps("commit-after-rename=crash")
    void durableReplace(crashing.ops, path, Buffer.from("newer"), failed)
    await crashing.crashed
    assert.strictEqual(crashing.crashes.count, 1)
    assert.strictEqual(NFS.readFileSync(path, "utf8"), "newer")
    NFS.rmSync(dir, { recursive: true, force: true })
  })

  it("errno at commit-before-fsync: the write fails with the code, the old file stays; at commit-after-rename the new one is already in place", async () => {
    const dir = NFS.mkdtempSync(NPath.join(NOS.tmpdir(), "vk-fp-"))
    const path = NPath.join(dir, "claims.json")
    NFS.writeFileSync(path, "old")
    const failed = { operation: "", path: "" }
    const codeOf = (e: unknown) => (e as { code?: string }).code
    const full = armedOps("commit-before-fsync=errno(ENOSPC)")
    const first = await durableReplace(full.ops, path, Buffer.from("new"), failed).then(() => undefined, codeOf)
    assert.strictEqual(first, "ENOSPC")
    assert.strictEqual(failed.operation, "fsync")
    assert.strictEqual(NFS.readFileSync(path, "utf8"), "old")
    assert.deepStrictEqual(NFS.readdirSync(dir), ["claims.json"], "no temp file left")
    const broken = armedOps("commit-after-rename=1*errno(EIO)")
    const second = await durableReplace(broken.ops, path, Buffer.from("newer"), failed).then(() => undefined, codeOf)
    assert.strictEqual(second, "EIO")
    assert.deepStrictEqual(failed, { operation: "fsync", path: dir }, "the directory's sync failed")
    assert.strictEqual(NFS.readFileSync(path, "utf8"), "newer", "the rename had landed")
    NFS.rmSync(dir, { recursive: true, force: true })
  })
})
