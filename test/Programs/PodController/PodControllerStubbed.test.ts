/**
 * The pod controller against scripted KubeApi and provider stubs, on TestClock: behaviour that
 * depends on time or on internal bookkeeping, where the real wire adds nothing.
 */
import type { V1Pod, V1PodStatus } from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import { Clock, DateTime, Duration, Effect, Fiber, Layer, Option, Queue, Redacted, Ref, Schedule, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Backoff from "../../../src/Programs/PodController/Backoff.ts"
import * as PodController from "../../../src/Programs/PodController/PodController.ts"
import { testConfig } from "../../../testkit/Config.ts"
import { AppConfig } from "../../../src/Services/Config.ts"
import { ClaimNotPersisted } from "../../../src/Services/ProviderErrors.ts"
import { ClaimsWriteError } from "../../../src/Services/ClaimsStore.ts"
import { SandboxdUnreachable } from "../../../src/Services/SandboxdClient.ts"
import { type PodKey, podKeyOfPod } from "../../../src/Schemas/Ids.ts"
import { EventRecorder } from "../../../src/Services/EventRecorder.ts"
import { errorFromResponse } from "../../../src/Kube/Status.ts"
import type { Pod } from "../../../src/Schemas/Pod/Schema.ts"
import {
  KubeApi,
  KubeConflict,
  type KubeError,
  KubeGone,
  KubeNotFound,
  type PodWatchEvent,
  KubeUnavailable
} from "../../../src/Services/KubeApi.ts"
import { PodLifecycle } from "../../../src/Services/PodLifecycle.ts"
import * as V8 from "node:v8"
import * as Vm from "node:vm"
import { manualScheduler } from "../../support/ManualScheduler.ts"
import { nextMacrotask } from "../../support/Wait.ts"
import * as KubeApiMemory from "../../../testkit/Layers/KubeApiMemory.ts"
import { Pods } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import type { PatchType } from "../../../testkit/Simulators/Apiserver/Model.ts"
import { resolvePodIp } from "../../../src/Programs/Provider/PodIp.ts"
import { runningPod } from "../../../src/Programs/Provider/Status.ts"
import type { ClaimRecord } from "../../../src/Schemas/Claims.ts"
import { ClaimId } from "../../../src/Schemas/Ids.ts"
import { CountingModel, quiet } from "./harness.ts"

const NODE = "vk-sandboxd"

/** A full collection now (V8's `gc`, made callable at run time for the test that needs it). */
const collectGarbage = (): void => {
  V8.setFlagsFromString("--expose-gc")
  const gc: unknown = Vm.runInNewContext("gc")
  if (typeof gc === "function") gc()
}

const pod = (name: string, uid: string): V1Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "default", uid, resourceVersion: "1" },
  spec: { nodeName: NODE, containers: [{ name: "c", image: "i" }] },
  status: { phase: "Pending" }
})

const unsupported = () => Effect.die("not used by the pod controller")

/** How many calls are in flight now, and the most there were at once. */
interface InFlight {
  now: number
  most: number
}

const inFlight = <A, E, R>(count: InFlight | undefined, effect: Effect.Effect<A, E, R>) =>
  count === undefined ? effect : Effect.acquireUseRelease(
    Effect.sync(() => {
      count.now++
      count.most = Math.max(count.most, count.now)
    }),
    () => effect,
    () => Effect.sync(() => void count.now--)
  )

/** A KubeApi whose pod list is `pods` and whose watches are scripted by `watch`. */
const kubeStub = (
  pods: Ref.Ref<ReadonlyArray<V1Pod>>,
  watch: () => Stream.Stream<PodWatchEvent, KubeError>,
  counts: Counts,
  behaviour: Behaviour
) =>
  KubeApi.of({
    listPods: () =>
      Effect.flatMap(Ref.get(pods), (items) => {
        counts.lists++
        if (behaviour.failLists !== undefined && behaviour.failLists.left > 0) {
          behaviour.failLists.left--
          return Effect.fail(new KubeUnavailable({ operation: "listPods", status: 503, message: "unavailable" }))
        }
        return Effect.succeed({ items, undecodable: [], resourceVersion: behaviour.listRv?.value ?? "1" })
      }),
    podsResourceVersion: () =>
      Effect.sync(() => {
        counts.versionChecks++
        return behaviour.listRv?.value ?? "1"
      }),
    watchPods: () =>
      Stream.suspend(() => {
        counts.watches++
        return watch()
      }),
    getPod: (namespace, name) =>
      Effect.flatMap(Ref.get(pods), (items) => {
        const found = items.find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name)
        return found === undefined
          ? Effect.fail(new KubeNotFound({ operation: "getPod", message: "not found" }))
          : Effect.succeed(found)
      }),
    replacePodStatus: (body) =>
      inFlight(behaviour.writesInFlight, behaviour.statusWritesHang ? Effect.never : Effect.sleep(behaviour.statusWriteTakes ?? "0 millis")).pipe(Effect.andThen(Effect.suspend(() => {
        if (behaviour.conflicts !== undefined && behaviour.conflicts.left > 0) {
          behaviour.conflicts.left--
          counts.statusWriteAttempts++
          return Effect.fail(new KubeConflict({ operation: "replacePodStatus", message: "the object has been modified", reason: "Conflict" }))
        }
        if (behaviour.statusWriteFails !== undefined) {
          counts.statusWriteAttempts++
          return Effect.fail(behaviour.statusWriteFails)
        }
        return Effect.sync(() => {
        counts.statusWrites++
        counts.written.push(body)
        return { ...body, metadata: { ...body.metadata, resourceVersion: `${counts.statusWrites + 1}` } }
        })
      }))),
    patchPodStatus: unsupported,
    deletePod: unsupported,
    getNode: unsupported,
    createNode: unsupported,
    patchNodeStatus: unsupported,
    patchNode: unsupported,
    getLease: unsupported,
    createLease: unsupported,
    replaceLease: unsupported,
    createEvent: unsupported,
    patchEvent: unsupported,
    getOwner: unsupported,
    applyNodeInventory: unsupported,
    reviewToken: unsupported,
    reviewAccess: unsupported
  })

