/**
 * The production bundle (rolldown.config.mjs): its output options, applied by rolldown to a small
 * module (the source text stays in the daemon's memory, so its size is RSS); and the daemon's
 * whole bundle, built in memory as `npm run build` makes it, holds none of client-node's
 * generated API classes, models or serializer (the daemon builds its requests and decodes by
 * `src/Schemas`). A generated client used again, or client-node's side-effect setting dropped,
 * fails here.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Option } from "effect"
import { execFile, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import { builtinModules } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { type OutputChunk, type Plugin, rolldown, type RolldownOptions } from "rolldown"
import { httpGet, spawnDaemon, startCluster, waitFor } from "../../testkit/Demo/Harness.ts"

// the build's own configuration, as `npm run build` reads it (a plain .mjs without types)
const configUrl = new URL("../../rolldown.config.mjs", import.meta.url).href
const { builtinsWithoutFacade, default: config, loadedOnFirstUse, undiciDispatchersOnly } = (await import(configUrl)) as {
  default: RolldownOptions
  builtinsWithoutFacade: Plugin
  loadedOnFirstUse: ReadonlyArray<string>
  undiciDispatchersOnly: Plugin
}
const output = Array.isArray(config.output) ? config.output[0] : config.output
const root = fileURLToPath(new URL("../..", import.meta.url))

const entry = "\0bundle-test-entry"
const source = [
  "/**",
  " * A JSDoc comment with an em dash — and a non-Latin-1 arrow →.",
  " * @since 1.0.0",
  " */",
  "export const greet = (name) => `héllo — ${name} ✓`",
  "// a line comment",
  "console.log(greet(\"x\"))"
].join("\n")

const bundle = async (): Promise<string> => {
  const build = await rolldown({
    input: entry,
    platform: "node",
    plugins: [{
      name: "virtual",
      resolveId: (id: string) => (id === entry ? id : undefined),
      load: (id: string) => (id === entry ? source : undefined)
    }]
  })
  try {
    const { output: files } = await build.generate(output)
    return files[0].code
  } finally {
    await build.close()
  }
}

/** The daemon's bundle as `npm run build` makes it, without writing dist/ (built once per file). */
const daemonBundle = (): Promise<OutputChunk> => (built ??= buildDaemonBundle())
let built: Promise<OutputChunk> | undefined

const buildDaemonBundle = async (): Promise<OutputChunk> => {
  const build = await rolldown({ ...config, cwd: root })
  try {
    const { output: files } = await build.generate(output)
    const chunk = files.find((file): file is OutputChunk => file.type === "chunk" && file.fileName === "app/vk-sandbox.js")
    assert.isDefined(chunk, "the build made no app/vk-sandbox.js")
    return chunk!
  } finally {
    await build.close()
  }
}

/** Node's public modules in a `process.moduleLoadList` (`NativeModule http2`; internal ones left out). */
const publicModules = (loaded: ReadonlyArray<string>): ReadonlyArray<string> =>
  loaded.filter((name) => name.startsWith("NativeModule ") && !name.startsWith("NativeModule internal/")).map((name) => name.slice(13))

/** Names that only client-node's generated clients and models define. */
const generatedMarkers = ["RequestFactory", "ResponseProcessor", "ObjectSerializer", "attributeTypeMap", "getAttributeTypeMap"]

describe("production bundle options", () => {
  it("write only ASCII: one non-Latin-1 character (a `—` in a comment) makes V8 hold the whole source two bytes per character", async () => {
    const code = await bundle()
    assert.isFalse(/[^\x00-\x7f]/.test(code), code)
    // the strings themselves are kept, escaped
    assert.include(code, "\\u2014")
  })

  it("drop comments: the dependencies' JSDoc was about a third of the bundle", async () => {
    const code = await bundle()
    assert.notInclude(code, "@since")
    assert.notInclude(code, "em dash")
    assert.notInclude(code, "line comment")
  })
})

