/**
 * The `soak` section: the whole daemon (its layer graph, in this process) against both simulators
 * on loopback, 300 Pods created, Running, deleted and gone, 20 times over. After each cycle, with
 * nothing left in flight: the heap after a forced GC, the open file descriptors and the per-Pod
 * keys the pod controller still holds. A leak shows as growth from cycle 2 (cycle 1 warms caches,
 * pools and connection pools) to the last (cycle 20); `flat` says whether each stayed within 10 %.
 * VK_SOAK_PODS and VK_SOAK_CYCLES shrink it for a quick look.
 *
 * `npm run bench -- --only=soak [--json]`. It reports; it does not assert.
 */
import * as fs from "node:fs"
import * as v8 from "node:v8"
import { runInNewContext } from "node:vm"
import { Context, Duration, Effect, Layer, Redacted, References, Result } from "effect"
import { daemonLayer } from "../src/Daemon.ts"
import { BuildInfo } from "../src/Services/BuildInfo.ts"
import { RunningPodController } from "../src/Services/Daemon.ts"
import { testConfig } from "../src/Schemas/Config.ts"
import { createPod, deletePod, freePort, startCluster, viewPod, type Cluster, type JsonObject } from "../testkit/Demo/Harness.ts"
import { CoreEvents, Pods } from "../testkit/Simulators/Apiserver/Resources.ts"
import type { BenchSection, Figures } from "./types.ts"

const PODS = Number(process.env["VK_SOAK_PODS"] ?? 300)
const CYCLES = Number(process.env["VK_SOAK_CYCLES"] ?? 20)
const TOLERANCE = 0.1

// A forced GC without starting node with --expose-gc: the flag is honoured by contexts made after it.
v8.setFlagsFromString("--expose-gc")
const forceGc = runInNewContext("gc") as () => void

const openFds = () => fs.readdirSync("/proc/self/fd").length

const podsOf = (cluster: Cluster): ReadonlyArray<ReturnType<typeof viewPod>> => {
  const listed = cluster.model.list(Pods, cluster.namespace)
  const items = Result.isSuccess(listed) ? listed.success["items"] : undefined
  return Array.isArray(items) ? items.map((item: JsonObject) => viewPod(item)) : []
}

/** Polls every 50 ms until `done`, or gives up after `timeout` with `what` in the error. */
const until = (what: string, done: Effect.Effect<boolean>, timeout: Duration.Input = "120 seconds") =>
  Effect.gen(function*() {
    const deadline = Date.now() + Duration.toMillis(Duration.fromInputUnsafe(timeout))
    while (!(yield* done)) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`soak: timed out waiting for ${what}`))
      yield* Effect.sleep("50 millis")
    }
  })

interface Sample {
  readonly heapMiB: number
  readonly fds: number
  readonly retainedKeys: number
  readonly seconds: number
}

