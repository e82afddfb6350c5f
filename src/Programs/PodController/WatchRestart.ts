/**
 * What the informer does after a watch ends: `decide` is the policy, a pure function of the
 * watch's end; `restartSchedule` drives it, waiting what it says on steps of the shared retry
 * Schedule (Q-07 — one jittered retry schedule). Relist on 410/504 (Gone) and on a server gone
 * backwards; after a watch the server kept open to its timeout without one event or bookmark; after
 * `fruitlessBeforeRelist` watches in a row from one resourceVersion that delivered nothing.
 * Otherwise re-watch: at once (after `rewatchDelay`) after a clean close, on the backoff after a
 * failure or a close with nothing delivered within a second. A watch that worked for a while starts
 * the backoff afresh.
 */
import { Duration, Effect, Pull, Schedule } from "effect"
import type { KubeError, KubeGone } from "../../Services/KubeApi.ts"
import type { RetrySchedule } from "./Backoff.ts"

export type WatchOutcome =
  | { readonly _tag: "Closed" }
  | { readonly _tag: "Gone"; readonly error: KubeGone }
  | { readonly _tag: "Failed"; readonly error: KubeError }
  /** The server's resourceVersion is older than the newest the informer saw. */
  | { readonly _tag: "Backwards"; readonly server: string }

export interface WatchEnd {
  readonly outcome: WatchOutcome
  /** The resourceVersion the watch started from, and the newest it delivered. */
  readonly from: string
  readonly rv: string
  readonly delivered: number
  /** Closed or failed within a second, with nothing delivered. */
  readonly veryShort: boolean
}

export interface Restart {
  readonly relist: boolean
  readonly wait: "none" | "rewatch" | "backoff"
  /** The backoff starts afresh before this wait. */
  readonly freshBackoff: boolean
  /** Watches in a row from one resourceVersion that delivered nothing, this one included (0 after a relist). */
  readonly fruitless: number
  /** Silent to the end, or fruitless too often: the relist is the policy's own choice. */
  readonly fruitlessRelist: boolean
}

/** The policy: what follows a watch that ended as `end`, the `fruitless` watches before it known. */
export const decide = (fruitless: number, end: WatchEnd, fruitlessBeforeRelist: number): Restart => {
  const outcome = end.outcome._tag
  if (outcome === "Gone" || outcome === "Backwards") {
    return { relist: true, wait: "none", freshBackoff: false, fruitless: 0, fruitlessRelist: false }
  }
  const nothing = end.rv === end.from && end.delivered === 0 ? fruitless + 1 : 0
  // The real apiserver sends a bookmark about once a minute to a watch it can serve; one it kept
  // open to its timeout without a single event or bookmark is watching from a resourceVersion the
  // server does not have (it went backwards): relist at once.
  const silentToTheEnd = outcome === "Closed" && !end.veryShort && end.delivered === 0
  const relist = silentToTheEnd || nothing >= fruitlessBeforeRelist
  // A server that closes every watch at once would otherwise be asked again ten times a second.
  const wait = outcome === "Closed" && !end.veryShort ? (relist ? "none" : "rewatch") : "backoff"
  return { relist, wait, freshBackoff: !end.veryShort, fruitless: relist ? 0 : nothing, fruitlessRelist: relist }
}

/**
 * `decide` as a Schedule: fed each watch's end, it waits what the policy says (`rewatchDelay`, or
 * the next step of its own run of `retry`, kept across relists so a server that keeps failing is
 * asked ever more slowly) and outputs the decision. Were `retry` to end, the wait is none.
 */
export const restartSchedule = (
  retry: RetrySchedule,
  rewatchDelay: Duration.Duration,
  fruitlessBeforeRelist: number
): Schedule.Schedule<Restart, WatchEnd> =>
  Schedule.fromStep(Effect.sync(() => {
    let fruitless = 0
    let backoff: ((now: number, input: unknown) => Pull.Pull<[unknown, Duration.Duration], never, unknown>) | undefined
    return (now: number, end: WatchEnd) =>
      Effect.gen(function*() {
        const restart = decide(fruitless, end, fruitlessBeforeRelist)
        fruitless = restart.fruitless
        if (restart.freshBackoff) backoff = undefined
        if (restart.wait === "none") return [restart, Duration.zero] as [Restart, Duration.Duration]
        if (restart.wait === "rewatch") return [restart, rewatchDelay] as [Restart, Duration.Duration]
        backoff ??= yield* Schedule.toStep(retry)
        const delay = yield* backoff(now, undefined).pipe(
          Effect.map(([, d]) => d),
          Pull.catchDone(() => Effect.succeed(Duration.zero))
        )
        return [restart, delay] as [Restart, Duration.Duration]
      })
  }))
