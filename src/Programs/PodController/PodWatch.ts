/**
 * One watch of the node's Pods, from a resourceVersion until the stream fails, the server closes
 * it, or the server is found gone backwards: a server restored from a backup keeps a watch from a
 * version it does not have open and silent (kube-apiserver sends nothing older than the version
 * asked for, bookmarks included), so a watch silent for `silentWatchCheck` asks for the server's
 * resourceVersion, and one older than the newest the cache saw ends the watch.
 */
import { Clock, Duration, Effect, Option, Schedule, Stream } from "effect"
import { KubeApi, type KubeError, type PodWatchEvent } from "../../Services/KubeApi.ts"
import { type PodCache, resourceVersionOlder } from "./PodCache.ts"
import type { WatchEnd } from "./WatchRestart.ts"

/** A watch's progress: written by its events, read by its silence check and at its end. */
interface Progress {
  latest: string
  delivered: number
  lastHeard: number
}

const rvOf = (event: PodWatchEvent, latest: string): string =>
  event.type === "BOOKMARK"
    ? event.resourceVersion
    : event.type === "UNDECODABLE"
    ? (event.pod.resourceVersion === "" ? latest : event.pod.resourceVersion)
    : (event.object.metadata?.resourceVersion ?? latest)

/**
 * Returns the server's resourceVersion once it is older than the newest seen; asks only once the
 * watch was silent for `silentWatchCheck` (each wait lasts until that long after the last thing
 * it heard). A failed ask proves nothing (the watch itself reports an unreachable server) and
 * counts as heard: asked again an interval later.
 */
const wentBackwards = (nodeName: string, silentWatchCheck: Duration.Duration, cache: PodCache, progress: Progress) =>
  Effect.gen(function*() {
    const kube = yield* KubeApi
    const interval = Duration.toMillis(silentWatchCheck)
    const untilSilent = Schedule.forever.pipe(
      Schedule.modifyDelay(({ now }) => Effect.succeed(Duration.millis(Math.max(0, progress.lastHeard + interval - now))))
    )
    const askIfSilent = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      if (now - progress.lastHeard < interval) return undefined
      const server = yield* Effect.option(kube.podsResourceVersion(nodeName))
      if (Option.isSome(server) && resourceVersionOlder(server.value, cache.newestSeen)) return server.value
      progress.lastHeard = yield* Clock.currentTimeMillis
      return undefined
    })
    const server = yield* Effect.repeat(askIfSilent, { schedule: untilSilent, until: (found) => found !== undefined })
    // Ends only with a server version (`until`): the `never` is not reached.
    return server === undefined ? yield* Effect.never : server
  })

/** Watches from `from`, handing each event to `apply`. */
export const watchOnce = (
  nodeName: string,
  from: string,
  silentWatchCheck: Duration.Duration,
  cache: PodCache,
  apply: (event: PodWatchEvent) => Effect.Effect<void>
): Effect.Effect<WatchEnd, never, KubeApi> =>
  Effect.gen(function*() {
    const kube = yield* KubeApi
    const startedAt = yield* Clock.currentTimeMillis
    const progress: Progress = { latest: from, delivered: 0, lastHeard: startedAt }
    const watched = kube.watchPods(nodeName, from).pipe(
      Stream.runForEach((event) =>
        apply(event).pipe(
          Effect.andThen(Clock.currentTimeMillis),
          Effect.map((now) => {
            progress.lastHeard = now
            progress.delivered++
            progress.latest = rvOf(event, progress.latest)
          })
        )
      ),
      Effect.as({ _tag: "Closed" as const }),
      Effect.catchTag("KubeGone", (error) => Effect.succeed({ _tag: "Gone" as const, error })),
      Effect.catch((error: KubeError) => Effect.succeed({ _tag: "Failed" as const, error }))
    )
    // Whichever ends first: the watch (its scope closes the request when the check wins). The
    // first to end, not the first to succeed: a defect in the watch (a hook's bug) then ends the
    // informer, which is logged and fails /healthz (HZ-1 — a stopped part fails liveness), instead
    // of leaving it waiting on the check for good with a frozen cache.
    const outcome = yield* Effect.raceFirst(
      watched,
      Effect.map(wentBackwards(nodeName, silentWatchCheck, cache, progress), (server) => ({ _tag: "Backwards" as const, server }))
    )
    const lasted = (yield* Clock.currentTimeMillis) - startedAt
    const { delivered, latest } = progress
    return { outcome, from, rv: latest, delivered, veryShort: lasted < 1000 && delivered === 0 }
  })
