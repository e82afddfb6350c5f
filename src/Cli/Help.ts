/** `--help` for the daemon: every flag with its env var and default. */
import { daemonFlags } from "./Flags.ts"

export interface SubcommandSummary {
  readonly usage: string
  readonly summary: string
}

export const helpText = (subcommands: ReadonlyArray<SubcommandSummary>): string => {
  const lines: Array<string> = [
    "vk-sandbox: a virtual kubelet that runs sandbox Pods as warm microVMs claimed from sandboxd",
    "",
    "Usage:",
    "  vk-sandbox [flags]                 run the daemon",
    ...subcommands.map((sub) => `  vk-sandbox ${sub.usage.padEnd(23)}${sub.summary}`),
    "",
    "Flags take -x or --x, and --x=value or --x value; a boolean is set by --x or --x=true.",
    "An explicit flag beats its environment variable; a variable that is set but empty counts as unset.",
    "",
    "Flags:"
  ]
  for (const spec of daemonFlags) {
    lines.push(`  --${spec.name}${spec.kind === "value" ? ` <${spec.valueName}>` : ""}`)
    const env = spec.env === undefined ? "" : `env ${spec.env}, `
    const shownDefault = spec.kind === "bool" ? spec.defaultText : JSON.stringify(spec.defaultText)
    lines.push(`        ${spec.description} (${env}default ${shownDefault})`)
  }
  lines.push("  --help")
  lines.push("        print this help and exit")
  return lines.join("\n")
}
