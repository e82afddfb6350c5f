/**
 * The Node as the daemon reads and writes it, decoded from the apiserver's JSON with Schema:
 * identity and resourceVersion (the taint patch's precondition), the taints, and the status
 * fields it registers and keeps fresh. Every other field of a served Node is dropped at decode
 * time. Nothing decoded here is written back whole: status goes out as a strategic-merge patch
 * (`Programs/Node/NodeObject.ts`), and the one list written back as read, the taints, keeps every
 * field a taint has (`timeAdded` included), because a taint patch replaces the whole list.
 * Times are the Pod's `Time`: a `Date` in memory, whole seconds on the wire.
 */
import { Option, Schema } from "effect"
import { Time } from "./Pod/Schema.ts"

const opt = Schema.optionalKey
const StringMap = Schema.Record(Schema.String, Schema.String)

export const Taint = Schema.Struct({
  key: Schema.String,
  value: opt(Schema.String),
  effect: Schema.String,
  timeAdded: opt(Time)
})
export type Taint = typeof Taint.Type

export const NodeCondition = Schema.Struct({
  type: Schema.String,
  status: Schema.String,
  reason: opt(Schema.String),
  message: opt(Schema.String),
  lastHeartbeatTime: opt(Time),
  lastTransitionTime: opt(Time)
})
export type NodeCondition = typeof NodeCondition.Type

export const NodeAddress = Schema.Struct({ type: Schema.String, address: Schema.String })
export type NodeAddress = typeof NodeAddress.Type

export const NodeSystemInfo = Schema.Struct({
  architecture: opt(Schema.String),
  operatingSystem: opt(Schema.String),
  kubeletVersion: opt(Schema.String),
  containerRuntimeVersion: opt(Schema.String),
  kubeProxyVersion: opt(Schema.String),
  kernelVersion: opt(Schema.String),
  osImage: opt(Schema.String),
  machineID: opt(Schema.String),
  systemUUID: opt(Schema.String),
  bootID: opt(Schema.String)
})
export type NodeSystemInfo = typeof NodeSystemInfo.Type

export const Node = Schema.Struct({
  apiVersion: opt(Schema.String),
  kind: opt(Schema.String),
  metadata: opt(Schema.Struct({
    name: opt(Schema.String),
    uid: opt(Schema.String),
    resourceVersion: opt(Schema.String),
    labels: opt(StringMap)
  })),
  spec: opt(Schema.Struct({ taints: opt(Schema.Array(Taint)) })),
  status: opt(Schema.Struct({
    phase: opt(Schema.String),
    conditions: opt(Schema.Array(NodeCondition)),
    addresses: opt(Schema.Array(NodeAddress)),
    capacity: opt(StringMap),
    allocatable: opt(StringMap),
    daemonEndpoints: opt(Schema.Struct({ kubeletEndpoint: opt(Schema.Struct({ Port: Schema.Number })) })),
    nodeInfo: opt(NodeSystemInfo)
  }))
})
export type Node = typeof Node.Type

const decodeNodeOption = Schema.decodeUnknownOption(Node)
const encodeNodeOption = Schema.encodeOption(Node)
const encodeTaintsOption = Schema.encodeOption(Schema.Array(Taint))

/** A served Node (parsed JSON, nulls dropped) → the Node; None when it is not one. */
export const decodeNode = (json: unknown): Option.Option<Node> => decodeNodeOption(json)

/** The JSON body of a create: apiVersion and kind set, times at whole seconds. */
export const encodeNode = (node: Node): Option.Option<unknown> => encodeNodeOption({ ...node, apiVersion: "v1", kind: "Node" })

/** Taints as a patch carries them (JSON, `timeAdded` at whole seconds). */
export const encodeTaints = (taints: ReadonlyArray<Taint>): Option.Option<unknown> => encodeTaintsOption(taints)
