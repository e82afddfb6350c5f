/**
 * Every apiserver call the daemon makes, and nothing else talks to the apiserver
 * (typed errors, no client-node types leaking into the domain). Objects are the Schema shapes of
 * `src/Schemas` (Pod, Node, Lease, Event), decoded from the apiserver's JSON; no client model.
 * Live layer: `Layers/KubeApiClientNode.ts` (kubeconfig, auth and TLS from @kubernetes/client-node 2.x),
 * which rate-limits every call but the node's and lease's (NODE-5 — heartbeats do not wait
 * behind Pod work). Test layer:
 * `testkit/Layers/KubeApiMemory.ts` on the in-memory cluster model.
 */
import { Context, type Effect, type Redacted, Schema, type Stream } from "effect"
import type { Event } from "../Schemas/Event.ts"
import type { Lease } from "../Schemas/Lease.ts"
import type { Node } from "../Schemas/Node.ts"
import type { UndecodablePod } from "../Schemas/Pod/Decode.ts"
import type { Pod, PodStatus } from "../Schemas/Pod/Schema.ts"
import type { AccessVerdict, NodeAccess, TokenVerdict } from "../Schemas/Reviews.ts"

/** Status `details` exactly as the server wrote them; never filled in from the request. */
export const StatusDetails = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  group: Schema.optionalKey(Schema.String),
  kind: Schema.optionalKey(Schema.String),
  uid: Schema.optionalKey(Schema.String)
})
export type StatusDetails = typeof StatusDetails.Type

/** 404. `details` is absent for an endpoint-level 404 or a body that is not a Status. */
export class KubeNotFound extends Schema.TaggedError<KubeNotFound>()("KubeNotFound", {
  operation: Schema.String,
  message: Schema.String,
  details: Schema.optionalKey(StatusDetails)
}) {}

/** 409: a stale resourceVersion, a failed precondition, or an object that already exists. */
export class KubeConflict extends Schema.TaggedError<KubeConflict>()("KubeConflict", {
  operation: Schema.String,
  message: Schema.String,
  reason: Schema.String // "Conflict" | "AlreadyExists" | …
}) {}

/**
 * The resourceVersion cannot be served; relist. 410: older than the server keeps. A 504 "Too large
 * resource version": newer than anything the server has, i.e. the server went backwards (restored
 * from a backup, or restarted on an empty store).
 */
export class KubeGone extends Schema.TaggedError<KubeGone>()("KubeGone", {
  operation: Schema.String,
  message: Schema.String
}) {}

export class KubeForbidden extends Schema.TaggedError<KubeForbidden>()("KubeForbidden", {
  operation: Schema.String,
  message: Schema.String
}) {}

/** 422 (and 400): the server refused the object's content. */
export class KubeInvalid extends Schema.TaggedError<KubeInvalid>()("KubeInvalid", {
  operation: Schema.String,
  message: Schema.String,
  /** The fields the server's Status names as refused (`details.causes[].field`), when it names any. */
  fields: Schema.optionalKey(Schema.Array(Schema.String))
}) {}

