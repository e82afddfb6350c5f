/**
 * What the provider keeps of a Pod and of a status it was handed, and the plain deep copy they are
 * made with.
 */
import type { Container, Pod, PodMetadata, PodSpec, PodStatus } from "./Schema.ts"

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
    // the status writer reads them from the Pod it writes on (ST-14 — a Pod with readiness gates is
    // Ready only when every gate is True), never from the provider's copy
    readinessGates: undefined
  })
  return {
    ...(metadata === undefined ? {} : { metadata }),
    ...(spec === undefined ? {} : { spec }),
    ...(pod.status === undefined ? {} : { status: keptStatusOf(pod.status) })
  }
}