/**
 * The slim Pod: the only shape of a Pod the daemon keeps, decoded straight from the apiserver's
 * JSON. It holds the fields the daemon reads (identity, resourceVersion, labels, annotations,
 * owner references, finalizers, deletion fields, container names and images, the other fields a
 * Pod update may change, restart policy) and the status fields it writes and compares. Every
 * other field of a served Pod is dropped at decode time, so a cache of N Pods costs N small plain
 * objects, not N client-node object graphs.
 *
 * Field names and nesting are the apiserver's, so a slim Pod is also a valid (partial) `V1Pod`
 * for code typed against client-node. Times decode to `Date` and encode at whole seconds, the
 * precision the apiserver stores a Pod's times at: what the daemon writes is then exactly what
 * the server keeps, and a write of an unchanged status compares equal to the stored one.
 */
import { Option, Schema, SchemaTransformation } from "effect"

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i

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

export const PodSpec = Schema.Struct({
  nodeName: opt(Schema.String),
  restartPolicy: opt(Schema.String),
  containers: list(Container),
  initContainers: opt(list(Container)),
  ephemeralContainers: opt(list(Container)),
  activeDeadlineSeconds: opt(Schema.Number),
  tolerations: opt(list(Toleration))
})

export const PodCondition = Schema.Struct({
  type: Schema.String,
  status: Schema.String,
  reason: opt(Schema.String),
  message: opt(Schema.String),
  lastProbeTime: opt(Time),
  lastTransitionTime: opt(Time)
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

/**
 * The apiserver writes `null` for an unset time or list; the slim Pod leaves such a key out.
 * In place, on a value just parsed from JSON that nothing else holds (returned for chaining):
 * a copy of the whole served Pod (managedFields and all) per event was as costly as the parse
 * itself, and a `JSON.parse` reviver is slower still (it calls back for every value). `null`
 * items of an array stay, as they were parsed.
 */
export const dropNulls = (value: unknown): unknown => {
  if (value === null || typeof value !== "object") return value
  if (Array.isArray(value)) {
    for (const item of value) dropNulls(item)
    return value
  }
  const record = value as Record<string, unknown>
  for (const key in record) {
    const field = record[key]
    if (field === null) delete record[key]
    else if (typeof field === "object") dropNulls(field)
  }
  return value
}

const decodePodOption = Schema.decodeUnknownOption(Pod)
const decodeStatusType = Schema.decodeUnknownOption(Schema.toType(PodStatus))
const encodePodOption = Schema.encodeOption(Pod)

// ---- the slim projection without the Schema walk ---------------------------------------------
// The Schema decode of a Pod builds an Exit per field; on a 10,000-Pod list that walk (and the
// `dropNulls` copy of every served field before it) cost more than the list's own JSON.parse. The
// readers below build the very same object for the shape the apiserver serves, reading only the
// fields above and skipping `null`s in place. Anything else they meet (a wrong type, a key
// `__proto__`) gives up on the whole Pod, which is then decoded by the Schema as before: the
// result is always the Schema's own (test/Schemas/Pod.test.ts compares the two on generated Pods).

/** "Not the usual shape": the Pod goes to the Schema decode. */
const giveUp: unique symbol = Symbol("giveUp")
type Read<A> = (u: unknown) => A | typeof giveUp

const isPlainRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) && !Object.hasOwn(u, "__proto__")

const readString: Read<string> = (u) => (typeof u === "string" ? u : giveUp)
const readNumber: Read<number> = (u) => (typeof u === "number" ? u : giveUp)
const readBoolean: Read<boolean> = (u) => (typeof u === "boolean" ? u : giveUp)
const readTime: Read<Date> = (u) => {
  if (typeof u !== "string" || !rfc3339.test(u)) return giveUp
  const date = new Date(u)
  return Number.isNaN(date.getTime()) ? giveUp : date
}
const readStringMap: Read<Record<string, string>> = (u) => {
  if (!isPlainRecord(u)) return giveUp
  const out: Record<string, string> = {}
  for (const key in u) {
    const value = u[key]
    if (value === null) continue
    if (typeof value !== "string") return giveUp
    out[key] = value
  }
  return out
}
const readList = <A>(item: Read<A>): Read<Array<A>> => (u) => {
  if (!Array.isArray(u)) return giveUp
  const out: Array<A> = new Array(u.length)
  for (let i = 0; i < u.length; i++) {
    const value = item(u[i])
    if (value === giveUp) return giveUp
    out[i] = value
  }
  return out
}
/** Fields in the Schema's order (the decoded object's key order); `true` = required. */
const readStruct = <A>(fields: ReadonlyArray<readonly [string, Read<unknown>, boolean?]>): Read<A> => (u) => {
  if (!isPlainRecord(u)) return giveUp
  const out: Record<string, unknown> = {}
  for (const [key, read, required] of fields) {
    const value = u[key]
    if (value === undefined || value === null) {
      if (required === true) return giveUp
      continue
    }
    const decoded = read(value)
    if (decoded === giveUp) return giveUp
    out[key] = decoded
  }
  return out as A
}

const readOwnerReference = readStruct([
  ["apiVersion", readString, true],
  ["kind", readString, true],
  ["name", readString, true],
  ["uid", readString, true],
  ["controller", readBoolean],
  ["blockOwnerDeletion", readBoolean]
])
const readMetadata = readStruct([
  ["name", readString],
  ["generateName", readString],
  ["namespace", readString],
  ["uid", readString],
  ["resourceVersion", readString],
  ["creationTimestamp", readTime],
  ["deletionTimestamp", readTime],
  ["deletionGracePeriodSeconds", readNumber],
  ["labels", readStringMap],
  ["annotations", readStringMap],
  ["ownerReferences", readList(readOwnerReference)],
  ["finalizers", readList(readString)]
])
const readContainer = readStruct([["name", readString, true], ["image", readString]])
const readToleration = readStruct([
  ["key", readString],
  ["operator", readString],
  ["value", readString],
  ["effect", readString],
  ["tolerationSeconds", readNumber]
])
const readSpec = readStruct([
  ["nodeName", readString],
  ["restartPolicy", readString],
  ["containers", readList(readContainer), true],
  ["initContainers", readList(readContainer)],
  ["ephemeralContainers", readList(readContainer)],
  ["activeDeadlineSeconds", readNumber],
  ["tolerations", readList(readToleration)]
])
const readCondition = readStruct([
  ["type", readString, true],
  ["status", readString, true],
  ["reason", readString],
  ["message", readString],
  ["lastProbeTime", readTime],
  ["lastTransitionTime", readTime]
])
const readContainerState = readStruct([
  ["running", readStruct([["startedAt", readTime]])],
  ["waiting", readStruct([["reason", readString], ["message", readString]])],
  ["terminated", readStruct([
    ["exitCode", readNumber, true],
    ["signal", readNumber],
    ["reason", readString],
    ["message", readString],
    ["startedAt", readTime],
    ["finishedAt", readTime],
    ["containerID", readString]
  ])]
])
const readContainerStatus = readStruct([
  ["name", readString, true],
  ["ready", readBoolean, true],
  ["started", readBoolean],
  ["restartCount", readNumber, true],
  ["image", readString, true],
  ["imageID", readString, true],
  ["containerID", readString],
  ["state", readContainerState],
  ["lastState", readContainerState]
])
const readIp = readStruct([["ip", readString, true]])
const readStatus = readStruct([
  ["phase", readString],
  ["reason", readString],
  ["message", readString],
  ["conditions", readList(readCondition)],
  ["hostIP", readString],
  ["hostIPs", readList(readIp)],
  ["podIP", readString],
  ["podIPs", readList(readIp)],
  ["startTime", readTime],
  ["qosClass", readString],
  ["containerStatuses", readList(readContainerStatus)]
])
const readPod = readStruct<Pod>([
  ["apiVersion", readString],
  ["kind", readString],
  ["metadata", readMetadata],
  ["spec", readSpec],
  ["status", readStatus]
])

/**
 * A served Pod (parsed JSON; the apiserver's `null`s may be left in, they read as absent) → the
 * slim Pod; None when it is not one. A Pod of another shape goes to the Schema after `dropNulls`,
 * which drops its `null`s in place: pass only a value just parsed that nothing else holds.
 */
export const decodePod = (json: unknown): Option.Option<Pod> => {
  const pod = readPod(json)
  return pod === giveUp ? decodePodOption(dropNulls(json)) : Option.some(pod)
}

/** The Schema decode alone (what `decodePod` gives for every input), for the tests that compare the two. */
export const decodePodBySchema = (json: unknown): Option.Option<Pod> => decodePodOption(dropNulls(json))

/** A status built in memory (client-node typed, `Date` times) → the slim status, unknown fields dropped. */
export const slimStatus = (status: unknown): Option.Option<PodStatus> => decodeStatusType(status ?? {})

/** The JSON body of a write: times at whole seconds. */
export const encodePod = (pod: Pod): Option.Option<unknown> => encodePodOption(pod)

/**
 * A deep copy of plain data such as a Pod: objects (class instances included) and arrays are new,
 * keys holding `undefined` are left out, a `Date` is a new `Date`, and strings and other
 * primitives are shared. `structuredClone` would also re-create every string (the serializer
 * does not share them), so each copy of a Pod kept its own copies of the same names and images.
 */
export const copyPlain = <A>(value: A): A => copyValue(value) as A

const copyValue = (value: unknown): unknown => {
  if (value === null || typeof value !== "object") return value
  if (value instanceof Date) return new Date(value.getTime())
  if (Array.isArray(value)) return value.map(copyValue)
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const field = (value as Record<string, unknown>)[key]
    if (field !== undefined) out[key] = copyValue(field)
  }
  return out
}

