/**
 * `--help` for every command of the binary, in one style: a line saying what it does, its usage,
 * then every flag with its value type, its environment variable (where one exists) and default.
 */
import { daemonFlags, type FlagSpec } from "./Flags.ts"

export interface SubcommandSummary {
  readonly usage: string
  readonly summary: string
}

/** The flags part of a help text. */
export const flagLines = (table: ReadonlyArray<FlagSpec>): ReadonlyArray<string> => {
  const lines: Array<string> = ["Flags:"]
  for (const spec of table) {
    lines.push(`  --${spec.name}${spec.kind === "value" ? ` <${spec.valueName}>` : ""}`)
    const env = spec.env === undefined ? "" : `env ${spec.env}, `
    const shownDefault = spec.kind === "bool" ? spec.defaultText : JSON.stringify(spec.defaultText)
    lines.push(`        ${spec.description} (${env}default ${shownDefault})`)
  }
  lines.push("  --help")
  lines.push("        print this help and exit")
  return lines
}

const syntax = [
  "Flags take -x or --x, and --x=value or --x value; a boolean is set by --x or --x=true.",
  "An explicit flag beats its environment variable; a variable that is set but empty counts as unset."
]

/** Help for a command: what it does, how to call it, its flags. */
export const commandHelp = (options: {
  readonly summary: string
  readonly usage: ReadonlyArray<string>
  readonly flags: ReadonlyArray<FlagSpec>
}): string =>
  [
    options.summary,
    "",
    "Usage:",
    ...options.usage.map((line) => `  ${line}`),
    "",
    ...syntax,
    "",
    ...flagLines(options.flags)
  ].join("\n")

export const helpText = (subcommands: ReadonlyArray<SubcommandSummary>): string =>
  commandHelp({
    summary: "vk-sandbox: a virtual kubelet that runs sandbox Pods as warm microVMs claimed from sandboxd",
    usage: [
      "vk-sandbox [flags]                 run the daemon",
      ...subcommands.map((sub) => `vk-sandbox ${sub.usage.padEnd(23)}${sub.summary}`)
    ],
    flags: daemonFlags
  })
