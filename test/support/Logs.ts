/** Capturing the log lines a test's effects write, with their annotations, in memory. */
import { Logger, type LogLevel, References } from "effect"

export interface Line {
  readonly level: LogLevel.LogLevel
  readonly message: string
  readonly annotations: Readonly<Record<string, unknown>>
}

/** A logger that appends to `lines`; clear it with `lines.length = 0` between steps. */
export const makeLogCapture = () => {
  const lines: Array<Line> = []
  const logger = Logger.make((options) => {
    lines.push({
      level: options.logLevel,
      message: Array.isArray(options.message) ? options.message.map(String).join(" ") : String(options.message),
      annotations: options.fiber.getRef(References.CurrentLogAnnotations)
    })
  })
  return { lines, logger, layer: Logger.layer([logger]) }
}
