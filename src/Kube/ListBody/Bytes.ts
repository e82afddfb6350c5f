/**
 * The bytes a list body's structure is read from: the JSON punctuation, whitespace, where a string
 * closes (escapes skipped), and a small member parsed. Bytes, not text: no byte of a multi-byte
 * UTF-8 sequence is below 0x80, so none is taken for a quote, backslash or bracket, and text is
 * decoded only once an item's last byte is in.
 */
export const QUOTE = 0x22
export const BACKSLASH = 0x5c
export const COLON = 0x3a
export const COMMA = 0x2c
export const OPEN_OBJECT = 0x7b
export const CLOSE_OBJECT = 0x7d
export const OPEN_ARRAY = 0x5b
export const CLOSE_ARRAY = 0x5d

export const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/**
 * Where the quote closing a string is, scanning from `from` (past its opening quote and any bytes
 * already read); `b.length` or more when `b` ends first, one more when it ends right after a
 * backslash, whose escaped byte is still to come. Most of a Pod's bytes are inside strings.
 */
export const closingQuote = (b: Buffer, from: number): number => {
  const length = b.length
  let k = from
  while (k < length) {
    const d = b[k]
    if (d === QUOTE) break
    if (d === BACKSLASH) k++
    k++
  }
  return k
}

/** `text` parsed, or undefined when it is not one JSON value (the envelope's names and small members). */
export const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
