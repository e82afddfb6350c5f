/**
 * The slim Pod: the only shape of a Pod the daemon keeps, decoded straight from the apiserver's
 * JSON with only the fields the daemon reads or writes; everything else is dropped at decode time.
 * Field names and nesting are the apiserver's (a slim Pod is a valid partial `V1Pod`). Times
 * decode to `Date` and encode at whole seconds, the apiserver's precision, so a write of an
 * unchanged status compares equal to the stored one.
 */
import { Option, Result, Schema, SchemaTransformation } from "effect"
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

// ---- the slim projection without the Schema walk ---------------------------------------------
// The Schema decode of a Pod builds an Exit per field; on a 10,000-Pod list that walk (and the
// `dropNulls` copy of every served field before it) cost more than the list's own JSON.parse. The
// readers below build the very same object for the shape the apiserver serves, reading only the
// fields above and skipping `null`s in place. Anything else they meet (a wrong type, a key
// `__proto__`) gives up on the whole Pod, which is then decoded by the Schema as before: the
// result is always the Schema's own (test/Schemas/Pod.test.ts compares the two on generated Pods).
//
// Each reader names its fields in code, in the Schema's order (the decoded object's key order),
// rather than walking a table of (key, reader) pairs: a load or store whose key changes from one
// call to the next is a slow generic property access in V8, and one that always names the same
// field is a fast cached one; on a 10,000-Pod list the table walk took twice the time these take.

/** "Not the usual shape": the Pod goes to the Schema decode. */
const giveUp: unique symbol = Symbol("giveUp")
type GiveUp = typeof giveUp
type Out = Record<string, unknown>

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

/** Absent, or the apiserver's `null` for an unset field: the slim Pod leaves the key out. */
const isUnset = (u: unknown): u is null | undefined => u === undefined || u === null

/** The two decimal digits at `i` as a number; -1 when either is not a digit. */
const twoDigits = (text: string, i: number): number => {
  const a = text.charCodeAt(i) - 48
  const b = text.charCodeAt(i + 1) - 48
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1
}

const daysInMonth = (year: number, month: number): number =>
  month === 2
    ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28)
    : (month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31)

/**
 * Days from 1970-01-01 to the date (proleptic Gregorian, as `Date` counts), for a year from 100
 * on: integer arithmetic over 400-year eras (each 146,097 days), with the year taken to start on
 * March 1 so that a leap day is the last day of its year. `Date.UTC` gives the same number, but as
 * a call into the runtime it took about three times as long.
 */
const daysSinceEpoch = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear
  return era * 146_097 + dayOfEra - 719_468
}

/**
 * A Pod time. The apiserver prints every time as `YYYY-MM-DDTHH:MM:SSZ`: such a text with every
 * field in range is read digit by digit (the same instant `new Date(text)` gives); any other text
 * (fractions, offsets, lower-case letters, years before 100, out-of-range fields) takes the
 * Schema's own path, the pattern and then `new Date(text)`.
 */
const readTime = (u: unknown): Date | GiveUp => {
  if (typeof u !== "string") return giveUp
  if (
    u.length === 20 && u.charCodeAt(4) === 45 && u.charCodeAt(7) === 45 && u.charCodeAt(10) === 84 &&
    u.charCodeAt(13) === 58 && u.charCodeAt(16) === 58 && u.charCodeAt(19) === 90
  ) {
    const century = twoDigits(u, 0)
    const yearOfCentury = twoDigits(u, 2)
    const month = twoDigits(u, 5)
    const day = twoDigits(u, 8)
    const hour = twoDigits(u, 11)
    const minute = twoDigits(u, 14)
    const second = twoDigits(u, 17)
    const year = century * 100 + yearOfCentury
    // years 0-99 are left to `new Date(text)` (the century check), as are Feb 30 and the like
    if (
      century >= 1 && yearOfCentury >= 0 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) &&
      hour >= 0 && hour <= 23 && minute >= 0 && minute <= 59 && second >= 0 && second <= 59
    ) {
      return new Date(daysSinceEpoch(year, month, day) * 86_400_000 + (hour * 3600 + minute * 60 + second) * 1000)
    }
  }
  if (!rfc3339.test(u)) return giveUp
  const date = new Date(u)
  return Number.isNaN(date.getTime()) ? giveUp : date
}

