/**
 * `vk-sandbox claims [--state-path …] [--json]`: the claims file as a table, tokens redacted.
 *
 * Read-only and lock-free, so it works while the daemon runs: the daemon replaces the file by
 * rename, so a read sees one whole version. A file the daemon would refuse is refused here with
 * the daemon's own message (`ClaimsLoadError: cannot decode <path>: …`), exit 1.
 */
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { Console, DateTime, Effect, Option, Result } from "effect"
import type { ClaimRecord } from "../Schemas/Claims.ts"
import { decodeClaimsFile } from "../Schemas/ClaimsFile/Decode.ts"
import { compareKeys } from "../Schemas/ClaimsFile/Encode.ts"
import { formatTimestamp } from "../Schemas/ClaimsFile/Time.ts"
import type { PodKey } from "../Schemas/Ids.ts"
import { nodeClaimsFileOps } from "../Store/FileOps.ts"
import { resolveLink } from "../Store/StateDir.ts"
import { exitWith } from "./Errors.ts"
import { bool, daemonFlags, type FlagSpec, rawValue, tokenize, value } from "./Flags.ts"
import { commandHelp } from "./Help.ts"
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

/** `claims` takes the daemon's --state-path (same variable, same default) and --json. */
export const claimsFlags: ReadonlyArray<FlagSpec> = [
  value(
    "state-path",
    "path",
    stateFlag?.defaultText ?? "/var/lib/vk-sandbox/claims.json",
    "claims file (must not be empty)",
    stateFlag?.env ?? "VK_STATE_PATH"
  ),
  bool("json", "one JSON document instead of the table")
]

export const claimsHelp = commandHelp({
  summary: "vk-sandbox claims: list the claims file, tokens redacted (read-only, takes no lock; works while the daemon runs)",
  usage: ["vk-sandbox claims [flags]"],
  flags: claimsFlags
})

/** Runs `claims` with its arguments (after `claims`). */
export const runClaims = (args: ReadonlyArray<string>, env: Environment) =>
  Effect.gen(function*() {
    const tokens = tokenize(args, claimsFlags)
    if (Result.isFailure(tokens)) return yield* exitWith(2, tokens.failure.message)
    if (tokens.success.help) return yield* Console.log(claimsHelp)
    const statePath = rawValue(tokens.success, env, "state-path", claimsFlags).text
    if (statePath === "") return yield* exitWith(2, "invalid value \"\" for flag --state-path: must not be empty")
    const json = rawValue(tokens.success, env, "json", claimsFlags).text === "true"
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
    if (text._tag === "Unreadable") return yield* exitWith(1, `ClaimsLoadError: cannot read ${path}: ${text.message}`)
    // A link that leads nowhere (a volume not mounted) stops the daemon; it is not "no claims" here either.
    if (text._tag === "Missing") {
      yield* resolveLink(nodeClaimsFileOps, path).pipe(
        Effect.catchTags({
          StateDirUnsafe: (e) => exitWith(1, `StateDirUnsafe: ${e.message}`),
          FileStepError: (e) => exitWith(1, `ClaimsLoadError: cannot ${e.operation} ${e.path}: ${e.message}`)
        })
      )
    }
    // A missing file is an empty table for the daemon too (PER-8 — loading the file).
    const rows = text._tag === "Missing" ? new Map<PodKey, ClaimRecord>() : yield* decodeClaimsFile(text.content).pipe(
      Effect.catchTag("ClaimsFileDecodeError", (e) => exitWith(1, `ClaimsLoadError: cannot decode ${path}: ${e.message}`))
    )
    const views = viewClaims(rows, yield* DateTime.now)
    if (json) return yield* Console.log(JSON.stringify({ path, claims: views }, null, 2))
    if (text._tag === "Missing") return yield* Console.log(`no claims file at ${path} (no claims)`)
    if (views.length === 0) return yield* Console.log(`no claims in ${path}`)
    yield* Console.log(formatClaimsTable(views))
  })