/** `copyPlain` of an object literal whose `undefined` members it leaves out: the optional type's. */
const copyDefined = <T>(value: { readonly [K in keyof T]-?: T[K] | undefined }): T => copyPlain(value) as T

const containersOf = (containers: ReadonlyArray<typeof Container.Type>) =>
  containers.map((c) => (c.image === undefined ? { name: c.name } : { name: c.name, image: c.image }))

/**
 * What the provider keeps of a status it was handed: the phase (the verifier asks whether the Pod
 * was Running) and the reason and message a Pod without a settled claim reports as its own
 * (UPD-4). Nothing else: every other status the provider reports is built from the claim
 * (`Provider/Status.ts`), and the conditions, container statuses, IPs and times of a Running
 * Pod were about as much memory per Pod as the rest of what the table keeps.
 */
export const keptStatusOf = (status: PodStatus): PodStatus =>
  copyDefined<Pick<PodStatus, "phase" | "reason" | "message">>({
    phase: status.phase,
    reason: status.reason,
    message: status.message
  })

/**
 * What the provider keeps of a Pod it accepted (the claim table's one Pod per key): identity,
 * labels, annotations, owners and deletion fields; the containers' names and images and the other
 * spec fields an update compares; of the status, `keptStatusOf`. Nothing else of the Pod it was
 * handed, and a copy (`copyPlain`), so whoever handed it may change theirs.
 */
