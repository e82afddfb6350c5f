/**
 * The `soak` section: the whole daemon in this process against both simulators (in a worker
 * thread, so the heap figure is the daemon's alone), 300 Pods created, Running, deleted and gone,
 * 20 times. After each cycle: heap after a forced GC, open descriptors, per-Pod keys still held.
 * A leak shows as growth from cycle 2 to the last; `flat` says whether each stayed within 10 %.
 * `VK_SOAK_PODS`, `VK_SOAK_CYCLES` and `VK_SOAK_HEAP_SNAPSHOTS=<dir>`: docs/development.md.
 */
import * as fs from "node:fs"
import * as v8 from "node:v8"
import { runInNewContext } from "node:vm"
import { Worker } from "node:worker_threads"
import { Context, Duration, Effect, Layer, Redacted, References } from "effect"
import { daemonLayer } from "../src/Daemon.ts"
import { BuildInfo } from "../src/Services/BuildInfo.ts"
import { RunningPodController } from "../src/Services/Daemon.ts"
import { testConfig } from "../testkit/Config.ts"
import { freePorts } from "../testkit/Demo/Harness.ts"
import type { BenchSection, Figures } from "./types.ts"
import type { SoakAsk, SoakWorldInfo } from "./soakWorld.ts"

const PODS = Number(process.env["VK_SOAK_PODS"] ?? 300)
const CYCLES = Number(process.env["VK_SOAK_CYCLES"] ?? 20)
/** A directory: heap snapshots after cycle 2 and the last one go there, to compare what grew. */
const SNAPSHOTS = process.env["VK_SOAK_HEAP_SNAPSHOTS"]
const TOLERANCE = 0.1
/** Past the simulators' keep-alive timeout (Node's default, 5 s): idle connections are closed. */
const SETTLE = Duration.seconds(6)

// A forced GC without starting node with --expose-gc: the flag is honoured by contexts made after it.
v8.setFlagsFromString("--expose-gc")
const forceGc = runInNewContext("gc") as () => void

const openFds = () => fs.readdirSync("/proc/self/fd").length

let nextId = 1
const ask = <A>(worker: Worker, request: SoakAsk): Effect.Effect<A> =>
  Effect.callback<A>((resume) => {
    const id = nextId++
    const onMessage = (reply: { readonly id: number; readonly value: A; readonly failed: boolean }) => {
      if (reply.id !== id) return
      worker.off("message", onMessage)
      resume(reply.failed ? Effect.die(new Error(`soak world: ${request.op} failed`)) : Effect.succeed(reply.value))
    }
    worker.on("message", onMessage)
    worker.postMessage({ ...request, id })
  })

/** The simulators' worker, asked by message. */
const startWorld = Effect.acquireRelease(
  Effect.callback<{ readonly worker: Worker; readonly info: SoakWorldInfo }>((resume) => {
    const worker = new Worker(new URL("./soakWorld.ts", import.meta.url), { workerData: { pods: PODS } })
    worker.once("error", (error) => resume(Effect.die(error)))
    worker.once("message", (message: { readonly value: SoakWorldInfo }) => resume(Effect.succeed({ worker, info: message.value })))
  }),
  // stop (the simulators close, their temp directory goes), then end the thread
  ({ worker }) =>
    Effect.andThen(Effect.ignore(Effect.timeout(ask(worker, { op: "stop" }), "10 seconds")), Effect.promise(() => worker.terminate()))
)

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
  const { worker, info } = yield* startWorld
  const [kubeletPort = 0, metricsPort = 0] = yield* freePorts(2)
  const config = testConfig({
    nodeName: info.nodeName,
    nodeIp: "127.0.0.1",
    kubeconfig: info.kubeconfigPath,
    sandboxdUrl: info.sandboxdUrl,
    sandboxdTokenFile: info.tokenFile,
    statePath: info.statePath,
    listenAddr: { host: "127.0.0.1", port: kubeletPort },
    metricsAddr: { host: "127.0.0.1", port: metricsPort },
    leaseWatchInterval: Duration.seconds(1),
    claimVerifyInterval: Duration.seconds(1),
    orphanScanInterval: Duration.seconds(2),
    publishInventory: true,
    publishInterval: Duration.seconds(1),
    shutdownTimeout: Duration.seconds(5)
  })
  const token = fs.readFileSync(info.tokenFile, "utf8").trim()
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
    yield* ask(worker, { op: "create", names })
    yield* until(`${PODS} Pods Running in cycle ${cycle}`, Effect.map(ask<number>(worker, { op: "running" }), (n) => n === PODS))
    yield* ask(worker, { op: "delete", names })
    yield* until(`every Pod gone in cycle ${cycle}`, Effect.map(ask<number>(worker, { op: "pods" }), (n) => n === 0))
    yield* until(`every claim released in cycle ${cycle}`, Effect.map(ask<number>(worker, { op: "claims" }), (n) => n === 0))
    yield* until(`no per-Pod key left in cycle ${cycle}`, Effect.map(controller.retainedKeys, (n) => n === 0), "10 seconds").pipe(
      Effect.catchDefect(() => Effect.void)
    )
    const seconds = (Date.now() - started) / 1000
    yield* ask(worker, { op: "expireEvents" })
    // let timers of the cycle fire and idle connections close before measuring
    yield* Effect.sleep(SETTLE)
    forceGc()
    forceGc()
    const sample = {
      heapMiB: process.memoryUsage().heapUsed / (1024 * 1024),
      fds: openFds(),
      retainedKeys: yield* controller.retainedKeys,
      seconds
    }
    samples.push(sample)
    if (SNAPSHOTS !== undefined && (cycle === 2 || cycle === CYCLES)) {
      v8.writeHeapSnapshot(`${SNAPSHOTS}/soak-cycle-${cycle}.heapsnapshot`)
    }
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
