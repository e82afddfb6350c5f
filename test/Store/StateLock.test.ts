import { assert, describe, it } from "@effect/vitest"
import { Clock, type Duration, Effect, Exit, Fiber, Option, Scope } from "effect"
import { TestClock } from "effect/testing"
import { spawn } from "node:child_process"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { pathToFileURL } from "node:url"
import * as StateLock from "../../src/Store/StateLock.ts"
import { tempDir as makeTempDir } from "../support/TempDir.ts"
import { eventually, flushIO } from "../support/Wait.ts"

const repo = NPath.resolve(import.meta.dirname, "../..")
const nodeBin = NPath.join(repo, "node_modules/.bin/node")

const tempDir = makeTempDir("vk-lock-")

const identity = Effect.promise(() => StateLock.currentIdentity())

const writeRecord = (statePath: string, record: StateLock.LockRecord) =>
  Effect.promise(() => NFS.writeFile(StateLock.lockPathFor(statePath), JSON.stringify(record)))

const lockText = (statePath: string) =>
  Effect.promise(() => NFS.readFile(StateLock.lockPathFor(statePath), "utf8").catch(() => undefined))

/** Takes the lock in a scope of its own; returns the scope to release it. */
const acquireIn = (statePath: string, options?: StateLock.StateLockOptions) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const exit = yield* Effect.exit(StateLock.acquire(statePath, options).pipe(Scope.provide(scope)))
    if (Exit.isFailure(exit)) yield* Scope.close(scope, Exit.void)
    return { exit, scope }
  })

/** Takes the lock, asserting it was granted, and releases it at once. */
const takeAndRelease = (statePath: string) =>
  Effect.gen(function*() {
    const taken = yield* acquireIn(statePath)
    assert.isTrue(Exit.isSuccess(taken.exit))
    yield* Scope.close(taken.scope, Exit.void)
  })

/** `claims.json` in a fresh temporary directory (the lock file goes next to it). */
const statePath = Effect.map(tempDir, (dir) => NPath.join(dir, "claims.json"))

// Lets the lock's real file I/O (threadpool, fsync) run; time itself is driven only by TestClock.

/**
 * The TestClock, counting the sleeps now pending on it. The lock mixes real file I/O with clock
 * sleeps, so a test moves the clock only once the lock is parked in a sleep: a step taken while
 * the lock is still busy with I/O would pass unseen, however slow the machine.
 */
const parkingClock = Effect.gen(function*() {
  const clock = yield* Clock.Clock
  const state = { parked: 0 }
  const counting: Clock.Clock = {
    ...clock,
    sleep: (duration) =>
      Effect.suspend(() => {
        state.parked++
        return clock.sleep(duration)
      }).pipe(Effect.ensuring(Effect.sync(() => state.parked--)))
  }
  /** Waits (real time) until the fiber, if given, has ended or a sleep is pending on the clock. */
  const untilParked = <A, E>(fiber?: Fiber.Fiber<A, E>) =>
    Effect.gen(function*() {
      yield* eventually("a sleep pending on the clock, or the fiber ended", () =>
        state.parked > 0 || (fiber !== undefined && fiber.pollUnsafe() !== undefined))
    })
  const use = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Clock.Clock, counting)
  return { state, untilParked, use }
})

/**
 * Moves the TestClock in steps, each once the fiber is parked on the clock, until the fiber ends.
 * `eachStep` runs before every step (the other holder's heartbeat, say).
 */
const driveUntilDone = <A, E>(
  clock: Effect.Success<typeof parkingClock>,
  fiber: Fiber.Fiber<A, E>,
  step: Duration.Input,
  maxSteps: number,
  eachStep: (i: number) => Effect.Effect<void> = () => Effect.void
) =>
  Effect.gen(function*() {
    for (let i = 0; i < maxSteps && fiber.pollUnsafe() === undefined; i++) {
      yield* eachStep(i)
      yield* clock.untilParked(fiber)
      yield* TestClock.adjust(step)
    }
    yield* clock.untilParked(fiber)
    // The lock's own heartbeat parks right after it is taken, a few turns before the fiber returns.
    // Up to 400 turns: a hang limit for a busy machine, not a bound on how fast it returns.
    for (let j = 0; j < 400 && fiber.pollUnsafe() === undefined; j++) yield* flushIO
    if (fiber.pollUnsafe() === undefined) {
      yield* Fiber.interrupt(fiber)
      assert.fail(`still running after ${maxSteps} steps`)
    }
    return yield* Fiber.await(fiber)
  })

