/**
 * The slim Pod: the only shape of a Pod the daemon keeps, decoded straight from the apiserver's
 * JSON with only the fields the daemon reads or writes; everything else is dropped at decode time.
 * Field names and nesting are the apiserver's (a slim Pod is a valid partial `V1Pod`). Times
 * decode to `Date` and encode at whole seconds, the apiserver's precision, so a write of an
 * unchanged status compares equal to the stored one.
 */
import { Option, Result, Schema, SchemaTransformation } from "effect"
import { civilSecondsAt } from "./CivilTime.ts"
import { scrubText } from "./Scrub.ts"

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

// ---- the one fast reader ---------------------------------------------------------------------
// The Schema decode of a Pod builds an Exit per field; on a 10,000-Pod list that walk (and the
// `dropNulls` copy of every served field before it) cost about as much again as the rest of the
// list's read. `readPod` builds the very same object for the shape the apiserver serves, reading
// only the fields above and skipping `null`s in place. Anything else it meets (a wrong type, a
// key `__proto__`) gives up on the whole Pod, which is then decoded by the Schema: the result is
// always the Schema's own (test/Schemas/Pod.test.ts proves the two equal with fast-check).
//
// Each struct's reader names its fields in code, in the Schema's order (the decoded object's key
// order), rather than walking a table of (key, reader) pairs: a load or store whose key changes
// from one call to the next is a slow generic property access in V8, one that always names the
// same field a fast cached one (the table walk took twice the time on a 10,000-Pod list).

/** "Not the usual shape": the Pod goes to the Schema decode. */
const giveUp: unique symbol = Symbol("giveUp")
type GiveUp = typeof giveUp
type Out = Record<string, unknown>
/** A field read: its value, `undefined` when unset (absent or the apiserver's `null`), or `giveUp`. */
type Read<A> = A | undefined | GiveUp

const isPlainRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) && !Object.hasOwn(u, "__proto__")

/**
 * One string for each value of the fields that repeat from Pod to Pod (namespace, node, images,
 * condition types, phase, QoS class, owner kinds): `JSON.parse` shares a string value only when
 * it is very short, so every cached Pod kept its own "PodScheduled", "BestEffort" and image name.
 * Bounded: when full it starts over (the strings already shared stay shared).
 */
const shared = new Map<string, string>()
const SHARED_MAX = 4096
const share = (text: string): string => {
  const known = shared.get(text)
  if (known !== undefined) return known
  if (shared.size >= SHARED_MAX) shared.clear()
  shared.set(text, text)
  return text
}

const isUnset = (u: unknown): u is null | undefined => u === undefined || u === null
/** A required field: present and of its type. */
const isMissing = (read: unknown): read is undefined | GiveUp => read === undefined || read === giveUp

const text = (u: unknown): Read<string> => (isUnset(u) ? undefined : typeof u === "string" ? u : giveUp)
const sharedText = (u: unknown): Read<string> => (isUnset(u) ? undefined : typeof u === "string" ? share(u) : giveUp)
const count = (u: unknown): Read<number> => (isUnset(u) ? undefined : typeof u === "number" ? u : giveUp)
const flag = (u: unknown): Read<boolean> => (isUnset(u) ? undefined : typeof u === "boolean" ? u : giveUp)
/** A nested struct read by `read`. */
const struct = (u: unknown, read: (record: Record<string, unknown>) => Out | GiveUp): Read<Out> =>
  isUnset(u) ? undefined : isPlainRecord(u) ? read(u) : giveUp

/**
 * A Pod time. The apiserver prints every time as `YYYY-MM-DDTHH:MM:SSZ`: such a text naming a real
 * instant is read by position (the instant `new Date(text)` gives); any other text (fractions,
 * offsets, lower-case letters, out-of-range fields) takes the Schema's own path, the pattern and
 * then `new Date(text)`.
 */
const time = (u: unknown): Read<Date> => {
  if (isUnset(u)) return undefined
  if (typeof u !== "string") return giveUp
  const millis = u.length === 20 && u.charCodeAt(19) === 90 ? civilSecondsAt(u, 0) : NaN
  if (!Number.isNaN(millis)) return new Date(millis)
  if (!rfc3339.test(u)) return giveUp
  const date = new Date(u)
  return Number.isNaN(date.getTime()) ? giveUp : date
}

