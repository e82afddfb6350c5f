/**
 * The node's Lease in `kube-node-lease` (CHK-10 — the node Lease; LS-05 — lease fast path; LS-09 —
 * lease owner reference): created with holderIdentity = node, 40 s duration and an owner reference
 * to the Node; renewed by PUT of the cached copy with a fresh renewTime (`Schemas/Lease.ts` writes
 * six fractional digits). A 409 or 404 drops the cache and goes through GET (and POST when
 * missing), at most five tries per sync.
 */
import { Clock, Effect, Option, Ref } from "effect"
import type { Lease } from "../../Schemas/Lease.ts"
import { microTimeOf } from "../../Schemas/MicroTime.ts"
import type { OwnerReference } from "../../Schemas/Pod/Schema.ts"
import { type KubeError, KubeApi } from "../../Services/KubeApi.ts"
import type { NodeIdentity } from "../../Services/NodeController.ts"

export const LEASE_DURATION_SECONDS = 40
const MAX_ATTEMPTS = 5

export const nodeOwnerReference = (node: NodeIdentity): typeof OwnerReference.Type => ({
  apiVersion: "v1",
  kind: "Node",
  name: node.name,
  uid: node.uid
})

export const newLease = (node: NodeIdentity, now: number): Lease => ({
  apiVersion: "coordination.k8s.io/v1",
  kind: "Lease",
  metadata: { name: node.name, namespace: "kube-node-lease", ownerReferences: [nodeOwnerReference(node)] },
  spec: {
    holderIdentity: node.name,
    leaseDurationSeconds: LEASE_DURATION_SECONDS,
    renewTime: microTimeOf(now)
  }
})

/**
 * A renewal of an existing lease: new renewTime; the owner reference set to the current Node when
 * it names no Node or an older one (a re-created Node has a new UID). holderIdentity is left as
 * the server has it (LS-09) unless it is missing.
 */
export const renewedLease = (lease: Lease, node: NodeIdentity, now: number): Lease => {
  const owners = lease.metadata?.ownerReferences ?? []
  const ownsCurrent = owners.some((o) => o.kind === "Node" && o.uid === node.uid)
  const ownerReferences = ownsCurrent
    ? owners
    : [...owners.filter((o) => !(o.kind === "Node" && o.apiVersion === "v1")), nodeOwnerReference(node)]
  return {
    ...lease,
    metadata: { ...lease.metadata, ownerReferences },
    spec: {
      ...lease.spec,
      holderIdentity: lease.spec?.holderIdentity ?? node.name,
      renewTime: microTimeOf(now)
    }
  }
}

export interface LeaseRenewer {
  /** One sync: renew (or create) the lease, retrying conflicts up to five times. */
  readonly sync: Effect.Effect<void, KubeError>
  /** The lease as last written by us; None before the first sync or after a conflict. */
  readonly cached: Effect.Effect<Option.Option<Lease>>
}

/**
 * `currentNode` yields the Node the lease must point at. `confirmNode` is called when the lease
 * is missing: a Node deleted while we run takes its lease with it (garbage collection through the
 * owner reference), so the Node is checked (and re-created) before a new lease is made for it.
 */
export const makeLeaseRenewer = Effect.fnUntraced(function*(deps: {
  readonly currentNode: Effect.Effect<NodeIdentity, KubeError>
  readonly confirmNode: Effect.Effect<NodeIdentity, KubeError>
}) {
  const kube = yield* KubeApi
  const cache = yield* Ref.make(Option.none<Lease>())

  const remember = (lease: Lease) => Ref.set(cache, Option.some(lease))

  /** Slow path: GET; on 404 confirm the Node and POST; else PUT what the server has. */
  const slowPath = Effect.gen(function*() {
    const existing = yield* kube.getLease(yield* deps.currentNode.pipe(Effect.map((n) => n.name))).pipe(
      Effect.map(Option.some),
      Effect.catchTag("KubeNotFound", () => Effect.succeed(Option.none<Lease>()))
    )
    const now = yield* Clock.currentTimeMillis
    if (Option.isNone(existing)) {
      const node = yield* deps.confirmNode
      const created = yield* kube.createLease(newLease(node, now))
      yield* Effect.logInfo("node lease created").pipe(Effect.annotateLogs({ node: node.name, uid: node.uid }))
      return yield* remember(created)
    }
    const node = yield* deps.currentNode
    return yield* remember(yield* kube.replaceLease(renewedLease(existing.value, node, now)))
  })

  /** Fast path: PUT the cached copy without a GET (LS-05). */
  const fastPath = (cached: Lease) =>
    Effect.gen(function*() {
      const node = yield* deps.currentNode
      const now = yield* Clock.currentTimeMillis
      return yield* remember(yield* kube.replaceLease(renewedLease(cached, node, now)))
    })

  const attempt = Effect.gen(function*() {
    const cached = yield* Ref.get(cache)
    return yield* Option.match(cached, { onNone: () => slowPath, onSome: fastPath })
  }).pipe(
    // A stale cache (409) or a vanished lease (404) is re-read on the next try.
    Effect.tapError((e) =>
      e._tag === "KubeConflict" || e._tag === "KubeNotFound" ? Ref.set(cache, Option.none()) : Effect.void
    )
  )

  const sync = attempt.pipe(
    Effect.retry({
      times: MAX_ATTEMPTS - 1,
      while: (e) => e._tag === "KubeConflict" || e._tag === "KubeNotFound"
    })
  )

  return { sync, cached: Ref.get(cache) } satisfies LeaseRenewer
})
