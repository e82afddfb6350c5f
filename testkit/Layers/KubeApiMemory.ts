/**
 * A `KubeApi` on the in-memory cluster model directly (no HTTP), for unit tests of the code
 * above KubeApi. It keeps the live layer's shapes: objects go through the same Schemas both ways
 * (so `Date` fields are `Date`s and MicroTimes leave with six digits, which the model checks),
 * patches as JSON, and refusals become the same typed errors from the same Status bodies.
 * No limiter and no timeouts: the model answers synchronously. HTTP-level faults (latency,
 * injected failures) are not applied; deny rules and everything else in the model are.
 */
import { Cause, Effect, Layer, Option, Queue, Result, Stream } from "effect"
import { decodeEvent, encodeEvent, type Event } from "../../src/Schemas/Event.ts"
import { decodeLease, encodeLease, type Lease } from "../../src/Schemas/Lease.ts"
import { decodeNode, encodeNode, type Node } from "../../src/Schemas/Node.ts"
import { decodePod, dropNulls, undecodablePod, type UndecodablePod } from "../../src/Schemas/Pod/Decode.ts"
import { encodePod, podStatusPatch } from "../../src/Schemas/Pod/Encode.ts"
import type { Pod, PodStatus } from "../../src/Schemas/Pod/Schema.ts"
import {
  KubeApi,
  type KubeError,
  KubeInvalid,
  KubeNotFound,
  KubeUnavailable,
  type OwnerObject,
  type OwnerRef,
  type PodWatchEvent
} from "../../src/Services/KubeApi.ts"
import { type ClusterModel, type Outcome } from "../Simulators/Apiserver/Model.ts"
import { CoreEvents, Leases, NodeInventories, Nodes, Pods } from "../Simulators/Apiserver/Resources.ts"
import { fieldManager } from "../../src/Kube/Endpoints/NodeInventory.ts"
import { leaseNamespace } from "../../src/Kube/Endpoints/Nodes.ts"
import { errorFromResponse, parseStatus } from "../../src/Kube/Status.ts"

/** What the wire would carry: the value as plain JSON (a patch, or an encoded object). */
const toWire = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

/**
 * A served object as the live layer decodes it (its JSON text parsed, nulls dropped, then its
 * Schema), or the live layer's error. The copy through JSON keeps `dropNulls`, which works in
 * place, off the model's own objects.
 */
const served = <A>(operation: string, what: string, decode: (json: unknown) => Option.Option<A>) =>
(value: unknown): Effect.Effect<A, KubeError> =>
  Option.match(decode(dropNulls(toWire(value))), {
    onNone: () => Effect.fail(new KubeUnavailable({ operation, status: 200, message: `the server sent a ${what} this client cannot read` })),
    onSome: Effect.succeed
  })

/** A served Pod as the live layer decodes it: the slim Pod, or the live layer's error. */
const slimPod = (operation: string, value: unknown): Result.Result<Pod, KubeError> =>
  Option.match(decodePod(dropNulls(value)), {
    onNone: () => Result.fail(new KubeUnavailable({ operation, status: 200, message: "the server sent a pod this client cannot read" })),
    onSome: Result.succeed
  })

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

