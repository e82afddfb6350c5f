/**
 * Whether a sandbox a row names is really gone. One listing that leaves an id out proves nothing
 * (a listing can miss a live claim), so a row is dropped, or its Pod declared to have lost its
 * sandbox, only when sandboxd confirms it: the root by-id read answers the JSON `unknown sandbox`
 * 404, or — where this sandboxd has no by-id read — the id was missing from two successful
 * listings at least one `--claim-verify-interval` apart.
 */
import { DateTime, Effect } from "effect"
import { AppConfig } from "../Services/Config.ts"
import type { ClaimId } from "../Schemas/Ids.ts"
import { ClaimDoubts } from "../Services/ClaimDoubts.ts"
import { type ListedSandbox, SandboxdClient } from "../Services/SandboxdClient.ts"

export type AbsenceVerdict =
  /** The listing missed it, the by-id read found it: it lives. */
  | { readonly _tag: "Present"; readonly sandbox: ListedSandbox }
  | { readonly _tag: "Gone" }
  /** Not yet provable: keep everything as it is. */
  | { readonly _tag: "Unconfirmed"; readonly reason: string }

/** Every id a listing showed: any earlier "missing since" mark is forgotten. */
export const notePresent = (ids: Iterable<ClaimId>) => ClaimDoubts.use((doubts) => doubts.notePresent(ids))

/**
 * Judges `id`, which a successful listing taken at `listedAt` did not show (see the module
 * comment). Never fails: an error on the by-id read leaves the verdict Unconfirmed.
 */
export const confirmAbsence = Effect.fnUntraced(function*(id: ClaimId, listedAt: DateTime.Utc) {
  const sandboxd = yield* SandboxdClient
  const doubts = yield* ClaimDoubts
  const config = yield* AppConfig
  const lookup = yield* Effect.result(sandboxd.getSandbox(id))
  if (lookup._tag === "Failure") {
    return { _tag: "Unconfirmed", reason: `the by-id read failed: ${lookup.failure.message}` } as AbsenceVerdict
  }
  switch (lookup.success._tag) {
    case "Found":
      yield* doubts.notePresent([id])
      return { _tag: "Present", sandbox: lookup.success.sandbox } as AbsenceVerdict
    case "Gone":
      yield* doubts.notePresent([id])
      return { _tag: "Gone" } as AbsenceVerdict
    case "RouteUnknown": {
      const since = yield* doubts.noteMissing(id, listedAt)
      const confirmedAt = DateTime.addDuration(since, config.claimVerifyInterval)
      if (DateTime.isGreaterThanOrEqualTo(listedAt, confirmedAt)) {
        yield* doubts.notePresent([id])
        return { _tag: "Gone" } as AbsenceVerdict
      }
      return {
        _tag: "Unconfirmed",
        reason: `missing from listings since ${DateTime.formatIso(since)}; a listing from ${
          DateTime.formatIso(confirmedAt)
        } on can confirm it`
      } as AbsenceVerdict
    }
  }
})