/** A provider that claims at once and pushes a Running status, as the real one does. */
const providerStub = (behaviour: Behaviour) => Effect.gen(function*() {
  const held = yield* Ref.make(new Map<PodKey, V1Pod>())
  const pushes = yield* Queue.unbounded<V1Pod>()
  const lifecycle = PodLifecycle.of({
    createPod: (p) =>
      Effect.gen(function*() {
        behaviour.calls?.push(`create:${p.metadata?.name ?? ""}`)
        behaviour.onCreate?.()
        yield* inFlight(behaviour.createsInFlight, Effect.sleep(behaviour.createTakes ?? "0 millis"))
        yield* Ref.update(held, (m) => new Map(m).set(podKeyOfPod(p), p))
        behaviour.creates?.push(p.metadata?.name ?? "")
        if (behaviour.failCreates !== undefined && behaviour.failCreates.left > 0) {
          behaviour.failCreates.left--
          // The provider keeps tracking the Pod, as it does when a commit and its undo both fail
          // (CRT-16 — a failed create is retried).
          return yield* new ClaimNotPersisted({
            pod: podKeyOfPod(p),
            claimId: "sb_1",
            cause: new ClaimsWriteError({ path: "/state/claims.json", operation: "rename", message: "disk full" }),
            releaseError: new SandboxdUnreachable({ operation: "release", message: "connection refused" }),
            message: "commit and undo both failed"
          })
        }
        if (!behaviour.manualPushes) {
          yield* Queue.offer(pushes, { ...p, status: behaviour.runningStatus ?? { phase: "Running", podIP: "10.0.0.1" } })
        }
        return { _tag: "Claimed" as const, claimId: ClaimId.make("c-1") }
      }),
    updatePod: () => Effect.void,
    deletePod: (p) =>
      Ref.update(held, (m) => {
        const next = new Map(m)
        next.delete(podKeyOfPod(p))
        return next
      }).pipe(Effect.as({ _tag: "NoClaim" } as const)),
    settleGone: () => Effect.succeed("NotInDoubt" as const),
    settleTerminal: () => Effect.void,
    doubtKeys: Effect.succeed([]),
    lostKeys: Effect.succeed([]),
    getPod: (key) =>
      Effect.map(Ref.get(held), (m) => {
        behaviour.lookups?.push(key)
        return Option.fromNullishOr(m.get(key))
      }),
    // The dangling sweep's read; with `calls`, answered after a yield (other fibers may run).
    getPods: behaviour.calls === undefined
      ? Effect.map(Ref.get(held), (m) => [...m.values()])
      : Effect.yieldNow.pipe(Effect.andThen(Ref.get(held)), Effect.map((m) => {
        behaviour.calls?.push("sweep")
        return [...m.values()]
      })),
    getPodStatus: (key) => Effect.map(Ref.get(held), (m) => Option.fromNullishOr(m.get(key)?.status)),
    statusPushes: Stream.fromQueue(pushes),
    retryNow: Stream.never
  })
  return { lifecycle, pushes }
})

interface Behaviour {
  readonly createTakes?: Duration.Input
  /** Called as each createPod starts (the work it stands for, on a clock the test moves). */
  readonly onCreate?: () => void
  readonly statusWritesHang?: boolean
  readonly statusWriteTakes?: Duration.Input
  /** createPod pushes nothing; the test pushes. */
  readonly manualPushes?: boolean
  /** The status createPod pushes (default: Running with an IP, no conditions). */
  readonly runningStatus?: V1PodStatus
  /** The first `left` creates fail (retryable) after the provider recorded the Pod. */
  readonly failCreates?: { left: number }
  /** Names of the Pods createPod was called with, in order. */
  readonly creates?: Array<string>
  /** `create:<name>` per createPod call and `sweep` when the dangling sweep reads the provider, in order. */
  readonly calls?: Array<string>
  /** The resourceVersion lists answer with (default "1"). */
  readonly listRv?: { value: string }
  /** Every status write fails with this. */
  statusWriteFails?: KubeError | undefined
  /** Pods whose events the controller told the recorder to forget, as namespace/name. */
  readonly forgotten?: Array<string>
  /** The first `left` lists fail (503). */
  readonly failLists?: { left: number }
  /** The first `left` status writes are 409 Conflicts. */
  readonly conflicts?: { left: number }
  /** createPod calls in flight. */
  readonly createsInFlight?: InFlight
  /** Status writes in flight. */
  readonly writesInFlight?: InFlight
  /** The key of every provider.getPod call (each reconcile of a key makes one). */
  readonly lookups?: Array<string>
}

interface Counts {
  lists: number
  watches: number
  statusWrites: number
  statusWriteAttempts: number
  /** asks for the server's current resourceVersion (the silent-watch check) */
  versionChecks: number
  readonly written: Array<Pod>
}

const start = (
  pods: Ref.Ref<ReadonlyArray<V1Pod>>,
  watch: () => Stream.Stream<PodWatchEvent, KubeError>,
  behaviour: Behaviour = {},
  options: PodController.PodControllerOptions = PodController.defaultOptions
) =>
  Effect.gen(function*() {
    const counts: Counts = { lists: 0, watches: 0, statusWrites: 0, statusWriteAttempts: 0, versionChecks: 0, written: [] }
    const provider = yield* providerStub(behaviour)
    const handle = yield* PodController.make(options).pipe(
      Effect.provide(
        Layer.mergeAll(
          AppConfig.layer(testConfig({ nodeName: NODE })),
          Layer.succeed(KubeApi, kubeStub(pods, watch, counts, behaviour)),
          Layer.succeed(PodLifecycle, provider.lifecycle),
          Layer.succeed(EventRecorder, EventRecorder.of({
            record: () => Effect.void,
            forget: (object) => Effect.sync(() => behaviour.forgotten?.push(`${object.namespace}/${object.name}`))
          }))
        )
      )
    )
    return { handle, counts, pushes: provider.pushes }
  })

