/**
 * The delete-authorization decision (AUTH-1 — delete authorization order), rules in order, first
 * match wins. Every error and every doubt preserves: a leaked warm sandbox beats a destroyed live
 * one (AUTH-6 — doubt preserves).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Effect, Layer, Option } from "effect"
import { controllerRefsOf, ownerGvrOf } from "./OwnerGvr.ts"
import { DeleteVerdict } from "../../Schemas/DeleteVerdict.ts"
import { KubeApi } from "../../Services/KubeApi.ts"
import { OwnerResolver } from "../../Services/OwnerResolver.ts"

type OwnerGetter = KubeApi["Service"]["getOwner"]

const decide = (getOwner: Option.Option<OwnerGetter>) =>
  Effect.fnUntraced(function*(pod: V1Pod) {
    const refs = controllerRefsOf(pod)
    const [owner] = refs
    if (owner === undefined) {
      return DeleteVerdict.Release({ reason: "BarePod", detail: "bare pod: deleting it is the teardown" })
    }
    if (refs.length > 1) {
      // The apiserver refuses such a Pod; one that exists anyway (an older server, a restore) has
      // no single owner whose state could authorize a release, so picking one would be a guess.
      const named = refs.map((ref) => `${ref.kind ?? ""}/${ref.name ?? ""}`).join(", ")
      return DeleteVerdict.Preserve({ reason: "ConflictingControllers", detail: `${refs.length} controller references (${named})` })
    }
    const label = `${owner.kind ?? ""} ${owner.name ?? ""}`.trim()
    if (Option.isNone(getOwner)) {
      return DeleteVerdict.Preserve({ reason: "NoOwnerClient", detail: `owner ${label} unverifiable: no owner client` })
    }
    const gvr = ownerGvrOf(owner)
    if (Option.isNone(gvr)) {
      return DeleteVerdict.Preserve({
        reason: "UnresolvableOwnerGvr",
        detail: `owner GVR unresolvable for kind "${owner.kind ?? ""}" apiVersion "${owner.apiVersion ?? ""}"`
      })
    }
    const namespace = pod.metadata?.namespace ?? ""
    const name = owner.name ?? ""
    return yield* getOwner.value({ ...gvr.value, namespace, name }).pipe(
      Effect.map((found) => {
        // Only a reply about the object asked for is evidence; anything else (a proxy, a
        // misrouted answer) says nothing about this owner.
        if (found.name !== name) {
          return DeleteVerdict.Preserve({
            reason: "OwnerNameMismatch",
            detail: found.name === undefined ? `owner ${label} queried, reply names no object` : `owner ${label} queried, reply names another object`
          })
        }
        if (found.deletionTimestamp !== undefined && found.deletionTimestamp !== "") {
          return DeleteVerdict.Release({ reason: "OwnerTerminating", detail: `owner ${label} in teardown` })
        }
        if (owner.uid !== undefined && owner.uid !== "" && owner.uid !== found.uid) {
          return DeleteVerdict.Release({
            reason: "OwnerUidRotated",
            detail: `owner ${label} UID rotated (${owner.uid} → ${found.uid}): the referenced generation is gone`
          })
        }
        return DeleteVerdict.Preserve({ reason: "OwnerAlive", detail: `owner ${label} alive: pod deletion is not VM authority` })
      }),
      Effect.catchTag("KubeNotFound", (notFound) =>
        Effect.succeed(
          notFound.details?.name !== undefined && notFound.details.name === name
            ? DeleteVerdict.Release({ reason: "OwnerGone", detail: `owner ${label} confirmed gone (structured NotFound)` })
            : DeleteVerdict.Preserve({
              reason: "AmbiguousNotFound",
              detail: `ambiguous 404 for owner ${label}: endpoint shape unverified`
            })
        )),
      Effect.catch((error) =>
        Effect.succeed(
          DeleteVerdict.Preserve({ reason: "OwnerQueryFailed", detail: `owner ${label} query failed: ${error._tag}: ${error.message}` })
        ))
    )
  })

/** Reads owners through KubeApi (a quorum GET each time, no cache). */
export const layer = Layer.effect(
  OwnerResolver,
  Effect.gen(function*() {
    const kube = yield* KubeApi
    return OwnerResolver.of({ verdictFor: decide(Option.some(kube.getOwner)) })
  })
)

/** No owner client configured: every non-bare Pod is preserved (AUTH-1 rule 2). */
export const layerNoClient = Layer.succeed(OwnerResolver, OwnerResolver.of({ verdictFor: decide(Option.none()) }))
