/**
 * The soak's simulators (apiserver and sandboxd, `startCluster`) in a worker thread: a worker is
 * its own V8 isolate with its own heap, so the heap the soak measures on the main thread is the
 * daemon's alone. The simulators keep by design what a daemon must not (the sandboxd simulator's
 * audit log of up to 100,000 requests, every token it issued; the apiserver's watch history), and
 * in the same heap they grew the figure by several MiB over 20 cycles.
 *
 * The main thread asks by message: `{ id, op, names? }` → `{ id, value }`.
 */
import { Effect, Exit, Result, Scope } from "effect"
import { parentPort, workerData } from "node:worker_threads"
import { createPod, deletePod, startCluster, viewPod, type JsonObject } from "../testkit/Demo/Harness.ts"
import { CoreEvents, Pods } from "../testkit/Simulators/Apiserver/Resources.ts"

export interface SoakWorldInfo {
  readonly nodeName: string
  readonly namespace: string
  readonly kubeconfigPath: string
  readonly sandboxdUrl: string
  readonly tokenFile: string
  readonly statePath: string
}

export type SoakAsk =
  | { readonly op: "create" | "delete"; readonly names: ReadonlyArray<string> }
  | { readonly op: "running" | "pods" | "claims" | "expireEvents" | "stop" }

export type SoakRequest = SoakAsk & { readonly id: number }

const port = parentPort
if (port === null) throw new Error("bench/soakWorld.ts runs as a worker thread")
const { pods } = workerData as { readonly pods: number }

const scope = Effect.runSync(Scope.make())
const cluster = await Effect.runPromise(
  Scope.provide(startCluster({ warmPerPool: pods + 20, nodeName: "vk-soak", namespace: "soak" }), scope)
)

const listed = (): ReadonlyArray<ReturnType<typeof viewPod>> => {
  const list = cluster.model.list(Pods, cluster.namespace)
  const items = Result.isSuccess(list) ? list.success["items"] : undefined
  return Array.isArray(items) ? items.map((item: JsonObject) => viewPod(item)) : []
}

const handle = (request: SoakRequest): Effect.Effect<unknown, unknown> => {
  switch (request.op) {
    case "create":
      return Effect.forEach(request.names, (name) => createPod(cluster, "soak", name), { discard: true })
    case "delete":
      return Effect.forEach(request.names, (name) => deletePod(cluster, "soak", name), { discard: true })
    case "running":
      return Effect.sync(() => listed().filter((p) => p.phase === "Running" && p.claimId !== "").length)
    case "pods":
      return Effect.sync(() => listed().length)
    case "claims":
      return Effect.map(cluster.sandboxd.claims, (claims) => claims.length)
    case "expireEvents":
      // A real apiserver drops Events after their TTL (1 h); the daemon's pile up here otherwise.
      return Effect.sync(() => {
        const events = cluster.model.list(CoreEvents, cluster.namespace)
        const items = Result.isSuccess(events) ? events.success["items"] : undefined
        for (const event of Array.isArray(items) ? items : []) {
          const name = (event as { metadata?: { name?: unknown } }).metadata?.name
          if (typeof name === "string") cluster.model.delete(CoreEvents, cluster.namespace, name)
        }
      })
    case "stop":
      return Effect.andThen(Scope.close(scope, Exit.void), Effect.sync(() => port.close()))
  }
}

port.on("message", (request: SoakRequest) => {
  void Effect.runPromise(Effect.exit(handle(request))).then((exit) =>
    port.postMessage({ id: request.id, value: exit._tag === "Success" ? exit.value : undefined, failed: exit._tag === "Failure" })
  )
})

const info: SoakWorldInfo = {
  nodeName: cluster.nodeName,
  namespace: cluster.namespace,
  kubeconfigPath: cluster.kubeconfigPath,
  sandboxdUrl: cluster.sandboxdUrl,
  tokenFile: cluster.tokenFile,
  statePath: cluster.statePath
}
port.postMessage({ id: 0, value: info })
