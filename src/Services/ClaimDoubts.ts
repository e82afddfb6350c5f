/**
 * Claims whose outcome is unknown: a key is "in doubt" when a claim for it may have made a VM the
 * daemon holds no token for (a timeout or broken connection after sending, a reply that was not a
 * valid claim, a stop between sending and recording). A key in doubt is never claimed again until
 * `Programs/ClaimDoubt.ts` settles it. Also what the daemon has seen of sandboxd while settling:
 * when each id was first listed and since when a recorded id has been missing. In memory only
 * (`Layers/ClaimTableRef/ClaimDoubtsRef.ts`); Lost rows live in the claim table (VER-7 — a lost
 * sandbox's row outlives restarts until its Pod is settled).
 */
import { Context, type DateTime, type Effect, type Option } from "effect"
import type { ClaimId, PodKey } from "../Schemas/Ids.ts"

export interface Doubt {
  readonly key: PodKey
  /** The Pod generation the attempt was for. */
  readonly podUid: string
  /** When the claim that may have made a VM was sent: only sandboxes made after it can be its. */
  readonly startedAt: DateTime.Utc
  /**
   * When the daemon stopped waiting for it (the attempt failed, or its intent was loaded at
   * startup). The request's own timeout starts only once it has a connection permit, so this can
   * be long after `startedAt + --sandboxd-timeout`; the settle window counts from the later one.
   */
  readonly abandonedAt: DateTime.Utc
  /** Released with the root token (204), absence not yet confirmed by a later listing. */
  readonly releasing: ReadonlyArray<ClaimId>
  /** Sandboxes of this attempt that could be neither adopted nor released (reported as strays). */
  readonly stuck: ReadonlyArray<ClaimId>
}

export class ClaimDoubts extends Context.Service<ClaimDoubts, {
  readonly all: Effect.Effect<ReadonlyMap<PodKey, Doubt>>
  readonly get: (key: PodKey) => Effect.Effect<Option.Option<Doubt>>
  /**
   * Puts `key` in doubt. When it already is, the earlier `startedAt` and the later `abandonedAt`
   * are kept: the window covers both attempts.
   */
  readonly add: (doubt: {
    readonly key: PodKey
    readonly podUid: string
    readonly startedAt: DateTime.Utc
    readonly abandonedAt: DateTime.Utc
  }) => Effect.Effect<void>
  /** Replaces the doubt of `key` when there is one. */
  readonly update: (key: PodKey, f: (doubt: Doubt) => Doubt) => Effect.Effect<void>
  /** The doubt is resolved. */
  readonly clear: (key: PodKey) => Effect.Effect<void>

  /** Records `at` as the first sighting of each id not seen before; returns every id's first sighting. */
  readonly noteSeen: (ids: ReadonlyArray<ClaimId>, at: DateTime.Utc) => Effect.Effect<ReadonlyMap<ClaimId, DateTime.Utc>>
  /** `id` was missing from a listing taken at `at`: returns when it was first found missing. */
  readonly noteMissing: (id: ClaimId, at: DateTime.Utc) => Effect.Effect<DateTime.Utc>
  /**
   * Each of `ids` was listed (or is no longer tracked): forget that it was ever missing. One
   * update for all of them: a listing vouches for thousands of ids at once.
   */
  readonly notePresent: (ids: Iterable<ClaimId>) => Effect.Effect<void>
}>()("vk-sandbox/ClaimDoubts") {}
