/**
 * The V8 heap setting the daemon applies to itself once started (its pod controller has taken the
 * first pod list): `--heap-growing-percent=50`, so garbage promoted during a burst of reconciles is
 * collected before the heap grows far past the live set. It is set at run time, not on node's
 * command line, because the flag is part of V8's code-cache tag and would make every start compile
 * Node's modules from source (docs/operations.md, "Memory"). A value given on the command line
 * wins.
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
