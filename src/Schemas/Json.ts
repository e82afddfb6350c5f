/**
 * JSON parsing whose error never quotes the input. The parser's own message quotes the text
 * around the fault (`Unexpected token 'o', ..."token":tok_4f9a"...`), and the texts we parse
 * (claims files, claim responses) carry release tokens; only the position is kept.
 */
import { Result } from "effect"

export const invalidJsonMessage = (cause: unknown): string => {
  const text = cause instanceof Error ? cause.message : ""
  const at = /at position ([0-9]+)(?: \(line ([0-9]+) column ([0-9]+)\))?/.exec(text)
  if (at === null) return "invalid JSON"
  return at[2] === undefined
    ? `invalid JSON at position ${at[1]}`
    : `invalid JSON at position ${at[1]} (line ${at[2]} column ${at[3]})`
}

export const parseJsonQuietly = (text: string): Result.Result<unknown, string> => {
  try {
    return Result.succeed(JSON.parse(text) as unknown)
  } catch (cause) {
    return Result.fail(invalidJsonMessage(cause))
  }
}
