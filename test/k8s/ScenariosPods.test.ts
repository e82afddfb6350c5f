/**
 * The pod half of the daemon on the real kube-apiserver: provider, live owner resolver,
 * event recorder and pod controller as `src/Daemon.ts` composes them, as the daemon's RBAC
 * identity (pods list/watch/get/delete, pods/status update, events, sandboxes get), with the
 * sandboxd simulator over HTTP. The admin binds Pods by `spec.nodeName` at create (no scheduler
 * runs here) and deletes them as a user would.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Stream } from "effect"
import { within } from "../support/Wait.ts"
import {
  admin,
  adminGet,
  claimCount,
  claimIdOf,
  createNamespace,
  createPod,
  createSandbox,
  daemonGround,
  deletePodGracefully,
  deleteOwnerThenPod,
  eventually,
  fastPodOptions,
  getPod,
  quiet,
  rawRequest,
  releasePaths,
  runningPod,
  sandboxdHolds,
  startPodHalf,
  ScenarioFailed,
  startSandboxd,
} from "./scenarioHarness.ts"

const world = (simOptions: Parameters<typeof startSandboxd>[0] = {}, podOptions = fastPodOptions) =>
  Effect.gen(function*() {
    const { sandboxd, config } = yield* daemonGround("vk-k8s-pods-", simOptions)
    const namespace = yield* createNamespace("pods")
    const daemon = yield* startPodHalf(config, podOptions)
    yield* eventually("the pod watch synced", daemon.handle.synced)
    return { sandboxd, config, namespace, nodeName: config.nodeName, daemon }
  })

describe("the pod controller on the real kube-apiserver, as the daemon", () => {
  it.live("Pods bound to the node go Running with podIP and claim-id; owner alive → preserved and removed at once; owner gone → released", () =>
    Effect.scoped(Effect.gen(function*() {
      const { sandboxd, namespace, nodeName, daemon } = yield* world()

      // ---- a few bare Pods go Running, written through pods/status
      const names = ["agent-1", "agent-2", "agent-3", "agent-4"]
      for (const name of names) yield* createPod(namespace, name, nodeName)
      const claimIds = new Set<string>()
      for (const name of names) {
        const pod = yield* eventually(`${name} Running`, runningPod(namespace, name))
        assert.isUndefined(pod.status?.reason)
        claimIds.add(claimIdOf(pod))
      }
      assert.strictEqual(claimIds.size, names.length, "one claim per Pod")
      for (const id of claimIds) assert.isTrue(yield* sandboxdHolds(sandboxd, id))

      // ---- owner alive: a graceful delete → preserved, and the daemon removes the object at once
      const ownerUid = yield* createSandbox(namespace, "review-bot")
      yield* createPod(namespace, "owned", nodeName, { name: "review-bot", uid: ownerUid })
      const owned = yield* eventually("owned Running", runningPod(namespace, "owned"))
      const ownedClaim = claimIdOf(owned)
      const before = yield* daemon.kube.getPod(namespace, "owned")
      // an hour's grace, far past this test's timeout: a daemon waiting it out fails here
      yield* deletePodGracefully(namespace, "owned", 3_600)
      // SY-06 — the receipt of who removed it: the server removes a terminating Pod only for a
      // delete that shortens its grace to 0 (it stores that 0 in the object it deletes), and the
      // daemon's final delete is the only such delete here (no kubelet, no garbage collector)
      const removal = yield* within("the owned Pod's DELETED event", daemon.kube.watchPods(nodeName, before.metadata?.resourceVersion ?? "").pipe(
        Stream.filter((event) => event.type === "DELETED" && event.object.metadata?.name === "owned"),
        Stream.take(1),
        Stream.runCollect
      ))
      const removed = removal[0]?.type === "DELETED" ? removal[0].object.metadata : undefined
      assert.strictEqual(removed?.uid, before.metadata?.uid, "the owned Pod's DELETED event")
      assert.strictEqual(removed?.deletionGracePeriodSeconds, 0, "removed by a grace-0 delete, not its grace running out")
      assert.isUndefined(yield* getPod(namespace, "owned"))
      assert.deepStrictEqual(yield* releasePaths(sandboxd), [], "preserved: no release")
      assert.isTrue(yield* sandboxdHolds(sandboxd, ownedClaim))

      // ---- a same-name replacement adopts the preserved sandbox
      const claimsBefore = yield* claimCount(sandboxd)
      yield* createPod(namespace, "owned", nodeName, { name: "review-bot", uid: ownerUid })
      const replacement = yield* eventually("the replacement Running", runningPod(namespace, "owned"))
      assert.strictEqual(claimIdOf(replacement), ownedClaim)
      assert.strictEqual(yield* claimCount(sandboxd), claimsBefore, "adopted: no new claim")

      // ---- owner deleted (no garbage collector here: the Pod stays), then the Pod → released
      yield* deleteOwnerThenPod(sandboxd, namespace, "review-bot", "owned", ownedClaim)
      assert.isFalse(yield* sandboxdHolds(sandboxd, ownedClaim))

      // ---- a bare Pod deleted gracefully → released and removed
      const bareClaim = claimIdOf(yield* eventually("agent-1 Running", runningPod(namespace, "agent-1")))
      yield* deletePodGracefully(namespace, "agent-1", 30)
      yield* eventually("agent-1 removed", Effect.map(getPod(namespace, "agent-1"), (pod) => pod === undefined), 5_000)
      yield* eventually("agent-1 released", Effect.map(releasePaths(sandboxd), (paths) => paths.includes(`/v1/sandboxes/${bareClaim}/release`)))
      assert.strictEqual((yield* releasePaths(sandboxd)).length, 2)
    }).pipe(quiet)), { timeout: 45_000 })

  it.live("another writer's Pod condition survives the daemon's status writes, a repair of Ready included (ST-12); a readiness gate decides Ready, with one write when it turns True (ST-14)", () =>
    Effect.scoped(Effect.gen(function*() {
      // resyncs every second: the waits below span several, each a chance for a needless write
      const { namespace, nodeName } = yield* world({}, { ...fastPodOptions, resyncInterval: Duration.seconds(1) })
      yield* createPod(namespace, "gated", nodeName)
      yield* eventually("gated Running", runningPod(namespace, "gated"))
      const { config } = yield* admin
      const statusPath = (name: string) => `/api/v1/namespaces/${namespace}/pods/${name}/status`
      const path = statusPath("gated")
      /** A strategic merge patch of the Pod's conditions, as a controller sends one (merged by type). */
      const patchConditionOf = (name: string, condition: Record<string, unknown>) =>
        Effect.gen(function*() {
          const at = statusPath(name)
          const reply = yield* rawRequest(config, "PATCH", at, { status: { conditions: [condition] } }, "application/strategic-merge-patch+json")
          if (reply.status !== 200) return yield* new ScenarioFailed({ message: `PATCH ${at}: HTTP ${reply.status} ${reply.text}` })
          return (JSON.parse(reply.text) as { readonly metadata: { readonly resourceVersion: string } }).metadata.resourceVersion
        })
      const patchCondition = (type: string, status: string) => patchConditionOf("gated", { type, status })
      interface Condition {
        readonly type: string
        readonly status: string
        readonly reason?: string
        readonly message?: string
        readonly observedGeneration?: number
        readonly lastTransitionTime?: string
      }
      interface Served {
        readonly metadata: { readonly resourceVersion: string }
        readonly status?: { readonly conditions?: ReadonlyArray<Condition>; readonly startTime?: string }
      }
      const conditions = Effect.map(adminGet<Served>(path), (pod) => (pod?.status?.conditions ?? []).map((c) => `${c.type}=${c.status}`))
      // a readiness gate's controller adds its condition; then someone turns Ready False, which
      // the daemon writes back: the watch delivers both in order, so once Ready is True again the
      // daemon has handled the gate's event, and its write kept the gate
      yield* patchCondition("example.com/gate", "True")
      yield* patchCondition("Ready", "False")
      const after = yield* eventually("Ready repaired", Effect.map(conditions, (all) => (all.includes("Ready=True") ? all : undefined)))
      assert.deepStrictEqual(after, ["Initialized=True", "Ready=True", "PodScheduled=True", "example.com/gate=True"])

      // ---- ST-14 — a Pod with readiness gates is Ready only when every gate is True: a Pod that
      // declares the gate is Ready only while its condition is True
      const gate = "example.com/lb"
      yield* createPod(namespace, "behind-lb", nodeName, undefined, { readinessGates: [{ conditionType: gate }] })
      yield* eventually("behind-lb Running", runningPod(namespace, "behind-lb"))
      const served = Effect.flatMap(adminGet<Served>(statusPath("behind-lb")), (pod) =>
        pod === undefined ? new ScenarioFailed({ message: "behind-lb is gone" }) : Effect.succeed(pod))
      const conditionOf = (pod: Served, type: string) => pod.status?.conditions?.find((c) => c.type === type)
      const waiting = yield* served
      assert.strictEqual(conditionOf(waiting, "Ready")?.status, "False", "no gate condition yet: not Ready")
      assert.strictEqual(conditionOf(waiting, "Ready")?.reason, "ReadinessGatesNotReady")
      assert.include(conditionOf(waiting, "Ready")?.message ?? "", gate)
      assert.strictEqual(conditionOf(waiting, "ContainersReady")?.status, "True", "the sandbox itself is ready")

      /**
       * The Pod's versions written after `version`, as a watch from it delivers them (the watch
       * replays what came after and then waits `seconds` more: several resyncs, each a chance
       * for a needless write).
       */
      const writesSince = (version: string, seconds: number) =>
        Effect.gen(function*() {
          const query = `watch=1&fieldSelector=metadata.name%3Dbehind-lb&resourceVersion=${version}&timeoutSeconds=${seconds}`
          const reply = yield* rawRequest(config, "GET", `/api/v1/namespaces/${namespace}/pods?${query}`)
          if (reply.status !== 200) return yield* new ScenarioFailed({ message: `watch: HTTP ${reply.status} ${reply.text}` })
          return reply.text.split("\n").filter((line) => line.trim() !== "").map((line) =>
            JSON.parse(line) as { readonly type: string; readonly object: Served }
          )
        })
      // the gate's controller sets it False: Ready stays False, and the daemon writes nothing
      const falseAt = yield* patchConditionOf("behind-lb", { type: gate, status: "False", observedGeneration: 1 })
      assert.deepStrictEqual(yield* writesSince(falseAt, 3), [], "a gate that stays not ready is no write")
      assert.strictEqual(conditionOf(yield* served, "Ready")?.status, "False")

      // True: Ready True at once, in one write of the daemon's, the gate as its controller wrote it
      const trueAt = yield* patchConditionOf("behind-lb", { type: gate, status: "True", observedGeneration: 1 })
      const writes = yield* writesSince(trueAt, 4)
      assert.deepStrictEqual(writes.map((event) => event.type), ["MODIFIED"], "one write for the gate turning True, and nothing after")
      const ready = writes[0]!.object
      assert.strictEqual(conditionOf(ready, "Ready")?.status, "True")
      assert.isUndefined(conditionOf(ready, "Ready")?.reason)
      assert.strictEqual(conditionOf(ready, "ContainersReady")?.status, "True")
      assert.strictEqual(conditionOf(ready, gate)?.status, "True")
      // (kube-apiserver would copy it back for a write that left it out: Differential.test.ts;
      // PodFacts.test.ts shows the daemon keeping it itself)
      assert.strictEqual(conditionOf(ready, gate)?.observedGeneration, 1, "the gate's condition is written back whole")
      // CRT-21 — the Running status: Ready since that write (seconds after the claim: the gate was
      // False a while), the containers since the claim (startTime)
      const claimedAt = ready.status?.startTime ?? ""
      assert.match(claimedAt, /Z$/)
      assert.strictEqual(conditionOf(ready, "ContainersReady")?.lastTransitionTime, claimedAt)
      assert.isAbove(Date.parse(conditionOf(ready, "Ready")?.lastTransitionTime ?? ""), Date.parse(claimedAt) + 2_000)
    }).pipe(quiet)), { timeout: 60_000 })

  it.live("CRT-21: every condition of a Running Pod has a lastTransitionTime, Ready's the claim time; resyncs then write nothing", () =>
    Effect.scoped(Effect.gen(function*() {
      // resyncs every second: the wait below spans several, each a chance for a needless write
      const { namespace, nodeName } = yield* world({}, { ...fastPodOptions, resyncInterval: Duration.seconds(1) })
      yield* createPod(namespace, "available", nodeName)
      yield* eventually("available Running", runningPod(namespace, "available"))
      const { config } = yield* admin
      interface Served {
        readonly metadata: { readonly resourceVersion: string }
        readonly status?: {
          readonly startTime?: string
          readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string; readonly lastTransitionTime?: string }>
        }
      }
      const path = `/api/v1/namespaces/${namespace}/pods/available`
      const pod = yield* Effect.flatMap(adminGet<Served>(path), (served) =>
        served === undefined ? new ScenarioFailed({ message: "available is gone" }) : Effect.succeed(served))
      const conditions = pod.status?.conditions ?? []
      assert.deepStrictEqual(conditions.map((c) => `${c.type}=${c.status}`).sort(), ["Initialized=True", "PodScheduled=True", "Ready=True"])
      // as the server stores it: RFC 3339 at whole seconds, a non-zero time a workload's
      // minReadySeconds counts from; the Running conditions since the claim (startTime)
      const claimedAt = pod.status?.startTime ?? ""
      assert.match(claimedAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
      for (const condition of conditions) assert.strictEqual(condition.lastTransitionTime, claimedAt, condition.type)
      // nothing written after: a watch from the Pod's version replays what came after it and
      // waits 4 s more (four resyncs)
      const query = `watch=1&fieldSelector=metadata.name%3Davailable&resourceVersion=${pod.metadata.resourceVersion}&timeoutSeconds=4`
      const reply = yield* rawRequest(config, "GET", `/api/v1/namespaces/${namespace}/pods?${query}`)
      assert.strictEqual(reply.status, 200, reply.text)
      assert.deepStrictEqual(reply.text.split("\n").filter((line) => line.trim() !== ""), [], "no write: the kept times are no change")
      const again = yield* adminGet<Served>(path)
      assert.strictEqual(again?.metadata.resourceVersion, pod.metadata.resourceVersion, "resourceVersion unchanged")
    }).pipe(quiet)), { timeout: 45_000 })

  it.live("no warm capacity: ProviderFailed/Pending naming the cause, Running once a claim is freed", () =>
    Effect.scoped(Effect.gen(function*() {
      const { sandboxd, namespace, nodeName } = yield* world({ maxClaims: 1 })
      yield* createPod(namespace, "first", nodeName)
      const first = yield* eventually("first Running", runningPod(namespace, "first"))
      yield* createPod(namespace, "second", nodeName)
      const failed = yield* eventually(
        "second ProviderFailed",
        Effect.map(getPod(namespace, "second"), (pod) => pod?.status?.reason === "ProviderFailed" ? pod : undefined)
      )
      assert.strictEqual(failed.status?.phase, "Pending")
      assert.include(failed.status?.message ?? "", "quota")
      assert.strictEqual(claimIdOf(failed), "", "no claim-id without a sandbox")

      // The first (bare) Pod goes: its release frees the quota, and the retry claims.
      yield* deletePodGracefully(namespace, "first", 0)
      yield* eventually(
        "the first claim released",
        Effect.map(releasePaths(sandboxd), (paths) => paths.includes(`/v1/sandboxes/${claimIdOf(first)}/release`))
      )
      const second = yield* eventually("second Running", runningPod(namespace, "second"), 5_000)
      assert.notStrictEqual(claimIdOf(second), claimIdOf(first))
      assert.isUndefined(second.status?.reason, "the ProviderFailed reason is replaced")
    }).pipe(quiet)), { timeout: 45_000 })
})
