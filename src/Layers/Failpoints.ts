/**
 * The armed `Failpoints` (see `Services/Failpoints.ts`): each armed point has one action, taken
 * on every hit or on the first `count` hits. Built once at startup from `VK_SANDBOX_FAILPOINTS`
 * (`Cli/Failpoints.ts` parses it); points that are not armed cost one map lookup.
 */
import { Duration, Effect, Option } from "effect"
import { type FailpointName, FailpointFired, type FailpointsShape } from "../Services/Failpoints.ts"

export type FailpointAction =
  | { readonly _tag: "Crash" }
  | { readonly _tag: "Fail" }
  | { readonly _tag: "Delay"; readonly duration: Duration.Duration }

export interface FailpointTerm {
  readonly action: FailpointAction
  /** Taken on the first `count` hits only; None = on every hit. */
  readonly count: Option.Option<number>
  /** The term as written, for the startup warning. */
  readonly text: string
}

/** Ends the process at once with SIGKILL: no finalizer, no flush, as `kill -9` from outside. */
export const killSelf = (): void => {
  process.kill(process.pid, "SIGKILL")
}

export const make = (
  terms: ReadonlyMap<FailpointName, FailpointTerm>,
  crash: () => void = killSelf
): FailpointsShape => {
  const left = new Map<FailpointName, number>()
  for (const [name, term] of terms) if (Option.isSome(term.count)) left.set(name, term.count.value)
  /** The action for this hit, counting it down; undefined when the point is off (now). */
  const take = (name: FailpointName): FailpointAction | undefined => {
    const term = terms.get(name)
    if (term === undefined) return undefined
    const remaining = left.get(name)
    if (remaining !== undefined) {
      if (remaining <= 0) return undefined
      left.set(name, remaining - 1)
    }
    return term.action
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
          case "Fail":
            return Effect.fail(fired(name))
          case "Delay":
            return Effect.sleep(action.duration)
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
        case "Delay":
          return new Promise<void>((resolve) => setTimeout(resolve, Duration.toMillis(action.duration)))
      }
    }
  }
}
