/**
 * The production bundle (rolldown.config.mjs):
 * - its output options, applied to a small module by rolldown itself: the daemon's source text
 *   stays in memory for as long as it runs (V8 keeps it to compile functions lazily), so its size
 *   is part of the daemon's RSS;
 * - the daemon's whole bundle, built in memory as `npm run build` makes it: it holds none of
 *   client-node's generated API classes, model classes or model serializer. The daemon talks to
 *   the apiserver through requests it builds and Schemas it decodes (`src/Schemas`) and keeps
 *   client-node for kubeconfig, auth and TLS. A generated client used again (its request factory
 *   and response processor come with it), or the build's side-effect setting for client-node
 *   dropped (every model class then stays for its static fields), fails here.
 */
import { assert, describe, it } from "@effect/vitest"
import { fileURLToPath } from "node:url"
import { type OutputChunk, rolldown, type RolldownOptions } from "rolldown"

// the build's own configuration, as `npm run build` reads it (a plain .mjs without types)
const configUrl = new URL("../../rolldown.config.mjs", import.meta.url).href
const { default: config } = (await import(configUrl)) as { default: RolldownOptions }
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

/** The daemon's bundle as `npm run build` makes it, without writing dist/. */
const daemonBundle = async (): Promise<OutputChunk> => {
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
