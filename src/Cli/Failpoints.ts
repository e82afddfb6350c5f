/**
 * `VK_SANDBOX_FAILPOINTS`: which failpoints a test arms (see `Services/Failpoints.ts`). Read once
 * at startup; unset or empty means inert. The syntax is `name=action` terms joined by `;`:
 *
 *   action := [count "*"] ( "crash" | "fail" | "delay(" go-duration ")" )
 *
 * e.g. `claim-after-send=crash;commit-before-fsync=delay(500ms);release-before-send=2*fail`.
 * An unknown name or a malformed action stops the daemon at startup (exit 1): a mistyped point
 * must not pass silently as an inert one.
 */
import { Option, Result } from "effect"
import { type FailpointTerm, make } from "../Layers/Failpoints.ts"
import { type FailpointName, failpointNames, type FailpointsShape, inertFailpoints } from "../Services/Failpoints.ts"
import { parseGoDuration } from "./GoDuration.ts"
import type { Environment } from "./ParseConfig.ts"

export const FAILPOINTS_ENV = "VK_SANDBOX_FAILPOINTS"

const isName = (text: string): text is FailpointName => (failpointNames as ReadonlyArray<string>).includes(text)

const parseTerm = (text: string): Result.Result<readonly [FailpointName, FailpointTerm], string> => {
  const equals = text.indexOf("=")
  if (equals < 0) return Result.fail(`${JSON.stringify(text)}: want name=action`)
  const name = text.slice(0, equals).trim()
  let action = text.slice(equals + 1).trim()
  if (!isName(name)) return Result.fail(`unknown failpoint ${JSON.stringify(name)} (known: ${failpointNames.join(", ")})`)
  let count = Option.none<number>()
  const star = /^(\d{1,9})\*/.exec(action)
  if (star !== null) {
    count = Option.some(Number(star[1]))
    action = action.slice(star[0].length)
  }
  if (action === "crash") return Result.succeed([name, { action: { _tag: "Crash" }, count, text }] as const)
  if (action === "fail") return Result.succeed([name, { action: { _tag: "Fail" }, count, text }] as const)
  const delay = /^delay\((.*)\)$/.exec(action)
  if (delay !== null) {
    const duration = parseGoDuration(delay[1] ?? "")
    if (Result.isFailure(duration)) return Result.fail(`failpoint ${name}: delay(${delay[1]}): ${duration.failure}`)
    return Result.succeed([name, { action: { _tag: "Delay", duration: duration.success }, count, text }] as const)
  }
  return Result.fail(`failpoint ${name}: unknown action ${JSON.stringify(action)} (want crash, fail or delay(<duration>), optionally N* before it)`)
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
