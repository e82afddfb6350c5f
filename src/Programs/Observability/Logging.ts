/**
 * The daemon's log lines: one flat JSON record per line, `time`, `level` and `msg` first, then
 * every log annotation as its own field. An annotation holding an error (a tagged error, an
 * `Error`, or a string under the key `error`) becomes `<key>.tag`, `<key>.message` and
 * `<key>.cause` (the chain of underlying errors, `Tag: message <- Tag: message`); a failure logged
 * as the line's cause is reported the same way under `error`. `--log-format text` renders the same
 * record as `time LEVEL msg key=value …`.
 */
import { Cause, Layer, Logger, References } from "effect"
import type { AppConfigShape, LogLevelName } from "../../Schemas/Config.ts"

export type LogRecord = Record<string, unknown>

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** A tagged error or an `Error`: something with a message worth splitting into fields. */
const isErrorLike = (u: unknown): u is { readonly message?: unknown; readonly _tag?: unknown; readonly cause?: unknown } =>
  u instanceof Error || (isRecord(u) && typeof u["_tag"] === "string" && "message" in u)

const tagOf = (error: { readonly _tag?: unknown; readonly name?: unknown }): string =>
  typeof error._tag === "string" ? error._tag : typeof error.name === "string" ? error.name : "Error"

const messageOf = (error: { readonly message?: unknown }): string => (typeof error.message === "string" ? error.message : "")

/** The errors under `error`, outermost excluded, as `Tag: message` links (at most 8 deep). */
const causeChain = (error: { readonly cause?: unknown }): string | undefined => {
  const links: Array<string> = []
  let next: unknown = error.cause
  while (next !== undefined && next !== null && links.length < 8) {
    if (isErrorLike(next)) {
      const message = messageOf(next)
      links.push(message === "" ? tagOf(next) : `${tagOf(next)}: ${message}`)
      next = next.cause
    } else {
      links.push(typeof next === "string" ? next : JSON.stringify(next) ?? String(next))
      next = undefined
    }
  }
  return links.length === 0 ? undefined : links.join(" <- ")
}

const putError = (record: LogRecord, key: string, error: unknown): void => {
  if (isErrorLike(error)) {
    record[`${key}.tag`] = tagOf(error)
    record[`${key}.message`] = messageOf(error)
    const chain = causeChain(error)
    if (chain !== undefined) record[`${key}.cause`] = chain
  } else {
    record[`${key}.message`] = typeof error === "string" ? error : JSON.stringify(error) ?? String(error)
  }
}

/** A plain value for JSON: bigints and other non-JSON values as text. */
const plain = (value: unknown): unknown => {
  switch (typeof value) {
    case "string":
    case "number":
    case "boolean":
      return value
    case "bigint":
      return value.toString()
    case "undefined":
      return undefined
    case "object":
      if (value === null) return null
      if (value instanceof Date) return value.toISOString()
      try {
        return JSON.parse(JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v)))
      } catch {
        return String(value)
      }
    default:
      return String(value)
  }
}

const messageText = (message: unknown): string => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.map((part) => (typeof part === "string" ? part : JSON.stringify(plain(part)))).join(" ")
}

/** The flat record of one log call. */
export const toRecord = (input: {
  readonly date: Date
  readonly level: string
  readonly message: unknown
  readonly annotations: Readonly<Record<string, unknown>>
  readonly cause: Cause.Cause<unknown>
}): LogRecord => {
  const record: LogRecord = { time: input.date.toISOString(), level: input.level.toLowerCase(), msg: messageText(input.message) }
  for (const [key, value] of Object.entries(input.annotations)) {
    if (key === "time" || key === "level" || key === "msg") continue
    if (isErrorLike(value) || key === "error" || key === "err") putError(record, key === "err" ? "error" : key, value)
    else record[key] = plain(value)
  }
  if (input.cause.reasons.length > 0 && record["error.tag"] === undefined && record["error.message"] === undefined) {
    const failure = input.cause.reasons.find(Cause.isFailReason)
    const defect = input.cause.reasons.find(Cause.isDieReason)
    if (failure !== undefined) putError(record, "error", failure.error)
    else if (defect !== undefined) putError(record, "error", defect.defect)
    else record["error.tag"] = "Interrupted"
    record["error.cause"] ??= Cause.pretty(input.cause).split("\n").slice(0, 6).join(" | ")
  }
  return record
}

const recordOf = Logger.make((options): LogRecord =>
  toRecord({
    date: options.date,
    level: options.logLevel,
    message: options.message,
    annotations: options.fiber.getRef(References.CurrentLogAnnotations),
    cause: options.cause
  })
)

const textValue = (value: unknown): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value)
  return /[\s"=]/.test(text) || text === "" ? JSON.stringify(text) : text
}

/** `time LEVEL msg key=value …`: the same fields as the JSON line, for a person at a terminal. */
export const toText = (record: LogRecord): string => {
  const { time, level, msg, ...fields } = record
  const rest = Object.entries(fields).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${textValue(v)}`)
  return [String(time), String(level).toUpperCase().padEnd(5), String(msg), ...rest].join(" ")
}

export const jsonLogger = Logger.withConsoleLog(Logger.map(recordOf, (record) => JSON.stringify(record)))
export const textLogger = Logger.withConsoleLog(Logger.map(recordOf, toText))

const minimumLevel: Record<LogLevelName, "Trace" | "Debug" | "Info" | "Warn" | "Error"> = {
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error"
}

/** The daemon's logger (replacing Effect's default) and minimum level, from the flags. */
export const layer = (config: Pick<AppConfigShape, "logFormat" | "logLevel">) =>
  Layer.mergeAll(
    Logger.layer([config.logFormat === "json" ? jsonLogger : textLogger]),
    Layer.succeed(References.MinimumLogLevel, minimumLevel[config.logLevel])
  )
