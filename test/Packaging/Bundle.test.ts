/**
 * The production bundle's output options (rolldown.config.mjs), applied to a small module by
 * rolldown itself: the daemon's source text stays in memory for as long as it runs (V8 keeps it
 * to compile functions lazily), so its size is part of the daemon's RSS.
 */
import { assert, describe, it } from "@effect/vitest"
import { type OutputOptions, rolldown } from "rolldown"

// the build's own configuration, as `npm run build` reads it (a plain .mjs without types)
const configUrl = new URL("../../rolldown.config.mjs", import.meta.url).href
const { default: config } = (await import(configUrl)) as { default: { readonly output: OutputOptions } }

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
    const { output } = await build.generate(config.output)
    return output[0].code
  } finally {
    await build.close()
  }
}

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
