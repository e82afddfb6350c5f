/**
 * A body's bytes as a reader meets them: pushed in chunks cut anywhere (each chunk's buffer
 * overwritten once pushed, as a socket's are), and broken by a few byte edits. Shared by the
 * list reader's tests and the proof that it reads what the list's Schema reads.
 */
import fc from "fast-check"

/** Reads a body pushed chunk by chunk: false once the rest need not come. */
export interface ChunkReader<A> {
  readonly push: (chunk: Buffer) => boolean
  readonly end: () => A
}

/**
 * `body` pushed in the chunks `cuts` makes of it (positions, in any order, clamped to the body),
 * each chunk a buffer of its own that is overwritten once pushed, as a socket's buffers are reused:
 * a reader that kept looking at an earlier chunk instead of copying what it needs would misread.
 */
export const pushChunks = <A>(reader: ChunkReader<A>, body: Buffer, cuts: ReadonlyArray<number>): A => {
  const ends = [...new Set(cuts.map((cut) => Math.min(cut, body.length)))].sort((a, b) => a - b)
  let from = 0
  for (const end of [...ends, body.length]) {
    const chunk = Buffer.from(body.subarray(from, end))
    const more = reader.push(chunk)
    chunk.fill(0x5b)
    from = end
    if (!more) break
  }
  return reader.end()
}

/** Where the chunks end: anywhere, or after every single byte. */
export const cutsFor = (body: Buffer, cuts: ReadonlyArray<number> | "every byte") =>
  cuts === "every byte" ? Array.from({ length: body.length }, (_, i) => i) : cuts.map((cut) => cut % (body.length + 1))
export const anyCuts = fc.oneof(fc.array(fc.nat(), { maxLength: 12 }), fc.constant("every byte" as const))

/** Bytes that matter to a JSON scan, and bytes of multi-byte UTF-8 (a lead, a continuation, one never valid). */
const structural = fc.constantFrom(0x7b, 0x7d, 0x5b, 0x5d, 0x22, 0x5c, 0x2c, 0x3a, 0x20, 0x0a, 0x31, 0x6e, 0xc3, 0xa9, 0xf0, 0x9f, 0xff)
const edit: fc.Arbitrary<Edit> = fc.record({
  at: fc.nat(),
  /** `at` counts token positions only (the body's brackets, commas, colons and quotes, or the caller's). */
  onToken: fc.boolean(),
  kind: fc.constantFrom("delete", "insert", "replace", "truncate", "append"),
  byte: structural
})
export interface Edit {
  readonly at: number
  readonly onToken: boolean
  readonly kind: "delete" | "insert" | "replace" | "truncate" | "append"
  readonly byte: number
}
/** A few byte edits: a token lost or doubled, a UTF-8 sequence cut, the body cut short, trailing garbage. */
export const anyEdits = fc.array(edit, { maxLength: 3 })
/** One or two edits, each on a token. */
export const tokenEdits = fc.array(edit.map((edit) => ({ ...edit, onToken: true })), { minLength: 1, maxLength: 2 })

const TOKENS = new Set([0x7b, 0x7d, 0x5b, 0x5d, 0x2c, 0x3a, 0x22])

/**
 * `bytes` with `edits` made, each at its position in `bytes` (modulo its length): none inside a
 * `spared` range `[start, end)` (nor, for an insert, at its end), where the caller states apart
 * what a change does. A truncation or an append may fall anywhere. `tokens`: the positions an edit
 * on a token picks from (by default every bracket, comma, colon and quote).
 */
export const applyEdits = (
  bytes: Buffer,
  edits: ReadonlyArray<Edit>,
  spared: ReadonlyArray<readonly [number, number]> = [],
  tokens: ReadonlyArray<number> = bytes.reduce<Array<number>>((at, byte, i) => (TOKENS.has(byte) ? [...at, i] : at), [])
): Buffer => {
  const isSpared = (i: number, kind: Edit["kind"]) =>
    spared.some(([start, end]) => start <= i && (kind === "insert" ? i <= end : i < end))
  const placed = edits
    .map((edit) => ({ ...edit, i: edit.onToken && tokens.length > 0 ? tokens[edit.at % tokens.length]! : edit.at % (bytes.length + 1) }))
    .filter(({ i, kind }) => kind === "truncate" || kind === "append" || !isSpared(i, kind))
    // from the last position back, so each edit's position is still where it was in `bytes`
    .sort((a, b) => b.i - a.i)
  let out = Array.from(bytes)
  const appended: Array<number> = []
  for (const { byte, i, kind } of placed) {
    if (kind === "delete") out.splice(i, 1)
    else if (kind === "insert") out.splice(i, 0, byte)
    else if (kind === "replace" && i < out.length) out[i] = byte
    else if (kind === "truncate") out = out.slice(0, i)
    else if (kind === "append") appended.push(byte)
  }
  return Buffer.from([...out, ...appended])
}
