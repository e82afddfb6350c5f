/**
 * `vk-sandbox claims [--state-path …] [--json]`: the claims file as a table, tokens redacted.
 *
 * Read-only and lock-free, so it works while the daemon runs: the daemon replaces the file by
 * rename, so a read sees one whole version. A file the daemon would refuse is refused here with
 * the daemon's own message (`ClaimsLoadError: cannot decode <path>: …`), exit 1.
 */
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { Console, DateTime, Effect, Option } from "effect"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import { compareKeys, decodeClaimsFile, formatTimestamp } from "../Schemas/ClaimsFile.ts"
import type { PodKey } from "../Schemas/Ids.ts"
import { nodeClaimsFileOps } from "../Store/FileOps.ts"
import { resolveLink } from "../Store/StateDir.ts"
import { ProcessExit } from "./Errors.ts"
import { daemonFlags } from "./Flags.ts"
import type { Environment } from "./ParseConfig.ts"

export const REDACTED = "<redacted>"

const stateFlag = daemonFlags.find((spec) => spec.name === "state-path")

/** The daemon's default state path and its variable, from the daemon's own flag table. */
export const defaultStatePath = (env: Environment): string => {
  const fromEnv = stateFlag?.env === undefined ? undefined : env[stateFlag.env]
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv
  return stateFlag?.defaultText ?? "/var/lib/vk-sandbox/claims.json"
}

/** One row as shown (JSON output too): no token, only whether one is present. */
export interface ClaimView {
  readonly pod: string
  readonly id: string
  readonly token: string
  readonly address: string
  readonly podUID: string
  readonly claimedAt: string | null
  readonly deadline: string | null
  /** Whole seconds until the deadline (negative once past); null when there is none. */
  readonly secondsLeft: number | null
}

export const viewClaims = (rows: ReadonlyMap<PodKey, ClaimRecord>, now: DateTime.Utc): ReadonlyArray<ClaimView> =>
  Array.from(rows.keys()).sort(compareKeys).map((key) => {
    const record = rows.get(key)!
    return {
      pod: key,
      id: record.id,
      token: REDACTED,
      address: record.address,
      podUID: record.podUID,
      claimedAt: Option.match(record.claimedAt, { onNone: () => null, onSome: formatTimestamp }),
      deadline: Option.match(record.deadline, { onNone: () => null, onSome: formatTimestamp }),
      secondsLeft: Option.match(record.deadline, {
        onNone: () => null,
        onSome: (deadline) => Math.floor((DateTime.toEpochMillis(deadline) - DateTime.toEpochMillis(now)) / 1000)
      })
    }
  })

/** `1h02m03s`, `45s`, `expired 12s ago`, `-` (no deadline). */
export const formatTimeLeft = (seconds: number | null): string => {
  if (seconds === null) return "-"
  const magnitude = Math.abs(seconds)
  const h = Math.floor(magnitude / 3600)
  const m = Math.floor((magnitude % 3600) / 60)
  const s = magnitude % 60
  const text = h > 0
    ? `${h}h${String(m).padStart(2, "0")}m${String(s).padStart(2, "0")}s`
    : m > 0
    ? `${m}m${String(s).padStart(2, "0")}s`
    : `${s}s`
  return seconds < 0 ? `expired ${text} ago` : text
}

/** The table as text: a header, one line per claim, columns padded. */
export const formatClaimsTable = (views: ReadonlyArray<ClaimView>): string => {
  const header = ["POD", "CLAIM ID", "ADDRESS", "POD UID", "CLAIMED AT", "DEADLINE", "TIME LEFT", "TOKEN"]
  const lines = views.map((v) => [
    v.pod,
    v.id,
    v.address === "" ? "-" : v.address,
    v.podUID === "" ? "-" : v.podUID,
    v.claimedAt ?? "-",
    v.deadline ?? "-",
    formatTimeLeft(v.secondsLeft),
    v.token
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => line[i]!.length)))
  const render = (cells: ReadonlyArray<string>) =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")
  return [render(header), ...lines.map(render)].join("\n")
}

const usage = "usage: vk-sandbox claims [--state-path <path>] [--json]"

