/**
 * The crash suite's tools: both simulators in this process (their state is read directly), the
 * real daemon binary as a child process that a test kills with SIGKILL or arms with failpoints,
 * and the three invariants, judged from the apiserver's objects, the claims file and the sandboxd
 * simulator's claims (never from log text).
 */
import { Duration, Effect, Option, type Scope } from "effect"
import {
  type Cluster,
  createPod,
  type Daemon,
  deletePod,
  getPod,
  type JsonObject,
  readClaimsFile,
  spawnDaemon,
  type StepFailed
} from "../../testkit/Demo/Harness.ts"
import { poll } from "../../testkit/Poll.ts"

/** The crash suite's timing: every loop at 1 s, short timeouts, an apiserver budget no test waits on. */
const crashFlags = [
  "--lease-watch-interval", "1s",
  "--claim-verify-interval", "1s",
  "--orphan-scan-interval", "1s",
  "--shutdown-timeout", "2s",
  "--sandboxd-timeout", "3s",
  "--claim-settle-time", "1s",
  "--kube-api-qps", "2000",
  "--kube-api-burst", "4000",
  "--log-format", "json"
]

/** A daemon against `cluster`; `failpoints` is VK_SANDBOX_FAILPOINTS ("" = none). SIGKILLed with the scope. */
export const startDaemon = (
  cluster: Cluster,
  options: { readonly failpoints?: string; readonly logFile: string }
): Effect.Effect<Daemon, StepFailed, Scope.Scope> => {
  const failpoints = options.failpoints ?? ""
  return spawnDaemon(cluster, {
    flags: crashFlags,
    logFile: options.logFile,
    logHeader: `---- start${failpoints === "" ? "" : ` VK_SANDBOX_FAILPOINTS=${failpoints}`}`,
    env: failpoints === "" ? {} : { VK_SANDBOX_FAILPOINTS: failpoints }
  })
}

// ---- the invariants ------------------------------------------------------------------------

export interface Violations {
  /** A Pod (not being deleted) whose status is Running while the claims file has no row with its claim id. */
  readonly runningWithoutRow: ReadonlyArray<string>
  /** A live sandbox whose id and token are in no row of the claims file. */
  readonly vmsWithoutHolder: ReadonlyArray<string>
  /** A claim_ref that more than one live sandbox carries. */
  readonly keysWithTwoVms: ReadonlyArray<string>
}

export const violationCount = (v: Violations): number =>
  v.runningWithoutRow.length + v.vmsWithoutHolder.length + v.keysWithTwoVms.length

export const describeViolations = (v: Violations): string =>
  [
    v.runningWithoutRow.length > 0 ? `Running without a row: ${v.runningWithoutRow.slice(0, 5).join(", ")}` : "",
    v.vmsWithoutHolder.length > 0 ? `live sandboxes without a token holder: ${v.vmsWithoutHolder.slice(0, 5).join(", ")}` : "",
    v.keysWithTwoVms.length > 0 ? `keys with two sandboxes: ${v.keysWithTwoVms.slice(0, 5).join(", ")}` : ""
  ].filter((s) => s !== "").join("; ")

const text = (u: unknown): string => (typeof u === "string" ? u : "")

/** "No Running Pod without a durable row": holds at every moment, so also right after a kill. */
export const runningWithoutRow = (cluster: Cluster, names: ReadonlyArray<string>): ReadonlyArray<string> => {
  const rows = readClaimsFile(cluster)
  return names.filter((name) => {
    const pod = getPod(cluster, name)
    if (Option.isNone(pod) || pod.value.deleting || pod.value.phase !== "Running") return false
    const row: JsonObject | undefined = rows[`${cluster.namespace}/${name}`]
    return row === undefined || text(row["id"]) !== pod.value.claimId
  })
}

/** All three invariants on the state as it is now. */
export const judge = (cluster: Cluster, names: ReadonlyArray<string>): Effect.Effect<Violations> =>
  Effect.gen(function*() {
    const live = yield* cluster.sandboxd.claims
    const rows = Object.values(readClaimsFile(cluster))
    const held = new Set(rows.map((row) => `${text(row["id"])}\u0000${text(row["token"])}`))
    const byKey = new Map<string, number>()
    for (const claim of live) byKey.set(claim.claimRef, (byKey.get(claim.claimRef) ?? 0) + 1)
    return {
      runningWithoutRow: runningWithoutRow(cluster, names),
      vmsWithoutHolder: live.filter((claim) => !held.has(`${claim.id}\u0000${claim.token}`)).map((c) => `${c.id} (${c.claimRef})`),
      keysWithTwoVms: [...byKey].filter(([, n]) => n > 1).map(([key, n]) => `${key} (${n})`)
    }
  })

/**
 * Waits until the cluster settled: every Pod of `running` is Running, every Pod of `gone` has
 * left the apiserver, and the invariants hold; returns the violations of the last look (empty
 * when it settled) and whether it settled before `timeout`.
 */
export const settle = (
  cluster: Cluster,
  running: ReadonlyArray<string>,
  gone: ReadonlyArray<string>,
  timeout: Duration.Input
): Effect.Effect<{ readonly settled: boolean; readonly violations: Violations; readonly pending: ReadonlyArray<string> }> =>
  Effect.gen(function*() {
    const names = [...running, ...gone]
    const look = Effect.gen(function*() {
      const pending = [
        ...running.filter((name) => Option.getOrUndefined(getPod(cluster, name))?.phase !== "Running"),
        ...gone.filter((name) => Option.isSome(getPod(cluster, name)))
      ]
      const violations = yield* judge(cluster, names)
      return { settled: pending.length === 0 && violationCount(violations) === 0, violations, pending }
    })
    // not settled by the limit: what it looks like then, for the report
    return yield* poll(Effect.map(look, (now) => now.settled && now), Duration.toMillis(Duration.fromInputUnsafe(timeout)), 200, () =>
      Effect.fail("unsettled" as const)).pipe(Effect.catch(() => look))
  })

export const createPods = (cluster: Cluster, names: ReadonlyArray<string>): Effect.Effect<void, StepFailed> =>
  Effect.forEach(names, (name) => createPod(cluster, "create", name), { discard: true })

export const deletePods = (cluster: Cluster, names: ReadonlyArray<string>): Effect.Effect<void, StepFailed> =>
  Effect.forEach(names, (name) => deletePod(cluster, "delete", name), { discard: true })

export { envNumber, seededRandom } from "../support/Random.ts"
