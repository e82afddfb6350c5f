/**
 * Failpoints: named places on the claim, commit, push, release and delete paths where a test can
 * make the daemon crash (end at once, no cleanup, as `kill -9` does), fail (the place's own typed
 * error) or wait. A test facility: only when `VK_SANDBOX_FAILPOINTS` arms a point at startup
 * (`Cli/Failpoints.ts`) does the composition root wrap the services that reach the points
 * (`Layers/FailpointDecorators.ts`); otherwise nothing of it runs.
 */
import { Context, Effect, Schema } from "effect"

/** Every point, in path order. A name outside this list is refused at startup. */
export const failpointNames = [
  /** The claim's intent is durable; the claim request is not sent yet. */
  "claim-before-send",
  /** sandboxd answered the claim; nothing about the reply is recorded yet. */
  "claim-after-send",
  /** The claims file's new bytes are written to the temp file, not yet synced. */
  "commit-before-fsync",
  /** The new claims file is in place (renamed), its directory not yet synced. */
  "commit-after-rename",
  /** A Pod status write to the apiserver is about to be sent. */
  "push-before-write",
  /** A Pod status write was accepted by the apiserver. */
  "push-after-write",
  /** A release is about to be sent to sandboxd (an authorized one, or the return of an unrecorded claim). */
  "release-before-send",
  /** sandboxd confirmed a release; the row is still in the table. */
  "release-after-send",
  /** A released claim's row left the table; its removal is not committed yet. */
  "delete-before-commit"
] as const

export type FailpointName = (typeof failpointNames)[number]

/** An armed point whose action is `fail`: each place turns it into its own typed error. */
export class FailpointFired extends Schema.TaggedError<FailpointFired>()("FailpointFired", {
  name: Schema.String,
  message: Schema.String
}) {}

export interface FailpointsShape {
  /** The armed points as given (for the startup warning); empty when inert. */
  readonly armed: ReadonlyArray<string>
  /** Runs the point's action; `Effect.void` for a point that is not armed. */
  readonly hit: (name: FailpointName) => Effect.Effect<void, FailpointFired>
  /**
   * The same for code inside one Promise (the durable write): undefined for a point that is not
   * armed, so an inert point costs no await; otherwise a promise that waits, or rejects with a
   * FailpointFired.
   */
  readonly hitAsync: (name: FailpointName) => Promise<void> | undefined
}

export const inertFailpoints: FailpointsShape = {
  armed: [],
  hit: () => Effect.void,
  hitAsync: () => undefined
}

/** The armed points, from the command line to the composition root; inert by default. */
export const Failpoints = Context.Reference<FailpointsShape>("vk-sandbox/Failpoints", {
  defaultValue: () => inertFailpoints
})
