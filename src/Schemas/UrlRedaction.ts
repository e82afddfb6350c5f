/**
 * URLs in messages without their user info. A `--sandboxd-url` or a kubeconfig `server` may carry
 * `user:password@`; every message, log annotation and error that can show such a URL passes through
 * `redactUrlUserinfo`, which keeps the scheme, host and path (what an operator needs to find the
 * fault) and replaces whatever sits between `://` and the last `@` of the authority.
 */

/** The text every redacted user info becomes. */
export const redactedUserinfo = "redacted"

// scheme "://" then the authority up to its last "@" (a password may hold an unescaped "@"); the
// authority ends at "/", "?", "#", whitespace or a quote.
const userinfoPattern = /([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^\s/?#"'<>]*@/g

/** `text` with the user info of every URL in it replaced by `redacted`. */
export const redactUrlUserinfo = (text: string): string => text.replace(userinfoPattern, `$1${redactedUserinfo}@`)

/**
 * A thrown cause with the user info of every URL in its message (and its causes' messages)
 * replaced, for errors that keep their cause for the logs. The copy's stack is new, so the
 * original message (the stack's first line) is not carried along; `code` is kept.
 */
export const redactCause = (cause: unknown, depth = 0): unknown => {
  if (!(cause instanceof Error)) return typeof cause === "string" ? redactUrlUserinfo(cause) : cause
  const copy = new Error(redactUrlUserinfo(cause.message))
  copy.name = cause.name
  if ("code" in cause && typeof cause.code === "string") Object.assign(copy, { code: cause.code })
  if (cause.cause !== undefined && depth < 4) copy.cause = redactCause(cause.cause, depth + 1)
  return copy
}
