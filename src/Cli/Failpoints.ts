/**
 * `VK_SANDBOX_FAILPOINTS`: which failpoints a test arms (`Services/Failpoints.ts`), read once at
 * startup; unset or empty means inert. Syntax: `name=chain` terms joined by `;`, a chain of steps
 * `[count "*"] action` joined by `->`, action `crash | fail | delay(<go-duration>) | errno(EIO |
 * ENOSPC) | off`; e.g. `commit-before-fsync=3*off->2*errno(ENOSPC);release-before-send=2*fail`.
 * Each step takes its count of hits, then the next takes over; after the last the point is inert.
 * An unknown name or a malformed action stops the daemon at startup (exit 1): a mistyped point
 * must not pass silently as an inert one.
 */
import { Option, Result } from "effect"
import { type FailpointAction, type FailpointTerm, failpointErrnos, make } from "../Layers/Failpoints.ts"
import { type FailpointName, failpointNames, type FailpointsShape, inertFailpoints } from "../Services/Failpoints.ts"
import { parseGoDuration } from "./GoDuration.ts"
import type { Environment } from "./ParseConfig.ts"

export const FAILPOINTS_ENV = "VK_SANDBOX_FAILPOINTS"

const isName = (text: string): text is FailpointName => (failpointNames as ReadonlyArray<string>).includes(text)

/** The points an `errno` may be armed at: the claims file's write steps. */
const filePoints: ReadonlyArray<FailpointName> = ["commit-before-fsync", "commit-after-rename"]

const parseAction = (name: FailpointName, action: string): Result.Result<FailpointAction, string> => {
  if (action === "crash") return Result.succeed({ _tag: "Crash" })
  if (action === "fail") return Result.succeed({ _tag: "Fail" })
  if (action === "off") return Result.succeed({ _tag: "Off" })
  const delay = /^delay\((.*)\)$/.exec(action)
  if (delay !== null) {
    const duration = parseGoDuration(delay[1] ?? "")
    if (Result.isFailure(duration)) return Result.fail(`failpoint ${name}: delay(${delay[1]}): ${duration.failure}`)
    return Result.succeed({ _tag: "Delay", duration: duration.success })
  }
  const errno = /^errno\((.*)\)$/.exec(action)
  if (errno !== null) {
    const code = failpointErrnos.find((known) => known === errno[1])
    if (code === undefined) return Result.fail(`failpoint ${name}: errno(${errno[1]}): want one of ${failpointErrnos.join(", ")}`)
    if (!filePoints.includes(name)) return Result.fail(`failpoint ${name}: errno is a file error, armed only at ${filePoints.join(" and ")}`)
    return Result.succeed({ _tag: "Errno", code })
  }
  return Result.fail(
    `failpoint ${name}: unknown action ${JSON.stringify(action)} (want crash, fail, off, delay(<duration>) or errno(<code>), optionally N* before it)`
  )
}

/** One step of a chain, and the rest of the chain after it. */
const parseChain = (name: FailpointName, steps: ReadonlyArray<string>, text: string): Result.Result<FailpointTerm, string> => {
  const [first = "", ...rest] = steps
  let step = first.trim()
  let count = Option.none<number>()
  const star = /^(\d{1,9})\*/.exec(step)
  if (star !== null) {
    count = Option.some(Number(star[1]))
    step = step.slice(star[0].length)
  }
  const action = parseAction(name, step)
  if (Result.isFailure(action)) return Result.fail(action.failure)
  if (rest.length === 0) return Result.succeed({ action: action.success, count, text })
  if (Option.isNone(count)) return Result.fail(`failpoint ${name}: ${JSON.stringify(first)} takes every hit: only the last step of a chain may go without N*`)
  const next = parseChain(name, rest, text)
  return Result.map(next, (term) => ({ action: action.success, count, text, next: term }))
}

const parseTerm = (text: string): Result.Result<readonly [FailpointName, FailpointTerm], string> => {
  const equals = text.indexOf("=")
  if (equals < 0) return Result.fail(`${JSON.stringify(text)}: want name=action`)
  const name = text.slice(0, equals).trim()
  if (!isName(name)) return Result.fail(`unknown failpoint ${JSON.stringify(name)} (known: ${failpointNames.join(", ")})`)
  return Result.map(parseChain(name, text.slice(equals + 1).split("->"), text), (term) => [name, term] as const)
}

/** The armed points of `text`, or why it is refused. */
export const parseFailpoints = (text: string): Result.Result<ReadonlyMap<FailpointName, FailpointTerm>, string> => {
  const terms = new Map<FailpointName, FailpointTerm>()
  for (const raw of text.split(";")) {
    if (raw.trim() === "") continue
    const term = parseTerm(raw.trim())
    if (Result.isFailure(term)) return Result.fail(term.failure)
    const [name, value] = term.success
    if (terms.has(name)) return Result.fail(`failpoint ${name} is armed twice`)
    terms.set(name, value)
  }
  return Result.succeed(terms)
}

/** The failpoints the environment arms: inert when the variable is unset or empty. */
export const failpointsFromEnvironment = (env: Environment): Result.Result<FailpointsShape, string> => {
  const text = env[FAILPOINTS_ENV]
  if (text === undefined || text.trim() === "") return Result.succeed(inertFailpoints)
  return Result.map(parseFailpoints(text), (terms) => (terms.size === 0 ? inertFailpoints : make(terms)))
}
