/**
 * The daemon's ids as branded Schemas, and beside each its one constructor for code that has
 * already checked what the Schema checks. No other module makes a brand by a cast
 * (test/Schemas/Brands.test.ts scans src/ for one).
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Schema } from "effect"

/**
 * `namespace/name` of a Pod: the key of the claims table and of every per-pod state. Any string is
 * a key (the claims file keeps the keys it holds as written), so the Schema checks only the type.
 */
export const PodKey = Schema.String.pipe(Schema.brand("PodKey"))
export type PodKey = typeof PodKey.Type

/**
 * The one constructor of a key outside the Schema: its check, "a string", is the parameter's type.
 * The Schema's `make` would check that again at run time, per Pod per reconcile and per row read.
 */
export const podKeyOfText = (text: string): PodKey => text as PodKey

/** The key of the Pod `namespace`/`name`. */
export const podKeyOf = (namespace: string, name: string): PodKey => podKeyOfText(`${namespace}/${name}`)

export const podKeyOfPod = (pod: V1Pod): PodKey => podKeyOf(pod.metadata?.namespace ?? "", pod.metadata?.name ?? "")

/** `ns/name` → [ns, name]; a key without "/" names a Pod in the empty namespace. */
export const splitPodKey = (key: string): readonly [string, string] => {
  const slash = key.indexOf("/")
  return slash < 0 ? ["", key] : [key.slice(0, slash), key.slice(slash + 1)]
}

/**
 * sandboxd's claim id (`sb_` + 16 hex); the handle of one microVM. Any string is one here: the
 * claims file keeps the ids it holds as written, and what a reply may carry is checked where the
 * reply is read (a listing's id is non-empty, a claim reply's path- and log-safe).
 */
export const ClaimId = Schema.String.pipe(Schema.brand("ClaimId"))
export type ClaimId = typeof ClaimId.Type

/** The one constructor of a claim id outside the Schema: like `podKeyOfText`, its check is the type. */
export const claimIdOfText = (text: string): ClaimId => text as ClaimId
