/**
 * The three patch types the apiserver accepts, on plain JSON values:
 * - strategic merge patch (Kubernetes' own, driven by per-field merge keys: `mergeKeyAt`),
 * - JSON merge patch (RFC 7386),
 * - JSON patch (RFC 6902).
 * Each returns a `Result`; nothing here throws.
 */
import { Result } from "effect"
import { type ApiStatusError, badRequest, failure } from "./Status.ts"

export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** A deep copy of a JSON value (undefined members drop out, as on the wire); faster than structuredClone here. */
export const clone = <A>(a: A): A => (a === undefined ? a : (JSON.parse(JSON.stringify(a)) as A))

/** How a list field merges under a strategic merge patch. */
export type ListStrategy = { readonly mergeKey: string } | "primitive-merge" | "replace"

/**
 * Merge keys from the Kubernetes Go types (patchMergeKey/patchStrategy tags) for the fields the daemon
 * and its tests patch. A list not named here is replaced whole (no merge key), as for NodeStatus.images.
 * `path` is the field path without list indices, e.g. ["status", "conditions"].
 */
export const mergeKeyAt = (path: ReadonlyArray<string>): ListStrategy => {
  const p = path.join(".")
  switch (p) {
    case "metadata.ownerReferences":
      return { mergeKey: "uid" }
    case "metadata.finalizers":
      return "primitive-merge"
    case "status.conditions": // NodeStatus and PodStatus: merge by type
    case "status.addresses": // NodeStatus.addresses: merge by type (not unique; see PIT-16 — three-way node status patch)
      return { mergeKey: "type" }
    case "status.podIPs":
    case "status.hostIPs":
      return { mergeKey: "ip" }
    case "spec.containers":
    case "spec.initContainers":
    case "spec.ephemeralContainers":
    case "spec.volumes":
    case "spec.containers.env":
    case "spec.containers.volumeMounts":
    case "spec.initContainers.env":
      return { mergeKey: p.endsWith("volumeMounts") ? "mountPath" : "name" }
    case "spec.containers.ports":
      return { mergeKey: "containerPort" }
    case "spec.tolerations": // no merge key: atomic
    case "spec.taints":
    default:
      return "replace"
  }
}

const stripDirectives = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.filter((e) => !(isRecord(e) && e["$patch"] !== undefined && Object.keys(e).length === 1)).map(stripDirectives)
  if (!isRecord(v)) return v
  const out: Record<string, unknown> = {}
  for (const [k, x] of Object.entries(v)) {
    if (k.startsWith("$")) continue
    if (x === null) continue
    out[k] = stripDirectives(x)
  }
  return out
}

const sameKey = (a: unknown, b: unknown, key: string) => isRecord(a) && isRecord(b) && a[key] === b[key]

const mergeList = (
  original: unknown,
  patch: ReadonlyArray<unknown>,
  path: ReadonlyArray<string>
): Array<unknown> => {
  const replaceDirective = patch.some((e) => isRecord(e) && e["$patch"] === "replace")
  const items = patch.filter((e) => !(isRecord(e) && e["$patch"] === "replace"))
  const strategy = mergeKeyAt(path)
  const orig = Array.isArray(original) ? original : []
  if (replaceDirective || strategy === "replace") return items.map(stripDirectives)
  if (strategy === "primitive-merge") {
    const out = [...orig]
    for (const e of items) if (!out.includes(e)) out.push(e)
    return out
  }
  const key = strategy.mergeKey
  let out = [...orig]
  for (const e of items) {
    if (isRecord(e) && e["$patch"] === "delete") {
      out = out.filter((o) => !sameKey(o, e, key))
      continue
    }
    const at = out.findIndex((o) => sameKey(o, e, key))
    if (at >= 0) out[at] = strategicMergeAt(out[at], e, path)
    else out.push(stripDirectives(e))
  }
  return out
}

