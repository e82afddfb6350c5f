/**
 * The Dockerfile, checked without a container engine: it is parsed into stages and instructions,
 * and the final stage is held to what the image promises (no npm, a non-root user matching the
 * Helm chart, the compiled entry, a compile cache made by the entry's own command). The stamp
 * stage's command is run as written, and the daemon's real `--version` reads what it wrote; the
 * compile-cache step is run on a copy of the image's layout and a start is checked to use it.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync, spawnSync } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { parse } from "yaml"
import { benchMallocEnv, benchNodeFlags, compileCacheStep, dockerfileInstructions, imageCompileCacheStep, imageNodeFlags, mallocArenaMax } from "../../bench/nodeFlags.ts"

const root = resolve(import.meta.dirname, "..", "..")
const nodeBin = join(root, "node_modules", ".bin", "node")

interface Instruction {
  readonly keyword: string
  readonly args: string
}
interface Stage {
  readonly from: string
  readonly name: string
  readonly instructions: ReadonlyArray<Instruction>
}

/** The Dockerfile's instructions (bench/nodeFlags.ts reads them the same way), grouped by FROM. */
const parseDockerfile = (text: string): ReadonlyArray<Stage> => {
  const logical = dockerfileInstructions(text)
  const stages: Array<{ from: string; name: string; instructions: Array<Instruction> }> = []
  for (const line of logical) {
    const [keyword = "", ...rest] = line.split(/\s+/)
    const args = rest.join(" ")
    if (keyword.toUpperCase() === "FROM") {
      const [image = "", as, name] = args.split(/\s+/)
      stages.push({ from: image, name: as?.toUpperCase() === "AS" ? name ?? "" : "", instructions: [] })
    } else {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args })
    }
  }
  return stages
}

const stages = parseDockerfile(readFileSync(join(root, "Dockerfile"), "utf8"))
const final = stages.at(-1)!
const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword)
const chartValues = parse(readFileSync(join(root, "deploy", "helm", "vk-sandbox", "values.yaml"), "utf8")) as {
  readonly podSecurityContext: { readonly runAsUser: number; readonly runAsGroup: number }
}

