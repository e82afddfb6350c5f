/**
 * Events through KubeApi, aggregated as a node agent's recorder does: the first (object, type,
 * reason) is created, repeats patch its count, last timestamp and message. Writes happen on a
 * background fiber every flush interval, so the claim path never waits on the events endpoint.
 * EV-06 — normal Pod events have a budget: beyond it, a new Normal Pod event is counted on one
 * summary Event of the Node per reason instead (they share the Pods' apiserver rate limit, and the
 * Pod shows the same in its status). Warnings, Node events and repeats are never folded.
 */
import { DateTime, Duration, Effect, Layer, Option, Ref, Semaphore } from "effect"
import type { Event } from "../Schemas/Event.ts"
import { AppConfig } from "../Services/Config.ts"
import { EventRecorder, type EventType, type InvolvedObject } from "../Services/EventRecorder.ts"
import { KubeApi } from "../Services/KubeApi.ts"
import { every } from "../Services/Loops.ts"
import { count, eventsFolded } from "../Services/Metrics.ts"

interface Aggregate {
  readonly involved: InvolvedObject
  readonly type: EventType
  readonly reason: string
  readonly message: string
  readonly count: number
  readonly first: DateTime.Utc
  readonly last: DateTime.Utc
  /** The Event written for this key, if any. */
  readonly written: Option.Option<{ readonly name: string; readonly namespace: string; readonly count: number }>
  readonly dirty: boolean
  /** Its object is gone (`forget`): dropped once written. */
  readonly forgotten: boolean
}

/** The object's part of a key; names and namespaces hold no "/", so the prefix names one object. */
const objectKeyOf = (object: { readonly kind: string; readonly namespace: string; readonly name: string }) =>
  `${object.kind}/${object.namespace}/${object.name}/`

const keyOf = (involved: InvolvedObject, type: EventType, reason: string) =>
  `${objectKeyOf(involved)}${involved.uid}/${type}/${reason}`

/** Node events live in "default", as the kubelet's do. */
const eventNamespace = (involved: InvolvedObject) => (involved.kind === "Node" ? "default" : involved.namespace)

/**
 * At most this many aggregates are kept; the oldest written ones are forgotten first. Those of a
 * Pod the daemon is done with go earlier (`forget`): a node that runs Pods by the thousand keeps
 * only the live ones' aggregates.
 */
const MAX_AGGREGATES = 4096

/** New Normal Pod events written per Pod: `burst` at once, then `perSecond`. */
export interface EventBudget {
  readonly burst: number
  readonly perSecond: number
}

export const defaultNormalPodEvents: EventBudget = { burst: 25, perSecond: 5 }

export interface EventRecorderOptions {
  readonly flushInterval: Duration.Duration
  /** EV-06; `defaultNormalPodEvents` when absent. */
  readonly normalPodEvents?: EventBudget
}

const component = "vk-sandbox"

/** The Event written for `agg` under `name`, from this node's recorder. */
const eventBody = (agg: Aggregate, name: string, nodeName: string): Event => ({
  metadata: { name, namespace: eventNamespace(agg.involved) },
  involvedObject: {
    kind: agg.involved.kind,
    apiVersion: agg.involved.apiVersion ?? "v1",
    name: agg.involved.name,
    uid: agg.involved.uid,
    ...(agg.involved.namespace !== "" ? { namespace: agg.involved.namespace } : {})
  },
  reason: agg.reason,
  message: agg.message,
  type: agg.type,
  count: agg.count,
  firstTimestamp: DateTime.toDateUtc(agg.first),
  lastTimestamp: DateTime.toDateUtc(agg.last),
  source: { component, host: nodeName },
  reportingComponent: component,
  reportingInstance: nodeName
})

/**
 * The budget of new Normal Pod events (EV-06), a token bucket refilled on each record from the time
 * since the last one: what `budgeted` returns is the event as written, the Pod's own, or the Node's
 * summary (`nodeSummary`) when over the budget.
 */
const normalPodBudget = (budget: EventBudget, nodeSummary: InvolvedObject) => {
  let tokens = budget.burst
  let refilledAt: number | undefined
  const budgeted = (
    current: ReadonlyMap<string, Aggregate>,
    involved: InvolvedObject,
    type: EventType,
    reason: string,
    message: string,
    nowMillis: number
  ): { readonly involved: InvolvedObject; readonly message: string; readonly folded: boolean } => {
    if (involved.kind !== "Pod" || type !== "Normal" || current.has(keyOf(involved, type, reason))) {
      return { involved, message, folded: false }
    }
    tokens = Math.min(budget.burst, tokens + (Math.max(0, nowMillis - (refilledAt ?? nowMillis)) * budget.perSecond) / 1000)
    refilledAt = nowMillis
    if (tokens >= 1) {
      tokens -= 1
      return { involved, message, folded: false }
    }
    return {
      involved: nodeSummary,
      message: `Pod ${involved.namespace}/${involved.name}: ${message} (Normal Pod events beyond ${budget.burst} at once, ` +
        `then ${budget.perSecond} per second, are counted here instead of on each Pod)`,
      folded: true
    }
  }
  return budgeted
}

