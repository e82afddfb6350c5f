/**
 * The Dockerfile, checked without a container engine: it is parsed into stages and instructions,
 * and the final stage is held to what the image promises (no npm, a non-root user matching the
 * Helm chart, the compiled entry). The stamp stage's command is run as written, and the daemon's
 * real `--version` reads what it wrote.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync, spawnSync } from "node:child_process"
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parse } from "yaml"
import { benchNodeFlags, imageNodeFlags } from "../../bench/nodeFlags.ts"

const root = resolve(import.meta.dirname, "..", "..")

interface Instruction {
  readonly keyword: string
  readonly args: string
}
interface Stage {
  readonly from: string
  readonly name: string
  readonly instructions: ReadonlyArray<Instruction>
}

/** Instructions with `\` continuations joined and comments dropped, grouped by FROM. */
const parseDockerfile = (text: string): ReadonlyArray<Stage> => {
  const logical = text
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
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
    // the young generation is capped and the heap grows in small steps: 2000 Pods bound at once
    // otherwise lift the peak RSS by ~180 MB of short-lived garbage
    assert.isTrue(flags.some((f) => /^--max-semi-space-size=\d+$/.test(f)))
    assert.isTrue(flags.some((f) => /^--heap-growing-percent=\d+$/.test(f)))
    // never a cap on the old generation: the live set of 10,000 Pods must fit
    assert.isFalse(flags.some((f) => f.startsWith("--max-old-space-size")))
    const exec = readFileSync(join(root, "bin", "vk-sandbox"), "utf8").split("\n").find((line) => line.startsWith("exec "))
    assert.strictEqual(exec, `exec "$node_bin" ${flags.join(" ")} "$root/src/main.ts" "$@"`)
    assert.deepStrictEqual(benchNodeFlags({}, root), flags)
    assert.deepStrictEqual(benchNodeFlags({ VK_BENCH_NODE_FLAGS: "" }, root), [])
    assert.deepStrictEqual(benchNodeFlags({ VK_BENCH_NODE_FLAGS: "--a  --b" }, root), ["--a", "--b"])
  })
})
