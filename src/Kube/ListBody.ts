/**
 * A list reply read from its bytes chunk by chunk, one item at a time: each item's JSON text goes
 * to the caller as soon as its last byte is in, so the body is never held whole and only the
 * unfinished item is carried to the next chunk. The byte scan is `ListBody/Scanner.ts`; this
 * parses and decodes each item it hands over. Proven to read what the list's Schema reads
 * (`Kube/PodList.ts`, test/Kube/PodListSchema.test.ts).
 * INF-1 — a Pod the daemon cannot decode is left out: an item `decode` refuses goes to `undecodable`.
 */
import { Option } from "effect"
import { type ListScan, Scanner } from "./ListBody/Scanner.ts"

export type { ListScan }

/** Reads a list body chunk by chunk: `push` each chunk as it comes, then `end`. */
export interface ListReader<A> {
  /** Reads the next chunk; false once the outcome is known (stopped or malformed): read no more. */
  readonly push: (chunk: Buffer) => boolean
  /** The body ended (or no more of it is read): the outcome. */
  readonly end: () => A
}

/**
 * Reads a list, handing each element of its `items` array (an object) to `item` as JSON text, in
 * order, as soon as its last byte has been pushed; `item` returns false to stop the scan. The
 * `metadata` member comes back as text; any other member is skipped.
 */
export const scanner = (item: (text: string) => boolean): ListReader<ListScan> => {
  const scan = new Scanner(item)
  return { push: (chunk) => scan.push(chunk), end: () => scan.end() }
}

/** `scanner` on a whole body. */
export const scan = (body: Buffer, item: (text: string) => boolean): ListScan => {
  const scan = new Scanner(item)
  scan.push(body)
  return scan.end()
}

/**
 * What `readList` found: the decoded items, what `undecodable` made of each item `decode` refused,
 * and the list's metadata (JSON text); or why it stopped.
 */
export type ListRead<A, B> =
  | {
    readonly _tag: "Read"
    readonly items: Array<A>
    readonly undecodable: Array<B>
    readonly metadata: string | undefined
    readonly hasItems: boolean
  }
  /** Not a JSON object of this shape, or an item that is not JSON. */
  | { readonly _tag: "Malformed" }

/**
 * A list body, pushed chunk by chunk → its items, each parsed and decoded by `decode` as soon as
 * it has come and let go before the next one is cut out, so only what `decode` keeps outlives the
 * read. The daemon's Pod list read, in one place for the client and for the bench that times it
 * (`bench/podList.ts`).
 *
 * An item `decode` refuses does not end the read (INF-1 — a Pod the daemon cannot decode is left
 * out): `undecodable` is given its parsed JSON (for what can still be read of it) and the list goes
 * on.
 */
export const listReader = <A, B>(
  decode: (json: unknown) => Option.Option<A>,
  undecodable: (json: unknown) => B
): ListReader<ListRead<A, B>> => {
  const items: Array<A> = []
  const refused: Array<B> = []
  let unparsable = false
  const scan = new Scanner((text) => {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      unparsable = true
      return false
    }
    const item = decode(json)
    if (Option.isNone(item)) refused.push(undecodable(json))
    else items.push(item.value)
    return true
  })
  return {
    push: (chunk) => scan.push(chunk),
    end: () => {
      const read = scan.end()
      if (read._tag !== "Read" || unparsable) return { _tag: "Malformed" }
      return { _tag: "Read", items, undecodable: refused, metadata: read.metadata, hasItems: read.items }
    }
  }
}

/** `listReader` on a whole body. */
export const readList = <A, B>(
  body: Buffer,
  decode: (json: unknown) => Option.Option<A>,
  undecodable: (json: unknown) => B
): ListRead<A, B> => {
  const reader = listReader(decode, undecodable)
  reader.push(body)
  return reader.end()
}
