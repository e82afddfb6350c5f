/**
 * The slim Pod: the only shape of a Pod the daemon keeps, decoded straight from the apiserver's
 * JSON with only the fields the daemon reads or writes; everything else is dropped at decode time.
 * Field names and nesting are the apiserver's (a slim Pod is a valid partial `V1Pod`). Times
 * decode to `Date` and encode at whole seconds, the apiserver's precision, so a write of an
 * unchanged status compares equal to the stored one.
 * The one fast reader is `Reader.ts` beside it; `Decode.ts` reads a served Pod with both.
 */
import { Schema, SchemaTransformation } from "effect"

/** RFC 3339 as the Schema checks a Pod time (`Reader.ts` checks the same). */
export const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i

/** RFC 3339 in UTC at second precision, as the apiserver prints a Pod's times. */
export const formatTime = (date: Date): string => {
  const ms = date.getTime()
  return Number.isNaN(ms) ? "" : new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d+Z$/, "Z")
}

/** A Pod time: an RFC 3339 string on the wire, a `Date` in memory, whole seconds when written. */
export const Time = Schema.String.check(Schema.isPattern(rfc3339)).pipe(
  Schema.decodeTo(
    Schema.Date,
    SchemaTransformation.transform({ decode: (text: string) => new Date(text), encode: formatTime })
  )
)

const opt = Schema.optionalKey
const StringMap = Schema.Record(Schema.String, Schema.String)
const list = <S extends Schema.Top>(item: S) => Schema.mutable(Schema.Array(item))

export const OwnerReference = Schema.Struct({
  apiVersion: Schema.String,
  kind: Schema.String,
  name: Schema.String,
  uid: Schema.String,
  controller: opt(Schema.Boolean),
  blockOwnerDeletion: opt(Schema.Boolean)
})

export const PodMetadata = Schema.Struct({
  name: opt(Schema.String),
  // kept so a status write (whose metadata replaces the stored one) leaves it as it is
  generateName: opt(Schema.String),
  namespace: opt(Schema.String),
  uid: opt(Schema.String),
  resourceVersion: opt(Schema.String),
  creationTimestamp: opt(Time),
  deletionTimestamp: opt(Time),
  deletionGracePeriodSeconds: opt(Schema.Number),
  labels: opt(StringMap),
  annotations: opt(StringMap),
  ownerReferences: opt(list(OwnerReference)),
  finalizers: opt(list(Schema.String))
})

/** A container as the daemon sees it: its name, and its image (the one container field an update may change). */
export const Container = Schema.Struct({ name: Schema.String, image: opt(Schema.String) })

export const Toleration = Schema.Struct({
  key: opt(Schema.String),
  operator: opt(Schema.String),
  value: opt(Schema.String),
  effect: opt(Schema.String),
  tolerationSeconds: opt(Schema.Number)
})

/**
 * A readiness gate: the Pod is Ready only once its condition of this type is True (ST-14 — a Pod
 * with readiness gates is Ready only when every gate is True).
 */
export const ReadinessGate = Schema.Struct({ conditionType: Schema.String })

export const PodSpec = Schema.Struct({
  nodeName: opt(Schema.String),
  restartPolicy: opt(Schema.String),
  containers: list(Container),
  initContainers: opt(list(Container)),
  ephemeralContainers: opt(list(Container)),
  activeDeadlineSeconds: opt(Schema.Number),
  tolerations: opt(list(Toleration)),
  readinessGates: opt(list(ReadinessGate))
})

export const PodCondition = Schema.Struct({
  type: Schema.String,
  status: Schema.String,
  reason: opt(Schema.String),
  message: opt(Schema.String),
  lastProbeTime: opt(Time),
  lastTransitionTime: opt(Time),
  // Another writer's condition may carry it (ST-12 — other writers' Pod conditions survive status
  // writes): kept so a status write leaves it as it is.
  observedGeneration: opt(Schema.Number)
})

export const ContainerState = Schema.Struct({
  running: opt(Schema.Struct({ startedAt: opt(Time) })),
  waiting: opt(Schema.Struct({ reason: opt(Schema.String), message: opt(Schema.String) })),
  terminated: opt(Schema.Struct({
    exitCode: Schema.Number,
    signal: opt(Schema.Number),
    reason: opt(Schema.String),
    message: opt(Schema.String),
    startedAt: opt(Time),
    finishedAt: opt(Time),
    containerID: opt(Schema.String)
  }))
})

export const ContainerStatus = Schema.Struct({
  name: Schema.String,
  ready: Schema.Boolean,
  started: opt(Schema.Boolean),
  restartCount: Schema.Number,
  image: Schema.String,
  imageID: Schema.String,
  containerID: opt(Schema.String),
  state: opt(ContainerState),
  lastState: opt(ContainerState)
})

const Ip = Schema.Struct({ ip: Schema.String })

export const PodStatus = Schema.Struct({
  phase: opt(Schema.String),
  reason: opt(Schema.String),
  message: opt(Schema.String),
  conditions: opt(list(PodCondition)),
  hostIP: opt(Schema.String),
  hostIPs: opt(list(Ip)),
  podIP: opt(Schema.String),
  podIPs: opt(list(Ip)),
  startTime: opt(Time),
  qosClass: opt(Schema.String),
  containerStatuses: opt(list(ContainerStatus))
})
export type PodStatus = typeof PodStatus.Type

export const Pod = Schema.Struct({
  apiVersion: opt(Schema.String),
  kind: opt(Schema.String),
  metadata: opt(PodMetadata),
  spec: opt(PodSpec),
  status: opt(PodStatus)
})
export type Pod = typeof Pod.Type
