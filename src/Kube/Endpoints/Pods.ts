/**
 * One Pod's endpoints: read, status write (PUT or strategic-merge patch) and delete. A status PUT
 * sends neither the spec nor the deletion grace (see `replacePodStatus`); a patch reads nothing of
 * its reply, so it works on a Pod the slim Pod refuses (INF-1 — a Pod the daemon cannot decode is
 * left out).
 */
import { HttpMethod, PatchStrategy } from "@kubernetes/client-node"
import { Effect, Option } from "effect"
import { decodePod } from "../../Schemas/Pod/Decode.ts"
import { encodePod, podStatusPatch } from "../../Schemas/Pod/Encode.ts"
import type { Pod, PodStatus } from "../../Schemas/Pod/Schema.ts"
import type { KubeError } from "../../Services/KubeApi.ts"
import { decoded, encoded, invalid } from "../Status.ts"
import type { Transport } from "../Transport.ts"

const podPath = (namespace: string, name: string) =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`

/** A Pod's metadata without its deletion grace (what a status PUT must not send, see there). */
const withoutGrace = <M extends { readonly deletionGracePeriodSeconds?: number | undefined }>(metadata: M): Omit<M, "deletionGracePeriodSeconds"> => {
  const { deletionGracePeriodSeconds: _grace, ...kept } = metadata
  return kept
}

/** A served Pod → the slim Pod, or the typed error naming the operation. */
const slim = (operation: string) => decoded(operation, "pod", decodePod)

export const make = ({ raw }: Transport) => {
  const getPod = (namespace: string, name: string): Effect.Effect<Pod, KubeError> =>
    raw("getPod", { method: HttpMethod.GET, path: podPath(namespace, name) }).pipe(Effect.flatMap(slim("getPod")))

  const replacePodStatus = (pod: Pod): Effect.Effect<Pod, KubeError> => {
    const name = pod.metadata?.name
    const namespace = pod.metadata?.namespace
    if (name === undefined || namespace === undefined) {
      return invalid("replacePodStatus", "pod without metadata.name/namespace")
    }
    // Without the spec or the deletion grace: a status write keeps the stored ones whatever the
    // body says, and an int64 in them past 2^53 (a toleration's tolerationSeconds, a delete's
    // gracePeriodSeconds: the apiserver takes both up to int64's largest) comes back from a
    // double as another number, which the server refuses (400 past int64, else 422: the grace
    // of a Pod being deleted cannot change).
    const { spec: _spec, ...rest } = pod
    const written = rest.metadata?.deletionGracePeriodSeconds === undefined
      ? rest
      : { ...rest, metadata: withoutGrace(rest.metadata) }
    const body = encodePod({ apiVersion: "v1", kind: "Pod", ...written })
    if (Option.isNone(body)) return invalid("replacePodStatus", "pod that cannot be encoded")
    return raw("replacePodStatus", {
      method: HttpMethod.PUT,
      path: `${podPath(namespace, name)}/status`,
      body: body.value
    }).pipe(Effect.flatMap(slim("replacePodStatus")))
  }

  const patchPodStatus = (
    namespace: string,
    name: string,
    uid: string,
    status: PodStatus,
    removedConditions: ReadonlyArray<string>
  ): Effect.Effect<void, KubeError> =>
    encoded("patchPodStatus", "status", podStatusPatch(uid, status, removedConditions)).pipe(
      Effect.flatMap((body) =>
        raw("patchPodStatus", {
          method: HttpMethod.PATCH,
          path: `${podPath(namespace, name)}/status`,
          body,
          contentType: PatchStrategy.StrategicMergePatch
        })
      ),
      // the reply is the whole Pod, maybe one the slim Pod refuses: nothing of it is needed
      Effect.asVoid
    )

  const deletePod = (namespace: string, name: string, uid: string): Effect.Effect<void, KubeError> =>
    raw("deletePod", {
      method: HttpMethod.DELETE,
      path: podPath(namespace, name),
      body: { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 0, preconditions: { uid } }
    }).pipe(Effect.asVoid)

  return { getPod, replacePodStatus, patchPodStatus, deletePod }
}
