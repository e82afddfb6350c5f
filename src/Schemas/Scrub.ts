/**
 * Text that comes from sandboxd (error bodies and the messages in them) is untrusted: a daemon or
 * a proxy in front of it may echo the bearer it was sent. Everything such text can reach — a Pod
 * status, an Event, a log line, an error message — sees it only after `scrubText`, which removes
 * every secret the caller knows (the node root token, claim tokens) and anything shaped like a
 * credential, and replaces control characters so a body cannot forge log lines.
 */

/** What a removed secret is replaced with. */
export const SCRUBBED = "[redacted]"

/** Secrets shorter than this are not searched for: a one-letter token would shred every message. */
const MIN_SECRET_LENGTH = 4

/**
 * Credential shapes removed whatever the caller knows: an `Authorization`/`Bearer` value, a
 * `token`/`api_token`/`password`/`secret` field or parameter, and long hex or base64url runs
 * (sandboxd's claim and node tokens are 32 hex digits; a sandbox id is `sb_` + 16).
 */
const CREDENTIAL_PATTERNS: ReadonlyArray<readonly [RegExp, string]> = [
  // A short plain word after "bearer" is prose ("missing bearer token"), not a credential.
  [/\b(bearer|basic)(\s+)(?![A-Za-z]{1,11}(?![^\s"',;}]))[^\s"',;}]+/gi, `$1$2${SCRUBBED}`],
  [/\b(authorization)(["']?\s*[:=]\s*["']?)(?!bearer\b|basic\b)[^\s"',;}]+/gi, `$1$2${SCRUBBED}`],
  [/\b((?:api_?|access_?|refresh_?|claim_?|sandbox_?)?token|password|secret)(["']?\s*[:=]\s*["']?)[^\s"',;}&]+/gi, `$1$2${SCRUBBED}`],
  [/(?<![A-Za-z0-9_-])[A-Fa-f0-9]{32,}(?![A-Za-z0-9_-])/g, SCRUBBED],
  [/(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{40,}(?![A-Za-z0-9_-])/g, SCRUBBED]
]

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Control characters (CR/LF and the rest) become a visible `?`, so one reply is one log line. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g

/**
 * `text` with every occurrence of each known secret, and every credential-shaped run, replaced by
 * `[redacted]`, and its control characters replaced by `?`.
 */
export const scrubText = (text: string, secrets: Iterable<string> = []): string => {
  let out = text
  const known = Array.from(secrets).filter((s) => s.length >= MIN_SECRET_LENGTH)
  // Longest first, so a secret containing another is removed whole.
  known.sort((a, b) => b.length - a.length)
  for (const secret of known) {
    if (out.includes(secret)) out = out.replace(new RegExp(escapeRegExp(secret), "g"), SCRUBBED)
  }
  for (const [pattern, replacement] of CREDENTIAL_PATTERNS) out = out.replace(pattern, replacement)
  return out.replace(CONTROL, "?")
}

/** How much of a non-JSON error body is quoted. */
export const EXCERPT_LIMIT = 120

/**
 * A short, scrubbed quote of a body that is not sandboxd's `{"error": …}` shape (a proxy's HTML,
 * a router's plain text): at most `EXCERPT_LIMIT` characters, whitespace runs folded.
 */
export const safeExcerpt = (body: string, secrets: Iterable<string> = []): string => {
  // The whole body is scrubbed before it is cut, so no secret survives as a prefix at the cut.
  // Line breaks in an excerpt are layout, not content: they fold like spaces.
  const folded = scrubText(body.replace(/[\r\n\t]/g, " "), secrets).replace(/\s+/g, " ").trim()
  return folded.length > EXCERPT_LIMIT ? `${folded.slice(0, EXCERPT_LIMIT)}…` : folded
}