const readStringMap = (u: unknown): Record<string, string> | GiveUp => {
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

const readStrings = (u: unknown): Array<string> | GiveUp => {
  if (!Array.isArray(u)) return giveUp
  const out: Array<string> = new Array(u.length)
  for (let i = 0; i < u.length; i++) {
    const value: unknown = u[i]
    if (typeof value !== "string") return giveUp
    out[i] = value
  }
  return out
}

const readOwnerReference = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const { apiVersion, blockOwnerDeletion, controller, kind, name, uid } = u
  if (typeof apiVersion !== "string" || typeof kind !== "string" || typeof name !== "string" || typeof uid !== "string") {
    return giveUp
  }
  const out: Out = { apiVersion: share(apiVersion), kind: share(kind), name, uid }
  if (!isUnset(controller)) {
    if (typeof controller !== "boolean") return giveUp
    out.controller = controller
  }
  if (!isUnset(blockOwnerDeletion)) {
    if (typeof blockOwnerDeletion !== "boolean") return giveUp
    out.blockOwnerDeletion = blockOwnerDeletion
  }
  return out
}

/** A list of `read`'s items; one that is not an item gives up on the list. */
const readList = (u: unknown, read: (item: unknown) => Out | GiveUp): Array<Out> | GiveUp => {
  if (!Array.isArray(u)) return giveUp
  const out: Array<Out> = new Array(u.length)
  for (let i = 0; i < u.length; i++) {
    const item = read(u[i])
    if (item === giveUp) return giveUp
    out[i] = item
  }
  return out
}

const readMetadata = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const out: Out = {}
  const name = u.name
  if (!isUnset(name)) {
    if (typeof name !== "string") return giveUp
    out.name = name
  }
  const generateName = u.generateName
  if (!isUnset(generateName)) {
    if (typeof generateName !== "string") return giveUp
    out.generateName = generateName
  }
  const namespace = u.namespace
  if (!isUnset(namespace)) {
    if (typeof namespace !== "string") return giveUp
    out.namespace = share(namespace)
  }
  const uid = u.uid
  if (!isUnset(uid)) {
    if (typeof uid !== "string") return giveUp
    out.uid = uid
  }
  const resourceVersion = u.resourceVersion
  if (!isUnset(resourceVersion)) {
    if (typeof resourceVersion !== "string") return giveUp
    out.resourceVersion = resourceVersion
  }
  const creationTimestamp = u.creationTimestamp
  if (!isUnset(creationTimestamp)) {
    const time = readTime(creationTimestamp)
    if (time === giveUp) return giveUp
    out.creationTimestamp = time
  }
  const deletionTimestamp = u.deletionTimestamp
  if (!isUnset(deletionTimestamp)) {
    const time = readTime(deletionTimestamp)
    if (time === giveUp) return giveUp
    out.deletionTimestamp = time
  }
  const deletionGracePeriodSeconds = u.deletionGracePeriodSeconds
  if (!isUnset(deletionGracePeriodSeconds)) {
    if (typeof deletionGracePeriodSeconds !== "number") return giveUp
    out.deletionGracePeriodSeconds = deletionGracePeriodSeconds
  }
  const labels = u.labels
  if (!isUnset(labels)) {
    const map = readStringMap(labels)
    if (map === giveUp) return giveUp
    out.labels = map
  }
  const annotations = u.annotations
  if (!isUnset(annotations)) {
    const map = readStringMap(annotations)
    if (map === giveUp) return giveUp
    out.annotations = map
  }
  const ownerReferences = u.ownerReferences
  if (!isUnset(ownerReferences)) {
    const owners = readList(ownerReferences, readOwnerReference)
    if (owners === giveUp) return giveUp
    out.ownerReferences = owners
  }
  const finalizers = u.finalizers
  if (!isUnset(finalizers)) {
    const names = readStrings(finalizers)
    if (names === giveUp) return giveUp
    out.finalizers = names
  }
  return out
}

const readContainer = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const { image, name } = u
  if (typeof name !== "string") return giveUp
  if (isUnset(image)) return { name: share(name) }
  return typeof image === "string" ? { name: share(name), image: share(image) } : giveUp
}

const readToleration = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const out: Out = {}
  const { effect, key, operator, tolerationSeconds, value } = u
  if (!isUnset(key)) {
    if (typeof key !== "string") return giveUp
    out.key = key
  }
  if (!isUnset(operator)) {
    if (typeof operator !== "string") return giveUp
    out.operator = operator
  }
  if (!isUnset(value)) {
    if (typeof value !== "string") return giveUp
    out.value = value
  }
  if (!isUnset(effect)) {
    if (typeof effect !== "string") return giveUp
    out.effect = effect
  }
  if (!isUnset(tolerationSeconds)) {
    if (typeof tolerationSeconds !== "number") return giveUp
    out.tolerationSeconds = tolerationSeconds
  }
  return out
}