describe("the daemon's bundle", () => {
  it("has client-node's kubeconfig, and none of its generated clients or models", async () => {
    const chunk = await daemonBundle()
    // the part kept is there, so the absence below is not that of client-node as a whole
    assert.match(chunk.code, /\bKubeConfig = class\b/)
    const found = generatedMarkers.filter((marker) => chunk.code.includes(marker))
    assert.deepStrictEqual(found, [], "the bundle holds client-node's generated code")
    const generated = Object.entries(chunk.modules)
      .filter(([id, module]) => /client-node[\\/]dist[\\/]gen[\\/](apis|models|types)[\\/]/.test(id) && /\bclass\b/.test(module.code ?? ""))
      .map(([id]) => id.replace(/.*client-node[\\/]/, ""))
    assert.deepStrictEqual(generated.slice(0, 5), [], "generated classes in the bundle")
  }, 120_000)
})

describe("the daemon's bundle needs no node_modules (the image ships none)", () => {
  it("loads nothing at run time but Node's own modules, ws's optional accelerators (each in a try that falls back) and the `sim` command's computed path", async () => {
    const chunk = await daemonBundle()
    const builtin = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]))
    const required = [...new Set([...chunk.code.matchAll(/\b(?:__)?require\("([^"]+)"\)/g)].map((match) => match[1]!))]
    assert.deepStrictEqual(required.filter((name) => !builtin.has(name)).sort(), ["bufferutil", "utf-8-validate"])
    for (const optional of ["bufferutil", "utf-8-validate"]) {
      assert.match(chunk.code, new RegExp(`try \\{\\s*const \\w+ = __require\\("${optional}"\\)`), `${optional} is required in a try`)
    }
    const imported = [...chunk.code.matchAll(/\bimport\(([^)]*)\)/g)].map((match) => match[1])
    assert.deepStrictEqual(imported, ["simModuleUrl.href"])
    assert.deepStrictEqual(chunk.imports.filter((name) => !builtin.has(name)), [])
  }, 120_000)
})

describe("Node's own modules in the daemon's bundle", () => {
  it("are not imported as ES modules (only node:module, which the bundler's runtime imports itself)", async () => {
    const chunk = await daemonBundle()
    const imported = [...chunk.code.matchAll(/^import\b[^;\n]*?\bfrom\s*"([^"]+)"/gm)].map((match) => match[1])
    assert.deepStrictEqual(imported, ["node:module"])
    assert.include(chunk.code, "process.getBuiltinModule(\"node:http\")")
  }, 120_000)

  it("--version loads neither Node's bundled undici (node:http's WebSocket getter) nor WebCrypto (node:crypto's), nor child_process or readline", async () => {
    const chunk = await daemonBundle()
    // laid out as in the package: the bundle two directories below a package.json (--version reads it)
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "vk-bundle-test-"))
    try {
      fs.copyFileSync(path.join(fileURLToPath(new URL("../..", import.meta.url)), "package.json"), path.join(root, "package.json"))
      fs.mkdirSync(path.join(root, "dist", "app"), { recursive: true })
      const script = path.join(root, "dist", "app", "vk-sandbox.js")
      fs.writeFileSync(script, chunk.code)
      // Node lists every internal module it loaded in process.moduleLoadList
      const report = path.join(root, "report.mjs")
      fs.writeFileSync(report, "process.on(\"exit\", () => process.stderr.write(JSON.stringify(process.moduleLoadList)))\n")
      const run = spawnSync(process.execPath, ["--import", report, script, "--version"], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "" } })
      assert.strictEqual(run.status, 0, run.stderr)
      assert.match(run.stdout, /^vk-sandbox /)
      const loaded: unknown = JSON.parse(run.stderr)
      assert.isArray(loaded)
      const names = (loaded as Array<string>).filter((name) => /internal\/deps\/undici|internal\/crypto\/webcrypto/.test(name))
      assert.deepStrictEqual(names, [])
      // nor the platform services only `sim` asks for (main.ts provides the file system alone)
      assert.deepStrictEqual(publicModules(loaded as Array<string>).filter((name) => ["child_process", "readline", "dgram"].includes(name)), [])
      // the check can see a load: the same process with an ES import of node:http does load undici
      const facade = spawnSync(process.execPath, ["--import", report, "--input-type=module", "-e", "import * as http from \"node:http\""], { encoding: "utf8" })
      assert.include(facade.stderr, "internal/deps/undici/undici")
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  }, 120_000)
})

