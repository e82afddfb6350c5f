/**
 * The watch of the node's Pods: one JSON event per line, bookmarks on. A Pod the slim Pod refuses
 * comes as an UNDECODABLE event and the stream goes on (INF-1 — a Pod the daemon cannot decode is
 * left out); an ERROR event of 410 (or a "Too
 * large resource version") is KubeGone, the caller's cue to relist. A watch that delivers no byte
 * for `watchIdleTimeout` fails (a dead connection); the request is aborted when the stream ends.
 */
import { HttpMethod } from "@kubernetes/client-node"
import { Duration, Effect, Option, Schema, Stream } from "effect"
import { decodePod, dropNulls, undecodablePod } from "../Schemas/Pod/Decode.ts"
import { type KubeError, KubeUnavailable, type PodWatchEvent } from "../Services/KubeApi.ts"
import { chunksOf, parseJson } from "./Body.ts"
import { nodeSelector } from "./PodList.ts"
import { errorFromWatchStatus, firstLine, transportError } from "./Status.ts"
import type { RawRequest, Transport } from "./Transport.ts"

const WatchEnvelope = Schema.Struct({ type: Schema.String, object: Schema.Unknown })
const decodeWatchEnvelope = Schema.decodeUnknownOption(WatchEnvelope)

const BookmarkObject = Schema.Struct({ metadata: Schema.Struct({ resourceVersion: Schema.String }) })
const decodeBookmark = Schema.decodeUnknownOption(BookmarkObject)

/** One line of a watch → its events (none for a type this client does not know), or the typed error. */
export const watchEvent = (operation: string) => (line: string): Effect.Effect<ReadonlyArray<PodWatchEvent>, KubeError> => {
  const envelope = parseJson(line).pipe(Option.flatMap(decodeWatchEnvelope))
  if (Option.isNone(envelope)) {
    return Effect.fail(new KubeUnavailable({ operation, status: 0, message: `undecodable watch event: ${firstLine(line)}` }))
  }
  const { object, type } = envelope.value
  switch (type) {
    case "ADDED":
    case "MODIFIED":
    case "DELETED": {
      // A Pod the slim Pod refuses ends nothing (INF-1): the informer is told what is known of it.
      const pod = decodePod(object)
      return Effect.succeed([
        Option.isSome(pod) ? { type, object: pod.value } : { type: "UNDECODABLE", change: type, pod: undecodablePod(object) }
      ])
    }
    case "BOOKMARK": {
      const bookmark = decodeBookmark(object)
      return Option.isNone(bookmark)
        ? Effect.fail(new KubeUnavailable({ operation, status: 0, message: "BOOKMARK without metadata.resourceVersion" }))
        : Effect.succeed([{ type, resourceVersion: bookmark.value.metadata.resourceVersion }])
    }
    case "ERROR":
      // A Status: its unset fields may be sent as `null`, which its Schema reads as absent only when left out.
      return Effect.fail(errorFromWatchStatus(operation, dropNulls(object)))
    default:
      return Effect.succeed([]) // a type this client does not know: skip it
  }
}

export const make = (transport: Transport) => {
  const { watchIdleTimeout, watchTimeoutSeconds } = transport.options
  const idleMessage = `watch idle for ${Duration.format(Duration.fromInputUnsafe(watchIdleTimeout))}`

  const watchPods = (nodeName: string, resourceVersion: string): Stream.Stream<PodWatchEvent, KubeError> => {
    const operation = "watchPods"
    const spec: RawRequest = {
      method: HttpMethod.GET,
      path: "/api/v1/pods",
      query: {
        watch: "true",
        fieldSelector: nodeSelector(nodeName),
        // "" = from the current state; sent only when the caller holds one
        ...(resourceVersion === "" ? {} : { resourceVersion }),
        allowWatchBookmarks: "true",
        timeoutSeconds: String(watchTimeoutSeconds)
      },
      stream: true
    }
    return Stream.unwrap(Effect.map(transport.open(operation, spec), (response) =>
      Stream.fromAsyncIterable(chunksOf(response.body), transportError(operation)).pipe(
        Stream.timeoutOrElse({
          duration: watchIdleTimeout,
          orElse: () => Stream.fail(new KubeUnavailable({ operation, status: 0, message: idleMessage }))
        }),
        Stream.decodeText,
        Stream.splitLines,
        Stream.filter((line) => line.trim() !== ""),
        Stream.mapEffect(watchEvent(operation)),
        Stream.flattenIterable
      )))
  }

  return { watchPods }
}
