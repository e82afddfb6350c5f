/**
 * Metrics at the two wire boundaries, as decorators of the services: every sandboxd request is
 * timed and its failures counted by tag; every apiserver request is counted by verb and code.
 * The daemon wires the decorated services, so no caller has to remember to instrument.
 */
import { Duration, Effect, Layer, Metric, Stream } from "effect"
import { KubeApi, type KubeError } from "../../Services/KubeApi.ts"
import { SandboxdClient } from "../../Services/SandboxdClient.ts"
import { apiserverRequests, count, sandboxdErrors, sandboxdRequestDuration } from "../../Services/Metrics.ts"

const timed = <A, E extends { readonly _tag: string }, R>(operation: string, effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.trackDuration(Metric.withAttributes(sandboxdRequestDuration, { operation }), (d) => Duration.toMillis(d) / 1000),
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
      return error.status === 0 ? "transport" : String(error.status)
  }
}

const counted = <A, R>(verb: string, effect: Effect.Effect<A, KubeError, R>) =>
  effect.pipe(
    Effect.tap(() => count(apiserverRequests, { verb, code: "2xx" })),
    Effect.tapError((error) => count(apiserverRequests, { verb, code: codeOf(error) }))
  )

export const instrumentKube = (kube: KubeApi["Service"]): KubeApi["Service"] => ({
  listPods: (node) => counted("list_pods", kube.listPods(node)),
  watchPods: (node, rv) =>
    Stream.unwrap(count(apiserverRequests, { verb: "watch_pods", code: "started" }).pipe(Effect.as(kube.watchPods(node, rv)))),
  getPod: (ns, name) => counted("get_pod", kube.getPod(ns, name)),
  replacePodStatus: (pod) => counted("update_pod_status", kube.replacePodStatus(pod)),
  deletePod: (ns, name, uid) => counted("delete_pod", kube.deletePod(ns, name, uid)),
  getNode: (name) => counted("get_node", kube.getNode(name)),
  createNode: (node) => counted("create_node", kube.createNode(node)),
  patchNodeStatus: (name, patch) => counted("patch_node_status", kube.patchNodeStatus(name, patch)),
  patchNode: (name, patch) => counted("patch_node", kube.patchNode(name, patch)),
  getLease: (name) => counted("get_lease", kube.getLease(name)),
  createLease: (lease) => counted("create_lease", kube.createLease(lease)),
  replaceLease: (lease) => counted("update_lease", kube.replaceLease(lease)),
  createEvent: (event) => counted("create_event", kube.createEvent(event)),
  patchEvent: (ns, name, patch) => counted("patch_event", kube.patchEvent(ns, name, patch)),
  getOwner: (ref) => counted("get_owner", kube.getOwner(ref)),
  applyNodeInventory: (inventory) => counted("apply_node_inventory", kube.applyNodeInventory(inventory))
})

/** Replaces the services in context with their instrumented versions. */
export const instrumentSandboxdLayer = Layer.effect(SandboxdClient, Effect.map(SandboxdClient.use(Effect.succeed), instrumentSandboxd))
export const instrumentKubeLayer = Layer.effect(KubeApi, Effect.map(KubeApi.use(Effect.succeed), instrumentKube))