/**
 * A holder in another pid namespace (its pid cannot be checked) left its record; a start then
 * tries to take the lock on the parking clock, with a 2 s heartbeat and a 10 s staleAfter.
 */
const startingBesideOtherNamespace = Effect.gen(function*() {
  const path = yield* statePath
  const self = yield* identity
  yield* writeRecord(path, { ...self, pidNamespace: "pid:[1]", pid: 1, nonce: "other-container" })
  const clock = yield* parkingClock
  const fiber = yield* Effect.forkChild(clock.use(acquireIn(path, { heartbeat: "2 seconds", staleAfter: "10 seconds" })))
  return { clock, fiber, path }
})

describe("StateLock", () => {
  it.effect("a second acquisition is refused with StateLocked naming the path; released on scope close", () =>
    Effect.gen(function*() {
      const path = yield* statePath
      const first = yield* acquireIn(path)
      assert.isTrue(Exit.isSuccess(first.exit))
      const second = yield* acquireIn(path)
      assert.isTrue(Exit.isFailure(second.exit))
      const error = Exit.isFailure(second.exit) ? Option.getOrUndefined(Exit.findErrorOption(second.exit)) : undefined
      assert.strictEqual(error?._tag, "StateLocked")
      assert.strictEqual(error?._tag === "StateLocked" ? error.path : "", path)
      assert.include(error?.message ?? "", path)
      yield* Scope.close(first.scope, Exit.void)
      assert.isUndefined(yield* lockText(path), "lock file removed on release")
      yield* takeAndRelease(path)
    }))

  it.effect("a live process holding the lock (another real process) refuses; after kill -9 the next start takes over", () =>
    Effect.gen(function*() {
      const path = yield* statePath
      const script = `
        import { Effect } from "effect"
        import * as StateLock from ${JSON.stringify(pathToFileURL(NPath.join(repo, "src/Store/StateLock.ts")).href)}
        await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
          yield* StateLock.acquire(${JSON.stringify(path)})
          process.stdout.write("locked\\n")
          yield* Effect.never
        })))`
      const child = yield* Effect.acquireRelease(
        Effect.sync(() =>
          spawn(nodeBin, ["--input-type=module", "-e", script], { cwd: repo, stdio: ["ignore", "pipe", "inherit"] })
        ),
        (c) => Effect.sync(() => c.exitCode === null && c.kill("SIGKILL"))
      )
      yield* Effect.callback<void>((resume) => {
        child.stdout.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("locked")) resume(Effect.void)
        })
      })
      const refused = yield* acquireIn(path)
      const error = Exit.isFailure(refused.exit) ? Option.getOrUndefined(Exit.findErrorOption(refused.exit)) : undefined
      assert.strictEqual(error?._tag, "StateLocked")
      assert.include(error?.message ?? "", `pid ${child.pid}`)

      const exited = Effect.callback<void>((resume) => {
        child.on("exit", () => resume(Effect.void))
      })
      child.kill("SIGKILL")
      yield* exited
      const takeover = yield* acquireIn(path)
      assert.isTrue(Exit.isSuccess(takeover.exit))
      const record = JSON.parse((yield* lockText(path))!) as StateLock.LockRecord
      assert.strictEqual(record.pid, process.pid)
      yield* Scope.close(takeover.scope, Exit.void)
    }))

  it.effect("a live process in the same namespace (the runner's parent) is respected", () =>
    Effect.gen(function*() {
      const path = yield* statePath
      const self = yield* identity
      const parentStart = yield* Effect.promise(() => StateLock.processStartTime(process.ppid))
      yield* writeRecord(path, { ...self, pid: process.ppid, startTime: parentStart!, nonce: "parent" })
      const refused = yield* acquireIn(path)
      assert.isTrue(Exit.isFailure(refused.exit))
      assert.include(yield* lockText(path) ?? "", `"nonce":"parent"`, "the holder's record is untouched")
    }))

  it.effect("kill -9 then a restart with the SAME pid (PID 1 in a container): another start time → taken over", () =>
    Effect.gen(function*() {
      const path = yield* statePath
      const self = yield* identity
      assert.notStrictEqual(self.startTime, "")
      const previous = String(Number(self.startTime) - 1)
      yield* writeRecord(path, { ...self, startTime: previous, nonce: "crashed" })
      const taken = yield* acquireIn(path)
      assert.isTrue(Exit.isSuccess(taken.exit))
      const record = JSON.parse((yield* lockText(path))!) as StateLock.LockRecord
      assert.strictEqual(record.startTime, self.startTime)
      assert.notStrictEqual(record.nonce, "crashed")
      yield* Scope.close(taken.scope, Exit.void)
    }))

  it.effect("a record from another boot is stale; so is one whose pid is gone", () =>
    Effect.gen(function*() {
      const path = yield* statePath
      const self = yield* identity
      yield* writeRecord(path, { ...self, bootId: "00000000-0000-0000-0000-000000000000", nonce: "old-boot" })
      yield* takeAndRelease(path)
      yield* writeRecord(path, { ...self, pid: 2 ** 22 + 7, nonce: "gone" }) // above pid_max: never alive
      yield* takeAndRelease(path)
    }))

  it.effect("another pid namespace: taken over once its heartbeat stood still for staleAfter", () =>
    Effect.gen(function*() {
      const { clock, fiber, path } = yield* startingBesideOtherNamespace
      yield* clock.untilParked(fiber)
      yield* TestClock.adjust("8 seconds")
      yield* clock.untilParked(fiber)
      assert.isUndefined(fiber.pollUnsafe(), "still waiting before staleAfter")
      const exit = yield* driveUntilDone(clock, fiber, "1 second", 2)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.isTrue(Exit.isSuccess(exit.value.exit))
        yield* Scope.close(exit.value.scope, Exit.void)
      }
    }))

  it.effect("another pid namespace whose heartbeat moves is live: StateLocked", () =>
    Effect.gen(function*() {
      const { clock, fiber, path } = yield* startingBesideOtherNamespace
      // The other daemon's heartbeat touches the file at every step; the starter must see it
      // before staleAfter (10 steps of 1 s).
      const exit = yield* driveUntilDone(clock, fiber, "1 second", 10, (i) =>
        Effect.promise(() => {
          const at = new Date(Date.now() + (i + 1) * 1_000)
          return NFS.utimes(StateLock.lockPathFor(path), at, at)
        }))
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        const error = Option.getOrUndefined(Exit.findErrorOption(exit.value.exit))
        assert.strictEqual(error?._tag, "StateLocked")
      }
    }))

  it.effect("the holder's heartbeat touches the lock file", () =>
    Effect.gen(function*() {
      const path = yield* statePath
      const clock = yield* parkingClock
      const held = yield* clock.use(acquireIn(path, { heartbeat: "2 seconds" }))
      assert.isTrue(Exit.isSuccess(held.exit))
      yield* clock.untilParked()
      yield* TestClock.setTime(Date.UTC(2030, 0, 1))
      yield* clock.untilParked() // the touch is written and the heartbeat sleeps again
      yield* TestClock.adjust("2 seconds")
      yield* clock.untilParked()
      const stat = yield* Effect.promise(() => NFS.stat(StateLock.lockPathFor(path)))
      assert.isAtLeast(stat.mtimeMs, Date.UTC(2030, 0, 1))
      yield* Scope.close(held.scope, Exit.void)
    }))
})
