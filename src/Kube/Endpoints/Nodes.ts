/**
 * The Node and its Lease. Every call here is on the node's liveness path: no limiter token
 * (NODE-5 — heartbeats do not wait behind Pod work) and the shorter timeout (NODE-6 — a heartbeat
 * call gives up within one renew interval): registration, the status heartbeat, the Node's
 * re-creation and the sandboxd taint as much as the Lease renewals, which read and re-create the
 * Node when the Lease is missing. Replies are read with the apiserver's `null`s left out.
 */
import { HttpMethod, PatchStrategy } from "@kubernetes/client-node"
import { Effect } from "effect"
import { decodeLease, encodeLease, type Lease } from "../../Schemas/Lease.ts"
import { decodeNode, encodeNode, type Node } from "../../Schemas/Node.ts"
import type { KubeError } from "../../Services/KubeApi.ts"
import { decoded, encoded, invalid } from "../Status.ts"
import type { Transport } from "../Transport.ts"

export const leaseNamespace = "kube-node-lease"

const nodePath = (name: string) => `/api/v1/nodes/${encodeURIComponent(name)}`
const leasesPath = `/apis/coordination.k8s.io/v1/namespaces/${leaseNamespace}/leases`
const node = (operation: string) => decoded(operation, "node", decodeNode)
const lease = (operation: string) => decoded(operation, "lease", decodeLease)

/** What every call here sends besides its own: replies without `null`s, the liveness lane. */
const liveness = { dropNulls: true, liveness: true } as const

export const make = ({ raw }: Transport) => {
  const getNode = (name: string): Effect.Effect<Node, KubeError> =>
    raw("getNode", { method: HttpMethod.GET, path: nodePath(name), ...liveness }).pipe(Effect.flatMap(node("getNode")))

  const createNode = (body: Node): Effect.Effect<Node, KubeError> =>
    encoded("createNode", "node", encodeNode(body)).pipe(
      Effect.flatMap((json) => raw("createNode", { method: HttpMethod.POST, path: "/api/v1/nodes", body: json, ...liveness })),
      Effect.flatMap(node("createNode"))
    )

  const patchNodeStatus = (name: string, patch: object): Effect.Effect<Node, KubeError> =>
    raw("patchNodeStatus", {
      method: HttpMethod.PATCH,
      path: `${nodePath(name)}/status`,
      body: patch,
      contentType: PatchStrategy.StrategicMergePatch,
      ...liveness
    }).pipe(Effect.flatMap(node("patchNodeStatus")))

  const patchNode = (name: string, patch: object): Effect.Effect<Node, KubeError> =>
    raw("patchNode", {
      method: HttpMethod.PATCH,
      path: nodePath(name),
      body: patch,
      contentType: PatchStrategy.StrategicMergePatch,
      ...liveness
    }).pipe(Effect.flatMap(node("patchNode")))

  const getLease = (name: string): Effect.Effect<Lease, KubeError> =>
    raw("getLease", { method: HttpMethod.GET, path: `${leasesPath}/${encodeURIComponent(name)}`, ...liveness }).pipe(
      Effect.flatMap(lease("getLease"))
    )

  const createLease = (body: Lease): Effect.Effect<Lease, KubeError> =>
    encoded("createLease", "lease", encodeLease(body)).pipe(
      Effect.flatMap((json) => raw("createLease", { method: HttpMethod.POST, path: leasesPath, body: json, ...liveness })),
      Effect.flatMap(lease("createLease"))
    )

  const replaceLease = (body: Lease): Effect.Effect<Lease, KubeError> => {
    const name = body.metadata?.name
    if (name === undefined) return invalid("replaceLease", "lease without metadata.name")
    return encoded("replaceLease", "lease", encodeLease(body)).pipe(
      Effect.flatMap((json) =>
        raw("replaceLease", { method: HttpMethod.PUT, path: `${leasesPath}/${encodeURIComponent(name)}`, body: json, ...liveness })
      ),
      Effect.flatMap(lease("replaceLease"))
    )
  }

  return { getNode, createNode, patchNodeStatus, patchNode, getLease, createLease, replaceLease }
}
