/**
 * The simulator's requests and answers in their HTTP shape (the HTTP face, `Server.ts`, only
 * moves them to and from sockets), the faults a test can inject on a route, and the audit entry
 * kept of every request.
 */
import type { Duration } from "effect"
import type { SandboxdRoute } from "../../../src/Sandboxd/Routes.ts"

export interface SimRequest {
  readonly method: string
  /** Path with an optional query string. */
  readonly path: string
  readonly authorization?: string | undefined
  readonly contentType?: string | undefined
  readonly body: string
  /** The HTTP face saw more than `REQUEST_BODY_LIMIT` bytes. */
  readonly bodyTooLarge?: boolean
}

export type SimResponse =
  | {
    readonly _tag: "Reply"
    readonly status: number
    readonly contentType: string | undefined
    readonly body: string
    readonly headers?: Readonly<Record<string, string>>
  }
  /** Close the connection without any reply. */
  | { readonly _tag: "Drop" }
  /** Send the status and part of the body, then close mid-body. */
  | { readonly _tag: "Truncate"; readonly status: number; readonly contentType: string; readonly body: string }
  /** Send the status and part of the body, then neither finish nor close (until the client goes away). */
  | { readonly _tag: "Stall"; readonly status: number; readonly contentType: string; readonly body: string }

/** The routes, as the client names them (`src/Sandboxd/Routes.ts`). */
export type SimRoute = SandboxdRoute

export type SimFault =
  /** Added before the answer; further faults (or the normal answer) follow. */
  | { readonly _tag: "Latency"; readonly delay: Duration.Input }
  /** Answer with exactly this status and raw body. */
  | { readonly _tag: "Reply"; readonly status: number; readonly body: string; readonly contentType?: string }
  | { readonly _tag: "Drop" }
  | { readonly _tag: "Truncate"; readonly status: number; readonly body: string }
  /** Headers and part of the body are sent, the rest never comes: a reply hung mid-body. */
  | { readonly _tag: "Stall"; readonly status: number; readonly body: string }
  /** Never answer (until the client goes away). */
  | { readonly _tag: "Hang" }
  /**
   * Do the work (a claim is made, a release happens), then lose the reply: `"drop"` closes the
   * connection, `"hang"` never answers. Models a response lost after sandboxd committed.
   */
  | { readonly _tag: "LoseReply"; readonly how: "drop" | "hang" }
  /**
   * Do the work, then answer with this status and body instead of the model's reply: a gateway in
   * front of sandboxd that forwarded the request and answered on its own when the upstream broke
   * off (Envoy's 503 after a reset).
   */
  | { readonly _tag: "ReplaceReply"; readonly status: number; readonly body: string }

export const SimFault = {
  latency: (delay: Duration.Input): SimFault => ({ _tag: "Latency", delay }),
  /** A JSON `{"error": message}` body, or an empty body when `message` is undefined. */
  status: (status: number, message?: string): SimFault =>
    message === undefined
      ? { _tag: "Reply", status, body: "", contentType: "text/plain; charset=utf-8" }
      : { _tag: "Reply", status, body: jsonBody({ error: message }), contentType: "application/json" },
  body: (status: number, body: string, contentType = "application/json"): SimFault => ({
    _tag: "Reply",
    status,
    body,
    contentType
  }),
  drop: { _tag: "Drop" } as SimFault,
  truncate: (status: number, body: string): SimFault => ({ _tag: "Truncate", status, body }),
  stall: (status: number, body: string): SimFault => ({ _tag: "Stall", status, body }),
  hang: { _tag: "Hang" } as SimFault,
  loseReply: (how: "drop" | "hang"): SimFault => ({ _tag: "LoseReply", how }),
  replaceReply: (status: number, body: string): SimFault => ({ _tag: "ReplaceReply", status, body })
}

/** How the caller authenticated, as the simulator classifies the Authorization header. */
export type AuthKind = "none" | "malformed" | "root" | "tenant" | "claim" | "unknown"

export interface AuditEntry {
  readonly method: string
  readonly path: string
  readonly route: SimRoute | "unknown"
  /** The raw Authorization header (simulator only: tests assert the exact bearer). */
  readonly authorization: string | undefined
  readonly auth: AuthKind
  readonly contentType: string | undefined
  readonly body: string
  readonly atMillis: number
}


// ---- answers -----------------------------------------------------------------------------------

/** A JSON body as Go's encoder writes it: the value and a newline. */
export const jsonBody = (value: unknown): string => `${JSON.stringify(value)}\n`

export const reply = (status: number, value: unknown): SimResponse => ({
  _tag: "Reply",
  status,
  contentType: "application/json",
  body: jsonBody(value)
})
export const errorReply = (status: number, message: string): SimResponse => reply(status, { error: message })
export const noContent: SimResponse = { _tag: "Reply", status: 204, contentType: undefined, body: "" }
export const plainText = (status: number, body: string): SimResponse => ({
  _tag: "Reply",
  status,
  contentType: "text/plain; charset=utf-8",
  body
})
export const notFoundPage = plainText(404, "404 page not found\n")
export const methodNotAllowed = plainText(405, "Method Not Allowed\n")
