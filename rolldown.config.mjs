/**
 * `npm run build`: the production build the container image runs. One bundled ES module with the
 * daemon's code and the parts of its dependencies it uses (tree-shaken): no `effect` barrel and
 * no test tooling (testkit/ is reached only through a computed path, which the bundler leaves
 * alone). Every apiserver object is decoded with Schema (src/Schemas), so nothing the daemon runs
 * uses client-node's generated API classes, model classes or model serializer.
 *
 * Those modules still come in through client-node's package root (the kubeconfig code imports its
 * generated index), and each model module ends in assignments to its own class's static fields
 * (`V1Node.attributeTypeMap = [...]`), which a bundler must assume to be side effects. In
 * client-node's dist/ such assignments to a module's own classes are the only top-level
 * statements besides declarations, except polyfill.js (a global `File`); declaring the other
 * modules free of side effects lets the unused ones go (test/Packaging/Bundle.test.ts checks).
 *
 * The bundle sits two directories below the package root, as src/Cli/*.ts does, so the paths it
 * resolves from its own location (package.json for --version, testkit/ for `sim`) stay the same.
 * dist/main.js is a one-line entry that imports it (the image runs `node dist/main.js`).
 *
 * V8 keeps a module's source text for as long as the process runs (functions are compiled
 * lazily from it), so the bundle's text is resident memory: comments are dropped (the
 * dependencies' JSDoc was about a third of it) and non-ASCII characters escaped (a single `—`
 * in a comment made V8 hold the whole text at two bytes per character). Together about 16 MB
 * of the idle daemon's RSS (test/Packaging/Bundle.test.ts).
 *
 * Node's own modules are not imported as ES modules (`import ... from "node:http"`) but taken
 * from `process.getBuiltinModule` (see `builtinsWithoutFacade`): for an ES import Node builds a
 * facade that reads every export of the module once, getters included, and some getters load
 * whole subsystems the daemon never uses. `node:http`'s `WebSocket` getter loads Node's own
 * bundled undici (~60 ms of every start, --version included); `node:crypto`'s loads WebCrypto,
 * `node:tls`'s builds the array of root certificates. Each Node module is then also loaded only
 * when the bundled module that uses it is first initialized, not before any code runs (--version
 * loads none of the daemon's). `node dist/main.js --version`: ~0.26 -> ~0.16 s of CPU.
 */
import { builtinModules, createRequire } from "node:module"

// node:module stays an ES import: the bundler's own runtime imports `createRequire` from it
// ahead of every module (a CommonJS wrapper for it would run before the runtime defines it), and
// none of its getters loads anything.
const builtins = new Set(
  builtinModules.filter((name) => name !== "module").flatMap((name) => [name, `node:${name}`])
)
const builtinPrefix = "\0node-builtin:"

/**
 * Node's modules that the bundled code imports and the daemon's start never calls, loaded at their
 * first use instead (compiling Node's own code for them is a few ms of every start):
 * - readline: Effect's terminal service, which `@effect/platform-node/NodeHttpServer` imports with
 *   the rest of Effect's platform services, and which the daemon never asks for;
 * - vm: client-node's JSONPath, for a kubeconfig's exec or auth-provider output paths.
 * Their wrapper exports, for each name the module has, a getter that loads it on first read. The
 * names are those of the Node that builds; test/Packaging/Bundle.test.ts checks them against the
 * Node that runs the tests and that a daemon's start loads none of these modules.
 */
export const loadedOnFirstUse = ["readline", "vm"]
const exportNames = (name) => Object.keys(process.getBuiltinModule(`node:${name}`))

/**
 * ES imports of Node's modules become a small CommonJS module each that exports the module object
 * from `process.getBuiltinModule` (no facade). The bundler reads a named import from it where it is
 * used and a namespace import through getters, so nothing reads an export before the code does;
 * CommonJS `require`s are left as the bundler writes them (they never made a facade).
 */
export const builtinsWithoutFacade = {
  name: "builtins-without-facade",
  resolveId(source, _importer, options) {
    if (options.kind !== "import-statement" || !builtins.has(source)) return null
    return { id: `${builtinPrefix}${source.replace(/^node:/, "")}`, moduleSideEffects: false }
  },
  load(id) {
    if (!id.startsWith(builtinPrefix)) return null
    const name = id.slice(builtinPrefix.length)
    const load = `process.getBuiltinModule(${JSON.stringify(`node:${name}`)})`
    if (!loadedOnFirstUse.includes(name)) return `module.exports = ${load}\n`
    return [
      "let loaded",
      "const lazy = {}",
      `for (const name of ${JSON.stringify(exportNames(name))}) {`,
      `  Object.defineProperty(lazy, name, { enumerable: true, get: () => (loaded ??= ${load})[name] })`,
      "}",
      "module.exports = lazy",
      ""
    ].join("\n")
  }
}