export const make = (model: ClusterModel): KubeApi["Service"] => {
  const run = <A>(operation: string, outcome: () => Outcome<A>): Effect.Effect<A, KubeError> =>
    Effect.suspend(() => {
      const result = outcome()
      return Result.isSuccess(result)
        ? Effect.succeed(result.success)
        : Effect.fail(errorFromResponse(operation, result.failure.code, result.failure.body))
    }).pipe(Effect.withSpan(`KubeApi.${operation}`))

  const invalid = (operation: string, message: string) => Effect.fail(new KubeInvalid({ operation, message }))
  const nodeSelector = (nodeName: string) => `spec.nodeName=${nodeName}`

  const listPods = (nodeName: string) =>
    run("listPods", () => model.list(Pods, undefined, { fieldSelector: nodeSelector(nodeName) })).pipe(
      Effect.flatMap((list) => {
        const items = Array.isArray(list["items"]) ? list["items"] : []
        const metadata = isRecord(list["metadata"]) ? list["metadata"] : {}
        // As the live layer reads a list: a Pod the slim Pod refuses is left out and named (INF-1 —
        // a Pod the daemon cannot decode is left out).
        const pods: Array<Pod> = []
        const undecodable: Array<UndecodablePod> = []
        for (const item of items) {
          const wire = dropNulls(item)
          const pod = decodePod(wire)
          if (Option.isSome(pod)) pods.push(pod.value)
          else undecodable.push(undecodablePod(wire))
        }
        return Effect.succeed({
          items: pods,
          undecodable,
          resourceVersion: typeof metadata["resourceVersion"] === "string" ? metadata["resourceVersion"] : ""
        })
      })
    )

  const podsResourceVersion = (nodeName: string) =>
    run("podsResourceVersion", () => model.list(Pods, undefined, { fieldSelector: nodeSelector(nodeName), limit: 1 })).pipe(
      Effect.map((list) => {
        const metadata = isRecord(list["metadata"]) ? list["metadata"] : {}
        return typeof metadata["resourceVersion"] === "string" ? metadata["resourceVersion"] : ""
      })
    )

  const watchPods = (nodeName: string, resourceVersion: string): Stream.Stream<PodWatchEvent, KubeError> => {
    const operation = "watchPods"
    return Stream.callback<PodWatchEvent, KubeError>((queue) =>
      Effect.acquireRelease(
        Effect.suspend(() => {
          const started = model.watch(Pods, undefined, {
            fieldSelector: nodeSelector(nodeName),
            resourceVersion,
            allowWatchBookmarks: true
          }, {
            onEvent: (event) => {
              switch (event.type) {
                case "ADDED":
                case "MODIFIED":
                case "DELETED": {
                  const wire = dropNulls(event.object)
                  const pod = decodePod(wire)
                  Queue.offerUnsafe(
                    queue,
                    Option.isSome(pod)
                      ? { type: event.type, object: pod.value }
                      : { type: "UNDECODABLE", change: event.type, pod: undecodablePod(wire) }
                  )
                  return
                }
                case "BOOKMARK": {
                  const metadata = isRecord(event.object["metadata"]) ? event.object["metadata"] : {}
                  const rv = metadata["resourceVersion"]
                  Queue.offerUnsafe(queue, { type: "BOOKMARK", resourceVersion: typeof rv === "string" ? rv : "" })
                  return
                }
                case "ERROR": {
                  const status = parseStatus(event.object)
                  const code = status._tag === "Some" ? status.value.code ?? 0 : 0
                  const error = code === 410 || code === 504
                    ? errorFromResponse(operation, code, event.object)
                    : new KubeUnavailable({
                      operation,
                      status: code,
                      message: status._tag === "Some" ? status.value.message ?? "watch ERROR event" : "watch ERROR event"
                    })
                  Queue.failCauseUnsafe(queue, Cause.fail(error))
                  return
                }
              }
            },
            onClose: () => void Queue.endUnsafe(queue)
          })
          return Result.isSuccess(started)
            ? Effect.succeed(started.success)
            : Effect.fail(errorFromResponse(operation, started.failure.code, started.failure.body))
        }),
        (handle) => Effect.sync(() => handle.close())
      )
    )
  }

  const getPod = (namespace: string, name: string) =>
    run("getPod", () => model.get(Pods, namespace, name)).pipe(Effect.flatMap((o) => Effect.fromResult(slimPod("getPod", o))))

  const replacePodStatus = (pod: Pod) => {
    const name = pod.metadata?.name
    const namespace = pod.metadata?.namespace
    if (name === undefined || namespace === undefined) return invalid("replacePodStatus", "pod without metadata.name/namespace")
    // as the live layer sends it: no spec (the server keeps the stored one)
    const { spec: _spec, ...written } = pod
    const body = encodePod({ apiVersion: "v1", kind: "Pod", ...written })
    if (Option.isNone(body)) return invalid("replacePodStatus", "pod that cannot be encoded")
    return run("replacePodStatus", () => model.updateStatus(Pods, namespace, name, body.value)).pipe(
      Effect.flatMap((o) => Effect.fromResult(slimPod("replacePodStatus", o)))
    )
  }

  const patchPodStatus = (namespace: string, name: string, uid: string, status: PodStatus, removedConditions: ReadonlyArray<string>) =>
    body("patchPodStatus", "status", podStatusPatch(uid, status, removedConditions)).pipe(
      Effect.flatMap((patch) => run("patchPodStatus", () => model.patch(Pods, namespace, name, "strategic", patch, { subresource: "status" }))),
      Effect.asVoid
    )

  const deletePod = (namespace: string, name: string, uid: string) =>
    run("deletePod", () => model.delete(Pods, namespace, name, { gracePeriodSeconds: 0, preconditions: { uid } })).pipe(
      Effect.asVoid
    )

  /** The JSON body of a write, or the live layer's KubeInvalid. */
  const body = (operation: string, what: string, encoded: Option.Option<unknown>): Effect.Effect<unknown, KubeError> =>
    Option.match(encoded, { onNone: () => invalid(operation, `${what} that cannot be encoded`), onSome: (json) => Effect.succeed(toWire(json)) })

  const getNode = (name: string) =>
    run("getNode", () => model.get(Nodes, "", name)).pipe(Effect.flatMap(served("getNode", "node", decodeNode)))
  const createNode = (node: Node) =>
    body("createNode", "node", encodeNode(node)).pipe(
      Effect.flatMap((json) => run("createNode", () => model.create(Nodes, "", json))),
      Effect.flatMap(served("createNode", "node", decodeNode))
    )
  const patchNodeStatus = (name: string, patch: object) =>
    run("patchNodeStatus", () => model.patch(Nodes, "", name, "strategic", toWire(patch), { subresource: "status" }))
      .pipe(Effect.flatMap(({ object }) => served("patchNodeStatus", "node", decodeNode)(object)))
  const patchNode = (name: string, patch: object) =>
    run("patchNode", () => model.patch(Nodes, "", name, "strategic", toWire(patch)))
      .pipe(Effect.flatMap(({ object }) => served("patchNode", "node", decodeNode)(object)))

  const getLease = (name: string) =>
    run("getLease", () => model.get(Leases, leaseNamespace, name)).pipe(Effect.flatMap(served("getLease", "lease", decodeLease)))
  const createLease = (lease: Lease) =>
    body("createLease", "lease", encodeLease(lease)).pipe(
      Effect.flatMap((json) => run("createLease", () => model.create(Leases, leaseNamespace, json))),
      Effect.flatMap(served("createLease", "lease", decodeLease))
    )
  const replaceLease = (lease: Lease) => {
    const name = lease.metadata?.name
    if (name === undefined) return invalid("replaceLease", "lease without metadata.name")
    return body("replaceLease", "lease", encodeLease(lease)).pipe(
      Effect.flatMap((json) => run("replaceLease", () => model.update(Leases, leaseNamespace, name, json))),
      Effect.flatMap(served("replaceLease", "lease", decodeLease))
    )
  }

  const createEvent = (event: Event) => {
    const namespace = event.metadata?.namespace ?? event.involvedObject?.namespace
    if (namespace === undefined || namespace === "") return invalid("createEvent", "event without a namespace")
    return body("createEvent", "event", encodeEvent(event)).pipe(
      Effect.flatMap((json) => run("createEvent", () => model.create(CoreEvents, namespace, json))),
      Effect.flatMap(served("createEvent", "event", decodeEvent))
    )
  }
  const patchEvent = (namespace: string, name: string, patch: object) =>
    run("patchEvent", () => model.patch(CoreEvents, namespace, name, "strategic", toWire(patch))).pipe(
      Effect.flatMap(({ object }) => served("patchEvent", "event", decodeEvent)(object))
    )

  const getOwner = (ref: OwnerRef): Effect.Effect<OwnerObject, KubeError> => {
    const resource = model.resourceFor(ref.group, ref.version, ref.plural)
    if (resource === undefined) {
      // the server's endpoint-level 404 (plain text or a Status without details)
      return Effect.fail(new KubeNotFound({ operation: "getOwner", message: "the server could not find the requested resource" }))
    }
    return run("getOwner", () => model.get(resource, ref.namespace, ref.name)).pipe(
      Effect.flatMap((raw) => {
        const metadata = isRecord(raw["metadata"]) ? raw["metadata"] : {}
        const uid = metadata["uid"]
        const deletionTimestamp = metadata["deletionTimestamp"]
        const name = metadata["name"]
        return typeof uid === "string"
          ? Effect.succeed({ name: typeof name === "string" ? name : undefined, uid, deletionTimestamp: typeof deletionTimestamp === "string" ? deletionTimestamp : undefined, raw })
          : Effect.fail(new KubeUnavailable({ operation: "getOwner", status: 200, message: "owner body without metadata.uid" }))
      })
    )
  }

  const applyNodeInventory = (inventory: object) => {
    const metadata = isRecord(inventory) && isRecord((inventory as Record<string, unknown>)["metadata"])
      ? (inventory as { metadata: Record<string, unknown> }).metadata
      : {}
    const name = metadata["name"]
    if (typeof name !== "string") return invalid("applyNodeInventory", "inventory without metadata.name")
    return run("applyNodeInventory", () =>
      model.patch(NodeInventories, "", name, "apply", toWire(inventory), { fieldManager, force: true })).pipe(
        Effect.map(({ object }): unknown => object)
      )
  }

  return KubeApi.of({
    listPods,
    podsResourceVersion,
    watchPods,
    getPod,
    replacePodStatus,
    patchPodStatus,
    deletePod,
    getNode,
    createNode,
    patchNodeStatus,
    patchNode,
    getLease,
    createLease,
    replaceLease,
    createEvent,
    patchEvent,
    getOwner,
    applyNodeInventory,
    // The model knows no users and no roles: every token is rejected and every access denied, as a
    // cluster with no identities would answer. A test of the kubelet port overrides these two.
    reviewToken: () =>
      Effect.succeed({ _tag: "Rejected", reason: "the in-memory cluster knows no tokens" } as const).pipe(Effect.withSpan("KubeApi.reviewToken")),
    reviewAccess: () =>
      Effect.succeed({ allowed: false, reason: "the in-memory cluster grants nothing" }).pipe(Effect.withSpan("KubeApi.reviewAccess"))
  })
}

/** KubeApi on the given model; the test keeps the model to arrange and inspect the cluster. */
export const layer = (model: ClusterModel): Layer.Layer<KubeApi> => Layer.succeed(KubeApi, make(model))
