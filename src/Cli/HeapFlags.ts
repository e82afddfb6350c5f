/**
 * The V8 heap setting the daemon applies to itself once it has started (its pod controller has
 * taken the first pod list; `applyOnceStarted` below says why not sooner), instead of taking it
 * on node's command line.
 *
 * `--heap-growing-percent=50` makes the old generation grow by 1.5x between major collections
 * rather than V8's own, larger factor, so garbage promoted while thousands of Pods are reconciled
 * at once is collected before the heap has grown far past the live set (docs/operations.md,
 * "Memory"). V8 reads the value at every major collection, so setting it at run time works as
 * the command-line flag does.
 *
 * On the command line it would cost every start: V8 accepts a code cache only when it was made
 * under the same flag values (the flags are part of the cache's version tag), and this flag is
 * part of it. Node's own modules (http, net, tls, streams: ~150 of them load at startup) come with
 * a code cache made under V8's defaults, which such a process rejects and compiles from source;
 * the image's prebuilt compile cache of the bundle (Dockerfile) would have to be made under the
 * same flag too. Set once the daemon has started, after the daemon's modules and the Node modules
 * they import are compiled, only the few Node modules loaded later are compiled from source.
 * (`--max-semi-space-size`, the image's other flag, is not part of the tag and stays on the
 * command line: the young generation is sized when the heap is set up.)
 *
 * A value given on the command line wins: an operator trying another factor (docs/operations.md)
 * passes it as before.
 */
import { Duration, Effect } from "effect"
import { setFlagsFromString } from "node:v8"
import * as Loops from "../Services/Loops.ts"

/** What the daemon sets unless node's command line sets the same flag. */
export const DAEMON_HEAP_FLAGS: ReadonlyArray<string> = ["--heap-growing-percent=50"]

const flagName = (flag: string) => flag.split("=")[0]?.replace(/_/g, "-") ?? flag

/**
 * Sets each of `DAEMON_HEAP_FLAGS` that `execArgv` (node's own flags, `process.execArgv`) does not
 * already give; returns the ones it set.
 */
export const applyDaemonHeapFlags = (execArgv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const given = new Set(execArgv.map(flagName))
  const applied = DAEMON_HEAP_FLAGS.filter((flag) => !given.has(flagName(flag)))
  for (const flag of applied) setFlagsFromString(flag)
  return applied
}

/**
 * Applies `DAEMON_HEAP_FLAGS` (as `applyDaemonHeapFlags` does) once `started` answers true, asked
 * every `interval`; `apply` is the setting itself. The daemon passes its pod controller's "synced"
 * (the first list taken: what readiness waits for), so the start keeps V8's own growing factor.
 * A restart builds its heap from nothing to the claim table and every Pod the node holds
 * (10,000 after a restart at scale), all of it live: under a 1.5x factor the old generation was
 * collected five times on the way (`--trace-gc`, bench restart with 10,000 Pods), two under V8's
 * own, and none of those collections frees anything worth having before the start is done. The
 * flag is for what comes after the start (many Pods reconciled at once: docs/operations.md,
 * "Memory"), and the heap trim (Programs/HeapTrim.ts) gives the start's garbage back once the
 * daemon is quiet, so the idle daemon's memory is as before.
 */
export const applyOnceStarted = (
  started: Effect.Effect<boolean>,
  apply: Effect.Effect<unknown>,
  interval: Duration.Duration = Duration.millis(100)
): Effect.Effect<void> =>
  Loops.every(interval, started, { immediately: true, until: (done) => done }).pipe(Effect.andThen(apply), Effect.asVoid)
