/**
 * The node's Pod list. The format is defined by its Schema reading (`podListOfJson`: the envelope
 * by `PodListBody`, each item by the slim Pod), which reads the small replies; the full list is
 * read as its bytes arrive by `ListBody.ts`, each Pod parsed, made slim and let go, so the body is
 * never held whole, and proven equal to the Schema reading by test/Kube/PodListSchema.test.ts.
 * INF-1 — a Pod the daemon cannot decode is left out: one the slim Pod refuses is in `undecodable`.
 */
import { HttpMethod } from "@kubernetes/client-node"
import { Effect, Option, Schema } from "effect"
import type { Dispatcher } from "undici"
import { decodePod, type UndecodablePod, undecodablePod } from "../Schemas/Pod/Decode.ts"
import type { Pod } from "../Schemas/Pod/Schema.ts"
import { type KubeError, KubeUnavailable, type PodList } from "../Services/KubeApi.ts"
import { bodyStream, bodyText, parseJson, readBody } from "./Body.ts"
import * as ListBody from "./ListBody.ts"
import { errorFromResponse, notJson } from "./Status.ts"
import type { RawRequest, Transport } from "./Transport.ts"

// `null`s allowed: a list is decoded without the `dropNulls` copy of its items (`decodePod` skips them).
const ListMetadata = Schema.NullOr(Schema.Struct({ resourceVersion: Schema.optionalKey(Schema.NullOr(Schema.String)) }))
const decodeListMetadata = Schema.decodeUnknownOption(ListMetadata)
/** A list reply: an object; `items` anything but an array is a reply that lists nothing (a Status). */
const PodListBody = Schema.Struct({ metadata: Schema.optionalKey(ListMetadata), items: Schema.optionalKey(Schema.Unknown) })
const decodePodListBody = Schema.decodeUnknownOption(PodListBody)
/** The items of a list: objects, each then read as a Pod on its own. */
const isListItems = Schema.is(Schema.Array(Schema.Record(Schema.String, Schema.Unknown)))

/** What a list reply holds: the list, or why it is none. */
export type PodListReading =
  | { readonly _tag: "Read"; readonly list: PodList }
  /** Not JSON, not an object, metadata of another shape, or an item that is not an object. */
  | { readonly _tag: "NotAList" }
  /** A list reply without an `items` array. */
  | { readonly _tag: "NoItems" }

const notAList: PodListReading = { _tag: "NotAList" }
const noItems: PodListReading = { _tag: "NoItems" }

const readingOf = (
  items: Array<Pod>,
  undecodable: Array<UndecodablePod>,
  metadata: typeof ListMetadata.Type | undefined
): PodListReading => ({ _tag: "Read", list: { items, undecodable, resourceVersion: metadata?.resourceVersion ?? "" } })

/** A parsed list reply read by its Schema: the envelope, then each item by the slim Pod (INF-1). */
export const podListOfJson = (json: unknown): PodListReading => {
  const envelope = decodePodListBody(json)
  if (Option.isNone(envelope)) return notAList
  const { items, metadata } = envelope.value
  if (!Array.isArray(items)) return noItems
  if (!isListItems(items)) return notAList
  const pods: Array<Pod> = []
  const undecodable: Array<UndecodablePod> = []
  for (const item of items) {
    const pod = decodePod(item)
    if (Option.isSome(pod)) pods.push(pod.value)
    else undecodable.push(undecodablePod(item))
  }
  return readingOf(pods, undecodable, metadata)
}

/** The list body's reader, fed chunk by chunk as it arrives (`podListOfRead` says what it read). */
export const podListReader = (): ListBody.ListReader<ListBody.ListRead<Pod, UndecodablePod>> =>
  ListBody.listReader(decodePod, undecodablePod)

/** What `podListReader` read, as `podListOfJson` reads the same body. */
export const podListOfRead = (read: ListBody.ListRead<Pod, UndecodablePod>): PodListReading => {
  if (read._tag === "Malformed") return notAList
  const metadata = read.metadata === undefined ? Option.some(undefined) : parseJson(read.metadata).pipe(Option.flatMap(decodeListMetadata))
  if (Option.isNone(metadata)) return notAList
  if (!read.hasItems) return noItems
  return readingOf(read.items, read.undecodable, metadata.value)
}

export const nodeSelector = (nodeName: string) => `spec.nodeName=${nodeName}`

/** The first bytes of a list body, for the error that says it is not JSON. */
const LIST_HEAD_BYTES = 4096

type ListReply =
  | { readonly status: number; readonly failed: string }
  | { readonly status: number; readonly reading: PodListReading; readonly head: string }

/**
 * The list read as it arrives; once the outcome is known (bytes that are not a list) the rest is
 * not read: the body is destroyed, and the connection with it. The read is under the call
 * timeout, and an interruption aborts it.
 */
const readList = async (response: Dispatcher.ResponseData): Promise<ListReply> => {
  const status = response.statusCode
  if (status < 200 || status > 299) return { status, failed: await bodyText(response) }
  const reader = podListReader()
  const head = Buffer.allocUnsafe(LIST_HEAD_BYTES)
  let headLength = 0
  await readBody(bodyStream(response), (bytes) => {
    if (headLength < LIST_HEAD_BYTES) headLength += bytes.copy(head, headLength, 0, LIST_HEAD_BYTES - headLength)
    return reader.push(bytes)
  })
  return { status, reading: podListOfRead(reader.end()), head: head.toString("utf8", 0, headLength) }
}

const noItemsError = (operation: string) => new KubeUnavailable({ operation, status: 200, message: "the pod list has no items" })

const interpretList = (operation: string) => (reply: ListReply): Effect.Effect<PodList, KubeError> => {
  if ("failed" in reply) return Effect.fail(errorFromResponse(operation, reply.status, reply.failed))
  const { head, reading, status } = reply
  switch (reading._tag) {
    case "NotAList":
      return Effect.fail(notJson(operation, status, head))
    case "NoItems":
      return Effect.fail(noItemsError(operation))
    case "Read":
      return Effect.succeed(reading.list)
  }
}

export const make = (transport: Transport) => {
  const listPods = (nodeName: string): Effect.Effect<PodList, KubeError> => {
    const spec: RawRequest = { method: HttpMethod.GET, path: "/api/v1/pods", query: { fieldSelector: nodeSelector(nodeName) } }
    return transport.call("listPods", spec, readList, interpretList("listPods"))
  }

  const podsResourceVersion = (nodeName: string): Effect.Effect<string, KubeError> =>
    transport.raw("podsResourceVersion", {
      method: HttpMethod.GET,
      path: "/api/v1/pods",
      query: { fieldSelector: nodeSelector(nodeName), limit: "1" }
    }).pipe(
      Effect.flatMap((body) => {
        const reading = podListOfJson(body)
        switch (reading._tag) {
          case "NotAList":
            return Effect.fail(new KubeUnavailable({ operation: "podsResourceVersion", status: 200, message: "the reply is not a pod list" }))
          case "NoItems":
            return Effect.fail(noItemsError("podsResourceVersion"))
          case "Read":
            return Effect.succeed(reading.list.resourceVersion)
        }
      })
    )

  return { listPods, podsResourceVersion }
}
