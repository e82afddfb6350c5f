/**
 * The node's Pod list, read one Pod at a time as its bytes arrive (`ListBody.ts`): each Pod is
 * parsed, made slim and let go while the rest of the list is on its way, so the whole body is
 * never held. A Pod the slim Pod refuses is left out and named in `undecodable` (INF-1 — a Pod the
 * daemon cannot decode is left out). Also the server's current resourceVersion, from a list of at
 * most one.
 */
import { HttpMethod } from "@kubernetes/client-node"
import { Effect, Option, Schema } from "effect"
import type { Dispatcher } from "undici"
import { decodePod, type Pod, type UndecodablePod, undecodablePod } from "../Schemas/Pod.ts"
import { type KubeError, KubeUnavailable, type PodList } from "../Services/KubeApi.ts"
import { bodyStream, bodyText, parseJson, readBody } from "./Body.ts"
import * as ListBody from "./ListBody.ts"
import { errorFromResponse, notJson } from "./Status.ts"
import type { RawRequest, Transport } from "./Transport.ts"

// `null`s allowed: a list is decoded without the `dropNulls` copy of its items (`decodePod` skips them).
const ListMetadata = Schema.NullOr(Schema.Struct({ resourceVersion: Schema.optionalKey(Schema.NullOr(Schema.String)) }))
const decodeListMetadata = Schema.decodeUnknownOption(ListMetadata)
const PodListBody = Schema.Struct({
  metadata: Schema.optionalKey(ListMetadata),
  items: Schema.Array(Schema.Unknown)
})
const decodePodListBody = Schema.decodeUnknownOption(PodListBody)

export const nodeSelector = (nodeName: string) => `spec.nodeName=${nodeName}`

/** The first bytes of a list body, for the error that says it is not JSON. */
const LIST_HEAD_BYTES = 4096

type ListReply =
  | { readonly status: number; readonly failed: string }
  | { readonly status: number; readonly read: ListBody.ListRead<Pod, UndecodablePod>; readonly head: string }

/**
 * The list read as it arrives; once the outcome is known (bytes that are not a list) the rest is
 * not read: the body is destroyed, and the connection with it. The read is under the call
 * timeout, and an interruption aborts it.
 */
const readList = async (response: Dispatcher.ResponseData): Promise<ListReply> => {
  const status = response.statusCode
  if (status < 200 || status > 299) return { status, failed: await bodyText(response) }
  const reader = ListBody.listReader(decodePod, undecodablePod)
  const head = Buffer.allocUnsafe(LIST_HEAD_BYTES)
  let headLength = 0
  await readBody(bodyStream(response), (bytes) => {
    if (headLength < LIST_HEAD_BYTES) headLength += bytes.copy(head, headLength, 0, LIST_HEAD_BYTES - headLength)
    return reader.push(bytes)
  })
  return { status, read: reader.end(), head: head.toString("utf8", 0, headLength) }
}

const interpretList = (operation: string) => (reply: ListReply): Effect.Effect<PodList, KubeError> => {
  if ("failed" in reply) return Effect.fail(errorFromResponse(operation, reply.status, reply.failed))
  const { head, read, status } = reply
  if (read._tag === "Malformed") return Effect.fail(notJson(operation, status, head))
  const metadata = read.metadata === undefined ? Option.some(null) : parseJson(read.metadata).pipe(Option.flatMap(decodeListMetadata))
  if (Option.isNone(metadata)) return Effect.fail(notJson(operation, status, head))
  if (!read.hasItems) {
    return Effect.fail(new KubeUnavailable({ operation, status: 200, message: "the pod list has no items" }))
  }
  return Effect.succeed({
    items: read.items,
    undecodable: read.undecodable,
    resourceVersion: metadata.value?.resourceVersion ?? ""
  })
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
      Effect.flatMap((body) =>
        Option.match(decodePodListBody(body), {
          onNone: () =>
            Effect.fail(new KubeUnavailable({ operation: "podsResourceVersion", status: 200, message: "the pod list has no items" })),
          onSome: (list) => Effect.succeed(list.metadata?.resourceVersion ?? "")
        })
      )
    )

  return { listPods, podsResourceVersion }
}
