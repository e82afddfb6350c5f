/** The daemon's ids as branded Schemas, and the one constructor of a Pod key from its parts. */
import type { V1Pod } from "@kubernetes/client-node"
import { Schema } from "effect"

/** `namespace/name` of a Pod: the key of the claims table and of every per-pod state. */
export const PodKey = Schema.String.pipe(Schema.brand("PodKey"))
export type PodKey = typeof PodKey.Type

/**
 * The one constructor of a key from its parts. Any string is a valid key, so the Schema's `make`
 * would only check it is a string; this runs per Pod per reconcile, where that check is waste.
 */
export const podKeyOf = (namespace: string, name: string): PodKey => `${namespace}/${name}` as PodKey

export const podKeyOfPod = (pod: V1Pod): PodKey => podKeyOf(pod.metadata?.namespace ?? "", pod.metadata?.name ?? "")

/** `ns/name` → [ns, name]; a key without "/" names a Pod in the empty namespace. */
export const splitPodKey = (key: string): readonly [string, string] => {
  const slash = key.indexOf("/")
  return slash < 0 ? ["", key] : [key.slice(0, slash), key.slice(slash + 1)]
}

/** sandboxd's claim id (`sb_` + 16 hex); the handle of one microVM. */
export const ClaimId = Schema.String.pipe(Schema.brand("ClaimId"))
export type ClaimId = typeof ClaimId.Type