/**
 * The controller on the apiserver simulator's model (no HTTP, so on TestClock; its watch
 * included), with the stubbed provider; `attempts` counts the status writes it sends (the model's `statusWrites` those it
 * received, the same here: no fault sits between them).
 */
const startOnModel = (
  model: CountingModel,
  behaviour: Behaviour = {},
  options: PodController.PodControllerOptions = PodController.defaultOptions
) =>
  Effect.gen(function*() {
    const provider = yield* providerStub(behaviour)
    const api = KubeApiMemory.make(model)
    const attempts = { count: 0 }
    const kube = KubeApi.of({
      ...api,
      replacePodStatus: (body) => Effect.suspend(() => {
        attempts.count++
        return api.replacePodStatus(body)
      })
    })
    const handle = yield* PodController.make(options).pipe(
      Effect.provide(
        Layer.mergeAll(
          AppConfig.layer(testConfig({ nodeName: NODE })),
          Layer.succeed(KubeApi, kube),
          Layer.succeed(PodLifecycle, provider.lifecycle),
          Layer.succeed(EventRecorder, EventRecorder.of({ record: () => Effect.void, forget: () => Effect.void }))
        )
      )
    )
    return { handle, attempts, pushes: provider.pushes }
  })

/** A Pod bound to the node (a scheduler already ran), created in the model. */
const createOnModel = (model: CountingModel, name: string) =>
  Effect.sync(() => {
    const created = model.create(Pods, "default", {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "default" },
      spec: { nodeName: NODE, containers: [{ name: "main", image: "python:3.12" }] }
    })
    assert.strictEqual(created._tag, "Success")
  })

/** A claim on a sandboxd whose owner address is a host name: with no --node-ip, no Pod IP (PodIp.ts). */
const hostnameClaim = (uid: string): ClaimRecord => ({
  id: `sb_${uid}` as ClaimId,
  token: Redacted.make("t"),
  address: "sandboxd-node-7.internal:7000",
  podUID: uid,
  claimedAt: Option.some(DateTime.makeUnsafe("2026-11-29T09:00:01.734Z")),
  deadline: Option.none()
})

/** Lets the forked fibers run, moving the clock `millis` in 10 ms steps. */
const advance = (millis: number) =>
  Effect.gen(function*() {
    for (let t = 0; t < millis; t += 10) {
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      yield* TestClock.adjust("10 millis")
    }
    for (let i = 0; i < 5; i++) yield* Effect.yieldNow
  })