/** The daemon's bundle laid out as in the package, in a new directory (--version reads package.json two levels up). */
const writeDaemonBundle = async (): Promise<{ readonly root: string; readonly script: string }> => {
  const chunk = await daemonBundle()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vk-bundle-test-"))
  fs.copyFileSync(path.join(root, "package.json"), path.join(dir, "package.json"))
  fs.mkdirSync(path.join(dir, "dist", "app"), { recursive: true })
  const script = path.join(dir, "dist", "app", "vk-sandbox.js")
  fs.writeFileSync(script, chunk.code)
  return { root: dir, script }
}

describe("Node modules the daemon's start does not use", () => {
  it("an import of one in `loadedOnFirstUse` loads it at the first read of an export, and has every export it has", async () => {
    const entryId = "\0first-use-test-entry"
    const build = await rolldown({
      input: entryId,
      platform: "node",
      plugins: [builtinsWithoutFacade, {
        name: "entry",
        resolveId: (id: string) => (id === entryId ? id : undefined),
        load: (id: string) =>
          id === entryId
            ? [
              ...loadedOnFirstUse.map((name, i) => `import * as m${i} from "node:${name}"`),
              "const modules = () => process.moduleLoadList.filter((m) => m.startsWith(\"NativeModule \")).map((m) => m.slice(13))",
              `const names = ${JSON.stringify(loadedOnFirstUse)}`,
              `const imported = [${loadedOnFirstUse.map((_, i) => `m${i}`).join(", ")}]`,
              "const report = { before: modules(), keys: [], same: [] }",
              "names.forEach((name, i) => {",
              "  const real = process.getBuiltinModule(`node:${name}`)",
              "  const keys = Object.keys(real)",
              "  report.keys.push(JSON.stringify(Object.keys(imported[i]).filter((k) => k !== \"default\").sort()) === JSON.stringify([...keys].sort()))",
              "  report.same.push(keys.every((k) => imported[i][k] === real[k]))",
              "})",
              "console.log(JSON.stringify(report))"
            ].join("\n")
            : undefined
      }]
    })
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vk-first-use-test-"))
    try {
      const { output: files } = await build.generate({ format: "esm" })
      const script = path.join(dir, "entry.mjs")
      fs.writeFileSync(script, files[0].code)
      const run = spawnSync(process.execPath, [script], { encoding: "utf8" })
      assert.strictEqual(run.status, 0, run.stderr)
      const report = JSON.parse(run.stdout) as { before: Array<string>; keys: Array<boolean>; same: Array<boolean> }
      assert.deepStrictEqual(loadedOnFirstUse.filter((name) => report.before.includes(name)), [], "loaded by the import alone")
      // the names are the ones this Node's module has, and each reads as the module's own export
      assert.deepStrictEqual(report.keys, loadedOnFirstUse.map(() => true))
      assert.deepStrictEqual(report.same, loadedOnFirstUse.map(() => true))
    } finally {
      await build.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)

  it.live("a start against the simulators, up to ready, loads none of them (nor http2 for undici's HTTP/2 client)", () =>
    Effect.scoped(Effect.gen(function*() {
      const { root: dir, script } = yield* Effect.acquireRelease(
        Effect.promise(writeDaemonBundle),
        ({ root }) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))
      )
      const listFile = path.join(dir, "loaded.json")
      const report = path.join(dir, "report.mjs")
      fs.writeFileSync(
        report,
        `process.on("exit", () => process.getBuiltinModule("node:fs").writeFileSync(${JSON.stringify(listFile)}, JSON.stringify(process.moduleLoadList)))\n`
      )
      const cluster = yield* startCluster({ warmPerPool: 1 })
      const daemon = yield* spawnDaemon(cluster, { command: [process.execPath, "--import", report, script] })
      yield* waitFor(
        "start",
        "ready",
        httpGet(`${daemon.metricsUrl}/readyz`).pipe(Effect.map((reply) => Option.filter(reply, (r) => r.status === 200))),
        { timeout: "90 seconds", describe: daemon.output }
      )
      yield* daemon.signal("SIGTERM")
      yield* Deferred.await(daemon.exited)
      const loaded = publicModules(JSON.parse(fs.readFileSync(listFile, "utf8")) as ReadonlyArray<string>)
      // the list is the start's: it has the modules the daemon does use
      assert.includeMembers([...loaded], ["http", "https", "net"])
      assert.deepStrictEqual(["http2", ...loadedOnFirstUse].filter((name) => loaded.includes(name)), [], daemon.output())
    })), { timeout: 240_000 })
})