const readReadinessGate = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const conditionType = u.conditionType
  return typeof conditionType === "string" ? { conditionType: share(conditionType) } : giveUp
}

const readSpec = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const out: Out = {}
  const nodeName = u.nodeName
  if (!isUnset(nodeName)) {
    if (typeof nodeName !== "string") return giveUp
    out.nodeName = share(nodeName)
  }
  const restartPolicy = u.restartPolicy
  if (!isUnset(restartPolicy)) {
    if (typeof restartPolicy !== "string") return giveUp
    out.restartPolicy = share(restartPolicy)
  }
  const containers = readList(u.containers, readContainer)
  if (containers === giveUp) return giveUp
  out.containers = containers
  const initContainers = u.initContainers
  if (!isUnset(initContainers)) {
    const list = readList(initContainers, readContainer)
    if (list === giveUp) return giveUp
    out.initContainers = list
  }
  const ephemeralContainers = u.ephemeralContainers
  if (!isUnset(ephemeralContainers)) {
    const list = readList(ephemeralContainers, readContainer)
    if (list === giveUp) return giveUp
    out.ephemeralContainers = list
  }
  const activeDeadlineSeconds = u.activeDeadlineSeconds
  if (!isUnset(activeDeadlineSeconds)) {
    if (typeof activeDeadlineSeconds !== "number") return giveUp
    out.activeDeadlineSeconds = activeDeadlineSeconds
  }
  const tolerations = u.tolerations
  if (!isUnset(tolerations)) {
    const list = readList(tolerations, readToleration)
    if (list === giveUp) return giveUp
    out.tolerations = list
  }
  const readinessGates = u.readinessGates
  if (!isUnset(readinessGates)) {
    const list = readList(readinessGates, readReadinessGate)
    if (list === giveUp) return giveUp
    out.readinessGates = list
  }
  return out
}

const readCondition = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const { lastProbeTime, lastTransitionTime, message, observedGeneration, reason, status, type } = u
  if (typeof type !== "string" || typeof status !== "string") return giveUp
  const out: Out = { type: share(type), status: share(status) }
  if (!isUnset(reason)) {
    if (typeof reason !== "string") return giveUp
    out.reason = reason
  }
  if (!isUnset(message)) {
    if (typeof message !== "string") return giveUp
    out.message = message
  }
  if (!isUnset(lastProbeTime)) {
    const time = readTime(lastProbeTime)
    if (time === giveUp) return giveUp
    out.lastProbeTime = time
  }
  if (!isUnset(lastTransitionTime)) {
    const time = readTime(lastTransitionTime)
    if (time === giveUp) return giveUp
    out.lastTransitionTime = time
  }
  if (!isUnset(observedGeneration)) {
    if (typeof observedGeneration !== "number") return giveUp
    out.observedGeneration = observedGeneration
  }
  return out
}

const readRunning = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const startedAt = u.startedAt
  if (isUnset(startedAt)) return {}
  const time = readTime(startedAt)
  return time === giveUp ? giveUp : { startedAt: time }
}

const readWaiting = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const out: Out = {}
  const { message, reason } = u
  if (!isUnset(reason)) {
    if (typeof reason !== "string") return giveUp
    out.reason = reason
  }
  if (!isUnset(message)) {
    if (typeof message !== "string") return giveUp
    out.message = message
  }
  return out
}

const readTerminated = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const { containerID, exitCode, finishedAt, message, reason, signal, startedAt } = u
  if (typeof exitCode !== "number") return giveUp
  const out: Out = { exitCode }
  if (!isUnset(signal)) {
    if (typeof signal !== "number") return giveUp
    out.signal = signal
  }
  if (!isUnset(reason)) {
    if (typeof reason !== "string") return giveUp
    out.reason = reason
  }
  if (!isUnset(message)) {
    if (typeof message !== "string") return giveUp
    out.message = message
  }
  if (!isUnset(startedAt)) {
    const time = readTime(startedAt)
    if (time === giveUp) return giveUp
    out.startedAt = time
  }
  if (!isUnset(finishedAt)) {
    const time = readTime(finishedAt)
    if (time === giveUp) return giveUp
    out.finishedAt = time
  }
  if (!isUnset(containerID)) {
    if (typeof containerID !== "string") return giveUp
    out.containerID = containerID
  }
  return out
}

