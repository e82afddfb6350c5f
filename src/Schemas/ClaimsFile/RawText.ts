/**
 * The claims file's text, member by member: where each key is (for error positions), which keys
 * repeat (JSON.parse keeps the last silently), and the exact text of the fields this version does
 * not know (JSON.parse would round numbers past 2^53). Runs only on text JSON.parse accepted.
 */

export interface RawMember {
  readonly key: string
  /** Where the member's key starts. */
  readonly at: number
  /** The key as written, quotes and escapes included. */
  readonly keyText: string
  readonly valueStart: number
  readonly valueEnd: number
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
export const skipSpace = (text: string, i: number): number => {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++
  return i
}
/** `text[i]` is the opening quote; returns the index after the closing one. */
const endOfString = (text: string, i: number): number => {
  for (i++; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x5c) i++
    else if (c === 0x22) return i + 1
  }
  return i
}
const endOfValue = (text: string, i: number): number => {
  const first = text.charCodeAt(i)
  if (first === 0x22) return endOfString(text, i)
  if (first === 0x7b || first === 0x5b) {
    let depth = 0
    while (i < text.length) {
      const c = text.charCodeAt(i)
      if (c === 0x22) {
        i = endOfString(text, i)
        continue
      }
      if (c === 0x7b || c === 0x5b) depth++
      else if ((c === 0x7d || c === 0x5d) && --depth === 0) return i + 1
      i++
    }
    return i
  }
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (isSpace(c) || c === 0x2c || c === 0x7d || c === 0x5d) return i
    i++
  }
  return i
}
/** The members of the object whose `{` is at `open`. */
export const membersOf = (text: string, open: number): ReadonlyArray<RawMember> => {
  const members: Array<RawMember> = []
  let i = skipSpace(text, open + 1)
  if (text.charCodeAt(i) === 0x7d) return members
  while (i < text.length) {
    const keyEnd = endOfString(text, i)
    const keyText = text.slice(i, keyEnd)
    const valueStart = skipSpace(text, skipSpace(text, keyEnd) + 1)
    const valueEnd = endOfValue(text, valueStart)
    members.push({ key: JSON.parse(keyText) as string, at: i, keyText, valueStart, valueEnd })
    i = skipSpace(text, valueEnd)
    if (text.charCodeAt(i) !== 0x2c) break
    i = skipSpace(text, i + 1)
  }
  return members
}
/** The value's text without the whitespace outside its strings. */
const compact = (text: string): string => {
  let out = ""
  let from = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      i = endOfString(text, i) - 1
    } else if (isSpace(c)) {
      out += text.slice(from, i)
      from = i + 1
    }
  }
  return out + text.slice(from)
}
export const memberText = (text: string, m: RawMember): string => `${m.keyText}:${compact(text.slice(m.valueStart, m.valueEnd))}`

/** `line L column C` (1-based) of offset `at`. */
export const positionOf = (text: string, at: number): string => {
  let line = 1
  let lineStart = 0
  for (let i = 0; i < at; i++) {
    if (text.charCodeAt(i) === 0x0a) {
      line++
      lineStart = i + 1
    }
  }
  return `line ${line} column ${at - lineStart + 1}`
}

/** The first key that repeats among `members`, with where it repeats. */
export const repeated = (members: ReadonlyArray<RawMember>): RawMember | undefined => {
  const seen = new Set<string>()
  for (const m of members) {
    if (seen.has(m.key)) return m
    seen.add(m.key)
  }
  return undefined
}