describe("undici in the daemon's bundle", () => {
  it("holds its dispatchers and request API, not its package root, fetch, WebSocket, EventSource or caches", async () => {
    const chunk = await daemonBundle()
    const undici = Object.keys(chunk.modules)
      .map((id) => id.replace(/\\/g, "/"))
      .filter((id) => id.includes("/node_modules/undici/"))
      .map((id) => id.replace(/.*\/node_modules\/undici\//, ""))
    assert.includeMembers(undici, ["lib/dispatcher/agent.js", "lib/dispatcher/proxy-agent.js", "lib/api/api-request.js", "lib/global.js"])
    // (the request API itself uses a few of the fetch helpers: headers, body, webidl)
    const unused = ["lib/web/websocket/", "lib/web/eventsource/", "lib/web/cache/", "lib/web/cookies/", "lib/mock/", "lib/cache/"]
    assert.deepStrictEqual(
      undici.filter((id) => id === "index.js" || id === "lib/web/fetch/index.js" || unused.some((dir) => id.startsWith(dir))),
      []
    )
  }, 120_000)

  it("as bundled: an Agent's request and the global dispatcher's request reach a server (the request API is on Dispatcher.prototype)", async () => {
    const entryId = "\0undici-test-entry"
    const build = await rolldown({
      input: entryId,
      platform: "node",
      cwd: root,
      plugins: [undiciDispatchersOnly, {
        name: "entry",
        resolveId: (id: string) => (id === entryId ? id : undefined),
        load: (id: string) =>
          id === entryId
            ? [
              "import { Agent, getGlobalDispatcher } from \"undici\"",
              "const origin = process.argv[2]",
              "const codes = []",
              "for (const dispatcher of [new Agent(), getGlobalDispatcher()]) {",
              "  const response = await dispatcher.request({ origin, path: \"/x\", method: \"GET\" })",
              "  codes.push(`${response.statusCode} ${await response.body.text()}`)",
              "}",
              "console.log(JSON.stringify(codes))",
              "process.exit(0)"
            ].join("\n")
            : undefined
      }]
    })
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vk-undici-test-"))
    const server = http.createServer((request, response) => response.end(`hello ${request.url}`))
    try {
      const { output: files } = await build.generate({ format: "esm" })
      const script = path.join(dir, "entry.mjs")
      fs.writeFileSync(script, files[0].code)
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const address = server.address()
      assert.isTrue(typeof address === "object" && address !== null)
      const port = typeof address === "object" && address !== null ? address.port : 0
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, [script, `http://127.0.0.1:${port}`], { encoding: "utf8" }, (error, out, err) =>
          error === null ? resolve(out) : reject(new Error(`${error.message}\n${err}`))))
      assert.deepStrictEqual(JSON.parse(stdout), ["200 hello /x", "200 hello /x"])
    } finally {
      server.closeAllConnections()
      server.close()
      await build.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