const orderBy = (list: Array<unknown>, order: ReadonlyArray<unknown>, key: string | undefined): Array<unknown> => {
  const rank = (e: unknown) => {
    const i = order.findIndex((o) => (key === undefined ? o === e : sameKey(o, e, key)))
    return i < 0 ? Number.MAX_SAFE_INTEGER : i
  }
  return list.map((e, i) => ({ e, i })).sort((a, b) => rank(a.e) - rank(b.e) || a.i - b.i).map((x) => x.e)
}

const strategicMergeAt = (original: unknown, patch: unknown, path: ReadonlyArray<string>): unknown => {
  if (!isRecord(patch)) return clone(patch)
  if (patch["$patch"] === "replace") return stripDirectives(patch)
  const base: Record<string, unknown> = isRecord(original) ? { ...original } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith("$")) continue
    if (v === null) {
      delete base[k]
    } else if (isRecord(v)) {
      if (v["$patch"] === "delete") delete base[k]
      else base[k] = strategicMergeAt(base[k], v, [...path, k])
    } else if (Array.isArray(v)) {
      base[k] = mergeList(base[k], v, [...path, k])
    } else {
      base[k] = v
    }
  }
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith("$deleteFromPrimitiveList/") && Array.isArray(v)) {
      const field = k.slice("$deleteFromPrimitiveList/".length)
      const cur = base[field]
      if (Array.isArray(cur)) base[field] = cur.filter((e) => !v.includes(e))
    } else if (k.startsWith("$setElementOrder/") && Array.isArray(v)) {
      const field = k.slice("$setElementOrder/".length)
      const cur = base[field]
      const strategy = mergeKeyAt([...path, field])
      if (Array.isArray(cur)) base[field] = orderBy(cur, v, typeof strategy === "object" ? strategy.mergeKey : undefined)
    } else if (k === "$retainKeys" && Array.isArray(v)) {
      for (const key of Object.keys(base)) if (!v.includes(key)) delete base[key]
    }
  }
  return base
}

/** Apply a strategic merge patch (already decoded JSON). The patch must be an object. */
export const strategicMerge = (original: unknown, patch: unknown): Result.Result<unknown, ApiStatusError> => {
  if (!isRecord(patch)) return Result.fail(badRequest(`json: cannot unmarshal ${jsonKind(patch)} into Go value of type map[string]interface {}`))
  return Result.succeed(strategicMergeAt(original, patch, []))
}

/** RFC 7386. */
export const jsonMergePatch = (original: unknown, patch: unknown): unknown => {
  if (!isRecord(patch)) return clone(patch)
  const base: Record<string, unknown> = isRecord(original) ? { ...original } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete base[k]
    else base[k] = jsonMergePatch(base[k], v)
  }
  return base
}

const jsonKind = (u: unknown): string =>
  Array.isArray(u) ? "array" : u === null ? "null" : typeof u === "object" ? "object" : typeof u === "string" ? "string" : typeof u === "number" ? "number" : "bool"

const unprocessable = (message: string) => failure(422, "Invalid", message, {})