interface ClaimsArgs {
  readonly statePath: string
  readonly json: boolean
  readonly help: boolean
}

/** Go-style flags like the daemon's: -x or --x, --x=value or --x value. */
const parseArgs = (args: ReadonlyArray<string>, env: Environment): { ok: ClaimsArgs } | { error: string } => {
  let statePath = defaultStatePath(env)
  let json = false
  let help = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const match = /^--?([a-z-]+)(?:=(.*))?$/s.exec(arg)
    if (match === null) return { error: `unexpected argument ${JSON.stringify(arg)}` }
    const [, name, inline] = match
    switch (name) {
      case "state-path": {
        const value = inline ?? args[++i]
        if (value === undefined) return { error: "flag needs an argument: --state-path" }
        if (value === "") return { error: "--state-path must not be empty" }
        statePath = value
        break
      }
      case "json":
        if (inline !== undefined && inline !== "true" && inline !== "false") {
          return { error: `invalid boolean value ${JSON.stringify(inline)} for --json` }
        }
        json = inline !== "false"
        break
      case "help":
      case "h":
        help = true
        break
      default:
        return { error: `flag provided but not defined: ${arg}` }
    }
  }
  return { ok: { statePath, json, help } }
}

const fail = (code: number, message: string) =>
  Console.error(`vk-sandbox: ${message}`).pipe(Effect.andThen(Effect.fail(new ProcessExit({ code, message }))))

/** Runs `claims` with its arguments (after `claims`). */
export const runClaims = (args: ReadonlyArray<string>, env: Environment) =>
  Effect.gen(function*() {
    const parsed = parseArgs(args, env)
    if ("error" in parsed) return yield* fail(2, `${parsed.error}\n${usage}`)
    const { help, json, statePath } = parsed.ok
    if (help) {
      return yield* Console.log(
        `${usage}\n\nLists the claims file (tokens redacted). Read-only, takes no lock.\n` +
          `  --state-path <path>  claims file (env ${stateFlag?.env ?? "VK_STATE_PATH"}, default ${
            JSON.stringify(stateFlag?.defaultText ?? "")
          })\n  --json               one JSON document instead of the table`
      )
    }
    // The daemon's paths are absolute (ClaimsStoreFile resolves them); so are its messages.
    const path = NPath.resolve(statePath)
    const text = yield* Effect.promise(() =>
      NFS.readFile(path, "utf8").then(
        (content) => ({ _tag: "Read" as const, content }),
        (cause: unknown) =>
          typeof cause === "object" && cause !== null && "code" in cause && cause.code === "ENOENT"
            ? { _tag: "Missing" as const }
            : { _tag: "Unreadable" as const, message: cause instanceof Error ? cause.message : String(cause) }
      )
    )
    if (text._tag === "Unreadable") return yield* fail(1, `ClaimsLoadError: cannot read ${path}: ${text.message}`)
    // A link that leads nowhere (a volume not mounted) stops the daemon; it is not "no claims" here either.
    if (text._tag === "Missing") {
      yield* resolveLink(nodeClaimsFileOps, path).pipe(
        Effect.catchTags({
          StateDirUnsafe: (e) => fail(1, `StateDirUnsafe: ${e.message}`),
          FileStepError: (e) => fail(1, `ClaimsLoadError: cannot ${e.operation} ${e.path}: ${e.message}`)
        })
      )
    }
    // A missing file is an empty table for the daemon too (PER-8).
    const rows = text._tag === "Missing" ? new Map<PodKey, ClaimRecord>() : yield* decodeClaimsFile(text.content).pipe(
      Effect.catchTag("ClaimsFileDecodeError", (e) => fail(1, `ClaimsLoadError: cannot decode ${path}: ${e.message}`))
    )
    const views = viewClaims(rows, yield* DateTime.now)
    if (json) return yield* Console.log(JSON.stringify({ path, claims: views }, null, 2))
    if (text._tag === "Missing") return yield* Console.log(`no claims file at ${path} (no claims)`)
    if (views.length === 0) return yield* Console.log(`no claims in ${path}`)
    yield* Console.log(formatClaimsTable(views))
  })
