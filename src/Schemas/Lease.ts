/**
 * The node Lease (coordination.k8s.io/v1) as the daemon reads and writes it, decoded from the
 * apiserver's JSON with Schema. A renewal is a PUT of the whole object, which replaces what the
 * server stores: so the schema keeps every field of a Lease's spec and the metadata a PUT would
 * otherwise clear (labels, annotations, owners, finalizers), not only the ones the daemon sets.
 * renewTime and acquireTime are MicroTimes (`Schemas/MicroTime.ts`): six fractional digits out.
 */
import { Option, Schema } from "effect"
import { MicroTime } from "./MicroTime.ts"
import { OwnerReference } from "./Pod/Schema.ts"

const opt = Schema.optionalKey
const StringMap = Schema.Record(Schema.String, Schema.String)

export const LeaseMetadata = Schema.Struct({
  name: opt(Schema.String),
  namespace: opt(Schema.String),
  uid: opt(Schema.String),
  resourceVersion: opt(Schema.String),
  labels: opt(StringMap),
  annotations: opt(StringMap),
  ownerReferences: opt(Schema.Array(OwnerReference)),
  finalizers: opt(Schema.Array(Schema.String))
})

export const LeaseSpec = Schema.Struct({
  holderIdentity: opt(Schema.String),
  leaseDurationSeconds: opt(Schema.Number),
  acquireTime: opt(MicroTime),
  renewTime: opt(MicroTime),
  leaseTransitions: opt(Schema.Number),
  strategy: opt(Schema.String),
  preferredHolder: opt(Schema.String)
})

export const Lease = Schema.Struct({
  apiVersion: opt(Schema.String),
  kind: opt(Schema.String),
  metadata: opt(LeaseMetadata),
  spec: opt(LeaseSpec)
})
export type Lease = typeof Lease.Type

const decodeLeaseOption = Schema.decodeUnknownOption(Lease)
const encodeLeaseOption = Schema.encodeOption(Lease)

/** A served Lease (parsed JSON, nulls dropped) → the Lease; None when it is not one. */
export const decodeLease = (json: unknown): Option.Option<Lease> => decodeLeaseOption(json)

/** The JSON body of a write: apiVersion and kind set, MicroTimes with six digits. */
export const encodeLease = (lease: Lease): Option.Option<unknown> =>
  encodeLeaseOption({ ...lease, apiVersion: "coordination.k8s.io/v1", kind: "Lease" })