const stringMap = (u: unknown): Read<Record<string, string>> => {
  if (isUnset(u)) return undefined
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

const strings = (u: unknown): Read<Array<string>> => {
  if (isUnset(u)) return undefined
  if (!Array.isArray(u)) return giveUp
  const out: Array<string> = new Array(u.length)
  for (let i = 0; i < u.length; i++) {
    const value: unknown = u[i]
    if (typeof value !== "string") return giveUp
    out[i] = value
  }
  return out
}

/** A list of structs read by `read`; one item that is not one gives up on the list. */
const listOf = (u: unknown, read: (record: Record<string, unknown>) => Out | GiveUp): Read<Array<Out>> => {
  if (isUnset(u)) return undefined
  if (!Array.isArray(u)) return giveUp
  const out: Array<Out> = new Array(u.length)
  for (let i = 0; i < u.length; i++) {
    const item: unknown = u[i]
    const value = isPlainRecord(item) ? read(item) : giveUp
    if (value === giveUp) return giveUp
    out[i] = value
  }
  return out
}

const readOwnerReference = (u: Record<string, unknown>): Out | GiveUp => {
  const apiVersion = sharedText(u.apiVersion), kind = sharedText(u.kind), name = text(u.name), uid = text(u.uid)
  const controller = flag(u.controller), blockOwnerDeletion = flag(u.blockOwnerDeletion)
  if (isMissing(apiVersion) || isMissing(kind) || isMissing(name) || isMissing(uid)) return giveUp
  if (controller === giveUp || blockOwnerDeletion === giveUp) return giveUp
  const out: Out = { apiVersion, kind, name, uid }
  if (controller !== undefined) out.controller = controller
  if (blockOwnerDeletion !== undefined) out.blockOwnerDeletion = blockOwnerDeletion
  return out
}

const readMetadata = (u: Record<string, unknown>): Out | GiveUp => {
  const name = text(u.name), generateName = text(u.generateName), namespace = sharedText(u.namespace), uid = text(u.uid)
  const resourceVersion = text(u.resourceVersion), creationTimestamp = time(u.creationTimestamp)
  const deletionTimestamp = time(u.deletionTimestamp), deletionGracePeriodSeconds = count(u.deletionGracePeriodSeconds)
  const labels = stringMap(u.labels), annotations = stringMap(u.annotations)
  const ownerReferences = listOf(u.ownerReferences, readOwnerReference), finalizers = strings(u.finalizers)
  if (
    name === giveUp || generateName === giveUp || namespace === giveUp || uid === giveUp || resourceVersion === giveUp ||
    creationTimestamp === giveUp || deletionTimestamp === giveUp || deletionGracePeriodSeconds === giveUp ||
    labels === giveUp || annotations === giveUp || ownerReferences === giveUp || finalizers === giveUp
  ) return giveUp
  const out: Out = {}
  if (name !== undefined) out.name = name
  if (generateName !== undefined) out.generateName = generateName
  if (namespace !== undefined) out.namespace = namespace
  if (uid !== undefined) out.uid = uid
  if (resourceVersion !== undefined) out.resourceVersion = resourceVersion
  if (creationTimestamp !== undefined) out.creationTimestamp = creationTimestamp
  if (deletionTimestamp !== undefined) out.deletionTimestamp = deletionTimestamp
  if (deletionGracePeriodSeconds !== undefined) out.deletionGracePeriodSeconds = deletionGracePeriodSeconds
  if (labels !== undefined) out.labels = labels
  if (annotations !== undefined) out.annotations = annotations
  if (ownerReferences !== undefined) out.ownerReferences = ownerReferences
  if (finalizers !== undefined) out.finalizers = finalizers
  return out
}

const readContainer = (u: Record<string, unknown>): Out | GiveUp => {
  const name = sharedText(u.name), image = sharedText(u.image)
  if (isMissing(name) || image === giveUp) return giveUp
  return image === undefined ? { name } : { name, image }
}

const readToleration = (u: Record<string, unknown>): Out | GiveUp => {
  const key = text(u.key), operator = text(u.operator), value = text(u.value), effect = text(u.effect)
  const tolerationSeconds = count(u.tolerationSeconds)
  if (key === giveUp || operator === giveUp || value === giveUp || effect === giveUp || tolerationSeconds === giveUp) return giveUp
  const out: Out = {}
  if (key !== undefined) out.key = key
  if (operator !== undefined) out.operator = operator
  if (value !== undefined) out.value = value
  if (effect !== undefined) out.effect = effect
  if (tolerationSeconds !== undefined) out.tolerationSeconds = tolerationSeconds
  return out
}

const readReadinessGate = (u: Record<string, unknown>): Out | GiveUp => {
  const conditionType = sharedText(u.conditionType)
  return isMissing(conditionType) ? giveUp : { conditionType }
}

const readSpec = (u: Record<string, unknown>): Out | GiveUp => {
  const nodeName = sharedText(u.nodeName), restartPolicy = sharedText(u.restartPolicy)
  const containers = listOf(u.containers, readContainer), initContainers = listOf(u.initContainers, readContainer)
  const ephemeralContainers = listOf(u.ephemeralContainers, readContainer), activeDeadlineSeconds = count(u.activeDeadlineSeconds)
  const tolerations = listOf(u.tolerations, readToleration), readinessGates = listOf(u.readinessGates, readReadinessGate)
  if (
    nodeName === giveUp || restartPolicy === giveUp || isMissing(containers) || initContainers === giveUp ||
    ephemeralContainers === giveUp || activeDeadlineSeconds === giveUp || tolerations === giveUp || readinessGates === giveUp
  ) return giveUp
  const out: Out = {}
  if (nodeName !== undefined) out.nodeName = nodeName
  if (restartPolicy !== undefined) out.restartPolicy = restartPolicy
  out.containers = containers
  if (initContainers !== undefined) out.initContainers = initContainers
  if (ephemeralContainers !== undefined) out.ephemeralContainers = ephemeralContainers
  if (activeDeadlineSeconds !== undefined) out.activeDeadlineSeconds = activeDeadlineSeconds
  if (tolerations !== undefined) out.tolerations = tolerations
  if (readinessGates !== undefined) out.readinessGates = readinessGates
  return out
}

const readCondition = (u: Record<string, unknown>): Out | GiveUp => {
  const type = sharedText(u.type), status = sharedText(u.status), reason = text(u.reason), message = text(u.message)
  const lastProbeTime = time(u.lastProbeTime), lastTransitionTime = time(u.lastTransitionTime)
  const observedGeneration = count(u.observedGeneration)
  if (isMissing(type) || isMissing(status) || reason === giveUp || message === giveUp) return giveUp
  if (lastProbeTime === giveUp || lastTransitionTime === giveUp || observedGeneration === giveUp) return giveUp
  const out: Out = { type, status }
  if (reason !== undefined) out.reason = reason
  if (message !== undefined) out.message = message
  if (lastProbeTime !== undefined) out.lastProbeTime = lastProbeTime
  if (lastTransitionTime !== undefined) out.lastTransitionTime = lastTransitionTime
  if (observedGeneration !== undefined) out.observedGeneration = observedGeneration
  return out
}

const readRunning = (u: Record<string, unknown>): Out | GiveUp => {
  const startedAt = time(u.startedAt)
  return startedAt === giveUp ? giveUp : startedAt === undefined ? {} : { startedAt }
}

const readWaiting = (u: Record<string, unknown>): Out | GiveUp => {
  const reason = text(u.reason), message = text(u.message)
  if (reason === giveUp || message === giveUp) return giveUp
  const out: Out = {}
  if (reason !== undefined) out.reason = reason
  if (message !== undefined) out.message = message
  return out
}

const readTerminated = (u: Record<string, unknown>): Out | GiveUp => {
  const exitCode = count(u.exitCode), signal = count(u.signal), reason = text(u.reason), message = text(u.message)
  const startedAt = time(u.startedAt), finishedAt = time(u.finishedAt), containerID = text(u.containerID)
  if (isMissing(exitCode) || signal === giveUp || reason === giveUp || message === giveUp) return giveUp
  if (startedAt === giveUp || finishedAt === giveUp || containerID === giveUp) return giveUp
  const out: Out = { exitCode }
  if (signal !== undefined) out.signal = signal
  if (reason !== undefined) out.reason = reason
  if (message !== undefined) out.message = message
  if (startedAt !== undefined) out.startedAt = startedAt
  if (finishedAt !== undefined) out.finishedAt = finishedAt
  if (containerID !== undefined) out.containerID = containerID
  return out
}

const readContainerState = (u: Record<string, unknown>): Out | GiveUp => {
  const running = struct(u.running, readRunning), waiting = struct(u.waiting, readWaiting)
  const terminated = struct(u.terminated, readTerminated)
  if (running === giveUp || waiting === giveUp || terminated === giveUp) return giveUp
  const out: Out = {}
  if (running !== undefined) out.running = running
  if (waiting !== undefined) out.waiting = waiting
  if (terminated !== undefined) out.terminated = terminated
  return out
}

const readContainerStatus = (u: Record<string, unknown>): Out | GiveUp => {
  const name = sharedText(u.name), ready = flag(u.ready), started = flag(u.started), restartCount = count(u.restartCount)
  const image = sharedText(u.image), imageID = text(u.imageID), containerID = text(u.containerID)
  const state = struct(u.state, readContainerState), lastState = struct(u.lastState, readContainerState)
  if (isMissing(name) || isMissing(ready) || started === giveUp || isMissing(restartCount) || isMissing(image)) return giveUp
  if (isMissing(imageID) || containerID === giveUp || state === giveUp || lastState === giveUp) return giveUp
  const out: Out = { name, ready }
  if (started !== undefined) out.started = started
  out.restartCount = restartCount
  out.image = image
  out.imageID = imageID
  if (containerID !== undefined) out.containerID = containerID
  if (state !== undefined) out.state = state
  if (lastState !== undefined) out.lastState = lastState
  return out
}

const readIp = (u: Record<string, unknown>): Out | GiveUp => {
  const ip = text(u.ip)
  return isMissing(ip) ? giveUp : { ip }
}

const readStatus = (u: Record<string, unknown>): Out | GiveUp => {
  const phase = sharedText(u.phase), reason = text(u.reason), message = text(u.message)
  const conditions = listOf(u.conditions, readCondition), hostIP = text(u.hostIP), hostIPs = listOf(u.hostIPs, readIp)
  const podIP = text(u.podIP), podIPs = listOf(u.podIPs, readIp), startTime = time(u.startTime)
  const qosClass = sharedText(u.qosClass), containerStatuses = listOf(u.containerStatuses, readContainerStatus)
  if (
    phase === giveUp || reason === giveUp || message === giveUp || conditions === giveUp || hostIP === giveUp ||
    hostIPs === giveUp || podIP === giveUp || podIPs === giveUp || startTime === giveUp || qosClass === giveUp ||
    containerStatuses === giveUp
  ) return giveUp
  const out: Out = {}
  if (phase !== undefined) out.phase = phase
  if (reason !== undefined) out.reason = reason
  if (message !== undefined) out.message = message
  if (conditions !== undefined) out.conditions = conditions
  if (hostIP !== undefined) out.hostIP = hostIP
  if (hostIPs !== undefined) out.hostIPs = hostIPs
  if (podIP !== undefined) out.podIP = podIP
  if (podIPs !== undefined) out.podIPs = podIPs
  if (startTime !== undefined) out.startTime = startTime
  if (qosClass !== undefined) out.qosClass = qosClass
  if (containerStatuses !== undefined) out.containerStatuses = containerStatuses
  return out
}

const readPod = (u: unknown): Pod | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const apiVersion = text(u.apiVersion), kind = text(u.kind), metadata = struct(u.metadata, readMetadata)
  const spec = struct(u.spec, readSpec), status = struct(u.status, readStatus)
  if (apiVersion === giveUp || kind === giveUp || metadata === giveUp || spec === giveUp || status === giveUp) return giveUp
  const out: Out = {}
  if (apiVersion !== undefined) out.apiVersion = apiVersion
  if (kind !== undefined) out.kind = kind
  if (metadata !== undefined) out.metadata = metadata
  if (spec !== undefined) out.spec = spec
  if (status !== undefined) out.status = status
  return out as Pod
}