/** Anything else: 401, 5xx, 429, timeouts, transport failures. */
export class KubeUnavailable extends Schema.TaggedError<KubeUnavailable>()("KubeUnavailable", {
  operation: Schema.String,
  status: Schema.Number, // 0 for transport failures and timeouts
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}

export type KubeError = KubeNotFound | KubeConflict | KubeGone | KubeForbidden | KubeInvalid | KubeUnavailable

/** No usable kubeconfig (explicit path, in-cluster, $KUBECONFIG): a startup error. */
export class KubeConfigMissing extends Schema.TaggedError<KubeConfigMissing>()("KubeConfigMissing", {
  message: Schema.String
}) {}

export interface PodList {
  readonly items: ReadonlyArray<Pod>
  /**
   * The listed Pods the slim Pod refuses (INF-1 — a Pod the daemon cannot decode is left out): not
   * in `items`, and no reason to fail the list.
   */
  readonly undecodable: ReadonlyArray<UndecodablePod>
  readonly resourceVersion: string
}

export type PodWatchEvent =
  | { readonly type: "ADDED" | "MODIFIED" | "DELETED"; readonly object: Pod }
  | { readonly type: "BOOKMARK"; readonly resourceVersion: string }
  /** An ADDED, MODIFIED or DELETED event whose Pod the slim Pod refuses (INF-1): what is known of it. */
  | { readonly type: "UNDECODABLE"; readonly change: "ADDED" | "MODIFIED" | "DELETED"; readonly pod: UndecodablePod }

/** group "" is the core group (`/api/v1/...`). */
export interface OwnerRef {
  readonly group: string
  readonly version: string
  readonly plural: string
  readonly namespace: string
  readonly name: string
}

/** The parts of an owner object that delete authorization reads. */
export interface OwnerObject {
  /** metadata.name as the reply states it (undefined when absent): checked against the name asked for */
  readonly name: string | undefined
  readonly uid: string
  readonly deletionTimestamp: string | undefined
  readonly raw: unknown
}

export class KubeApi extends Context.Service<KubeApi, {
  // pods
  /** The node's Pods; one the slim Pod refuses is in `undecodable` and fails nothing (INF-1). */
  readonly listPods: (nodeName: string) => Effect.Effect<PodList, KubeError>
  /**
   * The server's current resourceVersion, as a list of at most one of the node's Pods states it
   * (a consistent read): the informer's check that the server has not gone backwards.
   */
  readonly podsResourceVersion: (nodeName: string) => Effect.Effect<string, KubeError>
  /**
   * Bookmarks on; fails with KubeGone on 410 or a 504 "Too large resource version" (HTTP or ERROR
   * event); a clean server close ends the stream. Pods are slim (`Schemas/Pod/Schema.ts`); one the slim
   * Pod refuses comes as an UNDECODABLE event and the stream goes on (INF-1).
   */
  readonly watchPods: (nodeName: string, resourceVersion: string) => Stream.Stream<PodWatchEvent, KubeError>
  readonly getPod: (namespace: string, name: string) => Effect.Effect<Pod, KubeError>
  /**
   * PUT pods/status with the slim Pod's metadata (its resourceVersion the precondition) and status,
   * not its spec (the server keeps the stored one); times at whole seconds.
   */
  readonly replacePodStatus: (pod: Pod) => Effect.Effect<Pod, KubeError>
  /**
   * Strategic merge patch of pods/status (`podStatusPatch`): the status fields the slim Pod holds
   * end as `status` has them, but the conditions, merged by type (those of `status` set, those of
   * `removedConditions`' types deleted, others left as stored); `uid` goes in as metadata.uid, so
   * a stored Pod of another uid is not written (kube-apiserver answers 422, `metadata.uid: field
   * is immutable` → KubeInvalid with that field: a patch has no uid precondition of its own).
   * Needs no read of the Pod and decodes nothing of the reply, so it works on a Pod the slim Pod
   * refuses (INF-1). 404 → KubeNotFound.
   */
  readonly patchPodStatus: (
    namespace: string,
    name: string,
    uid: string,
    status: PodStatus,
    removedConditions: ReadonlyArray<string>
  ) => Effect.Effect<void, KubeError>
  /** DELETE with gracePeriodSeconds 0 and a UID precondition. 404 → KubeNotFound, 409 → KubeConflict. */
  readonly deletePod: (namespace: string, name: string, uid: string) => Effect.Effect<void, KubeError>
  // nodes
  readonly getNode: (name: string) => Effect.Effect<Node, KubeError>
  readonly createNode: (node: Node) => Effect.Effect<Node, KubeError>
  /** Strategic-merge patch of nodes/status (Content-Type application/strategic-merge-patch+json). */
  readonly patchNodeStatus: (name: string, patch: object) => Effect.Effect<Node, KubeError>
  /**
   * Strategic-merge patch of the Node itself (its spec: the sandboxd taint). A
   * `metadata.resourceVersion` in the patch is a precondition: a stale one is a 409 (KubeConflict).
   */
  readonly patchNode: (name: string, patch: object) => Effect.Effect<Node, KubeError>
  // leases in kube-node-lease
  readonly getLease: (name: string) => Effect.Effect<Lease, KubeError>
  readonly createLease: (lease: Lease) => Effect.Effect<Lease, KubeError>
  /** PUT with the resourceVersion the lease carries; renewTime and acquireTime are written with six fractional digits. */
  readonly replaceLease: (lease: Lease) => Effect.Effect<Lease, KubeError>
  // events (core/v1)
  readonly createEvent: (event: Event) => Effect.Effect<Event, KubeError>
  /** A repeat of an aggregated event: merge patch (`count`, `lastTimestamp`, `message`), as client-go's recorder does (RBAC: events patch). */
  readonly patchEvent: (namespace: string, name: string, patch: object) => Effect.Effect<Event, KubeError>
  // owners (a quorum GET, no cache)
  readonly getOwner: (ref: OwnerRef) => Effect.Effect<OwnerObject, KubeError>
  // NodeInventory (cluster-scoped, extensions.agents.x-k8s.io/v1beta1): server-side apply, force, fieldManager vk-sandbox
  readonly applyNodeInventory: (inventory: object) => Effect.Effect<unknown, KubeError>
  // reviews for the kubelet API (KAPI-1 — who a kubelet API request comes from; KAPI-2 — every
  // request but /healthz is authorized for this node): nothing is stored, the reply is the answer
  /** A TokenReview (authentication.k8s.io/v1) of a bearer token sent to the kubelet port. */
  readonly reviewToken: (token: Redacted.Redacted<string>) => Effect.Effect<TokenVerdict, KubeError>
  /** A SubjectAccessReview (authorization.k8s.io/v1) of one `nodes/<subresource>` request. */
  readonly reviewAccess: (access: NodeAccess) => Effect.Effect<AccessVerdict, KubeError>
}>()("vk-sandbox/KubeApi") {}