export const acceptedPodOf = (pod: Pod): Pod => {
  const m = pod.metadata
  const s = pod.spec
  const metadata = m === undefined ? undefined : copyDefined<typeof PodMetadata.Type>({
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    deletionTimestamp: m.deletionTimestamp,
    deletionGracePeriodSeconds: m.deletionGracePeriodSeconds,
    labels: m.labels,
    annotations: m.annotations,
    ownerReferences: m.ownerReferences,
    generateName: undefined,
    creationTimestamp: undefined,
    finalizers: undefined
  })
  const spec = s === undefined ? undefined : copyDefined<typeof PodSpec.Type>({
    restartPolicy: s.restartPolicy,
    activeDeadlineSeconds: s.activeDeadlineSeconds,
    tolerations: s.tolerations,
    containers: containersOf(s.containers ?? []),
    initContainers: s.initContainers === undefined ? undefined : containersOf(s.initContainers),
    ephemeralContainers: s.ephemeralContainers === undefined ? undefined : containersOf(s.ephemeralContainers),
    nodeName: undefined
  })
  return {
    ...(metadata === undefined ? {} : { metadata }),
    ...(spec === undefined ? {} : { spec }),
    ...(pod.status === undefined ? {} : { status: keptStatusOf(pod.status) })
  }
}
