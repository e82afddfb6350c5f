import { Schema } from "effect"

/** `namespace/name` of a Pod: the key of the claims table and of every per-pod state. */
export const PodKey = Schema.String.pipe(Schema.brand("PodKey"))
export type PodKey = typeof PodKey.Type

export const podKeyOf = (namespace: string, name: string): PodKey => `${namespace}/${name}` as PodKey

/** sandboxd's claim id (`sb_` + 16 hex); the handle of one microVM. */
export const ClaimId = Schema.String.pipe(Schema.brand("ClaimId"))
export type ClaimId = typeof ClaimId.Type
