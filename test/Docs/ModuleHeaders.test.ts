/**
 * Prose stays short and readable in src/, testkit/, test/ and bench/: a module's header (its
 * leading doc comment) is at most `headerLimit` lines, delimiters included; and in every module
 * that is not a test file, the first comment citing a rule id gives the rule's short name beside
 * it, as docs/rules.md heads it: `CFG-3 — an empty env var is unset` (case aside). History and
 * figures belong in docs/ and commit bodies.
 */
import { assert, describe, it } from "@effect/vitest"
import { readSource, sourceFiles } from "../support/Sources.ts"

export const headerLimit = 10

/** Rule id → short name, from the catalogue's headings `### CFG-3 — An empty env var is unset`. */
export const ruleNames = (markdown: string): ReadonlyMap<string, string> =>
  new Map([...markdown.matchAll(/^### ([A-Z]{1,6}-[0-9]{1,3}) — (.+)$/gm)].map((match) => [match[1]!, match[2]!.trim()]))

/** Lines of the module header, the `/** … *\/` block the file opens with (0 when there is none). */
export const headerLines = (text: string): number => {
  const header = /^(?:#!.*\n)?\s*(\/\*\*[\s\S]*?\*\/)/.exec(text)
  return header === null ? 0 : header[1]!.split("\n").length
}

/** Whether the id at `index` sits in a comment (a doc-comment line, or after `//`), not in code or a string. */
const inComment = (text: string, index: number): boolean => {
  const before = text.slice(text.lastIndexOf("\n", index - 1) + 1, index)
  return /^\s*(?:\*|\/\*)/.test(before) || before.includes("//")
}

/** The comment text after `index`, its line breaks and comment markers read as one space. */
const commentAfter = (text: string, index: number): string =>
  text.slice(index, index + 400).replace(/\n\s*(?:\*(?!\/)|\/\/)\s*/g, " ")

/** The ids whose first citation in a comment of `text` lacks ` — <short name>` right after it. */
export const unnamedCitations = (text: string, names: ReadonlyMap<string, string>): ReadonlyArray<string> => {
  const seen = new Set<string>()
  const unnamed: Array<string> = []
  for (const match of text.matchAll(/\b[A-Z]{1,6}-[0-9]{1,3}\b/g)) {
    const id = match[0]
    const name = names.get(id)
    if (name === undefined || seen.has(id) || !inComment(text, match.index)) continue
    seen.add(id)
    const after = commentAfter(text, match.index + id.length).toLowerCase()
    if (!after.startsWith(` — ${name.toLowerCase()}`)) unnamed.push(id)
  }
  return unnamed
}

const names = ruleNames(readSource("docs/rules.md"))
const files = sourceFiles("src", "testkit", "test", "bench").map((file) => ({ file, text: readSource(file) }))
/** Test files may cite an id bare in their names and asserts; every other module names it. */
const modules = files.filter(({ file }) => !file.endsWith(".test.ts"))

describe("module headers and rule names in src/, testkit/, test/ and bench/", () => {
  it(`every module header is at most ${headerLimit} lines`, () => {
    const long = files.flatMap(({ file, text }) => headerLines(text) > headerLimit ? [`${file}: ${headerLines(text)} lines`] : [])
    assert.deepStrictEqual(long, [])
  })

  it("the first citation of each rule id in a module gives its short name", () => {
    const unnamed = modules.flatMap(({ file, text }) =>
      unnamedCitations(text, names).map((id) => `${file}: ${id} — ${names.get(id)}`)
    )
    assert.deepStrictEqual(unnamed, [])
  })

  it("the checks themselves catch what they are for", () => {
    const catalogue = ruleNames("### CFG-3 — An empty env var is unset\n### ST-4 — Stale-UID guard\n")
    assert.deepStrictEqual([...catalogue.keys()], ["CFG-3", "ST-4"])
    assert.strictEqual(headerLines("/**\n * one\n * two\n */\nimport x\n"), 4)
    assert.strictEqual(headerLines("import x\n/** not a header */\n"), 0)
    assert.isAbove(headerLines(`/**\n${" * line\n".repeat(headerLimit)} */\n`), headerLimit)
    // named, case aside, across a comment's line break, and only the first citation needs it
    assert.deepStrictEqual(unnamedCitations("// the env (CFG-3 — an empty env var is unset); again CFG-3\n", catalogue), [])
    assert.deepStrictEqual(unnamedCitations(" * guard (ST-4 — stale-UID\n * guard) holds\n", catalogue), [])
    // a bare id, a name in another format, a name cut short
    assert.deepStrictEqual(unnamedCitations("// the env (CFG-3)\n", catalogue), ["CFG-3"])
    assert.deepStrictEqual(unnamedCitations("// CFG-3 (an empty env var is unset)\n", catalogue), ["CFG-3"])
    assert.deepStrictEqual(unnamedCitations("/** ST-4 — stale */\n", catalogue), ["ST-4"])
    // the first citation is the one that counts; code and strings are not comments
    assert.deepStrictEqual(unnamedCitations("// CFG-3\n// CFG-3 — an empty env var is unset\n", catalogue), ["CFG-3"])
    assert.deepStrictEqual(unnamedCitations('const help = "see CFG-3"\n', catalogue), [])
  })
})
