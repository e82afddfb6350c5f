/**
 * The node flags the container image starts the daemon with, read from the Dockerfile's final
 * ENTRYPOINT: the bench runs the daemon with the same flags by default, so a bench figure and the
 * image cannot drift apart (test/Packaging/Dockerfile.test.ts holds bin/vk-sandbox to them too).
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** The words of the last exec-form ENTRYPOINT between `node` and the script it runs. */
export const entrypointNodeFlags = (dockerfile: string): ReadonlyArray<string> => {
  const entrypoints = dockerfile
    .split("\n")
    .filter((line) => /^\s*ENTRYPOINT\s+\[/i.test(line))
    .map((line) => line.replace(/^\s*ENTRYPOINT\s+/i, ""))
  const last = entrypoints.at(-1)
  if (last === undefined) return []
  const words: unknown = JSON.parse(last)
  if (!Array.isArray(words) || words[0] !== "node") return []
  return words.slice(1, -1).map(String)
}

/** The image's node flags, from the Dockerfile at the repository root `root`. */
export const imageNodeFlags = (root: string): ReadonlyArray<string> =>
  entrypointNodeFlags(fs.readFileSync(path.join(root, "Dockerfile"), "utf8"))

/** The bench's node flags for the daemon: `VK_BENCH_NODE_FLAGS` when set (even ""), else the image's. */
export const benchNodeFlags = (env: Readonly<Record<string, string | undefined>>, root: string): ReadonlyArray<string> => {
  const given = env["VK_BENCH_NODE_FLAGS"]
  return given === undefined ? imageNodeFlags(root) : given.split(" ").filter((f) => f !== "")
}
