/**
 * What the image holds, read from the image itself (its layers from `docker save`, its labels,
 * runs of its entrypoint): no shell, no package manager, no setuid or setgid file, no
 * node_modules, nothing executable but node and shared objects; `--version` prints the revision
 * the build was given, which the OCI labels carry too; the compile cache is taken by a start under
 * the chart's security context (read-only root, uid 65532). The last test prints the size figures.
 * Rules: IMG-1 — the image holds only what runs; IMG-2 — built as shipped, stamped with its
 * revision.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as zlib from "node:zlib"
import { Effect } from "effect"
import { dockerRun, renderPod } from "./ChartPod.ts"
import { docker, dockerAny, image, runToEnd } from "./Docker.ts"
import { hostNode } from "./World.ts"

const repoRoot = path.resolve(import.meta.dirname, "..", "..")

interface Entry {
  readonly path: string
  readonly perms: string
  readonly size: number
}

/** `docker save` of the image into a temp directory: its layer tars, in order, for `use`. */
const withSavedImage = <A>(use: (dir: string, layers: ReadonlyArray<string>) => A) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vk-image-save-"))
    try {
      yield* docker(["save", "-o", path.join(dir, "image.tar"), image])
      execFileSync("tar", ["-xf", path.join(dir, "image.tar"), "-C", dir])
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) as Array<{ Layers: Array<string> }>
      return use(dir, (manifest[0]?.Layers ?? []).map((layer) => path.join(dir, layer)))
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