describe("the Dockerfile (linted: no container engine is needed)", () => {
  it("has build, deps and stamp stages and an unnamed final stage", () => {
    assert.deepStrictEqual(stages.map((s) => s.name), ["build", "deps", "stamp", ""])
  })

  it("the final stage runs no npm and removes npm, npx and corepack from the base image", () => {
    for (const run of all(final, "RUN")) assert.notMatch(run.args, /\b(npm|npx|yarn|corepack)\s+(ci|install|run|exec|i)\b/)
    const removal = all(final, "RUN").map((r) => r.args).join(" ")
    for (const path of ["/usr/local/lib/node_modules", "/usr/local/bin/npm", "/usr/local/bin/npx", "/usr/local/bin/corepack"]) {
      assert.include(removal, path)
    }
    // node_modules comes from the production-only install, never from the build stage's full one
    const copies = all(final, "COPY").map((c) => c.args)
    assert.include(copies, "--from=deps /app/node_modules ./node_modules")
    assert.isFalse(copies.some((c) => c.startsWith("--from=build") && c.includes("node_modules")))
    const deps = stages.find((s) => s.name === "deps")!
    assert.isTrue(all(deps, "RUN").some((r) => r.args.includes("npm ci --omit=dev")))
  })

  it("runs as the numeric non-root user the chart sets, the compiled entry as PID 1", () => {
    const user = all(final, "USER").at(-1)?.args ?? ""
    assert.strictEqual(user, `${chartValues.podSecurityContext.runAsUser}:${chartValues.podSecurityContext.runAsGroup}`)
    assert.notMatch(user, /^(0|root)\b/)
    assert.deepStrictEqual(JSON.parse(all(final, "ENTRYPOINT").at(-1)?.args ?? "[]"), ["node", ...imageNodeFlags(root), "/app/dist/main.js"])
    assert.include(all(final, "COPY").map((c) => c.args), "--from=stamp /app/build-info.json ./build-info.json")
  })

  it("the stamp stage refuses a build without a revision and writes what --version prints", () => {
    const stamp = stages.find((s) => s.name === "stamp")!
    const command = all(stamp, "RUN").at(-1)?.args ?? ""
    const work = mkdtempSync(join(tmpdir(), "vk-stamp-"))
    try {
      const refused = spawnSync("sh", ["-c", command], { cwd: work, env: { PATH: process.env["PATH"] ?? "", REVISION: "" } })
      assert.notStrictEqual(refused.status, 0)
      assert.include(String(refused.stderr), "REVISION")

      execFileSync("sh", ["-c", command], {
        cwd: work,
        env: { PATH: process.env["PATH"] ?? "", REVISION: "0123abcd", BUILT_AT: "2026-12-01T04:00:00Z" }
      })
      // The image's layout: package.json and build-info.json at the package root, the code below it.
      cpSync(join(root, "package.json"), join(work, "package.json"))
      cpSync(join(root, "src"), join(work, "src"), { recursive: true })
      symlinkSync(join(root, "node_modules"), join(work, "node_modules"))
      const version = execFileSync(join(root, "node_modules", ".bin", "node"), [join(work, "src", "main.ts"), "--version"], {
        env: { PATH: process.env["PATH"] ?? "" },
        encoding: "utf8"
      })
      assert.match(version.trim(), /^vk-sandbox \S+ \(rev=0123abcd built=2026-12-01T04:00:00Z\)$/)
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  })

  it("the daemon's node flags are the same in the image, bin/vk-sandbox (the systemd unit's) and the bench's default", () => {
    const flags = imageNodeFlags(root)
    // the young generation is capped: 2000 Pods bound at once otherwise lift the peak RSS by
    // ~180 MB of short-lived garbage (the heap's growth step is set by the daemon itself)
    assert.isTrue(flags.some((f) => /^--max-semi-space-size=\d+$/.test(f)))
    // never a cap on the old generation: the live set of 10,000 Pods must fit
    assert.isFalse(flags.some((f) => f.startsWith("--max-old-space-size")))
    const exec = readFileSync(join(root, "bin", "vk-sandbox"), "utf8").split("\n").find((line) => line.startsWith("exec "))
    assert.strictEqual(exec, `exec "$node_bin" ${flags.join(" ")} "$root/src/main.ts" "$@"`)
    assert.deepStrictEqual(benchNodeFlags({}, root), flags)
    assert.deepStrictEqual(benchNodeFlags({ VK_BENCH_NODE_FLAGS: "" }, root), [])
    assert.deepStrictEqual(benchNodeFlags({ VK_BENCH_NODE_FLAGS: "--a  --b" }, root), ["--a", "--b"])
  })

  it("one malloc arena in the image, bin/vk-sandbox and the bench's default (extra arenas kept ~15 MB after a burst)", () => {
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8")
    assert.strictEqual(mallocArenaMax(dockerfile), "1")
    assert.deepStrictEqual(all(final, "ENV").filter((e) => e.args.startsWith("MALLOC_ARENA_MAX=")).map((e) => e.args), ["MALLOC_ARENA_MAX=1"])
    const launcher = readFileSync(join(root, "bin", "vk-sandbox"), "utf8").split("\n")
    assert.include(launcher, "MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-1}")
    assert.include(launcher, "export MALLOC_ARENA_MAX")
    assert.isTrue(launcher.indexOf("export MALLOC_ARENA_MAX") < launcher.findIndex((line) => line.startsWith("exec ")))
    assert.deepStrictEqual(benchMallocEnv({}, root), { MALLOC_ARENA_MAX: "1" })
    assert.deepStrictEqual(benchMallocEnv({ VK_BENCH_MALLOC_ARENA_MAX: "" }, root), {})
    assert.deepStrictEqual(benchMallocEnv({ VK_BENCH_MALLOC_ARENA_MAX: "4" }, root), { MALLOC_ARENA_MAX: "4" })
  })

  it("the image's node flags leave V8's code-cache tag as it is, so Node's own code cache and the image's are used", () => {
    // V8 takes a code cache only when made under the same flag values; Node's built-in modules
    // come with one made under V8's defaults. A flag in the tag (--heap-growing-percent is one)
    // makes every start compile ~150 of Node's modules from source.
    const tag = (flags: ReadonlyArray<string>) =>
      execFileSync(nodeBin, [...flags, "-p", "require('node:v8').cachedDataVersionTag()"], { env: { PATH: process.env["PATH"] ?? "" }, encoding: "utf8" })
    assert.strictEqual(tag(imageNodeFlags(root)), tag([]))
    assert.notStrictEqual(tag(["--heap-growing-percent=50"]), tag([]), "the check can tell")
  })

  it("the compile cache is made at build time by the entrypoint's command, flags and user, into a directory that user owns", () => {
    const step = imageCompileCacheStep(root)
    assert.isDefined(step)
    if (step === undefined) return
    const entrypoint = JSON.parse(all(final, "ENTRYPOINT").at(-1)?.args ?? "[]") as Array<string>
    // Node files the cache under the Node version, V8's flag tag and the uid, and each entry
    // under the file's path and content: the start finds it only if all of them match.
    assert.deepStrictEqual(["node", ...step.flags, step.script], entrypoint)
    assert.deepStrictEqual(step.args, ["--version"])
    assert.match(step.dir, /^\/app\/[\w.-]+$/)
    const at = (test: (i: Instruction) => boolean) => final.instructions.findIndex(test)
    const lastAt = (test: (i: Instruction) => boolean) => final.instructions.findLastIndex(test)
    const user = lastAt((i) => i.keyword === "USER")
    const warm = at((i) => i.keyword === "RUN" && i.args.startsWith("node "))
    assert.isAbove(warm, user, "made as the user the daemon runs as")
    assert.isAbove(warm, at((i) => i.keyword === "COPY" && i.args.startsWith("--from=build /app/dist ")), "made from the files the image ships")
    assert.isAbove(warm, at((i) => i.keyword === "COPY" && i.args.startsWith("--from=stamp ")), "no file the start reads changes after it")
    assert.isBelow(at((i) => i.keyword === "ENV" && i.args === `NODE_COMPILE_CACHE=${step.dir}`), warm)
    const made = at((i) => i.keyword === "RUN" && i.args.includes(`chown ${final.instructions[user]!.args} ${step.dir}`))
    assert.isTrue(made >= 0 && made < user, "the directory is made and handed to that user before it")
    assert.isAtLeast(lastAt((i) => i.keyword === "RUN" && i.args.includes(`chmod -R a-w ${step.dir}`)), warm, "read-only afterwards")
  })

  it("the compile-cache step, run on the image's layout, makes a cache the entrypoint's start uses; a start that cannot use or write one still starts", () => {
    const step = imageCompileCacheStep(root)
    assert.isDefined(step)
    if (step === undefined) return
    const warmRun = final.instructions.find((i) => i.keyword === "RUN" && i.args.startsWith("node "))?.args ?? ""
    const entrypoint = JSON.parse(all(final, "ENTRYPOINT").at(-1)?.args ?? "[]") as Array<string>
    const work = mkdtempSync(join(tmpdir(), "vk-compile-cache-"))
    // the image's /app: its entry (here one that loads the sources: no build is needed) and the cache directory
    const rebase = (text: string) => text.replaceAll("/app/", `${work}/`)
    mkdirSync(join(work, "dist"))
    writeFileSync(join(work, "dist", "main.js"), `import ${JSON.stringify(join(root, "src", "main.ts"))}\n`)
    const cacheDir = rebase(step.dir)
    mkdirSync(cacheDir)
    const files = () =>
      readdirSync(cacheDir, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => `${entry.parentPath}/${entry.name} ${statSync(join(entry.parentPath, entry.name)).mtimeMs}`)
        .sort()
    // node from the development install (Node 24) first, as `node` in the image is its Node
    const env = { PATH: `${dirname(nodeBin)}:${process.env["PATH"] ?? ""}`, NODE_COMPILE_CACHE: cacheDir }
    try {
      // the build's RUN, as written
      execFileSync("sh", ["-c", rebase(warmRun)], { env })
      const made = files()
      assert.isNotEmpty(made)
      // writable again, so that a start which could not use the cache would write a new one here
      execFileSync("chmod", ["-R", "u+w", cacheDir])
      // the image's start on the same files with the same flags and user: every module's cache is
      // taken, so nothing is written (a cache it could not use is replaced at exit)
      const started = spawnSync("node", [...entrypoint.slice(1).map(rebase), "--version"], { env, encoding: "utf8" })
      assert.strictEqual(started.status, 0, started.stderr)
      assert.deepStrictEqual(files(), made)
      assert.strictEqual(readdirSync(cacheDir).length, 1, "one Node version, flag tag and uid")

      // no usable cache and nowhere to write one (here: a path below a file): it starts as before,
      // with nothing on stderr
      const blocked = join(work, "not-a-directory")
      writeFileSync(blocked, "")
      const withoutCache = spawnSync("node", [...entrypoint.slice(1).map(rebase), "--version"], {
        env: { ...env, NODE_COMPILE_CACHE: join(blocked, "cache") },
        encoding: "utf8"
      })
      assert.strictEqual(withoutCache.status, 0, withoutCache.stderr)
      assert.strictEqual(withoutCache.stderr, "")
      assert.match(withoutCache.stdout, /^vk-sandbox \S+ \(rev=\S+ built=\S+\)\n$/)
    } finally {
      execFileSync("chmod", ["-R", "u+w", work])
      rmSync(work, { recursive: true, force: true })
    }
  })

  it("the compile-cache step is read as the bench reads it", () => {
    const dockerfile = [
      "FROM a AS b",
      "ENV NODE_COMPILE_CACHE=/x/y",
      "FROM c",
      "ENV NODE_COMPILE_CACHE=/app/cc",
      "RUN mkdir /app/cc",
      "RUN node --a=1 --b /app/dist/main.js --version > /dev/null \\",
      " && chmod -R a-w /app/cc",
      "ENTRYPOINT [\"node\", \"--a=1\", \"--b\", \"/app/dist/main.js\"]"
    ].join("\n")
    assert.deepStrictEqual(compileCacheStep(dockerfile), { dir: "/app/cc", flags: ["--a=1", "--b"], script: "/app/dist/main.js", args: ["--version"] })
    assert.isUndefined(compileCacheStep("FROM a\nENV NODE_COMPILE_CACHE=/c\nFROM b\nRUN node x.js"))
  })
})