const soak = Effect.gen(function*() {
  const cluster = yield* startCluster({ warmPerPool: PODS + 20, nodeName: "vk-soak", namespace: "soak" })
  const kubeletPort = yield* freePort
  const metricsPort = yield* freePort
  const config = testConfig({
    nodeName: cluster.nodeName,
    nodeIp: "127.0.0.1",
    kubeconfig: cluster.kubeconfigPath,
    sandboxdUrl: cluster.sandboxdUrl,
    sandboxdTokenFile: cluster.tokenFile,
    statePath: cluster.statePath,
    listenAddr: { host: "127.0.0.1", port: kubeletPort },
    metricsAddr: { host: "127.0.0.1", port: metricsPort },
    leaseWatchInterval: Duration.seconds(1),
    claimVerifyInterval: Duration.seconds(1),
    orphanScanInterval: Duration.seconds(2),
    publishInventory: true,
    publishInterval: Duration.seconds(1),
    shutdownTimeout: Duration.seconds(5)
  })
  const token = fs.readFileSync(cluster.tokenFile, "utf8").trim()
  const context = yield* Layer.build(
    daemonLayer({ ...config, sandboxdToken: Redacted.make(token) }).pipe(
      Layer.provide(Layer.succeed(BuildInfo, { version: "soak", revision: "soak", builtAt: "soak" }))
    )
  )
  const controller = Context.get(context, RunningPodController)

  const samples: Array<Sample> = []
  for (let cycle = 1; cycle <= CYCLES; cycle++) {
    const started = Date.now()
    const names = Array.from({ length: PODS }, (_, i) => `c${cycle}-p${i}`)
    for (const name of names) yield* createPod(cluster, "soak", name)
    yield* until(`${PODS} Pods Running in cycle ${cycle}`, Effect.sync(() =>
      podsOf(cluster).filter((p) => p.phase === "Running" && p.claimId !== "").length === PODS))
    for (const name of names) yield* deletePod(cluster, "soak", name)
    yield* until(`every Pod gone in cycle ${cycle}`, Effect.sync(() => podsOf(cluster).length === 0))
    yield* until(`every claim released in cycle ${cycle}`, Effect.map(cluster.sandboxd.claims, (claims) => claims.length === 0))
    yield* until(`no per-Pod key left in cycle ${cycle}`, Effect.map(controller.retainedKeys, (n) => n === 0), "10 seconds").pipe(
      Effect.catchDefect(() => Effect.void)
    )
    const seconds = (Date.now() - started) / 1000
    // The daemon's Events pile up in the simulated apiserver, which lives in this process too; a
    // real apiserver drops them after their TTL (1 h). Expire them, so the heap measures the daemon.
    const events = cluster.model.list(CoreEvents, cluster.namespace)
    const eventItems = Result.isSuccess(events) ? events.success["items"] : undefined
    for (const event of Array.isArray(eventItems) ? eventItems : []) {
      const name = (event as { metadata?: { name?: unknown } }).metadata?.name
      if (typeof name === "string") cluster.model.delete(CoreEvents, cluster.namespace, name)
    }
    // let timers of the cycle fire and sockets settle before measuring
    yield* Effect.sleep("500 millis")
    forceGc()
    forceGc()
    const sample = {
      heapMiB: process.memoryUsage().heapUsed / (1024 * 1024),
      fds: openFds(),
      retainedKeys: yield* controller.retainedKeys,
      seconds
    }
    samples.push(sample)
    // progress on stderr: stdout carries only the --json object
    process.stderr.write(`soak cycle ${cycle}/${CYCLES}: ${JSON.stringify(sample)}\n`)
  }
  return samples
}).pipe(
  Effect.scoped,
  Effect.provideService(References.MinimumLogLevel, "None")
)

const growth = (from: number, to: number) => (from === 0 ? (to === 0 ? 0 : Infinity) : (to - from) / from)

const round2 = (n: number) => Math.round(n * 100) / 100

export const soakSection: BenchSection = {
  name: "soak",
  run: async (): Promise<Figures> => {
    const samples = await Effect.runPromise(soak)
    const second = samples[1]!
    const last = samples[samples.length - 1]!
    const heapGrowth = growth(second.heapMiB, last.heapMiB)
    const fdGrowth = growth(second.fds, last.fds)
    const keysGrowth = growth(second.retainedKeys, last.retainedKeys)
    return {
      machine: "2-core machine, shared with other jobs",
      pods_per_cycle: PODS,
      cycles: CYCLES,
      heap_mib_cycle2: round2(second.heapMiB),
      heap_mib_last: round2(last.heapMiB),
      heap_mib_max: round2(Math.max(...samples.slice(1).map((s) => s.heapMiB))),
      heap_growth_pct: round2(heapGrowth * 100),
      fds_cycle2: second.fds,
      fds_last: last.fds,
      fd_growth_pct: round2(fdGrowth * 100),
      retained_keys_cycle2: second.retainedKeys,
      retained_keys_last: last.retainedKeys,
      cycle_seconds_mean: round2(samples.reduce((sum, s) => sum + s.seconds, 0) / samples.length),
      flat: Math.abs(heapGrowth) <= TOLERANCE && Math.abs(fdGrowth) <= TOLERANCE && (keysGrowth <= TOLERANCE || last.retainedKeys === 0),
      heap_mib_per_cycle: samples.map((s) => round2(s.heapMiB)).join(" "),
      fds_per_cycle: samples.map((s) => s.fds).join(" ")
    }
  }
}
