/**
 * The armed `Failpoints` (see `Services/Failpoints.ts`): each armed point has a chain of actions,
 * each taken on every hit or on its first `count` hits before the next one takes over. Built once
 * at startup from `VK_SANDBOX_FAILPOINTS` (`Cli/Failpoints.ts` parses it); points that are not
 * armed cost one map lookup.
 */
import { Duration, Effect, Option } from "effect"
import { type FailpointName, FailpointFired, type FailpointsShape } from "../Services/Failpoints.ts"

/** The errno codes the `errno` action can raise: a failing disk, a full one. */
export const failpointErrnos = ["EIO", "ENOSPC"] as const
export type FailpointErrno = (typeof failpointErrnos)[number]

export type FailpointAction =
  | { readonly _tag: "Crash" }
  | { readonly _tag: "Fail" }
  | { readonly _tag: "Delay"; readonly duration: Duration.Duration }
  /** The file step fails as the kernel fails it (only at the claims file's points). */
  | { readonly _tag: "Errno"; readonly code: FailpointErrno }
  /** Nothing happens: a count of hits let through before the next action of the chain. */
  | { readonly _tag: "Off" }

export interface FailpointTerm {
  readonly action: FailpointAction
  /** Taken on the first `count` hits only; None = on every hit. */
  readonly count: Option.Option<number>
  /** The term as written, for the startup warning. */
  readonly text: string
  /** What takes over once `count` hits are spent (`a->b`); none = the point goes inert. */
  readonly next?: FailpointTerm | undefined
}

/** Ends the process at once with SIGKILL: no finalizer, no flush, as `kill -9` from outside. */
export const killSelf = (): void => {
  process.kill(process.pid, "SIGKILL")
}

const errnoNumbers: Record<FailpointErrno, number> = { EIO: -5, ENOSPC: -28 }
const errnoTexts: Record<FailpointErrno, string> = { EIO: "i/o error", ENOSPC: "no space left on device" }

/** The error a failing `fsync` gives in Node (code, errno, syscall), naming the point that raised it. */
export const errnoError = (code: FailpointErrno, name: FailpointName): Error =>
  Object.assign(new Error(`${code}: ${errnoTexts[code]}, fsync (failpoint ${name})`), {
    code,
    errno: errnoNumbers[code],
    syscall: "fsync"
  })

export const make = (
  terms: ReadonlyMap<FailpointName, FailpointTerm>,
  crash: () => void = killSelf
): FailpointsShape => {
  /** Each point's term now and the hits it has left (undefined: every hit). */
  const current = new Map<FailpointName, { term: FailpointTerm; left: number | undefined }>()
  const enter = (name: FailpointName, term: FailpointTerm | undefined) => {
    if (term === undefined) current.delete(name)
    else current.set(name, { term, left: Option.getOrUndefined(term.count) })
  }
  for (const [name, term] of terms) enter(name, term)
  /** The action for this hit, counting it down; undefined when the point is off (now). */
  const take = (name: FailpointName): FailpointAction | undefined => {
    let state = current.get(name)
    while (state !== undefined && state.left !== undefined && state.left <= 0) {
      enter(name, state.term.next)
      state = current.get(name)
    }
    if (state === undefined) return undefined
    if (state.left !== undefined) state.left--
    return state.term.action._tag === "Off" ? undefined : state.term.action
  }
  const fired = (name: FailpointName) => new FailpointFired({ name, message: `failpoint ${name} fired` })
  return {
    armed: [...terms.values()].map((term) => term.text),
    hit: (name) =>
      Effect.suspend(() => {
        const action = take(name)
        if (action === undefined) return Effect.void
        switch (action._tag) {
          case "Crash":
            return Effect.sync(crash).pipe(Effect.andThen(Effect.never))
          // An errno outside a file step (the parser refuses one) is that place's own failure.
          case "Fail":
          case "Errno":
            return Effect.fail(fired(name))
          case "Delay":
            return Effect.sleep(action.duration)
          case "Off":
            return Effect.void
        }
      }),
    hitAsync: (name) => {
      const action = take(name)
      if (action === undefined) return undefined
      switch (action._tag) {
        case "Crash":
          crash()
          return new Promise<void>(() => undefined)
        case "Fail":
          return Promise.reject(fired(name))
        case "Errno":
          return Promise.reject(errnoError(action.code, name))
        case "Delay":
          return new Promise<void>((resolve) => setTimeout(resolve, Duration.toMillis(action.duration)))
        case "Off":
          return undefined
      }
    }
  }
}
