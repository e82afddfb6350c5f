/** Plain-fetch helpers for the HTTP tests of the apiserver simulator. */
import { Effect } from "effect"

export interface Reply {
  readonly status: number
  readonly contentType: string
  readonly text: string
  readonly json: unknown
}

export const request = (
  url: string,
  init: { method?: string; body?: unknown; contentType?: string; token?: string | null; rawBody?: string } = {}
): Effect.Effect<Reply> =>
  Effect.promise(async () => {
    const headers: Record<string, string> = {}
    if (init.token !== null) headers["Authorization"] = `Bearer ${init.token ?? "t0ken"}`
    const body = init.rawBody ?? (init.body === undefined ? undefined : JSON.stringify(init.body))
    if (body !== undefined) headers["Content-Type"] = init.contentType ?? "application/json"
    const res = await fetch(url, { method: init.method ?? "GET", headers, ...(body !== undefined ? { body } : {}) })
    const text = await res.text()
    let json: unknown = undefined
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: res.status, contentType: res.headers.get("content-type") ?? "", text, json }
  })

/** An open watch: read decoded lines as they arrive. */
export interface OpenWatch {
  readonly status: number
  /** the next event, or "end" when the server closed the stream */
  readonly next: () => Effect.Effect<{ type: string; object: Record<string, unknown> } | "end">
  readonly close: () => Effect.Effect<void>
}

export const openWatch = (url: string, token = "t0ken"): Effect.Effect<OpenWatch> =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const res = await fetch(url, { headers: { Authorization: `Bearer ${token}` }, signal: controller.signal })
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let buffer = ""
    let done = false
    const nextLine = async (): Promise<string | undefined> => {
      for (;;) {
        const nl = buffer.indexOf("\n")
        if (nl >= 0) {
          const line = buffer.slice(0, nl)
          buffer = buffer.slice(nl + 1)
          if (line.trim() !== "") return line
          continue
        }
        if (done) return undefined
        const chunk = await reader.read().catch(() => ({ done: true, value: undefined }))
        if (chunk.done === true) done = true
        else buffer += decoder.decode(chunk.value, { stream: true })
      }
    }
    return {
      status: res.status,
      next: () =>
        Effect.promise(async () => {
          const line = await nextLine()
          return line === undefined ? ("end" as const) : (JSON.parse(line) as { type: string; object: Record<string, unknown> })
        }),
      close: () => Effect.sync(() => controller.abort())
    }
  })
