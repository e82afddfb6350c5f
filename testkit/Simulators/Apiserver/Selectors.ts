/**
 * Label and field selectors as the apiserver parses them, and which stored objects a list, a watch
 * or a collection delete selects with them. Parsing never throws: a bad selector comes back as an
 * `ApiStatusError` (400 BadRequest), like the real server.
 */
import { Result } from "effect"
import { getPath } from "./Fields.ts"
import { labelsOf, metaOf } from "./Objects.ts"
import type { ResourceInfo } from "./Resources.ts"
import { type ApiStatusError, badRequest, type JsonObject } from "./Status.ts"

export type LabelRequirement =
  | { readonly op: "=" | "!="; readonly key: string; readonly value: string }
  | { readonly op: "in" | "notin"; readonly key: string; readonly values: ReadonlyArray<string> }
  | { readonly op: "exists" | "!exists"; readonly key: string }

export type LabelSelector = ReadonlyArray<LabelRequirement>

/** Split on commas that are not inside parentheses. */
const splitTopLevel = (s: string): Array<string> => {
  const parts: Array<string> = []
  let depth = 0
  let current = ""
  for (const ch of s) {
    if (ch === "(") depth++
    if (ch === ")") depth--
    if (ch === "," && depth === 0) {
      parts.push(current)
      current = ""
    } else {
      current += ch
    }
  }
  parts.push(current)
  return parts
}

const keyPattern = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/
const valuePattern = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

export const parseLabelSelector = (raw: string | undefined): Result.Result<LabelSelector, ApiStatusError> => {
  if (raw === undefined || raw.trim() === "") return Result.succeed([])
  const out: Array<LabelRequirement> = []
  for (const partRaw of splitTopLevel(raw)) {
    const part = partRaw.trim()
    const bad = () => Result.fail(badRequest(`unable to parse requirement: found '${part}', expected: identifier`))
    let m: RegExpMatchArray | null
    if ((m = part.match(/^(\S+)\s+(in|notin)\s*\((.*)\)$/)) !== null) {
      const values = m[3].split(",").map((v) => v.trim()).filter((v) => v !== "")
      if (!keyPattern.test(m[1]) || !values.every((v) => valuePattern.test(v))) return bad()
      out.push({ op: m[2] as "in" | "notin", key: m[1], values })
    } else if ((m = part.match(/^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/)) !== null) {
      if (!keyPattern.test(m[1]) || !valuePattern.test(m[3])) return bad()
      out.push({ op: m[2] === "!=" ? "!=" : "=", key: m[1], value: m[3] })
    } else if ((m = part.match(/^!\s*(\S+)$/)) !== null) {
      if (!keyPattern.test(m[1])) return bad()
      out.push({ op: "!exists", key: m[1] })
    } else if (keyPattern.test(part)) {
      out.push({ op: "exists", key: part })
    } else {
      return bad()
    }
  }
  return Result.succeed(out)
}

export const matchLabels = (selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean =>
  selector.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key)
    const v = labels[r.key]
    switch (r.op) {
      case "=":
        return has && v === r.value
      case "!=":
        return !has || v !== r.value
      case "in":
        return has && r.values.includes(v)
      case "notin":
        return !has || !r.values.includes(v)
      case "exists":
        return has
      case "!exists":
        return !has
    }
  })

export interface FieldRequirement {
  readonly field: string
  readonly op: "=" | "!="
  readonly value: string
}

export type FieldSelector = ReadonlyArray<FieldRequirement>

/** Parse `a=b,c!=d`; fields outside `supported` fail like the server: `field label not supported: x`. */
export const parseFieldSelector = (
  raw: string | undefined,
  supported: ReadonlyArray<string>
): Result.Result<FieldSelector, ApiStatusError> => {
  if (raw === undefined || raw.trim() === "") return Result.succeed([])
  const out: Array<FieldRequirement> = []
  for (const partRaw of raw.split(",")) {
    const part = partRaw.trim()
    const m = part.match(/^([^!=]+?)\s*(==|=|!=)\s*(.*)$/)
    if (m === null) return Result.fail(badRequest(`invalid selector: '${raw}'; can't understand '${part}'`))
    const field = m[1].trim()
    if (!supported.includes(field)) return Result.fail(badRequest(`field label not supported: ${field}`))
    out.push({ field, op: m[2] === "!=" ? "!=" : "=", value: m[3].trim() })
  }
  return Result.succeed(out)
}

export const matchFields = (selector: FieldSelector, fields: (field: string) => string): boolean =>
  selector.every((r) => (r.op === "=" ? fields(r.field) === r.value : fields(r.field) !== r.value))

export interface ListOptions {
  readonly labelSelector?: string | undefined
  readonly fieldSelector?: string | undefined
}

/** Both selectors of a request, parsed. */
export interface Selection {
  readonly labels: LabelSelector
  readonly fields: FieldSelector
}

/** The label selector first, then the field selector against the resource's field labels. */
export const parseSelection = (r: ResourceInfo, options: ListOptions): Result.Result<Selection, ApiStatusError> => {
  const labels = parseLabelSelector(options.labelSelector)
  if (Result.isFailure(labels)) return Result.fail(labels.failure)
  const fields = parseFieldSelector(options.fieldSelector, r.fieldLabels)
  if (Result.isFailure(fields)) return Result.fail(fields.failure)
  return Result.succeed({ labels: labels.success, fields: fields.success })
}

/** Each field label's path, split once: a list of 10,000 Pods by `spec.nodeName` asks 10,000 times. */
const fieldPaths = new Map<string, ReadonlyArray<string>>([["source", ["source", "component"]]])

const fieldPath = (field: string): ReadonlyArray<string> => {
  let path = fieldPaths.get(field)
  if (path === undefined) {
    path = field.split(".")
    fieldPaths.set(field, path)
  }
  return path
}

/** A field label's value as a selector compares it: `source` is the event's `source.component`; non-strings as text. */
export const fieldValue = (o: JsonObject, field: string): string => {
  const v = getPath(o, fieldPath(field))
  if (typeof v === "boolean") return v ? "true" : "false"
  if (typeof v === "number") return String(v)
  return typeof v === "string" ? v : ""
}

/** Is `o` in namespace `ns` (undefined or "": any) and selected by both selectors? */
export const selects = (r: ResourceInfo, o: JsonObject, ns: string | undefined, selection: Selection): boolean => {
  const m = metaOf(o)
  if (r.namespaced && ns !== undefined && ns !== "" && m["namespace"] !== ns) return false
  return (selection.labels.length === 0 || matchLabels(selection.labels, labelsOf(o))) &&
    (selection.fields.length === 0 || matchFields(selection.fields, (f) => fieldValue(o, f)))
}

/** True when neither selector filters anything (the server then counts what a page leaves out). */
export const selectsAll = (selection: Selection): boolean => selection.labels.length === 0 && selection.fields.length === 0
