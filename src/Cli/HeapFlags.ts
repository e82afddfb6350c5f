/**
 * The V8 heap setting the daemon applies to itself once its modules are loaded, instead of taking
 * it on node's command line.
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
 * same flag too. Set here, after the daemon's modules and the Node modules they import are
 * compiled, only the few Node modules loaded later are compiled from source.
 * (`--max-semi-space-size`, the image's other flag, is not part of the tag and stays on the
 * command line: the young generation is sized when the heap is set up.)
 *
 * A value given on the command line wins: an operator trying another factor (docs/operations.md)
 * passes it as before.
 */
import { setFlagsFromString } from "node:v8"

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
