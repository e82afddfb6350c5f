/** The repository's own TypeScript, for the tests that read source text (headers, rule ids, brands, imports). */
import { readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url))

/** Every .ts file under the given folders, relative to the repository root (node_modules left out). */
export const sourceFiles = (...folders: ReadonlyArray<string>): ReadonlyArray<string> => {
  const walk = (dir: string): ReadonlyArray<string> =>
    readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
      const relative = `${dir}/${entry.name}`
      if (entry.isDirectory()) return entry.name === "node_modules" ? [] : walk(relative)
      return entry.name.endsWith(".ts") ? [relative] : []
    })
  return folders.flatMap(walk)
}

/** A file of the repository's, by its path from the root. */
export const readSource = (file: string): string => readFileSync(path.join(repoRoot, file), "utf8")