export const make = (options: EventRecorderOptions = { flushInterval: Duration.seconds(1) }) =>
  Effect.gen(function*() {
    const kube = yield* KubeApi
    const config = yield* AppConfig
    // One map, updated in place inside Ref.update (its function runs synchronously, and the flush
    // works on an array it copies out first): an event costs the same with 4,000 aggregates as with 4.
    const state = yield* Ref.make(new Map<string, Aggregate>())
    const budget = options.normalPodEvents ?? defaultNormalPodEvents
    const nodeSummary: InvolvedObject = { kind: "Node", namespace: "", name: config.nodeName, uid: "" }

    const budgeted = normalPodBudget(budget, nodeSummary)

    const record = (involved: InvolvedObject, type: EventType, reason: string, message: string) =>
      Effect.gen(function*() {
        const now = yield* DateTime.now
        const folded = yield* Ref.modify(state, (current): [boolean, Map<string, Aggregate>] => {
          const next = current
          const written = budgeted(current, involved, type, reason, message, DateTime.toEpochMillis(now))
          const key = keyOf(written.involved, type, reason)
          const previous = next.get(key)
          next.set(key, previous === undefined
            ? { involved: written.involved, type, reason, message: written.message, count: 1, first: now, last: now, written: Option.none(), dirty: true, forgotten: false }
            : { ...previous, message: written.message, count: previous.count + 1, last: now, dirty: true, forgotten: false })
          if (next.size > MAX_AGGREGATES) {
            for (const [k, agg] of next) {
              if (!agg.dirty) {
                next.delete(k)
                break
              }
            }
          }
          return [written.folded, next]
        })
        if (folded) yield* count(eventsFolded, { reason })
      })

    // Names are `<object>.<hex nanoseconds>`. The clock has millisecond resolution, so the sub-millisecond
    // part is a per-recorder sequence: two keys of one object created in the same millisecond (with the
    // same count) would otherwise share a name, and the second create would fail AlreadyExists.
    const sequence = yield* Ref.make(0)
    const create = (agg: Aggregate) =>
      Effect.gen(function*() {
        const millis = DateTime.toEpochMillis(agg.last)
        const serial = yield* Ref.getAndUpdate(sequence, (n) => (n + 1) % 1_000_000)
        const name = `${agg.involved.name}.${(BigInt(millis) * 1_000_000n + BigInt(serial)).toString(16)}`
        yield* kube.createEvent(eventBody(agg, name, config.nodeName))
        return { name, namespace: eventNamespace(agg.involved), count: agg.count }
      })

    const writeOne = (key: string, agg: Aggregate) =>
      Option.match(agg.written, {
        onNone: () => create(agg),
        onSome: (written) =>
          kube.patchEvent(written.namespace, written.name, {
            count: agg.count,
            message: agg.message,
            lastTimestamp: DateTime.formatIso(agg.last).replace(/\.\d+Z$/, "Z")
          }).pipe(
            Effect.as({ ...written, count: agg.count }),
            // the Event expired or was removed: start a fresh one
            Effect.catchTag("KubeNotFound", () => create(agg))
          )
      }).pipe(
        Effect.flatMap((written) =>
          Ref.update(state, (current) => {
            const latest = current.get(key)
            if (latest === undefined) return current
            const next = current
            const dirty = latest.count !== written.count
            // forgotten meanwhile and nothing new: done with it
            if (latest.forgotten && !dirty) next.delete(key)
            // a record() that arrived during the write keeps the key dirty
            else next.set(key, { ...latest, written: Option.some(written), dirty })
            return next
          })
        ),
        Effect.catch((error) =>
          Effect.gen(function*() {
            yield* Effect.logWarning("event write failed").pipe(
              Effect.annotateLogs({ reason: agg.reason, object: `${agg.involved.namespace}/${agg.involved.name}`, error })
            )
            // Best-effort: drop this round; a later record() retries with the aggregate count.
            yield* Ref.update(state, (current) => {
              const latest = current.get(key)
              if (latest === undefined || latest.count !== agg.count) return current
              const next = current
              if (latest.forgotten) next.delete(key)
              else next.set(key, { ...latest, dirty: false })
              return next
            })
          })
        )
      )

    // One flush at a time: the final flush at shutdown must not write again what the periodic
    // one is writing (each would create its own Event for the same aggregate).
    const flushLock = yield* Semaphore.make(1)
    const flush = Effect.gen(function*() {
      const dirty = [...(yield* Ref.get(state)).entries()].filter(([, agg]) => agg.dirty)
      yield* Effect.forEach(dirty, ([key, agg]) => writeOne(key, agg), { concurrency: 8, discard: true })
    }).pipe(flushLock.withPermits(1))

    // The first (empty) flush runs now, so the first interval starts when the recorder does.
    yield* every(options.flushInterval, flush, { immediately: true }).pipe(Effect.forkScoped({ startImmediately: true }))
    // Events still pending at shutdown get one last, time-boxed chance.
    yield* Effect.addFinalizer(() => flush.pipe(Effect.timeout(Duration.seconds(2)), Effect.ignore))

    const forget = (object: { readonly kind: InvolvedObject["kind"]; readonly namespace: string; readonly name: string }) =>
      Ref.update(state, (current) => {
        const prefix = objectKeyOf(object)
        for (const [key, agg] of current) {
          if (!key.startsWith(prefix)) continue
          if (agg.dirty) current.set(key, { ...agg, forgotten: true })
          else current.delete(key)
        }
        return current
      })

    return EventRecorder.of({ record, forget })
  })

export const layer = (options?: EventRecorderOptions) => Layer.effect(EventRecorder, make(options))

/** Drops every event (tests that do not look at events; the demo without an apiserver). */
export const layerDiscard = Layer.succeed(EventRecorder, EventRecorder.of({ record: () => Effect.void, forget: () => Effect.void }))
