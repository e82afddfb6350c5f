/**
 * Reading an apiserver reply's body: whole (unzipped off the event loop), or as its bytes arrive
 * (a list read item by item, a watch line by line). A streamed read yields to the event loop
 * every `BODY_BYTES_PER_TURN` bytes, so a long body never holds back sockets and timers (Q-06 —
 * the event loop is shared in turns).
 */
import { Option } from "effect"
import type { Dispatcher } from "undici"
import * as NodeStream from "node:stream"
import * as Util from "node:util"
import * as Zlib from "node:zlib"

/** JSON text → value, `null`s as sent (`decodePod` reads them as absent); None when not JSON. */
export const parseJson = (text: string): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(text))
  } catch {
    return Option.none()
  }
}

const gunzip = Util.promisify(Zlib.gunzip)

/** A reply's text, unzipped when the server gzipped it (off the event loop, in zlib's thread pool). */
export const bodyText = async (response: Dispatcher.ResponseData): Promise<string> =>
  response.headers["content-encoding"] === "gzip"
    ? (await gunzip(Buffer.from(await response.body.arrayBuffer()))).toString("utf8")
    : response.body.text()

/**
 * A reply's bytes as they arrive, unzipped likewise as they arrive (zlib's thread pool inflates
 * one chunk while the caller reads the one before). Destroying the returned stream destroys the
 * response body with it, which frees the connection.
 */
export const bodyStream = (response: Dispatcher.ResponseData): NodeStream.Readable =>
  response.headers["content-encoding"] === "gzip"
    ? NodeStream.pipeline(response.body, Zlib.createGunzip({ chunkSize: 64 * 1024 }), () => {})
    : response.body

/** Bytes of a body read in one turn of the event loop before the next turn is let in (a few ms of a list's decode). */
const BODY_BYTES_PER_TURN = 256 * 1024

/**
 * Hands each chunk of `body` to `push` as it arrives, until the body ends or `push` returns false
 * (the rest is not wanted: the body is destroyed). The stream flows, so each chunk is handed over
 * as it came: an async iterator's `read()` instead joins the chunks waiting into a new buffer, a
 * copy of most of an 18 MB list in 128 KB pieces. After every `BODY_BYTES_PER_TURN` bytes the body
 * is paused until the next turn of the event loop. A defect in `push` fails the read (the body
 * destroyed), not the process: on a gzipped reply the chunk comes from zlib's callback, where a
 * throw would be uncaught.
 */
export const readBody = (body: NodeStream.Readable, push: (chunk: Buffer) => boolean): Promise<void> =>
  new Promise((resolve, reject) => {
    let bytesThisTurn = 0
    let settled = false
    const settle = (error?: unknown) => {
      if (settled) return
      settled = true
      body.off("data", onData)
      if (error === undefined) resolve()
      else reject(error)
    }
    const onData = (chunk: Buffer) => {
      if (settled) return
      let more: boolean
      try {
        more = push(chunk)
      } catch (defect) {
        settle(defect)
        body.destroy()
        return
      }
      if (!more) {
        settle()
        body.destroy()
        return
      }
      bytesThisTurn += chunk.length
      if (bytesThisTurn >= BODY_BYTES_PER_TURN) {
        body.pause()
        setImmediate(() => {
          bytesThisTurn = 0
          if (!settled) body.resume()
        })
      }
    }
    NodeStream.finished(body, (error) => settle(error ?? undefined))
    body.on("data", onData)
  })

/** A response body's bytes as they arrive (undici's body is a Node stream of Buffers). */
export async function* chunksOf(body: AsyncIterable<Buffer>): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) yield chunk
}
