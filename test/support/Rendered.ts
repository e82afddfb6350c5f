/** Reading rendered manifests (helm template output): untyped YAML, read through small total helpers. */
import { parseAllDocuments } from "yaml"

/** The value at `path`, or undefined on any miss. */
export const at = (value: unknown, ...path: ReadonlyArray<string | number>): unknown => {
  let current: unknown = value
  for (const step of path) {
    if (current === null || typeof current !== "object") return undefined
    current = (current as Record<string | number, unknown>)[step]
  }
  return current
}
export const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])
export const text = (value: unknown): string => (typeof value === "string" ? value : value === undefined ? "" : String(value))
export const strings = (value: unknown): ReadonlyArray<string> => list(value).map(text)

/** Every non-empty document of a multi-document YAML text. */
export const manifests = (yaml: string): ReadonlyArray<unknown> =>
  parseAllDocuments(yaml).map((doc) => doc.toJS() as unknown).filter((doc) => doc !== null)

export const find = (docs: ReadonlyArray<unknown>, kind: string) => docs.filter((doc) => at(doc, "kind") === kind)

/** A fake node's downward-API values. */
export const fakeNode: Readonly<Record<string, string>> = { "spec.nodeName": "worker-7", "status.hostIP": "10.0.0.5" }

/** What the kubelet does with a container's env: fieldRefs from the node, then `$(VAR)` of earlier entries. */
export const expandEnv = (env: ReadonlyArray<unknown>, fieldValues: Readonly<Record<string, string>> = fakeNode) => {
  const resolved: Record<string, string> = {}
  for (const entry of env) {
    const name = text(at(entry, "name"))
    const fieldPath = at(entry, "valueFrom", "fieldRef", "fieldPath")
    resolved[name] = fieldPath !== undefined
      ? fieldValues[text(fieldPath)] ?? ""
      : text(at(entry, "value")).replace(/\$\(([A-Z_][A-Z0-9_]*)\)/g, (_, v: string) => resolved[v] ?? "")
  }
  return resolved
}
