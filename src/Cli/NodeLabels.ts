/**
 * --node-labels (CFG-7 — --node-labels parsing), kept bug-for-bug lenient because operators' values
 * were written for the reference: comma-separated items, each trimmed, split at the first `=`;
 * items without `=` or with an empty key are dropped silently; later duplicates win; no trimming
 * around the `=`; no label syntax check. The flag replaces the default set entirely (CFG-8 —
 * --node-labels replaces the default).
 */
export const parseNodeLabels = (text: string): Readonly<Record<string, string>> => {
  // A Map, then fromEntries: a key such as "__proto__" stays an ordinary own property.
  const labels = new Map<string, string>()
  for (const rawItem of text.split(",")) {
    const item = rawItem.trim()
    const equals = item.indexOf("=")
    if (equals <= 0) continue
    labels.set(item.slice(0, equals), item.slice(equals + 1))
  }
  return Object.fromEntries(labels)
}