/**
 * A served Pod (parsed JSON; the apiserver's `null`s may be left in, they read as absent) → the
 * slim Pod; None when it is not one. A Pod of another shape goes to the Schema after `dropNulls`,
 * which drops its `null`s in place: pass only a value just parsed that nothing else holds.
 */
export const decodePod = (json: unknown): Option.Option<Pod> => {
  const pod = readPod(json)
  return pod === giveUp ? decodePodOption(dropNulls(json)) : Option.some(pod)
}

/**
 * What is read of a served Pod the slim Pod refuses (a value the apiserver stores but this
 * decoder does not: another client's field of an unexpected type, a future field shape): its
 * identity, each field "" where it is not a string, and why it was refused. The informer leaves
 * such a Pod out (INF-1 — a Pod the daemon cannot decode is left out) and names it in its log.
 */
export interface UndecodablePod {
  readonly namespace: string
  readonly name: string
  readonly uid: string
  readonly resourceVersion: string
  /** The Schema's message, scrubbed (it quotes the served Pod's keys) and cut to `UNDECODABLE_ERROR_LIMIT`. */
  readonly error: string
}

/** How much of a decode error is kept: its first lines name the field and the type expected. */
export const UNDECODABLE_ERROR_LIMIT = 300

const decodePodResult = Schema.decodeUnknownResult(Pod)

