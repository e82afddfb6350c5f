/**
 * The slim Pod written: the JSON body of a write (times at whole seconds) and the strategic merge
 * patch of pods/status the status writer sends.
 */
import { Option, Schema } from "effect"
import { Pod, PodStatus } from "./Schema.ts"

const encodePodOption = Schema.encodeOption(Pod)

/** The JSON body of a write: times at whole seconds. */
export const encodePod = (pod: Pod): Option.Option<unknown> => encodePodOption(pod)

/**
 * The status fields a status patch sets or removes: those the slim Pod holds, but the QoS class
 * (fixed at creation: never sent) and the conditions (merged by type, see `podStatusPatch`).
 */
const patchedStatusKeys = Object.keys(PodStatus.fields).filter((key) => key !== "qosClass" && key !== "conditions")

/** Lists a strategic merge patch merges by `ip` rather than replacing: sent with the replace directive. */
const mergedIpLists: ReadonlySet<string> = new Set(["podIPs", "hostIPs"])

/**
 * The body of a strategic merge patch of pods/status, written without reading the Pod (INF-1 — a
 * Pod the daemon cannot decode is left out, so the stored one may be unreadable). Each status
 * field the slim Pod holds but the conditions ends as `status` has it, one it leaves out removed
 * (`null`); the IP lists, which the server merges by `ip`, are replaced whole.
 * Conditions are merged by type, as the server does for this patch type: those of `status` are set,
 * those of `removedConditions`' types deleted, and any other left as stored (another writer's,
 * maybe set in a version the daemon could not read: a JSON merge patch would replace the whole
 * list). Fields the slim Pod does not read, and the QoS class, are kept. `uid` goes in as
 * metadata.uid: a stored Pod with another is refused (422, the uid being immutable), never
 * written. Times at whole seconds; None when the status does not encode.
 */
export const podStatusPatch = (
  uid: string,
  status: PodStatus,
  removedConditions: ReadonlyArray<string>
): Option.Option<unknown> =>
  Option.map(encodePodOption({ status }), (encoded) => {
    const wire: Readonly<Record<string, unknown>> = encoded.status ?? {}
    const patch: Record<string, unknown> = {}
    for (const key of patchedStatusKeys) {
      const value = wire[key]
      patch[key] = value === undefined ? null : mergedIpLists.has(key) && Array.isArray(value) ? [{ $patch: "replace" }, ...value] : value
    }
    const set: ReadonlyArray<unknown> = Array.isArray(wire["conditions"]) ? wire["conditions"] : []
    const conditions = [...set, ...removedConditions.map((type) => ({ type, $patch: "delete" }))]
    if (conditions.length > 0) patch["conditions"] = conditions
    return { metadata: { uid }, status: patch }
  })
