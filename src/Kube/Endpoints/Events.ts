/**
 * Core/v1 Events: created in the namespace of the Event (else of the object it is about), and a
 * repeat patched with a strategic merge, as client-go's event recorder does (on an Event's scalar
 * fields, count, lastTimestamp and message, the same as a JSON merge patch).
 */
import { HttpMethod, PatchStrategy } from "@kubernetes/client-node"
import { Effect } from "effect"
import { decodeEvent, encodeEvent, type Event } from "../../Schemas/Event.ts"
import type { KubeError } from "../../Services/KubeApi.ts"
import { decoded, encoded, invalid } from "../Status.ts"
import type { Transport } from "../Transport.ts"

const eventsPath = (namespace: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`
const event = (operation: string) => decoded(operation, "event", decodeEvent)

export const make = ({ raw }: Transport) => {
  const createEvent = (body: Event): Effect.Effect<Event, KubeError> => {
    const namespace = body.metadata?.namespace ?? body.involvedObject?.namespace
    if (namespace === undefined || namespace === "") return invalid("createEvent", "event without a namespace")
    return encoded("createEvent", "event", encodeEvent(body)).pipe(
      Effect.flatMap((json) => raw("createEvent", { method: HttpMethod.POST, path: eventsPath(namespace), body: json, dropNulls: true })),
      Effect.flatMap(event("createEvent"))
    )
  }

  const patchEvent = (namespace: string, name: string, patch: object): Effect.Effect<Event, KubeError> =>
    raw("patchEvent", {
      method: HttpMethod.PATCH,
      path: `${eventsPath(namespace)}/${encodeURIComponent(name)}`,
      body: patch,
      contentType: PatchStrategy.StrategicMergePatch,
      dropNulls: true
    }).pipe(Effect.flatMap(event("patchEvent")))

  return { createEvent, patchEvent }
}
