/**
 * The checker again, on a kept run's history (a failing run keeps its directory):
 *
 *   node test/chaos/Recheck.ts /tmp/vk-chaos-XXXX [settle seconds]
 *
 * prints the same report the run printed, from the history file alone; exit 1 on a violation.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { check } from "./Checker.ts"
import { boundsFor, NodeName } from "./Daemon.ts"
import { readHistory } from "./History.ts"

const given = process.argv[2] ?? ""
const file = given !== "" && fs.existsSync(given) && fs.statSync(given).isDirectory() ? path.join(given, "history.jsonl") : given
if (file === "" || !fs.existsSync(file)) {
  console.error("usage: node test/chaos/Recheck.ts <run directory or history.jsonl> [settle seconds]")
  process.exit(2)
}
const result = check(readHistory(file), NodeName, boundsFor(Number(process.argv[3] ?? 15)))
console.log(result.report)
process.exit(result.ok ? 0 : 1)
