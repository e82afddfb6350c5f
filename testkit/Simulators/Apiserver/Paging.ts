/**
 * A list response from the selected objects: the resourceVersion floor a client may ask for (504
 * when it is newer than the server's), pagination with limit and continue (the token carries the
 * list's resourceVersion and the key to start at; later pages come from the current state, not a
 * snapshot at the token's resourceVersion; a token older than the retained window is 410 Expired),
 * and the list envelope (`remainingItemCount` only when no selector filters the list).
 */
import { Result } from "effect"
import { isRecord } from "./Patch.ts"
import { apiVersionOf, type ResourceInfo } from "./Resources.ts"
import { listKind, sortedKeys, typedListItem } from "./Objects.ts"
import { type ApiStatusError, badRequest, expired, failure, type JsonObject } from "./Status.ts"

export interface PageOptions {
  /** at most this many items; the rest through `continue` */
  readonly limit?: number | undefined
  readonly continue?: string | undefined
  /** a list at least this recent; one newer than the server has is 504 Too large resource version */
  readonly resourceVersion?: string | undefined
}

export const continueTooOld =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

export const encodeContinue = (rv: number, start: string): string =>
  Buffer.from(JSON.stringify({ v: "meta.k8s.io/v1", rv, start })).toString("base64url")

export const decodeContinue = (token: string): { rv: number; start: string } | undefined => {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"))
    if (!isRecord(parsed) || parsed["v"] !== "meta.k8s.io/v1" || typeof parsed["rv"] !== "number" || typeof parsed["start"] !== "string") {
      return undefined
    }
    return { rv: parsed["rv"], start: parsed["start"] }
  } catch {
    return undefined
  }
}

interface PagePlan {
  readonly page: ReadonlyArray<readonly [string, JsonObject]>
  readonly metadata: JsonObject
}

/** Which of `selected` the page holds, and the list's metadata (resourceVersion, continue, remainingItemCount). */
const planPage = (
  selected: ReadonlyArray<readonly [string, JsonObject]>,
  options: PageOptions,
  rv: number,
  compactedRv: number,
  unselective: boolean
): Result.Result<PagePlan, ApiStatusError> => {
  // A resourceVersion newer than the server's (it went backwards, or the client is ahead): the real
  // server waits a few seconds for it, then answers 504 Timeout with a ResourceVersionTooLarge cause.
  const atLeast = options.resourceVersion ?? ""
  if (/^\d+$/.test(atLeast) && Number(atLeast) > rv) {
    return Result.fail(failure(504, "Timeout", `Timeout: Too large resource version: ${atLeast}, current: ${rv}`, {
      causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }]
    }))
  }
  // pagination: the continue token carries the list's resourceVersion and the key to start after
  let start = 0
  let listRv = rv
  if (options.continue !== undefined && options.continue !== "") {
    const token = decodeContinue(options.continue)
    if (token === undefined) return Result.fail(badRequest(`continue key is not valid: illegal base64 data`))
    if (token.rv < compactedRv) return Result.fail(expired(continueTooOld))
    listRv = token.rv
    start = selected.findIndex(([k]) => k >= token.start)
    if (start < 0) start = selected.length
  }
  const limit = options.limit ?? 0
  const rest = selected.slice(start)
  const page = limit > 0 ? rest.slice(0, limit) : rest
  const more = page.length < rest.length
  return Result.succeed({
    page,
    metadata: {
      resourceVersion: String(listRv),
      ...(more
        ? {
          continue: encodeContinue(listRv, `${page[page.length - 1][0]}\u0000`),
          // the server counts what is left only when no selector filters the list
          ...(unselective ? { remainingItemCount: rest.length - page.length } : {})
        }
        : {})
    }
  })
}

/**
 * The list body for `selected` (store key and object, sorted by key). `rv` is the server's current
 * resourceVersion, `compactedRv` the oldest a continue token may carry; `unselective` says no
 * selector filtered the list.
 */