const stringAt = (record: unknown, key: string): string => {
  if (!isPlainRecord(record)) return ""
  const value = record[key]
  return typeof value === "string" ? value : ""
}

/**
 * A served Pod `decodePod` refused → what is known of it. Only on that path: the Schema decode
 * runs again for its message. The text comes from outside (field names, keys of labels and
 * annotations), so it is scrubbed before anything logs it.
 */
export const undecodablePod = (json: unknown): UndecodablePod => {
  const metadata = isPlainRecord(json) ? json["metadata"] : undefined
  const decoded = decodePodResult(dropNulls(json))
  const message = Result.isFailure(decoded) ? decoded.failure.message : "not a Pod"
  const scrubbed = scrubText(message.replace(/\s*\n\s*/g, " "))
  return {
    namespace: stringAt(metadata, "namespace"),
    name: stringAt(metadata, "name"),
    uid: stringAt(metadata, "uid"),
    resourceVersion: stringAt(metadata, "resourceVersion"),
    error: scrubbed.length > UNDECODABLE_ERROR_LIMIT ? `${scrubbed.slice(0, UNDECODABLE_ERROR_LIMIT)}…` : scrubbed
  }
}

/** The Schema decode alone (what `decodePod` gives for every input), for the tests that compare the two. */
export const decodePodBySchema = (json: unknown): Option.Option<Pod> => decodePodOption(dropNulls(json))

