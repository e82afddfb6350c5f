/**
 * The slim Pod's one fast reader: `readPod` builds the very object the Schema (`Schema.ts`) decodes,
 * for the shape the apiserver serves, reading only the Schema's fields and skipping `null`s in
 * place; the Schema's walk built an Exit per field and cost about as much again as the rest of a
 * 10,000-Pod list's read. Anything else it meets (a wrong type, a key `__proto__`) gives up on the
 * whole Pod, which `Decode.ts` then decodes by the Schema, so the result is always the Schema's own
 * (test/Schemas/Pod.test.ts proves the two equal with fast-check).
 */
import { civilSecondsAt } from "../CivilTime.ts"
import { type Pod, rfc3339 } from "./Schema.ts"

// Each struct's reader names its fields in code, in the Schema's order (the decoded object's key
// order), rather than walking a table of (key, reader) pairs: a load or store whose key changes
// from one call to the next is a slow generic property access in V8, one that always names the
// same field a fast cached one (the table walk took twice the time on a 10,000-Pod list).

/** "Not the usual shape": the Pod goes to the Schema decode. */
export const giveUp: unique symbol = Symbol("giveUp")
type GiveUp = typeof giveUp
type Out = Record<string, unknown>
/** A field read: its value, `undefined` when unset (absent or the apiserver's `null`), or `giveUp`. */
type Read<A> = A | undefined | GiveUp

export const isPlainRecord = (u: unknown): u is Record<string, unknown> =>
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

/** A served Pod (parsed JSON) → the slim Pod the Schema would decode, or `giveUp`. */
export const readPod = (u: unknown): Pod | GiveUp => {
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
