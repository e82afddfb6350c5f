/**
 * docs/configuration.md carries the flag table rendered from the CLI definition (`daemonFlags`);
 * this fails when either side changes without the other. Regenerate with
 * `node src/Cli/DocsTable.ts --write` (Node 24).
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { extractFlagsTable, flagsBegin, flagsEnd, renderFlagsTable, spliceFlagsTable } from "../../src/Cli/DocsTable.ts"
import { daemonFlags } from "../../src/Cli/Flags.ts"

const documentPath = fileURLToPath(new URL("../../docs/configuration.md", import.meta.url))
const document = readFileSync(documentPath, "utf8")

describe("docs/configuration.md", () => {
  it("holds exactly the flag table rendered from daemonFlags", () => {
    const committed = extractFlagsTable(document)
    assert.isTrue(Result.isSuccess(committed), "the flag table markers are missing")
    if (Result.isSuccess(committed)) {
      assert.strictEqual(
        committed.success,
        renderFlagsTable(),
        "docs/configuration.md is out of date: run `node src/Cli/DocsTable.ts --write`"
      )
    }
  })

  it("mentions every flag and env var in the rendered table", () => {
    const table = renderFlagsTable()
    for (const spec of daemonFlags) {
      assert.include(table, `\`--${spec.name}`)
      if (spec.env !== undefined) assert.include(table, `\`${spec.env}\``)
    }
    // header, separator, one row per flag
    assert.strictEqual(table.split("\n").length, daemonFlags.length + 2)
  })
})

describe("DocsTable", () => {
  const sample = `# Title\n\n${flagsBegin}\nold table\n${flagsEnd}\n\nafter\n`

  it("splices a table between the markers and extracts it back", () => {
    const spliced = spliceFlagsTable(sample, "| a |\n|---|")
    assert.isTrue(Result.isSuccess(spliced))
    if (Result.isSuccess(spliced)) {
      assert.strictEqual(spliced.success, `# Title\n\n${flagsBegin}\n| a |\n|---|\n${flagsEnd}\n\nafter\n`)
      assert.deepStrictEqual(extractFlagsTable(spliced.success), Result.succeed("| a |\n|---|"))
    }
  })

  it("detects a drifted table: a changed default no longer matches", () => {
    const drifted = daemonFlags.map((spec) => spec.name === "node-name" ? { ...spec, defaultText: "other" } : spec)
    assert.notStrictEqual(renderFlagsTable(drifted), renderFlagsTable())
  })

  it("refuses documents without markers, with markers reversed or repeated", () => {
    assert.isTrue(Result.isFailure(extractFlagsTable("no markers here")))
    assert.isTrue(Result.isFailure(extractFlagsTable(`${flagsEnd}\n${flagsBegin}`)))
    assert.isTrue(Result.isFailure(spliceFlagsTable(`${flagsBegin}${flagsEnd}${flagsBegin}${flagsEnd}`, "x")))
  })

  it("escapes a pipe inside a cell", () => {
    const table = renderFlagsTable([{ name: "x", kind: "value", valueName: "a|b", defaultText: "", description: "p|q" }])
    assert.include(table, "`--x <a\\|b>`")
    assert.include(table, "p\\|q")
  })
})