describe("PodController (stubbed)", () => {
  it.effect("HZ-1: a part that dies (a defect in the informer's watch) is named by stopped; the others keep running", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([pod("web", "u-1")])
      const { handle, counts } = yield* start(pods, () => Stream.die(new Error("a bug in a watch hook")))
      yield* advance(2_000)
      assert.isTrue(yield* handle.synced, "the first list was taken")
      assert.deepStrictEqual(yield* handle.stopped, ["informer"])
      assert.strictEqual(counts.watches, 1, "a defect is not retried")
    }).pipe(quiet)))

  it.effect("HZ-1: while every part runs (watch failures retried on the backoff included), stopped is empty", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([pod("web", "u-1")])
      const { handle, counts } = yield* start(pods, () =>
        Stream.fail(new KubeUnavailable({ operation: "watchPods", status: 500, message: "boom" })))
      yield* advance(5_000)
      assert.isAbove(counts.watches, 1, "the failed watch was retried")
      assert.deepStrictEqual(yield* handle.stopped, [])
    }).pipe(quiet)))

  it.effect("another writer's Pod conditions survive: no status write removes them, however many watch events and resyncs pass (ST-12)", () =>
    Effect.scoped(Effect.gen(function*() {
      const model = new CountingModel()
      const created = model.create(Pods, "default", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "web", namespace: "default" },
        spec: { nodeName: NODE, containers: [{ name: "c", image: "i" }] }
      })
      assert.strictEqual(created._tag, "Success")
      const ours = [
        { type: "Initialized", status: "True" },
        { type: "Ready", status: "True" },
        { type: "PodScheduled", status: "True" }
      ]
      yield* startOnModel(model, { runningStatus: { phase: "Running", podIP: "10.0.0.1", conditions: ours } }, {
        ...PodController.defaultOptions,
        resyncInterval: Duration.seconds(10)
      })
      yield* advance(100)
      const conditionsOf = () => {
        const status = model.peek(Pods, "default", "web")?.["status"] as { conditions?: Array<{ type: string; status: string }> }
        return (status.conditions ?? []).map((c) => `${c.type}=${c.status}`)
      }
      assert.deepStrictEqual(conditionsOf(), ["Initialized=True", "Ready=True", "PodScheduled=True"])
      assert.strictEqual(model.statusWrites, 1, "the Running status")
      const patchStatus = (type: PatchType, body: unknown) =>
        assert.strictEqual(model.patch(Pods, "default", "web", type, body, { subresource: "status" })._tag, "Success")

      // a readiness gate's controller adds its condition (a strategic merge by type appends it)
      patchStatus("strategic", { status: { conditions: [{ type: "example.com/gate", status: "True" }] } })
      yield* advance(35_000) // its watch event, then three resyncs
      assert.deepStrictEqual(conditionsOf(), ["Initialized=True", "Ready=True", "PodScheduled=True", "example.com/gate=True"])
      // the eviction API puts DisruptionTarget first; it and the gate change as their writers please
      patchStatus("json", [{ op: "add", path: "/status/conditions/0", value: { type: "DisruptionTarget", status: "True" } }])
      patchStatus("strategic", { status: { conditions: [{ type: "example.com/gate", status: "False" }] } })
      yield* advance(35_000)
      assert.deepStrictEqual(conditionsOf(), [
        "DisruptionTarget=True",
        "Initialized=True",
        "Ready=True",
        "PodScheduled=True",
        "example.com/gate=False"
      ])
      assert.strictEqual(model.statusWrites, 1, "no status write since the Running status")

      // a condition the provider sets is still repaired, with one write, and the others stay
      patchStatus("strategic", { status: { conditions: [{ type: "Ready", status: "False" }] } })
      yield* advance(35_000)
      assert.deepStrictEqual(conditionsOf(), [
        "Initialized=True",
        "Ready=True",
        "PodScheduled=True",
        "DisruptionTarget=True",
        "example.com/gate=False"
      ])
      assert.strictEqual(model.statusWrites, 2, "one repair")
      // what that write stored is not taken for the provider's: a later change of the gate stays
      patchStatus("strategic", { status: { conditions: [{ type: "example.com/gate", status: "True" }] } })
      yield* advance(35_000)
      assert.include(conditionsOf(), "example.com/gate=True")
      assert.strictEqual(model.statusWrites, 2, "no write since the repair")
    })).pipe(quiet))

  it.effect("a Pod with a readiness gate: Ready False until its controller sets the gate True, then one write of Ready True, since that write's time, and none after (ST-14, CRT-21)", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-12-01T10:00:00Z"))
      const model = new CountingModel()
      const gate = "example.com/lb"
      const created = model.create(Pods, "default", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "web", namespace: "default" },
        spec: { nodeName: NODE, containers: [{ name: "c", image: "i" }], readinessGates: [{ conditionType: gate }] }
      })
      assert.strictEqual(created._tag, "Success")
      // the Running status's conditions, True since the claim (CRT-21 — the Running status)
      const claimedAt = new Date("2026-12-01T09:59:58.250Z")
      const ours = [
        { type: "Initialized", status: "True", lastTransitionTime: claimedAt },
        { type: "Ready", status: "True", lastTransitionTime: claimedAt },
        { type: "PodScheduled", status: "True", lastTransitionTime: claimedAt }
      ]
      yield* startOnModel(model, { runningStatus: { phase: "Running", podIP: "10.0.0.1", conditions: ours } }, {
        ...PodController.defaultOptions,
        resyncInterval: Duration.seconds(10)
      })
      yield* advance(100)
      type Condition = {
        type: string
        status: string
        reason?: string
        message?: string
        observedGeneration?: number
        lastTransitionTime?: string
      }
      const conditions = () =>
        ((model.peek(Pods, "default", "web")?.["status"] as { conditions?: Array<Condition> }).conditions ?? [])
      const conditionsOf = () => conditions().map((c) => `${c.type}=${c.status}`).sort()
      const ready = () => conditions().find((c) => c.type === "Ready")
      const patchStatus = (body: unknown) =>
        assert.strictEqual(model.patch(Pods, "default", "web", "strategic", body, { subresource: "status" })._tag, "Success")

      // the gate's condition is missing: Ready False, naming the gate; the containers are ready
      assert.deepStrictEqual(conditionsOf(), ["ContainersReady=True", "Initialized=True", "PodScheduled=True", "Ready=False"])
      assert.strictEqual(ready()?.reason, "ReadinessGatesNotReady")
      assert.include(ready()?.message ?? "", gate)
      assert.strictEqual(model.statusWrites, 1, "the Running status, gated")
      const timeOf = (type: string) => conditions().find((c) => c.type === type)?.lastTransitionTime
      assert.strictEqual(timeOf("ContainersReady"), "2026-12-01T09:59:58Z", "the containers are ready since the claim")
      assert.strictEqual(timeOf("Ready"), "2026-12-01T10:00:00Z", "Ready False since the write")

      // its controller sets it False: nothing for the daemon to write, however many events and resyncs
      patchStatus({ status: { conditions: [{ type: gate, status: "False", observedGeneration: 1 }] } })
      yield* advance(35_000)
      assert.deepStrictEqual(conditionsOf(), ["ContainersReady=True", "Initialized=True", "PodScheduled=True", "Ready=False", `${gate}=False`])
      assert.strictEqual(model.statusWrites, 1, "no write for a gate that stays not ready")

      // True: the watch event brings one write of Ready True at once, the gate as its controller
      // wrote it, Ready since that write (a workload's minReadySeconds counts from it)
      const flippedAt = yield* Clock.currentTimeMillis
      patchStatus({ status: { conditions: [{ type: gate, status: "True", observedGeneration: 1 }] } })
      yield* advance(100)
      const flipSecond = new Date(Math.floor(flippedAt / 1000) * 1000).toISOString().replace(".000Z", "Z")
      assert.strictEqual(flipSecond, "2026-12-01T10:00:35Z")
      assert.deepStrictEqual(ready(), { type: "Ready", status: "True", lastTransitionTime: flipSecond })
      assert.strictEqual(timeOf("ContainersReady"), "2026-12-01T09:59:58Z", "unchanged: its time kept")
      assert.deepStrictEqual(conditions().find((c) => c.type === gate), { type: gate, status: "True", observedGeneration: 1 })
      assert.strictEqual(model.statusWrites, 2, "one write for the gate turning True")
      yield* advance(35_000)
      assert.strictEqual(model.statusWrites, 2, "and none after: its own write's event and three resyncs")
      assert.strictEqual(timeOf("Ready"), flipSecond, "the time kept")

      // False again (the load balancer took it out): Ready follows, with one write
      patchStatus({ status: { conditions: [{ type: gate, status: "False", observedGeneration: 1 }] } })
      yield* advance(35_000)
      assert.strictEqual(ready()?.status, "False")
      assert.strictEqual(model.statusWrites, 3)
      assert.notStrictEqual(timeOf("Ready"), flipSecond, "changed again: a new time")
      assert.deepStrictEqual(conditions().find((c) => c.type === gate), { type: gate, status: "False", observedGeneration: 1 })
    })).pipe(quiet))

  it.effect("a create failure written on a Pod that shows Ready keeps no Ready=True: Pending/ProviderFailed is not ready (CU-05)", () =>
    Effect.scoped(Effect.gen(function*() {
      const model = new CountingModel()
      yield* createOnModel(model, "web")
      // a status that says Ready with no running container (what another writer, or an old status, may leave)
      const patched = model.patch(Pods, "default", "web", "strategic", {
        status: { conditions: [{ type: "Ready", status: "True" }, { type: "ContainersReady", status: "True" }, { type: "example.com/other", status: "True" }] }
      }, { subresource: "status" })
      assert.strictEqual(patched._tag, "Success")
      yield* startOnModel(model, { failCreates: { left: 1_000 } })
      yield* advance(100)
      const status = model.peek(Pods, "default", "web")?.["status"] as {
        phase?: string
        reason?: string
        conditions?: Array<{ type: string; status: string; reason?: string; lastTransitionTime?: string }>
      }
      assert.strictEqual(status.phase, "Pending")
      assert.strictEqual(status.reason, "ProviderFailed")
      const byType = new Map((status.conditions ?? []).map((c) => [c.type, c]))
      assert.strictEqual(byType.get("Ready")?.status, "False")
      assert.strictEqual(byType.get("Ready")?.reason, "ProviderFailed")
      assert.strictEqual(byType.get("ContainersReady")?.status, "False")
      // since the failure was written (CRT-21): the clock's time at whole seconds
      assert.strictEqual(byType.get("Ready")?.lastTransitionTime, "1970-01-01T00:00:00Z")
      assert.strictEqual(byType.get("ContainersReady")?.lastTransitionTime, "1970-01-01T00:00:00Z")
      assert.strictEqual(byType.get("example.com/other")?.status, "True", "another writer's condition is not ours to change")
      const writes = model.statusWrites
      // the retries that fail the same way write nothing more
      yield* advance(10_000)
      assert.strictEqual(model.statusWrites, writes)
    })).pipe(quiet))

  /**
   * Creates that ran before a task of the default priority, queued once the first list's reconciles
   * started, got its turn: the daemon's scheduler in 10 ms turns on a clock the test moves, each
   * create 1 ms of work with no I/O (as a restart's adoptions are), the task standing in for a
   * `/readyz` request.
   */
  const createsBeforeARequest = (priority: number): number => {
    const { clock, pending, scheduler } = manualScheduler({ sliceMillis: 10, checkEvery: 1 })
    const calls: Array<string> = []
    const items = Array.from({ length: 100 }, (_, i) => pod(`p${i}`, `u${i}`))
    const creates = () => calls.filter((call) => call.startsWith("create:")).length
    Effect.runFork(
      Effect.scoped(Effect.gen(function*() {
        const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([])
        yield* start(pods, () => Stream.never, { calls, onCreate: () => void (clock.now += 1) }, {
          ...PodController.defaultOptions,
          firstList: Effect.succeed({ items, undecodable: [], resourceVersion: "1" }),
          reconcilePriority: priority
        })
        return yield* Effect.never
      })).pipe(quiet),
      { scheduler }
    )
    // Turns until the sweep ran on the first list (the cache is filed, readiness holds) and the
    // reconciles it admitted have started.
    while (pending.length > 0 && creates() === 0) pending.shift()?.()
    assert.strictEqual(calls[0], "sweep")
    let createsBefore = -1
    scheduler.makeDispatcher().scheduleTask(() => void (createsBefore = creates()), 0)
    while (pending.length > 0 && createsBefore < 0) pending.shift()?.()
    return createsBefore
  }

  it("a request that arrives while a restart's re-attached Pods wait to be reconciled is served within a turn (Q-06)", () => {
    // At the controller's priority one turn of creates ran before it (10 of 1 ms).
    const createsBefore = createsBeforeARequest(PodController.reconcilePriority)
    assert.isAtLeast(createsBefore, 0)
    assert.isAtMost(createsBefore, 12)
    // Started at the default priority, every reconcile forked before the request arrived ran
    // first (the 20 in flight here; up to 256 in the daemon).
    assert.isAtLeast(createsBeforeARequest(0), 20)
  })

  it.effect("the first list's keys are reconciled only after the dangling sweep ran on it: readiness waits for the list, not the work it starts", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([pod("a", "u1"), pod("b", "u2")])
      const calls: Array<string> = []
      const { handle } = yield* start(pods, () => Stream.never, { calls, createTakes: "1 hour" })
      yield* advance(20)
      assert.isTrue(yield* handle.synced)
      assert.deepStrictEqual(calls, ["sweep", "create:a", "create:b"])
    })).pipe(quiet))

  it.effect("a first list asked for before the controller started is its first list: no list of its own, synced from it", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([pod("a", "u1")])
      const creates: Array<string> = []
      const early = { items: [pod("early", "u9")], undecodable: [], resourceVersion: "7" }
      const { counts, handle } = yield* start(pods, () => Stream.never, { creates }, {
        ...PodController.defaultOptions,
        firstList: Effect.succeed(early)
      })
      yield* advance(20)
      assert.isTrue(yield* handle.synced)
      assert.strictEqual(counts.lists, 0, "the controller did not list again")
      assert.deepStrictEqual((yield* handle.cachedPods).map((p) => p.metadata?.name), ["early"])
      assert.deepStrictEqual(creates, ["early"])
    })).pipe(quiet))

  it.effect("a list is let go once applied: the watch that follows does not hold its items", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([])
      // Only the list itself holds this array (the cache and the provider hold the Pods in it).
      let listed: WeakRef<object> | undefined
      const firstList = Effect.sync(() => {
        const items = [pod("a", "u1"), pod("b", "u2")]
        listed = new WeakRef(items)
        return { items, undecodable: [], resourceVersion: "7" }
      })
      const { handle } = yield* start(pods, () => Stream.never, {}, { ...PodController.defaultOptions, firstList })
      yield* advance(20)
      assert.isTrue(yield* handle.synced, "watching from the list's resourceVersion")
      yield* nextMacrotask
      collectGarbage()
      assert.isUndefined(listed?.deref(), "the list's items are unreachable")
    })).pipe(quiet))

  it.effect("a first list that failed is followed by the controller's own list, on the retry schedule", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([pod("a", "u1")])
      const { counts, handle } = yield* start(pods, () => Stream.never, {}, {
        ...PodController.defaultOptions,
        firstList: Effect.fail(new KubeUnavailable({ operation: "listPods", status: 503, message: "unavailable" }))
      })
      yield* advance(20)
      assert.isFalse(yield* handle.synced)
      assert.strictEqual(counts.lists, 0)
      yield* advance(2_000) // the first retry step (1 s ± 20 %)
      assert.strictEqual(counts.lists, 1)
      assert.isTrue(yield* handle.synced)
      assert.deepStrictEqual((yield* handle.cachedPods).map((p) => p.metadata?.name), ["a"])
    })).pipe(quiet))

  it.effect("a server that closes every watch at once is re-watched with backoff, not ten times a second", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([])
      const { counts, handle } = yield* start(pods, () => Stream.empty)
      yield* advance(20)
      assert.isTrue(yield* handle.synced)
      const before = counts.watches
      yield* advance(10_000)
      // backoff 1 s, 2 s, 4 s (±20 %) fits at most four re-watches in 10 s; a 100 ms delay ~100
      assert.isAtMost(counts.watches - before, 5)
      assert.isAtLeast(counts.watches - before, 2)
    })).pipe(quiet))

  it.effect("a Pod seen gone only by a relist (410) leaves no per-pod state behind", () =>
    Effect.scoped(Effect.gen(function*() {
      const web = pod("web", "u-1")
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([web])
      const expire = yield* Queue.unbounded<void>()
      const forgotten: Array<string> = []
      const { counts, handle } = yield* start(
        pods,
        () =>
          Stream.fromEffect(Queue.take(expire)).pipe(
            Stream.flatMap(() => Stream.fail(new KubeGone({ operation: "watchPods", message: "too old" })))
          ),
        { forgotten }
      )
      yield* advance(100)
      assert.strictEqual(counts.statusWrites, 1, "the Running push was written")
      // Force-deleted while the watch was behind: the relist is the only sign.
      yield* Ref.set(pods, [])
      yield* Queue.offer(expire, undefined)
      yield* advance(100)
      assert.strictEqual(counts.lists, 2, "relisted after the 410")
      assert.deepStrictEqual(yield* handle.cachedPods, [])
      assert.strictEqual(yield* handle.retainedKeys, 0)
      assert.deepStrictEqual(forgotten, ["default/web"], "released: its event aggregates go too")
    })).pipe(quiet))

  it.effect("a burst holds at most maxReconciles creates and maxStatusWrites writes in flight, and every Pod still ends Running", () =>
    Effect.scoped(Effect.gen(function*() {
      const names = Array.from({ length: 10 }, (_, i) => `web-${i}`)
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>(names.map((name, i) => pod(name, `u-${i}`)))
      const createsInFlight: InFlight = { now: 0, most: 0 }
      const writesInFlight: InFlight = { now: 0, most: 0 }
      const { counts } = yield* start(
        pods,
        () => Stream.never,
        { createTakes: "1 second", statusWriteTakes: "1 second", createsInFlight, writesInFlight },
        { ...PodController.defaultOptions, maxReconciles: 3, maxStatusWrites: 2 }
      )
      yield* advance(20_000)
      assert.strictEqual(createsInFlight.most, 3)
      assert.strictEqual(writesInFlight.most, 2)
      assert.deepStrictEqual(
        counts.written.filter((w) => w.status?.phase === "Running").map((w) => w.metadata?.name).sort(),
        [...names].sort()
      )
    })).pipe(quiet))

  it("both queues are bounded by default, and a flag raised past its default raises its bound", () => {
    assert.deepStrictEqual(PodController.inFlightBounds(testConfig()), { reconciles: 256, statusWrites: 64 })
    assert.deepStrictEqual(
      PodController.inFlightBounds(testConfig({ sandboxdMaxConcurrency: 200, kubeApiQps: 1000 })),
      { reconciles: 800, statusWrites: 250 }
    )
    assert.deepStrictEqual(
      PodController.inFlightBounds(testConfig({ sandboxdMaxConcurrency: 1, kubeApiQps: 0.5 })),
      { reconciles: 256, statusWrites: 64 }
    )
  })

  it.effect("a failed create is retried although the provider still tracks the unchanged Pod", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([pod("web", "u-1")])
      const creates: Array<string> = []
      const { counts } = yield* start(pods, () => Stream.never, { failCreates: { left: 2 }, creates })
      yield* advance(20)
      assert.deepStrictEqual(creates, ["web"])
      yield* advance(10_000) // backoff 1 s, then 2 s (±20 %)
      assert.deepStrictEqual(creates, ["web", "web", "web"], "retried until it succeeded")
      assert.strictEqual(counts.written.at(-1)?.status?.phase, "Running")
      yield* advance(60_000)
      assert.strictEqual(creates.length, 3, "no create after the success")
    })).pipe(quiet))

  it.effect("drain keeps to its bound: a status write that hangs gets only what the in-flight create left", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([pod("web", "u-1")])
      const { handle } = yield* start(pods, () => Stream.never, { createTakes: "3 seconds", statusWritesHang: true })
      yield* advance(20) // the create is in flight
      const startedAt = yield* Clock.currentTimeMillis
      const draining = yield* Effect.forkChild(handle.drain(Duration.seconds(4)))
      while (draining.pollUnsafe() === undefined) {
        assert.isAtMost((yield* Clock.currentTimeMillis) - startedAt, 4_000, "drain past its 4 s bound")
        yield* advance(100)
      }
      yield* Fiber.join(draining)
    })).pipe(quiet))

  it.effect("a push for an older Pod of the same name does not displace a queued push for the current one", () =>
    Effect.scoped(Effect.gen(function*() {
      const current = pod("web", "u-2")
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([current])
      const { counts, pushes } = yield* start(pods, () => Stream.never, { statusWriteTakes: "1 second", manualPushes: true })
      yield* advance(20)
      yield* Queue.offer(pushes, { ...current, status: { phase: "Pending", message: "starting" } })
      yield* advance(100) // that write is in flight
      yield* Queue.offer(pushes, { ...current, status: { phase: "Running", podIP: "10.0.0.1" } })
      // The provider still reports on the Pod this name had before (u-1), e.g. its lease ran out.
      yield* Queue.offer(pushes, { ...pod("web", "u-1"), status: { phase: "Failed", reason: "SandboxLeaseExpired" } })
      yield* advance(3_000)
      assert.deepStrictEqual(counts.written.map((w) => [w.metadata?.uid, w.status?.phase]), [["u-2", "Pending"], ["u-2", "Running"]])
    })).pipe(quiet))

  it.effect("the server went backwards: a 504 Too large resource version relists, and status writes for Pods the list lacks stop", () =>
    Effect.scoped(Effect.gen(function*() {
      // the real apiserver's answer to a resourceVersion newer than it has
      const tooLarge = errorFromResponse("watchPods", 504, JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        message: "Too large resource version: 120, current: 7",
        reason: "Timeout",
        details: { causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }], retryAfterSeconds: 1 },
        code: 504
      }))
      assert.strictEqual(tooLarge._tag, "KubeGone")
      const web = pod("web", "u-1")
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([web])
      const listRv = { value: "120" }
      const fail = yield* Queue.unbounded<void>()
      const behaviour: Behaviour = {
        listRv,
        statusWriteFails: new KubeUnavailable({ operation: "replacePodStatus", status: 503, message: "etcd unavailable" })
      }
      const { counts, handle } = yield* start(
        pods,
        () => Stream.fromEffect(Queue.take(fail)).pipe(Stream.flatMap(() => Stream.fail(tooLarge))),
        behaviour
      )
      yield* advance(5_000)
      assert.isAtLeast(counts.statusWriteAttempts, 2, "the Running status is retried while the server fails it")
      // restored from a backup: older resourceVersions, the Pod is not there
      yield* Ref.set(pods, [])
      listRv.value = "7"
      yield* Queue.offer(fail, undefined)
      yield* advance(100)
      assert.strictEqual(counts.lists, 2, "relisted after the 504")
      assert.deepStrictEqual(yield* handle.cachedPods, [])
      const attempts = counts.statusWriteAttempts
      yield* advance(120_000)
      assert.strictEqual(counts.statusWriteAttempts, attempts, "no status write for a Pod the relist shows gone")
      assert.strictEqual(yield* handle.retainedKeys, 0)
    })).pipe(quiet))

  it.effect("restored from a backup, the server keeps the watch open and silent: the silent-watch check relists, the restore's new Pod is created, the vanished Pod's status writes stop", () =>
    Effect.scoped(Effect.gen(function*() {
      const web = pod("web", "u-1")
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([web])
      const listRv = { value: "120" }
      const creates: Array<string> = []
      const behaviour: Behaviour = {
        listRv,
        creates,
        statusWriteFails: new KubeUnavailable({ operation: "replacePodStatus", status: 503, message: "etcd unavailable" })
      }
      // kube-apiserver delivers nothing to a watch from a resourceVersion it does not have
      const { counts, handle } = yield* start(pods, () => Stream.never, behaviour)
      yield* advance(5_000)
      assert.isAtLeast(counts.statusWriteAttempts, 2, "the Running status is retried while the server fails it")
      // restored: older resourceVersions, web gone, a new Pod made since the restore
      yield* Ref.set(pods, [pod("fresh", "u-9")])
      listRv.value = "7"
      const checksBefore = counts.versionChecks
      yield* advance(15_000)
      assert.isAtLeast(counts.versionChecks, checksBefore + 1, "the silent watch asked for the server's resourceVersion")
      assert.strictEqual(counts.lists, 2, "relisted once the server's resourceVersion was found older")
      assert.deepStrictEqual((yield* handle.cachedPods).map((p) => p.metadata?.name), ["fresh"])
      assert.deepStrictEqual(creates, ["web", "fresh"], "the Pod made after the restore is created")
      const attempts = counts.statusWriteAttempts
      behaviour.statusWriteFails = undefined
      yield* advance(120_000)
      assert.isTrue(counts.written.every((w) => w.metadata?.name === "fresh"), "no write for web once the relist shows it gone")
      assert.isAtLeast(counts.statusWriteAttempts, attempts, "fresh's status is written")
      assert.strictEqual(counts.lists, 2, "the new cache's version is the server's: no relist since")
    })).pipe(quiet))

  it.effect("a quiet watch on a healthy server: one resourceVersion check per silent interval, no relist", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([pod("web", "u-1")])
      const listRv = { value: "120" }
      const { counts } = yield* start(pods, () => Stream.never, { listRv })
      yield* advance(14_000)
      assert.strictEqual(counts.versionChecks, 0, "no check before the watch has been silent for the interval")
      // other nodes' Pods move the server's resourceVersion on
      listRv.value = "130"
      yield* advance(46_000)
      assert.strictEqual(counts.versionChecks, 4, "one check per 15 s of silence")
      assert.strictEqual(counts.lists, 1, "no relist")
      assert.strictEqual(counts.watches, 1, "the watch stays open")
    })).pipe(quiet))

  it.effect("a watch that keeps ending with nothing at one resourceVersion is followed by a relist", () =>
    Effect.scoped(Effect.gen(function*() {
      const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([])
      const failing = new KubeUnavailable({ operation: "watchPods", status: 500, message: "internal error" })
      const { counts } = yield* start(pods, () => Stream.fail(failing))
      yield* advance(20)
      assert.strictEqual(counts.lists, 1)
      yield* advance(20_000) // backoff 1 s, 2 s, 4 s (±20 %): three failed watches, then the relist
      assert.isAtLeast(counts.lists, 2, "relisted")
      assert.isAtMost(counts.watches, 6, "the backoff carries over the relist")
    })).pipe(quiet))

  it.effect("after a restart, IP-less re-attached Pods pushed Running again are not written again, on push or resync (ST-13)", () =>
    Effect.scoped(Effect.gen(function*() {
      const model = new CountingModel()
      const names = ["web-0", "web-1", "web-2"]
      const ip = resolvePodIp("sandboxd-node-7.internal:7000", "")
      assert.strictEqual(ip._tag, "None")
      // The daemon before the restart: each Pod Running, written through the model as the
      // provider built it (the simulator stores what kube-apiserver stores).
      const kube = KubeApiMemory.make(model)
      yield* Effect.scoped(Effect.gen(function*() {
        const before = yield* startOnModel(model, { manualPushes: true })
        for (const name of names) yield* createOnModel(model, name)
        yield* advance(100)
        for (const name of names) {
          const served = yield* kube.getPod("default", name)
          yield* Queue.offer(before.pushes, runningPod(served, hostnameClaim(served.metadata?.uid ?? ""), ip))
        }
        yield* advance(100)
        assert.strictEqual(before.attempts.count, 3, "one Running write per Pod")
        const stored = yield* kube.getPod("default", "web-0")
        assert.strictEqual(stored.status?.phase, "Running")
        assert.isUndefined(stored.status?.hostIP, "served without an empty hostIP")
        // CRT-21: every condition since the claim, or since the Pod's creation when that is later
        // (this fixture's claim time is fixed in the past), at whole seconds (the restart below must keep them)
        assert.deepStrictEqual((stored.status?.conditions ?? []).map((c) => c.type), ["Initialized", "Ready", "PodScheduled"])
        const claimed = new Date("2026-11-29T09:00:01.000Z")
        const created = stored.metadata?.creationTimestamp ?? claimed
        const since = created.getTime() > claimed.getTime() ? created : claimed
        for (const condition of stored.status?.conditions ?? []) {
          assert.strictEqual(condition.lastTransitionTime?.toISOString(), since.toISOString(), condition.type)
        }
        yield* before.handle.drain(Duration.seconds(1))
      }))

      // Restarted: a new controller; the provider re-attaches each Pod and pushes Running again.
      const writesBefore = model.statusWrites
      const after = yield* startOnModel(model, { manualPushes: true })
      yield* advance(100)
      assert.isTrue(yield* after.handle.synced)
      for (const name of names) {
        const served = yield* kube.getPod("default", name)
        yield* Queue.offer(after.pushes, runningPod(served, hostnameClaim(served.metadata?.uid ?? ""), ip))
      }
      yield* advance(100)
      assert.strictEqual(after.attempts.count, 0, "an unchanged status is not sent again")
      // A second push of the same status, and three resyncs (each runs the status repair check).
      for (const name of names) {
        const served = yield* kube.getPod("default", name)
        yield* Queue.offer(after.pushes, runningPod(served, hostnameClaim(served.metadata?.uid ?? ""), ip))
      }
      yield* advance(3 * 60_000 + 100)
      assert.strictEqual(after.attempts.count, 0, "nor on a repeated push or a resync")
      assert.strictEqual(model.statusWrites, writesBefore)
    })).pipe(quiet))

  it.effect("resyncs write no unchanged status: N resync intervals reconcile each Pod N times with no status write; a status someone else changed is repaired once (ST-13, PC-05)", () =>
    Effect.scoped(Effect.gen(function*() {
      const model = new CountingModel()
      const kube = KubeApiMemory.make(model)
      const names = ["idle-a", "idle-b", "idle-c"]
      const lookups: Array<string> = []
      const interval = 5_000
      const { attempts } = yield* startOnModel(model, { lookups }, {
        ...PodController.defaultOptions,
        resyncInterval: Duration.millis(interval)
      })
      for (const name of names) yield* createOnModel(model, name)
      yield* advance(100)
      assert.strictEqual(attempts.count, 3, "one Running write per Pod")
      const versions = yield* Effect.forEach(names, (name) => Effect.map(kube.getPod("default", name), (p) => p.metadata?.resourceVersion))
      const reconciles = (name: string) => lookups.filter((key) => key === `default/${name}`).length
      const before = names.map(reconciles)

      const passes = 6
      yield* advance(passes * interval)
      assert.deepStrictEqual(names.map((name, i) => reconciles(name) - before[i]!), names.map(() => passes), "one reconcile per Pod per resync")
      assert.strictEqual(attempts.count, 3, "no status write attempt while nothing changes")
      assert.deepStrictEqual(
        yield* Effect.forEach(names, (name) => Effect.map(kube.getPod("default", name), (p) => p.metadata?.resourceVersion)),
        versions
      )

      // Another writer sets the phase back: the daemon writes its status back, once.
      const stored = model.peek(Pods, "default", "idle-a")
      assert.isDefined(stored)
      const blanked = { ...stored, status: { ...(stored?.["status"] as object), phase: "Pending" } }
      assert.strictEqual(model.updateStatus(Pods, "default", "idle-a", blanked)._tag, "Success")
      yield* advance(100)
      assert.strictEqual(attempts.count, 4, "the repair is written")
      assert.strictEqual((yield* kube.getPod("default", "idle-a")).status?.phase, "Running")
      yield* advance(passes * interval)
      assert.strictEqual(attempts.count, 4, "and written once")
    })).pipe(quiet))

  it.effect("every retry path waits on the one retry schedule (Q-07): a failed list, a failed watch, a failed create, a status 409", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [string, Behaviour, boolean]> = [
        ["a failed list", { failLists: { left: 1 } }, false],
        ["a failed watch", {}, true],
        ["a failed create", { failCreates: { left: 1 } }, false],
        ["a status 409", { conflicts: { left: 1 } }, false]
      ]
      for (const [what, behaviour, failWatch] of cases) {
        yield* Effect.scoped(Effect.gen(function*() {
          let steps = 0
          const retry = Backoff.schedule(Backoff.defaultBackoff).pipe(Schedule.tap(() => Effect.sync(() => steps++)))
          const pods = yield* Ref.make<ReadonlyArray<V1Pod>>([pod("web", "u-1")])
          const watchFails = yield* Ref.make(failWatch)
          const { counts } = yield* start(
            pods,
            () =>
              Stream.unwrap(Effect.map(Ref.getAndSet(watchFails, false), (fail) =>
                fail ? Stream.fail(new KubeUnavailable({ operation: "watchPods", status: 500, message: "boom" })) : Stream.never
              )),
            behaviour,
            { ...PodController.defaultOptions, retry }
          )
          yield* advance(5_000)
          assert.strictEqual(counts.written.at(-1)?.status?.phase, "Running", `${what}: the Pod went Running`)
          assert.strictEqual(steps, 1, `${what}: one step of the shared schedule`)
        }))
      }
    }).pipe(quiet))
})
