/**
 * Pods and statuses compared as the apiserver stores them: a canonical JSON form (keys sorted,
 * undefined dropped, times at whole seconds), and the same comparison made without building it.
 */

/**
 * A canonical JSON form for comparisons: keys sorted, undefined dropped, and every timestamp
 * (a Date from client-node, or an RFC 3339 string) reduced to whole seconds, the precision the
 * apiserver stores (metav1.Time).
 */
export const canonical = (value: unknown): string => JSON.stringify(normalize(value))

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

const normalize = (value: unknown): unknown => {
  if (value instanceof Date) return secondsOf(value)
  if (typeof value === "string" && RFC3339.test(value)) {
    const parsed = new Date(value)
    return Number.isNaN(parsed.getTime()) ? value : secondsOf(parsed)
  }
  if (Array.isArray(value)) return value.map(normalize)
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) {
      const field = (value as Record<string, unknown>)[key]
      if (field !== undefined) out[key] = normalize(field)
    }
    return out
  }
  return value
}

const secondsOf = (date: Date) => `t${Math.floor(date.getTime() / 1000)}`

/** Not a leaf of `canonical`'s JSON: an array or a (non-Date) object. */
const container: unique symbol = Symbol("container")
/** Left out of an object by `canonical` (undefined, and what JSON drops: functions, symbols). */
const absent: unique symbol = Symbol("absent")

/** What `canonical` writes for a value that is no array or object, with `absent` for what it leaves out. */
const leafOf = (value: unknown): unknown => {
  if (value instanceof Date) return secondsOf(value)
  switch (typeof value) {
    case "string": {
      if (!RFC3339.test(value)) return value
      const parsed = new Date(value)
      return Number.isNaN(parsed.getTime()) ? value : secondsOf(parsed)
    }
    case "number":
      return Number.isFinite(value) ? value : null
    case "undefined":
    case "function":
    case "symbol":
      return absent
    case "object":
      return value === null ? null : container
    default:
      return value
  }
}

/** The members `canonical` writes of an object (`__proto__` is lost by its copy). */
const membersOf = (value: object): Set<string> => {
  const keys = new Set<string>()
  for (const key of Object.keys(value)) {
    if (key !== "__proto__" && leafOf((value as Record<string, unknown>)[key]) !== absent) keys.add(key)
  }
  return keys
}

const sameIn = (a: unknown, b: unknown, inArray: boolean): boolean => {
  let x = leafOf(a)
  let y = leafOf(b)
  if (x !== container || y !== container) {
    // in an array JSON writes what it leaves out elsewhere as null
    if (inArray) {
      if (x === absent) x = null
      if (y === absent) y = null
    }
    return x === y
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!sameIn(a[i], b[i], true)) return false
    return true
  }
  const ra = a as Record<string, unknown>
  const rb = b as Record<string, unknown>
  const keys = membersOf(ra)
  const other = membersOf(rb)
  if (keys.size !== other.size) return false
  for (const key of keys) {
    if (!other.has(key) || !sameIn(ra[key], rb[key], false)) return false
  }
  return true
}

/**
 * `canonical(a) === canonical(b)` without building either string: the same walk, compared as it
 * goes (this runs for every watch event, on each field `shouldReconcile` compares).
 */
export const sameCanonical = (a: unknown, b: unknown): boolean => sameIn(a, b, false)

/** `sameCanonical`, with `undefined` and `null` alike. */
export const same = (a: unknown, b: unknown) => sameCanonical(a ?? null, b ?? null)