/** One layer's entries, as the host's tar lists them. */
const layerEntries = (layer: string): ReadonlyArray<Entry> =>
  execFileSync("tar", ["--numeric-owner", "-tvf", layer], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
    .split("\n")
    .filter((line) => line !== "")
    .map((line): Entry => {
      const [perms = "", , size = "0", , , ...rest] = line.split(/\s+/)
      return { perms, size: Number(size), path: rest.join(" ").replace(/ -> .*$/, "").replace(/^\.\//, "").replace(/\/$/, "") }
    })

/**
 * The image's files (none of what the engine adds to a container): its layers applied in order,
 * a whiteout (`.wh.<name>`) removing that path of the layers below, an opaque one (`.wh..wh..opq`)
 * everything below its directory.
 */
const listing = withSavedImage((_dir, layers) => {
  const files = new Map<string, Entry>()
  const removeUnder = (dir: string) => {
    for (const key of [...files.keys()]) if (key.startsWith(`${dir}/`)) files.delete(key)
  }
  for (const layer of layers) {
    for (const entry of layerEntries(layer)) {
      const slash = entry.path.lastIndexOf("/")
      const dir = entry.path.slice(0, slash)
      const name = entry.path.slice(slash + 1)
      if (name === ".wh..wh..opq") removeUnder(dir)
      else if (name.startsWith(".wh.")) {
        const gone = `${dir === "" ? "" : `${dir}/`}${name.slice(4)}`
        files.delete(gone)
        removeUnder(gone)
      } else files.set(entry.path, entry)
    }
  }
  return [...files.values()]
})

const shells = ["sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "busybox", "toybox"]
const packageManagers = ["apt", "apt-get", "aptitude", "dpkg", "dpkg-deb", "rpm", "yum", "dnf", "apk", "npm", "npx", "corepack", "yarn", "yarnpkg", "pnpm", "pip", "pip3"]

/** The image's OCI labels. */
const labels = Effect.map(docker(["image", "inspect", "-f", "{{json .Config.Labels}}", image]), (f) => JSON.parse(f.stdout) as Record<string, string>)

describe("the image's content", () => {
  it.live("no shell, no package manager, no setuid or setgid file, no node_modules; only node and shared objects are executable", () =>
    Effect.gen(function*() {
      const files = yield* listing
      assert.isAbove(files.length, 100)
      // files and links by the name a shell or package manager goes by (directories may share one)
      const base = (entry: Entry) => (entry.perms.startsWith("d") ? "" : entry.path.split("/").at(-1) ?? "")
      assert.deepStrictEqual(files.filter((f) => shells.includes(base(f))).map((f) => f.path), [], "shells")
      assert.deepStrictEqual(files.filter((f) => packageManagers.includes(base(f))).map((f) => f.path), [], "package managers")
      assert.deepStrictEqual(files.filter((f) => /^var\/lib\/(dpkg|apt)\b/.test(f.path)).map((f) => f.path), [], "package databases")
      assert.deepStrictEqual(files.filter((f) => /[sS]/.test(f.perms[3] ?? "") || /[sS]/.test(f.perms[6] ?? "")).map((f) => `${f.perms} ${f.path}`), [], "setuid/setgid")
      assert.deepStrictEqual(files.filter((f) => f.path.split("/").includes("node_modules")).map((f) => f.path), [], "node_modules")
      const executables = files.filter((f) => f.perms.startsWith("-") && /x/.test(f.perms))
      assert.deepStrictEqual(executables.filter((f) => f.path !== "usr/local/bin/node" && !/\.so(\.\d+)*$/.test(f.path)).map((f) => f.path), [])
      assert.isTrue(files.some((f) => f.path === "usr/local/bin/node"))
      assert.isTrue(files.some((f) => f.path === "etc/ssl/certs/ca-certificates.crt" && f.size > 100_000), "the CA bundle")
      assert.isTrue(files.some((f) => f.path === "usr/share/zoneinfo/Europe/Berlin"), "the time zones")
    }), 120_000)

  it.live("--version prints the revision the build was given, which the OCI labels carry with the version, time and source", () =>
    Effect.gen(function*() {
      const label = yield* labels
      const revision = label["org.opencontainers.image.revision"] ?? ""
      assert.match(revision, /^[0-9a-f]{40}(-dirty)?$/)
      const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: repoRoot, encoding: "utf8" }).trim()
      assert.strictEqual(revision.slice(0, 40), head, "built from this checkout")
      const version = (JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { version: string }).version
      assert.strictEqual(label["org.opencontainers.image.version"], version)
      const created = label["org.opencontainers.image.created"] ?? ""
      assert.match(created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
      assert.match(label["org.opencontainers.image.source"] ?? "", /^https:\/\//)
      const printed = yield* runToEnd([], ["--version"])
      assert.strictEqual(printed.code, 0, printed.output)
      assert.strictEqual(printed.stdout, `vk-sandbox ${version} (rev=${revision} built=${created})\n`)
    }), 60_000)

  it.live("under the chart's security context, a start takes the image's compile cache and writes nothing", () =>
    Effect.gen(function*() {
      const pod = yield* renderPod({})
      const empty = fs.mkdtempSync(path.join(os.tmpdir(), "vk-image-volume-"))
      try {
        const run = yield* dockerRun(pod, "vk-sandbox", {
          volumes: { state: empty, "sandboxd-token": empty, tls: empty },
          fieldValues: { "spec.nodeName": hostNode, "status.hostIP": "127.0.0.1" }
        })
        assert.include(run.runArgs, "--read-only")
        const started = yield* runToEnd([...run.runArgs, "-e", "NODE_DEBUG_NATIVE=COMPILE_CACHE"], ["--version"])
        assert.strictEqual(started.code, 0, started.output)
        assert.match(started.stderr, /V8 code cache for ESM file:\/\/\/app\/dist\/app\/vk-sandbox\.js was accepted/)
        assert.match(started.stderr, /skip persisting ESM file:\/\/\/app\/dist\/app\/vk-sandbox\.js because cache was the same/)
        assert.notMatch(started.output, /EROFS|rejected|failed/i)
      } finally {
        fs.rmSync(empty, { recursive: true, force: true })
      }
    }), 60_000)

  it.live("figures: the image's size, uncompressed and as the sum of its gzip-compressed layers", () =>
    Effect.gen(function*() {
      const size = Number((yield* docker(["image", "inspect", "-f", "{{.Size}}", image])).stdout.trim())
      const compressed = yield* withSavedImage((_dir, layers) => layers.map((layer) => zlib.gzipSync(fs.readFileSync(layer), { level: 6 }).length))
      const mb = (bytes: number) => (bytes / 1e6).toFixed(1)
      console.log(
        `image figures: ${mb(size)} MB uncompressed, ${mb(compressed.reduce((a, b) => a + b, 0))} MB as the sum of ` +
          `${compressed.length} gzip-compressed layers (${compressed.map(mb).join(" + ")})`
      )
      assert.isBelow(size, 160e6, "under 160 MB uncompressed")
    }), 120_000)
})
