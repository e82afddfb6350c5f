/**
 * Metrics at the two wire boundaries, as decorators of the services: every sandboxd request is
 * timed and its failures counted by tag; every apiserver request is counted by verb and code.
 * The daemon wires the decorated services, so no caller has to remember to instrument.
 */
import { Clock, Duration, Effect, Exit, Layer, Metric, Option, Stream } from "effect"
import { KubeApi, type KubeError } from "../../Services/KubeApi.ts"
import { SandboxdClient } from "../../Services/SandboxdClient.ts"
import { apiserverRequestDuration, apiserverRequests, count, labelled, sandboxdErrors, sandboxdRequestDuration } from "../../Services/Metrics.ts"

const timed = <A, E extends { readonly _tag: string }, R>(operation: string, effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.trackDuration(labelled(sandboxdRequestDuration, { operation }), (d) => Duration.toMillis(d) / 1000),
    Effect.tapError((error) => count(sandboxdErrors, { operation, tag: error._tag }))
  )

export const instrumentSandboxd = (client: SandboxdClient["Service"]): SandboxdClient["Service"] => ({
  claim: (spec) => timed("claim", client.claim(spec)),
  release: (id, token) => timed("release", client.release(id, token)),
  releaseAsRoot: (id) => timed("release_root", client.releaseAsRoot(id)),
  listSandboxes: timed("list", client.listSandboxes),
  listByClaimRef: (claimRef) => timed("list", client.listByClaimRef(claimRef)),
  getSandbox: (id) => timed("get", client.getSandbox(id)),
  info: timed("info", client.info),
  healthz: timed("healthz", client.healthz)
})

/** The status code of a failed request, or `error` when no HTTP answer came. */
const codeOf = (error: KubeError): string => {
  switch (error._tag) {
    case "KubeNotFound":
      return "404"
    case "KubeConflict":
      return "409"
    case "KubeGone":
      return "410"
    case "KubeForbidden":
      return "403"
    case "KubeInvalid":
      return "422"
    case "KubeUnavailable":
      return error.status === 0 ? "error" : String(error.status)
  }
}

/** The HTTP verb and resource of each call, as the apiserver sees them. */
interface Call {
  readonly verb: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
  readonly resource: string
  /** The code of a success (the calls' success codes; creates answer 201). */
  readonly ok: "200" | "201"
}

const call = (verb: Call["verb"], resource: string, ok: Call["ok"] = "200"): Call => ({ verb, resource, ok })

const counted = <A, R>(what: Call, effect: Effect.Effect<A, KubeError, R>) =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const exit = yield* Effect.exit(effect)
    const finished = yield* Clock.currentTimeMillis
    const labels = {
      verb: what.verb,
      resource: what.resource,
      code: Exit.isSuccess(exit) ? what.ok : Option.match(Exit.findErrorOption(exit), { onNone: () => "error", onSome: codeOf })
    }
    yield* count(apiserverRequests, labels)
    yield* Metric.update(labelled(apiserverRequestDuration, labels), (finished - started) / 1000)
    return yield* exit
  })

export const instrumentKube = (kube: KubeApi["Service"]): KubeApi["Service"] => ({
  listPods: (node) => counted(call("GET", "pods"), kube.listPods(node)),
  podsResourceVersion: (node) => counted(call("GET", "pods"), kube.podsResourceVersion(node)),
  // A watch is counted when it starts: its duration is the stream's life, not a latency.
  watchPods: (node, rv) =>
    Stream.unwrap(count(apiserverRequests, { verb: "WATCH", resource: "pods", code: "200" }).pipe(Effect.as(kube.watchPods(node, rv)))),
  getPod: (ns, name) => counted(call("GET", "pods"), kube.getPod(ns, name)),
  replacePodStatus: (pod) => counted(call("PUT", "pods/status"), kube.replacePodStatus(pod)),
  patchPodStatus: (ns, name, uid, status, removed) =>
    counted(call("PATCH", "pods/status"), kube.patchPodStatus(ns, name, uid, status, removed)),
  deletePod: (ns, name, uid) => counted(call("DELETE", "pods"), kube.deletePod(ns, name, uid)),
  getNode: (name) => counted(call("GET", "nodes"), kube.getNode(name)),
  createNode: (node) => counted(call("POST", "nodes", "201"), kube.createNode(node)),
  patchNodeStatus: (name, patch) => counted(call("PATCH", "nodes/status"), kube.patchNodeStatus(name, patch)),
  patchNode: (name, patch) => counted(call("PATCH", "nodes"), kube.patchNode(name, patch)),
  getLease: (name) => counted(call("GET", "leases"), kube.getLease(name)),
  createLease: (lease) => counted(call("POST", "leases", "201"), kube.createLease(lease)),
  replaceLease: (lease) => counted(call("PUT", "leases"), kube.replaceLease(lease)),
  createEvent: (event) => counted(call("POST", "events", "201"), kube.createEvent(event)),
  patchEvent: (ns, name, patch) => counted(call("PATCH", "events"), kube.patchEvent(ns, name, patch)),
  getOwner: (ref) => counted(call("GET", "owners"), kube.getOwner(ref)),
  applyNodeInventory: (inventory) => counted(call("PATCH", "nodeinventories"), kube.applyNodeInventory(inventory)),
  reviewToken: (token) => counted(call("POST", "tokenreviews", "201"), kube.reviewToken(token)),
  reviewAccess: (access) => counted(call("POST", "subjectaccessreviews", "201"), kube.reviewAccess(access))
})

/** Replaces the services in context with their instrumented versions. */
export const instrumentSandboxdLayer = Layer.effect(SandboxdClient, Effect.map(SandboxdClient.use(Effect.succeed), instrumentSandboxd))
export const instrumentKubeLayer = Layer.effect(KubeApi, Effect.map(KubeApi.use(Effect.succeed), instrumentKube))
