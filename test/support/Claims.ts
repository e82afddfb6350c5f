/** Numbered claim rows and pod keys for store tests: row `n` belongs to key `ns/pod-n`. */
import { DateTime, Option, Redacted } from "effect"
import type { ClaimRecord } from "../../src/Schemas/Claims.ts"
import { type ClaimId, type PodKey, podKeyOf } from "../../src/Schemas/Ids.ts"

export const record = (n: number): ClaimRecord => ({
  id: `sb_${n.toString(16).padStart(16, "0")}` as ClaimId,
  token: Redacted.make(`tok-${n}`),
  address: "10.0.0.1:7777",
  podUID: `uid-${n}`,
  claimedAt: Option.some(DateTime.makeUnsafe(1_780_000_000_000 + n * 1000)),
  deadline: Option.none()
})

export const key = (n: number): PodKey => podKeyOf("ns", `pod-${n}`)
