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
