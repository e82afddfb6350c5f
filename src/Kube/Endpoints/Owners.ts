/**
 * A Pod's controller owner, for delete authorization. AUTH-3 — owner GET: a quorum GET, no query,
 * so no resourceVersion. AUTH-4 — what counts as gone: a 404 keeps its details only when its
 * Status names the resource asked for; any other 404 loses them, so the caller treats it as
 * ambiguous.
 */
import { HttpMethod } from "@kubernetes/client-node"
import { Effect, Option, Schema } from "effect"
import { type KubeError, KubeNotFound, KubeUnavailable, type OwnerObject, type OwnerRef } from "../../Services/KubeApi.ts"
import type { Transport } from "../Transport.ts"

const OwnerBody = Schema.Struct({
  metadata: Schema.Struct({
    uid: Schema.String,
    name: Schema.optionalKey(Schema.NullOr(Schema.String)),
    deletionTimestamp: Schema.optionalKey(Schema.NullOr(Schema.String))
  })
})
const decodeOwnerBody = Schema.decodeUnknownOption(OwnerBody)

const segment = encodeURIComponent

const ownerPath = (ref: OwnerRef): string => {
  const base = ref.group === "" ? `/api/${segment(ref.version)}` : `/apis/${segment(ref.group)}/${segment(ref.version)}`
  const scope = ref.namespace === "" ? "" : `/namespaces/${segment(ref.namespace)}`
  return `${base}${scope}/${segment(ref.plural)}/${segment(ref.name)}`
}

/**
 * An object-level 404 names the resource it is about (`details.group`, omitted for the core
 * group, and `details.kind`, the plural). A Status about any other resource, or one without a
 * kind, is not a NotFound of the requested owner: its details are dropped, so a matching
 * `details.name` cannot make it look like one.
 */
export const ownNotFound = (ref: OwnerRef) => (error: KubeError): KubeError => {
  if (error._tag !== "KubeNotFound" || error.details === undefined) return error
  const { group, kind } = error.details
  if ((group ?? "") === ref.group && kind === ref.plural) return error
  return new KubeNotFound({
    operation: error.operation,
    message: `404 about another resource (${kind ?? "no kind"}${group ? `.${group}` : ""}): ${error.message}`
  })
}

export const make = ({ raw }: Transport) => {
  const getOwner = (ref: OwnerRef): Effect.Effect<OwnerObject, KubeError> =>
    raw("getOwner", { method: HttpMethod.GET, path: ownerPath(ref) }).pipe(
      Effect.mapError(ownNotFound(ref)),
      Effect.flatMap((body) => {
        const owner = decodeOwnerBody(body)
        if (Option.isNone(owner)) {
          return Effect.fail(new KubeUnavailable({ operation: "getOwner", status: 200, message: "owner body without metadata.uid" }))
        }
        return Effect.succeed({
          name: owner.value.metadata.name ?? undefined,
          uid: owner.value.metadata.uid,
          deletionTimestamp: owner.value.metadata.deletionTimestamp ?? undefined,
          raw: body
        })
      })
    )

  return { getOwner }
}
