/**
 * A core/v1 Event as the daemon writes it (`Layers/EventRecorderKube.ts`), with Schema instead of
 * a client model: what the recorder sets, plus the series and eventTime of the newer Event
 * fields, so any of them that is set leaves in the form the apiserver accepts. firstTimestamp and
 * lastTimestamp are the Pod's `Time` (whole seconds); eventTime and series.lastObservedTime are
 * MicroTimes (six fractional digits, which the apiserver requires).
 */
import { Option, Schema } from "effect"
import { MicroTime } from "./MicroTime.ts"
import { Time } from "./Pod/Schema.ts"

const opt = Schema.optionalKey

export const ObjectReference = Schema.Struct({
  kind: opt(Schema.String),
  apiVersion: opt(Schema.String),
  namespace: opt(Schema.String),
  name: opt(Schema.String),
  uid: opt(Schema.String),
  resourceVersion: opt(Schema.String),
  fieldPath: opt(Schema.String)
})

export const Event = Schema.Struct({
  apiVersion: opt(Schema.String),
  kind: opt(Schema.String),
  metadata: opt(Schema.Struct({
    name: opt(Schema.String),
    namespace: opt(Schema.String),
    uid: opt(Schema.String),
    resourceVersion: opt(Schema.String)
  })),
  involvedObject: opt(ObjectReference),
  reason: opt(Schema.String),
  message: opt(Schema.String),
  type: opt(Schema.String),
  count: opt(Schema.Number),
  firstTimestamp: opt(Time),
  lastTimestamp: opt(Time),
  eventTime: opt(MicroTime),
  series: opt(Schema.Struct({ count: opt(Schema.Number), lastObservedTime: opt(MicroTime) })),
  action: opt(Schema.String),
  source: opt(Schema.Struct({ component: opt(Schema.String), host: opt(Schema.String) })),
  reportingComponent: opt(Schema.String),
  reportingInstance: opt(Schema.String)
})
export type Event = typeof Event.Type

const decodeEventOption = Schema.decodeUnknownOption(Event)
const encodeEventOption = Schema.encodeOption(Event)

/** A served Event (parsed JSON, nulls dropped) → the Event; None when it is not one. */
export const decodeEvent = (json: unknown): Option.Option<Event> => decodeEventOption(json)

/** The JSON body of a create: apiVersion and kind set, times in the forms the apiserver takes. */
export const encodeEvent = (event: Event): Option.Option<unknown> => encodeEventOption({ ...event, apiVersion: "v1", kind: "Event" })
