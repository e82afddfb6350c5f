/**
 * The control plane restarted on an empty etcd under a running daemon (same address and
 * certificates, namespace, RBAC and CRDs installed again): resourceVersions start over below the
 * daemon's, and the real apiserver answers the old one with a silent watch or a 504 list. The
 * daemon relists either way (three fruitless watches, or the silent-watch check finding the
 * server older than its cache) and counts the restart "backwards". The control plane is this
 * test's own (`restartable`): an empty etcd would wipe what the other files keep in the shared one.
 */
import * as k8s from "@kubernetes/client-node"
import { assert, describe, it } from "@effect/vitest"
import { resolve } from "node:path"
import { Duration, Effect, Metric } from "effect"
import * as Metrics from "../../src/Services/Metrics.ts"
import { startControlPlane } from "./fixture/ControlPlane.ts"
import { kube } from "./fixture/Kube.ts"
import {
  ClaimIdAnnotation,
  eventually,
  fastPodOptions,
  quiet,
  releasePaths,
  sandboxdHolds,
  scenarioConfig,
  ScenarioFailed,
  startPodHalf,
  startSandboxd,
  Template,
  tempDir
} from "./scenarioHarness.ts"

const repoRoot = resolve(import.meta.dirname, "..", "..")
const namespace = "empty-store"

describe("the daemon on a control plane restarted on an empty etcd", () => {
  it.live("relists once the server's resourceVersion is behind its cache: a new Pod goes Running, only the vanished Pod's claim is released", () =>
    Effect.scoped(Effect.gen(function*() {
      const binDir = process.env["VK_K8S_BIN"] ?? ""
      if (binDir === "") return yield* new ScenarioFailed({ message: "VK_K8S_BIN is not set: run with npm run test:k8s" })
      const dir = yield* tempDir("vk-k8s-empty-store-")
      const plane = yield* startControlPlane({ binDir, stateDir: resolve(dir, "plane"), repoRoot, restartable: true })
      const adminConfig = new k8s.KubeConfig()
      adminConfig.loadFromFile(plane.adminKubeconfig)
      const core = adminConfig.makeApiClient(k8s.CoreV1Api)
      const createNamespace = kube("create namespace", () => core.createNamespace({ body: { metadata: { name: namespace } } }))
      const createPod = (name: string) =>
        kube("create pod", () =>
          core.createNamespacedPod({
            namespace,
            body: {
              metadata: { name, namespace, annotations: { "sandbox.cocoonstack.io/template": Template } },
              spec: { nodeName: config.nodeName, containers: [{ name: "main", image: "python:3.12" }] }
            }
          }))
      const runningClaim = (name: string) =>
        kube("read pod", () => core.readNamespacedPod({ namespace, name })).pipe(
          Effect.map((pod) => {
            const claim = pod.metadata?.annotations?.[ClaimIdAnnotation] ?? ""
            return pod.status?.phase === "Running" && claim !== "" ? claim : undefined
          })
        )

      const sandboxd = yield* startSandboxd()
      const config = scenarioConfig(plane.daemonKubeconfig, sandboxd.url, dir)
      yield* createNamespace
      const daemon = yield* startPodHalf(config, { ...fastPodOptions, silentWatchCheck: Duration.seconds(2) })
      yield* eventually("the pod watch synced", daemon.handle.synced)
      yield* createPod("before")
      const beforeClaim = yield* eventually("before Running", runningClaim("before"))

      // The daemon's cache must be ahead of what the empty store reaches once the fixture has
      // installed everything again: 100 writes to a Pod it watches (as in the fault matrix).
      for (let i = 0; i < 100; i++) {
        yield* kube("label pod", () =>
          core.patchNamespacedPod({
            namespace,
            name: "before",
            body: [{ op: "add", path: "/metadata/labels", value: { churn: String(i) } }]
          }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch)))
      }
      // the receipt that the daemon holds them: its cache has the last one
      yield* eventually(
        "the daemon's cache holds the last label write",
        Effect.map(daemon.handle.cachedPods, (pods) => pods.some((pod) => pod.metadata?.name === "before" && pod.metadata.labels?.["churn"] === "99"))
      )

      const backwards = Metric.value(Metric.withAttributes(Metrics.watchRestarts, { reason: "backwards" }))
      const backwardsBefore = (yield* backwards).count
      yield* plane.restartOnEmptyStore
      yield* createNamespace
      yield* createPod("after")
      // the silent-watch check (2 s) sees the server behind and relists
      const afterClaim = yield* eventually("after Running", runningClaim("after"), 30_000)
      assert.notStrictEqual(afterClaim, beforeClaim)
      assert.isAbove((yield* backwards).count, backwardsBefore, "the daemon saw the resourceVersion go backwards")
      assert.isTrue(yield* sandboxdHolds(sandboxd, afterClaim))

      // "before" vanished with its namespace on the server's word: its claim, and nothing else, goes
      yield* eventually("the vanished Pod's claim released", Effect.map(sandboxdHolds(sandboxd, beforeClaim), (held) => !held))
      assert.deepStrictEqual(yield* releasePaths(sandboxd), [`/v1/sandboxes/${beforeClaim}/release`])
    })).pipe(quiet), 90_000)
})