/**
 * undici as the bundle imports it: the dispatchers only. undici's package root requires all of
 * undici at load (fetch, WebSocket, EventSource, the caches, the mock agents: about half of its
 * evaluation, and ~0.6 MB of the bundle) and puts the request API on `Dispatcher.prototype`.
 * The daemon uses a dispatcher's `request` (Kube/Transport.ts) and the global
 * dispatcher (Kube/PooledAuthentication.ts); client-node's kubeconfig code (config.js) builds an
 * `Agent` or a `ProxyAgent`. "undici" is here a module that does the root's one side effect, the
 * request API on `Dispatcher.prototype`, and exports those names, and `fetch` as Node's own:
 * client-node's generated clients, watch and log helpers import it, and the daemon runs none of
 * them (test/Packaging/Bundle.test.ts). A name it lacks fails the build (MISSING_EXPORT) rather
 * than running without it. Effect's own undici module (`@effect/platform-node/Undici`, which
 * re-exports the whole package for Effect's HTTP client) keeps the package root; the daemon does
 * not use it, so it is not in the bundle either.
 */
const undiciId = "\0undici-dispatchers"
const undiciFile = (file) => JSON.stringify(createRequire(import.meta.url).resolve(`undici/${file}`))
const wholeUndiciFor = (importer) => /[\\/]@effect[\\/]platform-node[\\/]dist[\\/]Undici\.js$/.test(importer ?? "")
export const undiciDispatchersOnly = {
  name: "undici-dispatchers-only",
  resolveId(source, importer, options) {
    return options.kind === "import-statement" && source === "undici" && !wholeUndiciFor(importer) ? undiciId : null
  },
  load(id) {
    if (id !== undiciId) return null
    return [
      `import Dispatcher from ${undiciFile("lib/dispatcher/dispatcher.js")}`,
      `import api from ${undiciFile("lib/api/index.js")}`,
      `import Agent from ${undiciFile("lib/dispatcher/agent.js")}`,
      `import ProxyAgent from ${undiciFile("lib/dispatcher/proxy-agent.js")}`,
      `import globalDispatcher from ${undiciFile("lib/global.js")}`,
      "Object.assign(Dispatcher.prototype, api)",
      "export const getGlobalDispatcher = globalDispatcher.getGlobalDispatcher",
      "export const fetch = (input, init) => globalThis.fetch(input, init)",
      "export { Agent, Dispatcher, ProxyAgent }"
    ].join("\n")
  }
}

/**
 * undici's HTTP/1 client requires its HTTP/2 client at load, which loads `node:http2` and reads its
 * constants: a few ms of every start, before the daemon has sent a request. Only a TLS connection
 * whose server picks h2 in the handshake (undici offers it) uses that client: it is required
 * there, at the first such connection, and never where the apiserver speaks HTTP/1 or plain HTTP
 * (the simulators). A changed undici without that line fails the build (see it again then).
 */
const undiciClient = createRequire(import.meta.url).resolve("undici/lib/dispatcher/client.js")
const eagerH2 = "const connectH2 = require('./client-h2.js')\n"
export const undiciHttp2AtFirstUse = {
  name: "undici-http2-at-first-use",
  transform(code, id) {
    if (id !== undiciClient) return null
    if (!code.includes(eagerH2)) this.error(`${id} no longer has: ${eagerH2.trim()}`)
    return code.replace(eagerH2, "const connectH2 = (client, socket) => require('./client-h2.js')(client, socket)\n")
  }
}

export default {
  input: { "app/vk-sandbox": "src/main.ts" },
  platform: "node",
  treeshake: {
    // false: no side effects; undefined: as the package says (effect's package.json declares none)
    moduleSideEffects: (id) => (/[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/](?!polyfill\.js$)/.test(id) ? false : undefined)
  },
  output: {
    dir: "dist",
    format: "esm",
    sourcemap: false,
    codeSplitting: false,
    comments: false,
    charset: "ascii"
  },
  plugins: [builtinsWithoutFacade, undiciDispatchersOnly, undiciHttp2AtFirstUse, {
    name: "entry",
    generateBundle() {
      this.emitFile({ type: "asset", fileName: "main.js", source: "import \"./app/vk-sandbox.js\"\n" })
    }
  }]
}
