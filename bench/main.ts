/**
 * `npm run bench [-- --json] [-- --only=<section>]`: runs every benchmark section and prints one
 * JSON object keyed by section (`--json`), or a readable table. The bench reports; it does not
 * assert. A section is a `BenchSection` in `sections` below; add new ones there. The `machine`
 * figures (`machine.ts`) come with every run.
 */
import { daemonSection } from "./daemon.ts"
import { machineBefore } from "./machine.ts"
import { podListSection } from "./podList.ts"
import { soakSection } from "./soak.ts"
import { storeSection } from "./store.ts"
import type { BenchSection, Figures } from "./types.ts"

const sections: ReadonlyArray<BenchSection> = [storeSection, daemonSection, podListSection, soakSection]

const args = process.argv.slice(2)
const json = args.includes("--json")
const only = args.find((a) => a.startsWith("--only="))?.slice("--only=".length)

const results: Record<string, Figures> = {}
// Always, whatever `--only` picks: a figure means little without the machine it was taken on.
const machineAfter = machineBefore()
for (const section of sections) {
  if (only !== undefined && section.name !== only) continue
  if (!json) process.stderr.write(`running ${section.name}…\n`)
  results[section.name] = await section.run()
}

results["machine"] = machineAfter()

if (json) {
  process.stdout.write(`${JSON.stringify(results)}\n`)
} else {
  for (const [name, figures] of Object.entries(results)) {
    const rows = Object.entries(figures)
    const width = Math.max(...rows.map(([k]) => k.length))
    process.stdout.write(`\n${name}\n${"-".repeat(name.length)}\n`)
    for (const [k, v] of rows) {
      const shown = typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : String(v)
      process.stdout.write(`  ${k.padEnd(width)}  ${shown}\n`)
    }
  }
}
