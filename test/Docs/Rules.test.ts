/**
 * docs/rules.md is the catalogue of the rules the code cites by id. This fails when a comment or
 * test in src/, testkit/ or test/ cites an id the catalogue does not define, when code cites a
 * document that is not in this repository (the reference's spec, design notes, issue numbers),
 * and when a comment is nothing but an id (it must say the rule in words).
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { repoRoot, sourceFiles } from "../support/Sources.ts"

const root = repoRoot
const catalogue = readFileSync(path.join(root, "docs/rules.md"), "utf8")

/** This file is left out: its self-checks hold examples of what the checks reject. */
const self = "test/Docs/Rules.test.ts"
const files = sourceFiles("src", "testkit", "test")
  .filter((file) => file !== self)
  .map((file) => ({ file, text: readFileSync(path.join(root, file), "utf8") }))

const ruleId = /\b[A-Z]{1,6}-[0-9]{1,3}\b/g
/** Standard names that look like rule ids but are not ours. */
const notRuleIds = new Set(["SHA-256", "UTF-8", "UTF-16", "P-256"])

export const definedIds = (markdown: string): ReadonlySet<string> =>
  new Set([...markdown.matchAll(/^### ([A-Z]{1,6}-[0-9]{1,3})\b/gm)].map((match) => match[1]!))

/** A heading's anchor as GitHub makes it: lower case, punctuation (the em dash, backquotes) dropped, spaces to hyphens. */
export const headingAnchor = (heading: string): string =>
  heading.toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replace(/ /g, "-")

/** Citations of documents that are not in this repository. */
export const outsideCitation =
  /ARCHITECTURE\.md|reference-behaviou?r|virtual-kubelet\.md|ANCHORS\.md|EFFECT4\.md|TOOLCHAIN\.md|sandboxd-and-crds|\.\.\/shared\/|shared\/(?:spec|design|mission)|\b[Ii]ssues? #?\d+|§/

/** A comment line holding only rule ids and punctuation, e.g. `/** CRT-8. *\/` or `// (PER-3)`. */
export const idOnlyComment = /^\s*(?:\/\/|\/\*\*?|\*)\s*(?:\(?[A-Z]{1,6}-[0-9]{1,3}\)?[\s,.;:/…-]*)+(?:\*\/)?\s*$/

const violations = (predicate: (line: string) => boolean) =>
  files.flatMap(({ file, text }) =>
    text.split("\n").flatMap((line, index) => predicate(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])
  )

describe("docs/rules.md", () => {
  it("defines every rule id cited in src/, testkit/ and test/", () => {
    const defined = definedIds(catalogue)
    const undefinedCitations = files.flatMap(({ file, text }) =>
      [...text.matchAll(ruleId)]
        .map((match) => match[0])
        .filter((id) => !notRuleIds.has(id) && !defined.has(id))
        .map((id) => `${file}: ${id}`)
    )
    assert.deepStrictEqual(undefinedCitations, [])
  })

  it("gives every rule a title, a statement, where it is enforced and a test that shows it", () => {
    const entries = catalogue.split(/^### /m).slice(1)
    assert.isAbove(entries.length, 0)
    for (const entry of entries) {
      const [heading = ""] = entry.split("\n")
      assert.match(heading, /^[A-Z]{1,6}-[0-9]{1,3} — \S/, `heading: ${heading}`)
      assert.match(entry, /^Enforced in: `/m, `no "Enforced in" for ${heading}`)
      assert.match(entry, /^Shown by: `test\//m, `no test for ${heading}`)
    }
  })

  it("names only files that exist", () => {
    const missing = [...catalogue.matchAll(/`((?:src|test|testkit)\/[^`]+\.ts)`/g)]
      .map((match) => match[1]!)
      .filter((file) => !existsSync(path.join(root, file)))
    assert.deepStrictEqual([...new Set(missing)], [])
  })

  it("every link to a rule in the docs lands on its heading", () => {
    const headings = new Set([...catalogue.matchAll(/^### (.+)$/gm)].map((match) => headingAnchor(match[1]!)))
    const documents = [...readdirSync(path.join(root, "docs")).map((file) => `docs/${file}`), "README.md"].filter((file) => file.endsWith(".md"))
    const broken = documents.flatMap((file) =>
      [...readFileSync(path.join(root, file), "utf8").matchAll(/rules\.md#([\w-]+)/g)]
        .map((match) => match[1]!)
        .filter((anchor) => !headings.has(anchor))
        .map((anchor) => `${file}: #${anchor}`)
    )
    assert.deepStrictEqual(broken, [])
    assert.strictEqual(headingAnchor("TLS-4 — vk-cocoon's certificate is reused when it is usable"), "tls-4--vk-cocoons-certificate-is-reused-when-it-is-usable")
  })

  it("the code cites no document outside this repository", () => {
    assert.deepStrictEqual(violations((line) => outsideCitation.test(line)), [])
  })

  it("no comment is only a rule id", () => {
    assert.deepStrictEqual(violations((line) => idOnlyComment.test(line)), [])
  })

  it("the checks themselves catch what they are for", () => {
    assert.deepStrictEqual([...definedIds("### CRT-3 — x\n### AB-12 — y\n## CD-1\n")], ["CRT-3", "AB-12"])
    assert.isTrue(outsideCitation.test(" * (ARCHITECTURE.md §6.3)"))
    assert.isTrue(outsideCitation.test("// see issue 10"))
    assert.isTrue(outsideCitation.test("// reference-behaviour DEL-1"))
    assert.isFalse(outsideCitation.test("// the claims file (PER-1) is compact JSON"))
    assert.isTrue(idOnlyComment.test("/** CRT-8. */"))
    assert.isTrue(idOnlyComment.test("  // (PER-3, PER-6)"))
    assert.isFalse(idOnlyComment.test("/** The pod key is namespace/name (CRT-8). */"))
  })
})