export const listPage = (
  r: ResourceInfo,
  selected: ReadonlyArray<readonly [string, JsonObject]>,
  options: PageOptions,
  rv: number,
  compactedRv: number,
  unselective: boolean
): Result.Result<JsonObject, ApiStatusError> =>
  Result.map(planPage(selected, options, rv, compactedRv, unselective), ({ metadata, page }) => {
    // one JSON round trip for the whole page is much cheaper than a structured clone per item
    const items = (JSON.parse(JSON.stringify(page.map(([, o]) => o))) as Array<JsonObject>).map((o) => typedListItem(r, o))
    const envelope = r.customResource ? (o: JsonObject) => sortedKeys(o) as JsonObject : (o: JsonObject) => o
    return envelope({ kind: listKind(r), apiVersion: apiVersionOf(r), metadata, items })
  })

/**
 * A list body as the server writes it: the envelope up to the items, then each item's text (joined
 * by commas), then the end. The items are the stored objects selected when the list was asked for;
 * a write stores a new object instead of changing the stored one (`ObjectStore.commit`), so these
 * are the list's state at its resourceVersion however late an item is written.
 */
export interface ListBody {
  /** `{"kind":…,"apiVersion":…,"metadata":{…},"items":[`, or the whole body (custom resources) */
  readonly head: string
  readonly items: ReadonlyArray<JsonObject>
  /** One item as the UTF-8 bytes of its JSON text. */
  readonly itemBytes: (o: JsonObject) => Buffer
  /** `]}`, or "" when `head` is the whole body */
  readonly tail: string
}

/**
 * A stored object's bytes as a typed list's item, by the object: what is stored is never changed
 * in place, so they hold for as long as it is stored. A 10,000-Pod list is ~18 MB of items, asked
 * for at every daemon start, and the bench's simulators share the machine with the daemon; kept as
 * bytes, a list is copied out, not encoded again.
 */
const typedItems = new WeakMap<JsonObject, Buffer>()

const typedItemBytes = (o: JsonObject): Buffer => {
  const known = typedItems.get(o)
  if (known !== undefined) return known
  const bytes = Buffer.from(typedItemText(o))
  typedItems.set(o, bytes)
  return bytes
}

/** The object without kind and apiVersion (a typed list's item), in the same key order, as JSON text. */
const typedItemText = (o: JsonObject): string => {
  const keys = Object.keys(o)
  // stored objects begin with kind and apiVersion (inWireOrder): their text without that prefix
  if (keys[0] === "kind" && keys[1] === "apiVersion") {
    if (keys.length === 2) return "{}"
    const full = JSON.stringify(o)
    const prefix = `{"kind":${JSON.stringify(o["kind"])},"apiVersion":${JSON.stringify(o["apiVersion"])},`
    if (full.startsWith(prefix)) return `{${full.slice(prefix.length)}`
  }
  const { kind: _kind, apiVersion: _apiVersion, ...item } = o
  return JSON.stringify(item)
}

/**
 * The list body for `selected`, as `listPage` makes it, in the pieces the server writes (no copy of
 * the stored objects). Custom resources (whose body is key-sorted as a whole) come as one piece.
 */
export const listPageBody = (
  r: ResourceInfo,
  selected: ReadonlyArray<readonly [string, JsonObject]>,
  options: PageOptions,
  rv: number,
  compactedRv: number,
  unselective: boolean
): Result.Result<ListBody, ApiStatusError> => {
  if (r.customResource) {
    return Result.map(listPage(r, selected, options, rv, compactedRv, unselective), (body) => ({
      head: JSON.stringify(body),
      items: [],
      itemBytes: typedItemBytes,
      tail: ""
    }))
  }
  return Result.map(planPage(selected, options, rv, compactedRv, unselective), ({ metadata, page }) => {
    const envelope = JSON.stringify({ kind: listKind(r), apiVersion: apiVersionOf(r), metadata })
    return { head: `${envelope.slice(0, -1)},"items":[`, items: page.map(([, o]) => o), itemBytes: typedItemBytes, tail: "]}" }
  })
}

const listBodyText = (body: ListBody): string =>
  `${body.head}${body.items.map((o) => body.itemBytes(o).toString("utf8")).join(",")}${body.tail}`

/** The same list body as `listPage`, as the JSON text the server sends. */
export const listPageText = (
  r: ResourceInfo,
  selected: ReadonlyArray<readonly [string, JsonObject]>,
  options: PageOptions,
  rv: number,
  compactedRv: number,
  unselective: boolean
): Result.Result<string, ApiStatusError> =>
  Result.map(listPageBody(r, selected, options, rv, compactedRv, unselective), listBodyText)