const parsePointer = (p: string): Result.Result<Array<string>, ApiStatusError> => {
  if (p === "") return Result.succeed([])
  if (!p.startsWith("/")) return Result.fail(unprocessable(`JSON pointer must start with '/': ${p}`))
  return Result.succeed(p.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~")))
}

type Container = Record<string, unknown> | Array<unknown>

const walk = (doc: unknown, tokens: ReadonlyArray<string>): Container | undefined => {
  let cur: unknown = doc
  for (const t of tokens) {
    if (Array.isArray(cur)) cur = cur[Number(t)]
    else if (isRecord(cur)) cur = cur[t]
    else return undefined
  }
  return Array.isArray(cur) || isRecord(cur) ? cur : undefined
}

const getAt = (doc: unknown, tokens: ReadonlyArray<string>): { found: boolean; value: unknown } => {
  if (tokens.length === 0) return { found: true, value: doc }
  const parent = walk(doc, tokens.slice(0, -1))
  const last = tokens[tokens.length - 1]
  if (parent === undefined) return { found: false, value: undefined }
  if (Array.isArray(parent)) {
    const i = Number(last)
    return Number.isInteger(i) && i >= 0 && i < parent.length ? { found: true, value: parent[i] } : { found: false, value: undefined }
  }
  return Object.prototype.hasOwnProperty.call(parent, last) ? { found: true, value: parent[last] } : { found: false, value: undefined }
}

const missing = (path: string) => unprocessable(`doc is missing path: "${path}": missing value`)

/** RFC 6902, on a copy. A body that is not an array is refused as the server's decoder refuses it (400). */
export const jsonPatch = (original: unknown, ops: unknown): Result.Result<unknown, ApiStatusError> => {
  if (!Array.isArray(ops)) {
    return Result.fail(badRequest(`error decoding patch: json: cannot unmarshal ${jsonKind(ops)} into Go value of type []handlers.jsonPatchOp`))
  }
  let doc: unknown = clone(original)
  for (const opRaw of ops) {
    if (!isRecord(opRaw) || typeof opRaw["op"] !== "string" || typeof opRaw["path"] !== "string") {
      return Result.fail(unprocessable("Unexpected kind: unknown"))
    }
    const op = opRaw["op"]
    const path = opRaw["path"]
    const tokensR = parsePointer(path)
    if (Result.isFailure(tokensR)) return tokensR
    const tokens = tokensR.success
    const remove = (): Result.Result<unknown, ApiStatusError> => {
      const parent = walk(doc, tokens.slice(0, -1))
      const last = tokens[tokens.length - 1]
      const got = getAt(doc, tokens)
      if (parent === undefined || !got.found) return Result.fail(missing(path))
      if (Array.isArray(parent)) parent.splice(Number(last), 1)
      else delete parent[last]
      return Result.succeed(got.value)
    }
    const add = (value: unknown, replace: boolean): Result.Result<void, ApiStatusError> => {
      if (tokens.length === 0) {
        doc = clone(value)
        return Result.succeed(undefined)
      }
      const parent = walk(doc, tokens.slice(0, -1))
      const last = tokens[tokens.length - 1]
      if (parent === undefined) return Result.fail(missing(path))
      if (Array.isArray(parent)) {
        const i = last === "-" ? parent.length : Number(last)
        if (!Number.isInteger(i) || i < 0 || i > parent.length) return Result.fail(unprocessable(`add operation does not apply: doc is missing path: "${path}": missing value`))
        if (replace) parent[i] = clone(value)
        else parent.splice(i, 0, clone(value))
      } else {
        if (replace && !Object.prototype.hasOwnProperty.call(parent, last)) return Result.fail(missing(path))
        parent[last] = clone(value)
      }
      return Result.succeed(undefined)
    }
    switch (op) {
      case "add": {
        const r = add(opRaw["value"], false)
        if (Result.isFailure(r)) return r
        break
      }
      case "replace": {
        const r = add(opRaw["value"], true)
        if (Result.isFailure(r)) return r
        break
      }
      case "remove": {
        const r = remove()
        if (Result.isFailure(r)) return r
        break
      }
      case "test": {
        const got = getAt(doc, tokens)
        if (!got.found || JSON.stringify(got.value) !== JSON.stringify(opRaw["value"])) {
          return Result.fail(unprocessable(`testing value ${path} failed: test failed`))
        }
        break
      }
      case "move":
      case "copy": {
        const fromR = parsePointer(typeof opRaw["from"] === "string" ? opRaw["from"] : "")
        if (Result.isFailure(fromR)) return fromR
        const got = getAt(doc, fromR.success)
        if (!got.found) return Result.fail(missing(String(opRaw["from"])))
        if (op === "move") {
          const parent = walk(doc, fromR.success.slice(0, -1))
          const last = fromR.success[fromR.success.length - 1]
          if (Array.isArray(parent)) parent.splice(Number(last), 1)
          else if (parent !== undefined) delete parent[last]
        }
        const r = add(got.value, false)
        if (Result.isFailure(r)) return r
        break
      }
      default:
        return Result.fail(unprocessable(`Unexpected kind: ${op}`))
    }
  }
  return Result.succeed(doc)
}