const readContainerState = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const out: Out = {}
  const { running, terminated, waiting } = u
  if (!isUnset(running)) {
    const state = readRunning(running)
    if (state === giveUp) return giveUp
    out.running = state
  }
  if (!isUnset(waiting)) {
    const state = readWaiting(waiting)
    if (state === giveUp) return giveUp
    out.waiting = state
  }
  if (!isUnset(terminated)) {
    const state = readTerminated(terminated)
    if (state === giveUp) return giveUp
    out.terminated = state
  }
  return out
}

const readContainerStatus = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const { containerID, image, imageID, lastState, name, ready, restartCount, started, state } = u
  if (typeof name !== "string" || typeof ready !== "boolean") return giveUp
  const out: Out = { name: share(name), ready }
  if (!isUnset(started)) {
    if (typeof started !== "boolean") return giveUp
    out.started = started
  }
  if (typeof restartCount !== "number" || typeof image !== "string" || typeof imageID !== "string") return giveUp
  out.restartCount = restartCount
  out.image = share(image)
  out.imageID = imageID
  if (!isUnset(containerID)) {
    if (typeof containerID !== "string") return giveUp
    out.containerID = containerID
  }
  if (!isUnset(state)) {
    const read = readContainerState(state)
    if (read === giveUp) return giveUp
    out.state = read
  }
  if (!isUnset(lastState)) {
    const read = readContainerState(lastState)
    if (read === giveUp) return giveUp
    out.lastState = read
  }
  return out
}

const readIp = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const ip = u.ip
  return typeof ip === "string" ? { ip } : giveUp
}

const readStatus = (u: unknown): Out | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const out: Out = {}
  const phase = u.phase
  if (!isUnset(phase)) {
    if (typeof phase !== "string") return giveUp
    out.phase = share(phase)
  }
  const reason = u.reason
  if (!isUnset(reason)) {
    if (typeof reason !== "string") return giveUp
    out.reason = reason
  }
  const message = u.message
  if (!isUnset(message)) {
    if (typeof message !== "string") return giveUp
    out.message = message
  }
  const conditions = u.conditions
  if (!isUnset(conditions)) {
    const list = readList(conditions, readCondition)
    if (list === giveUp) return giveUp
    out.conditions = list
  }
  const hostIP = u.hostIP
  if (!isUnset(hostIP)) {
    if (typeof hostIP !== "string") return giveUp
    out.hostIP = hostIP
  }
  const hostIPs = u.hostIPs
  if (!isUnset(hostIPs)) {
    const list = readList(hostIPs, readIp)
    if (list === giveUp) return giveUp
    out.hostIPs = list
  }
  const podIP = u.podIP
  if (!isUnset(podIP)) {
    if (typeof podIP !== "string") return giveUp
    out.podIP = podIP
  }
  const podIPs = u.podIPs
  if (!isUnset(podIPs)) {
    const list = readList(podIPs, readIp)
    if (list === giveUp) return giveUp
    out.podIPs = list
  }
  const startTime = u.startTime
  if (!isUnset(startTime)) {
    const time = readTime(startTime)
    if (time === giveUp) return giveUp
    out.startTime = time
  }
  const qosClass = u.qosClass
  if (!isUnset(qosClass)) {
    if (typeof qosClass !== "string") return giveUp
    out.qosClass = share(qosClass)
  }
  const containerStatuses = u.containerStatuses
  if (!isUnset(containerStatuses)) {
    const list = readList(containerStatuses, readContainerStatus)
    if (list === giveUp) return giveUp
    out.containerStatuses = list
  }
  return out
}

const readPod = (u: unknown): Pod | GiveUp => {
  if (!isPlainRecord(u)) return giveUp
  const out: Out = {}
  const { apiVersion, kind, metadata, spec, status } = u
  if (!isUnset(apiVersion)) {
    if (typeof apiVersion !== "string") return giveUp
    out.apiVersion = apiVersion
  }
  if (!isUnset(kind)) {
    if (typeof kind !== "string") return giveUp
    out.kind = kind
  }
  if (!isUnset(metadata)) {
    const read = readMetadata(metadata)
    if (read === giveUp) return giveUp
    out.metadata = read
  }
  if (!isUnset(spec)) {
    const read = readSpec(spec)
    if (read === giveUp) return giveUp
    out.spec = read
  }
  if (!isUnset(status)) {
    const read = readStatus(status)
    if (read === giveUp) return giveUp
    out.status = read
  }
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