/** A status built in memory (client-node typed, `Date` times) → the slim status, unknown fields dropped. */
export const slimStatus = (status: unknown): Option.Option<PodStatus> => decodeStatusType(status ?? {})

/** The JSON body of a write: times at whole seconds. */
export const encodePod = (pod: Pod): Option.Option<unknown> => encodePodOption(pod)

/**
 * The status fields a status patch sets or removes: those the slim Pod holds, but the QoS class
 * (fixed at creation: never sent) and the conditions (merged by type, see `podStatusPatch`).
 */
const patchedStatusKeys = Object.keys(PodStatus.fields).filter((key) => key !== "qosClass" && key !== "conditions")

/** Lists a strategic merge patch merges by `ip` rather than replacing: sent with the replace directive. */
const mergedIpLists: ReadonlySet<string> = new Set(["podIPs", "hostIPs"])

/**
 * The body of a strategic merge patch of pods/status (INF-1: a status written without reading the
 * Pod). Each status field the slim Pod holds but the conditions ends as `status` has it, one it
 * leaves out removed (`null`); the IP lists, which the server merges by `ip`, are replaced whole.
 * Conditions are merged by type, as the server does for this patch type: those of `status` are set,
 * those of `removedConditions`' types deleted, and any other left as stored (another writer's,
 * maybe set in a version the daemon could not read: a JSON merge patch would replace the whole
 * list). Fields the slim Pod does not read, and the QoS class, are kept. `uid` goes in as
 * metadata.uid: a stored Pod with another is refused (422, the uid being immutable), never
 * written. Times at whole seconds; None when the status does not encode.
 */
export const podStatusPatch = (
  uid: string,
  status: PodStatus,
  removedConditions: ReadonlyArray<string>
): Option.Option<unknown> =>
  Option.map(encodePodOption({ status }), (encoded) => {
    const wire: Readonly<Record<string, unknown>> = encoded.status ?? {}
    const patch: Record<string, unknown> = {}
    for (const key of patchedStatusKeys) {
      const value = wire[key]
      patch[key] = value === undefined ? null : mergedIpLists.has(key) && Array.isArray(value) ? [{ $patch: "replace" }, ...value] : value
    }
    const set: ReadonlyArray<unknown> = Array.isArray(wire["conditions"]) ? wire["conditions"] : []
    const conditions = [...set, ...removedConditions.map((type) => ({ type, $patch: "delete" }))]
    if (conditions.length > 0) patch["conditions"] = conditions
    return { metadata: { uid }, status: patch }
  })

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
 * (UPD-4 — GetPodStatus). Nothing else: every other status the provider reports is built from the
 * claim (`Provider/Status.ts`), and the conditions, container statuses, IPs and times of a Running
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
    nodeName: undefined,
    // the status writer reads them from the Pod it writes on (ST-14), never from the provider's copy
    readinessGates: undefined
  })
  return {
    ...(metadata === undefined ? {} : { metadata }),
    ...(spec === undefined ? {} : { spec }),
    ...(pod.status === undefined ? {} : { status: keptStatusOf(pod.status) })
  }
}
