/**
 * The chart's `helm test` hook on the real kube-apiserver: its ServiceAccount, Role and
 * RoleBinding as rendered, its Pod's command (the image's `node` on files/health-check.js) run as
 * a process with that account's token, against the rendered DaemonSet and a daemon Pod whose
 * status the test writes (no kubelet here), served by the whole daemon in this process on
 * 127.0.0.1. It passes while every node the DaemonSet should run on has a healthy, ready daemon,
 * and fails naming the node when one is missing or does not answer.
 */
import { assert, describe, it } from "@effect/vitest"
import * as k8s from "@kubernetes/client-node"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { renderChart, serviceAccountToken, startDaemon } from "./daemonIdentity.ts"
import { kube, uniqueName } from "./fixture/Kube.ts"
import {
  admin,
  createNamespace,
  daemonGround,
  eventually,
  freeLoopbackPorts,
  quiet,
  rawRequest,
  ScenarioFailed
} from "./scenarioHarness.ts"

const isHook = (doc: k8s.KubernetesObject) => doc.metadata?.annotations?.["helm.sh/hook"] === "test"

/** The hook Pod's command with the service account directory, as a process; its exit code and output. */
const runCheck = (command: ReadonlyArray<string>, saDir: string, server: URL) =>
  Effect.callback<{ readonly code: number; readonly out: string }, ScenarioFailed>((resume) => {
    const child = spawn(process.execPath, [...command.slice(1), saDir], {
      env: { KUBERNETES_SERVICE_HOST: server.hostname, KUBERNETES_SERVICE_PORT: server.port },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()))
    child.on("error", (cause) => resume(Effect.fail(new ScenarioFailed({ message: `health check: ${String(cause)}` }))))
    child.on("close", (code) => resume(Effect.succeed({ code: code ?? -1, out })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("helm test on the real kube-apiserver", () => {
  it.live("the health check passes while every node's daemon is healthy and ready, and names the node that is not", () =>
    Effect.scoped(Effect.gen(function*() {
      const { config: adminConfig, core, objects } = yield* admin
      const namespace = yield* createNamespace("helm-test")
      const [metricsPort = 0, kubeletPort = 0] = yield* freeLoopbackPorts(2)
      const release = uniqueName("ht")
      const docs = yield* renderChart(release, namespace, ["sandboxd.token.source=none", `metrics.port=${metricsPort}`])

      // ---- the DaemonSet and the test's account, as rendered
      const daemonSet = docs.find((doc) => doc.kind === "DaemonSet")
      const testPod = docs.find((doc) => doc.kind === "Pod" && isHook(doc)) as k8s.V1Pod | undefined
      if (daemonSet === undefined || testPod === undefined) return yield* new ScenarioFailed({ message: "no DaemonSet or test Pod rendered" })
      for (const doc of docs.filter((d) => isHook(d) && d.kind !== "Pod")) yield* kube(`create ${doc.kind}`, () => objects.create(doc))
      yield* kube("create DaemonSet", () => objects.create(daemonSet))
      const dsName = daemonSet.metadata?.name ?? ""
      const command = testPod.spec?.containers[0]?.command ?? []
      assert.deepStrictEqual(command.slice(3), ["--", namespace, dsName, String(metricsPort)])

      // ---- the test account's token and the cluster's CA, where a Pod finds them
      const { dir, config } = yield* daemonGround("vk-k8s-helm-test-", {}, {
        metricsAddr: { host: "127.0.0.1", port: metricsPort },
        listenAddr: { host: "127.0.0.1", port: kubeletPort }
      })
      const token = yield* serviceAccountToken(core, namespace, testPod.spec?.serviceAccountName ?? "")
      writeFileSync(join(dir, "token"), token)
      const cluster = adminConfig.getCurrentCluster()
      writeFileSync(join(dir, "ca.crt"), Buffer.from(cluster?.caData ?? "", "base64"))
      const server = new URL(cluster?.server ?? "")

      // ---- a daemon Pod of the DaemonSet on one host, Running at 127.0.0.1 (written as the kubelet would)
      const host = uniqueName("host")
      const selector = (daemonSet as k8s.V1DaemonSet).spec?.selector.matchLabels ?? {}
      yield* kube("daemon pod", () =>
        core.createNamespacedPod({
          namespace,
          body: { metadata: { name: `${host}-daemon`, labels: selector }, spec: { nodeName: host, containers: [{ name: "vk-sandbox", image: "vk-sandbox" }] } }
        }))
      const podStatus = yield* rawRequest(adminConfig, "PATCH", `/api/v1/namespaces/${namespace}/pods/${host}-daemon/status`, {
        status: { phase: "Running", hostIP: "127.0.0.1", podIP: "127.0.0.1" }
      }, "application/merge-patch+json")
      assert.strictEqual(podStatus.status, 200, JSON.stringify(podStatus.body))
      const desire = (desired: number) =>
        rawRequest(adminConfig, "PATCH", `/apis/apps/v1/namespaces/${namespace}/daemonsets/${dsName}/status`, {
          status: { desiredNumberScheduled: desired, currentNumberScheduled: 1, numberMisscheduled: 0, numberReady: 1 }
        }, "application/merge-patch+json")
      assert.strictEqual((yield* desire(1)).status, 200)

      // ---- the daemon up and ready: the check passes
      const daemon = yield* startDaemon(config)
      yield* eventually(
        "readyz 200",
        Effect.tryPromise({
          try: async () => (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status === 200,
          catch: (cause) => new ScenarioFailed({ message: String(cause) })
        }).pipe(Effect.orElseSucceed(() => false)),
        30_000
      )
      const passed = yield* runCheck(command, dir, server)
      assert.strictEqual(passed.code, 0, passed.out)
      assert.include(passed.out, `health-check: ${host}: ok (healthz 200, readyz 200 at http://127.0.0.1:${metricsPort})`)
      assert.include(passed.out, "1 of 1 daemons healthy and ready")
      assert.notInclude(passed.out, token)

      // ---- a node the DaemonSet should run on has no daemon Pod: the check fails
      assert.strictEqual((yield* desire(2)).status, 200)
      const missing = yield* runCheck(command, dir, server)
      assert.strictEqual(missing.code, 1, missing.out)
      assert.include(missing.out, "only 1 of the 2 nodes the DaemonSet should run on have a daemon Pod")
      assert.strictEqual((yield* desire(1)).status, 200)

      // ---- the daemon gone: the check fails naming its node
      yield* daemon.stop
      const down = yield* runCheck(command, dir, server)
      assert.strictEqual(down.code, 1, down.out)
      assert.match(down.out, new RegExp(`health-check: ${host}: healthz no answer \\(.*ECONNREFUSED`))
      assert.include(down.out, "0 of 1 daemons healthy and ready")
    }).pipe(quiet)), { timeout: 90_000 })
})
