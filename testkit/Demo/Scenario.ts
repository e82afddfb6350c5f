/**
 * The demo's scenario: each step prints what it does, then polls (with a deadline) until the
 * expected outcome is visible in the apiserver, the claims file and the sandboxd simulator.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Console, DateTime, Deferred, type Duration, Effect, Option } from "effect"
import { formatClaimsTable, viewClaims } from "../../src/Cli/Claims.ts"
import { decodeClaimsFile } from "../../src/Schemas/ClaimsFile/Decode.ts"
import {
  claimInFile,
  type Cluster,
  createPod,
  createSandbox,
  type Daemon,
  deletePod,
  deleteSandbox,
  getPod,
  httpGet,
  type JsonObject,
  nodeInventory,
  type PodView,
  spawnDaemon,
  startCluster,
  StepFailed,
  waitFor
} from "./Harness.ts"

const say = (line: string) => Console.log(line)
const heading = (n: number, title: string) => say(`\n[${n}] ${title}`)
const ok = (line: string) => say(`    ok: ${line}`)

const describePod = (cluster: Cluster, name: string) => () =>
  Option.match(getPod(cluster, name), {
    onNone: () => `pod ${name} not found`,
    onSome: (p) =>
      `pod ${name} phase=${p.phase || "-"} reason=${p.reason || "-"} ip=${p.podIP || "-"} claim=${p.claimId || "-"}${
        p.deleting ? " (deleting)" : ""
      }`
  })

const podLine = (p: PodView) =>
  `${p.name}: ${p.phase}${p.reason === "" ? "" : ` (${p.reason})`} ip=${p.podIP || "-"} claim=${p.claimId || "-"}`

const waitRunning = (cluster: Cluster, step: string, name: string, timeout: Duration.Input = "15 seconds") =>
  waitFor(
    step,
    `pod ${name} Running with a pod IP and a claim id`,
    Effect.sync(() =>
      Option.filter(getPod(cluster, name), (p) => p.phase === "Running" && p.podIP !== "" && p.claimId !== "")
    ),
    { describe: describePod(cluster, name), timeout }
  )

const waitGone = (cluster: Cluster, step: string, name: string) =>
  waitFor(
    step,
    `pod ${name} removed from the apiserver`,
    Effect.sync(() => (Option.isNone(getPod(cluster, name)) ? Option.some(true) : Option.none())),
    { describe: describePod(cluster, name) }
  )

const check = (step: string, condition: boolean, message: string) =>
  condition ? Effect.void : Effect.fail(new StepFailed({ step, message }))

const simClaimIds = (cluster: Cluster) => Effect.map(cluster.sandboxd.claims, (claims) => new Set(claims.map((c) => c.id)))
const claimRequests = (cluster: Cluster) =>
  Effect.map(cluster.sandboxd.audit, (audit) => audit.filter((entry) => entry.route === "claim").length)

const waitReady = (daemon: Daemon, step: string) =>
  waitFor(
    step,
    "the daemon's /readyz to answer 200",
    httpGet(`${daemon.metricsUrl}/readyz`).pipe(Effect.map(Option.filter((r) => r.status === 200))),
    { timeout: "20 seconds" }
  ).pipe(
    Effect.raceFirst(
      Deferred.await(daemon.exited).pipe(
        Effect.flatMap((code) => Effect.fail(new StepFailed({ step, message: `the daemon exited (${code}) during startup` })))
      )
    )
  )

/**
 * What the daemon said since the last call: its JSON log lines at info and above, shown with a
 * fixed set of annotations only (pod, claim, verdict, …; never anything else it might carry).
 */
const makeLogEcho = (logFile: string) => {
  let offset = 0
  const shown = ["pod", "claim", "verdict", "reason", "loaded", "verified", "quarantined", "pods"]
  return Effect.suspend(() => {
    let content = ""
    try {
      content = fs.readFileSync(logFile, "utf8").slice(offset)
    } catch {
      return Effect.void
    }
    const end = content.lastIndexOf("\n") + 1
    offset += end
    const lines: Array<string> = []
    for (const raw of content.slice(0, end).split("\n")) {
      if (raw === "") continue
      let entry: Record<string, unknown>
      try {
        entry = JSON.parse(raw) as Record<string, unknown>
      } catch {
        continue
      }
      const msg = entry["msg"]
      if (entry["level"] === "debug" || entry["level"] === "trace" || typeof msg !== "string") continue
      const parts = shown.filter((key) => entry[key] !== undefined).map((key) => `${key}=${String(entry[key])}`)
      if (entry["error.tag"] !== undefined) {
        const cause = typeof entry["error.cause"] === "string" ? /^(\w+)/.exec(entry["error.cause"])?.[1] : undefined
        parts.push(`error=${String(entry["error.tag"])}${cause === undefined ? "" : `(${cause})`}`)
      }
      // The failure message repeats what the error tag says; keep the line readable.
      const message = msg.length > 100 ? `${msg.slice(0, 97)}...` : msg
      lines.push(`    daemon: ${message}${parts.length === 0 ? "" : `  [${parts.join(" ")}]`}`)
    }
    return lines.length === 0 ? Effect.void : say(lines.join("\n"))
  })
}

/** A counter's value in Prometheus text (0 when absent). */
const counterValue = (body: string, family: string): number => {
  let total = 0
  for (const line of body.split("\n")) {
    const match = new RegExp(`^${family}(\\{[^}]*\\})? ([0-9.e+]+)$`).exec(line)
    if (match !== null) total += Number(match[2])
  }
  return total
}

/** The claims file as the `vk-sandbox claims` command shows it: tokens redacted. */
const printClaimsFile = (cluster: Cluster) =>
  Effect.gen(function*() {
    const rows = yield* decodeClaimsFile(fs.readFileSync(cluster.statePath, "utf8")).pipe(
      Effect.mapError((e) => new StepFailed({ step: "claims file", message: e.message }))
    )
    const table = formatClaimsTable(viewClaims(rows, yield* DateTime.now))
    yield* say(table.split("\n").map((line) => `      ${line}`).join("\n"))
  })

/** One line per top-level field; list items one line each as `key=value` pairs. */
const summarizeInventory = (inventory: JsonObject): string => {
  const scalar = (value: unknown): string => (typeof value === "object" && value !== null ? JSON.stringify(value) : String(value))
  const flat = (item: unknown): string =>
    typeof item === "object" && item !== null && !Array.isArray(item)
      ? Object.entries(item).map(([k, v]) => `${k}=${scalar(v)}`).join("  ")
      : scalar(item)
  const lines: Array<string> = []
  for (const [key, value] of Object.entries(inventory)) {
    if (key === "metadata") {
      // The bookkeeping fields (uid, resourceVersion, managedFields, …) say nothing about the node.
      const name = typeof value === "object" && value !== null ? (value as { name?: unknown }).name : undefined
      lines.push(`metadata.name: ${String(name)}`)
    } else if (Array.isArray(value)) {
      lines.push(`${key}: ${value.length}`)
      for (const item of value) lines.push(`  - ${flat(item)}`)
    } else {
      lines.push(`${key}: ${flat(value)}`)
    }
  }
  return lines.map((line) => `      ${line}`).join("\n")
}

export const runScenario = Effect.scoped(
  Effect.gen(function*() {
    const started = Date.now()
    const cluster = yield* startCluster({ keepDir: true })
    const logFile = path.join(cluster.dir, "daemon.log")
    const echo = makeLogEcho(logFile)
    yield* say("vk-sandbox demo: the in-memory API server and the sandboxd simulator run in this process,")
    yield* say("the daemon runs as a child process against them over HTTP.")
    yield* say(`  apiserver  ${cluster.apiserver.url}`)
    yield* say(`  sandboxd   ${cluster.sandboxdUrl} (pool python/none/small, 4 warm)`)
    yield* say(`  state      ${cluster.statePath}`)
    yield* say(`  daemon log ${logFile}`)

    // 1 ------------------------------------------------------------------------------------------
    let step = "start the daemon"
    yield* heading(1, "start the daemon")
    let daemon = yield* spawnDaemon(cluster, { logFile })
    yield* waitReady(daemon, step)
    yield* echo
    yield* ok(`daemon pid ${daemon.pid} ready (node ${cluster.nodeName} registered, pod watch synced)`)

    // 2 ------------------------------------------------------------------------------------------
    step = "three owned pods"
    yield* heading(2, "create three Sandbox owners and their Pods")
    const owners = new Map<string, string>()
    for (const name of ["sb-1", "sb-2", "sb-3"]) {
      const uid = yield* createSandbox(cluster, step, name)
      owners.set(name, uid)
      yield* createPod(cluster, step, name, { owner: { name, uid } })
      yield* say(`    created Sandbox ${cluster.namespace}/${name} and its Pod ${name}`)
    }
    const running = new Map<string, PodView>()
    for (const name of owners.keys()) {
      const pod = yield* waitRunning(cluster, step, name)
      running.set(name, pod)
      yield* ok(podLine(pod))
    }
    yield* waitFor(
      step,
      "every claim in the claims file",
      Effect.sync(() =>
        [...running.values()].every((p) => Option.contains(claimInFile(cluster, p.name), p.claimId))
          ? Option.some(true)
          : Option.none()
      )
    )
    yield* echo
    yield* ok("the claims file holds the three claims:")
    yield* printClaimsFile(cluster)

    // 3 ------------------------------------------------------------------------------------------
    step = "preserve"
    yield* heading(3, "delete Pod sb-1 while its Sandbox still exists → the claim is preserved")
    const preservedId = running.get("sb-1")!.claimId
    yield* deletePod(cluster, step, "sb-1")
    yield* say("    deleted Pod sb-1 (owner Sandbox sb-1 alive)")
    yield* waitGone(cluster, step, "sb-1")
    yield* echo
    yield* ok("the daemon let the Pod object go")
    yield* check(step, Option.contains(claimInFile(cluster, "sb-1"), preservedId), `claim ${preservedId} left the claims file`)
    yield* check(step, (yield* simClaimIds(cluster)).has(preservedId), `sandboxd no longer holds ${preservedId}`)
    yield* ok(`verdict preserve: claim ${preservedId} still in the claims file and held in sandboxd`)

    // 4 ------------------------------------------------------------------------------------------
    step = "adopt"
    yield* heading(4, "create a same-name replacement Pod sb-1 → it adopts the same claim")
    const claimsBefore = yield* claimRequests(cluster)
    yield* createPod(cluster, step, "sb-1", { owner: { name: "sb-1", uid: owners.get("sb-1")! } })
    const adopted = yield* waitRunning(cluster, step, "sb-1")
    yield* check(step, adopted.claimId === preservedId, `adopted claim ${adopted.claimId}, expected ${preservedId}`)
    yield* check(step, (yield* claimRequests(cluster)) === claimsBefore, "sandboxd saw a new claim request")
    running.set("sb-1", adopted)
    yield* echo
    yield* ok(`${podLine(adopted)} (same claim, no new sandboxd claim)`)

    // 5 ------------------------------------------------------------------------------------------
    step = "release"
    yield* heading(5, "delete Sandbox sb-3 and its Pod → the claim is released")
    const releasedId = running.get("sb-3")!.claimId
    yield* deleteSandbox(cluster, step, "sb-3")
    yield* deletePod(cluster, step, "sb-3")
    running.delete("sb-3")
    yield* say("    deleted Sandbox sb-3, then Pod sb-3")
    yield* waitGone(cluster, step, "sb-3")
    yield* waitFor(
      step,
      `a release of ${releasedId} in the sandboxd audit log`,
      Effect.map(cluster.sandboxd.audit, (audit) =>
        audit.some((e) => e.route === "release" && e.path.includes(encodeURIComponent(releasedId)))
          ? Option.some(true)
          : Option.none())
    )
    yield* check(step, !(yield* simClaimIds(cluster)).has(releasedId), `sandboxd still holds ${releasedId}`)
    yield* check(step, Option.isNone(claimInFile(cluster, "sb-3")), "the claims file still has sb-3")
    yield* echo
    yield* ok(`verdict release: sandboxd audit shows POST /v1/sandboxes/${releasedId}/release; row gone from the file`)

    // 6 ------------------------------------------------------------------------------------------
    step = "no warm capacity"
    yield* heading(6, "reach sandboxd's max_claims → the Pod waits Pending, then runs when capacity frees")
    const held = (yield* simClaimIds(cluster)).size
    yield* cluster.sandboxd.setMaxClaims(held)
    yield* say(`    sandboxd max_claims set to ${held} (all taken)`)
    const uid4 = yield* createSandbox(cluster, step, "sb-4")
    owners.set("sb-4", uid4)
    yield* createPod(cluster, step, "sb-4", { owner: { name: "sb-4", uid: uid4 } })
    yield* say("    created Sandbox sb-4 and its Pod sb-4")
    const pending = yield* waitFor(
      step,
      "pod sb-4 Pending with reason ProviderFailed (NoWarmCapacity)",
      Effect.sync(() =>
        Option.filter(getPod(cluster, "sb-4"), (p) =>
          p.phase === "Pending" && p.reason === "ProviderFailed" && /capacity|warm/i.test(p.message))
      ),
      { describe: describePod(cluster, "sb-4") }
    )
    yield* echo
    yield* ok(`sb-4: Pending (ProviderFailed) "${pending.message}"`)
    yield* cluster.sandboxd.setMaxClaims(0)
    yield* say("    sandboxd max_claims lifted (capacity frees)")
    // The daemon retries on its own backoff (1 s doubling, capped at 30 s): on a loaded machine the
    // Pending state may be seen late, after several failures, so wait past the cap.
    const recovered = yield* waitRunning(cluster, step, "sb-4", "35 seconds")
    running.set("sb-4", recovered)
    yield* echo
    yield* ok(podLine(recovered))

    // 7 ------------------------------------------------------------------------------------------
    step = "lease expiry"
    yield* heading(7, "a Pod with a 2 s lease (sandbox.cocoonstack.io/ttl-seconds: \"2\") → Failed, SandboxLeaseExpired")
    yield* createPod(cluster, step, "short-lived", { annotations: { "sandbox.cocoonstack.io/ttl-seconds": "2" } })
    const short = yield* waitRunning(cluster, step, "short-lived")
    yield* ok(podLine(short))
    const expired = yield* waitFor(
      step,
      "pod short-lived Failed with reason SandboxLeaseExpired",
      Effect.sync(() =>
        Option.filter(getPod(cluster, "short-lived"), (p) => p.phase === "Failed" && p.reason === "SandboxLeaseExpired")
      ),
      { describe: describePod(cluster, "short-lived") }
    )
    yield* echo
    yield* ok(`${podLine(expired)} "${expired.message}"`)

    // 8 ------------------------------------------------------------------------------------------
    step = "restart"
    yield* heading(8, "restart the daemon → claims reloaded, verified and adopted; no new claims")
    const requestsBefore = yield* claimRequests(cluster)
    yield* daemon.signal("SIGTERM")
    const code = yield* Deferred.await(daemon.exited).pipe(
      Effect.timeoutOrElse({
        duration: "15 seconds",
        orElse: () => Effect.fail(new StepFailed({ step, message: "the daemon did not exit within 15 s of SIGTERM" }))
      })
    )
    yield* check(step, code === 0, `the daemon exited with ${code} on SIGTERM, expected 0`)
    yield* echo
    yield* ok("SIGTERM: the daemon drained and exited 0")
    daemon = yield* spawnDaemon(cluster, { logFile })
    yield* waitReady(daemon, step)
    yield* ok(`daemon pid ${daemon.pid} ready again`)
    for (const [name, before] of running) {
      const after = yield* waitRunning(cluster, step, name)
      yield* check(step, after.claimId === before.claimId, `${name} now has claim ${after.claimId}, had ${before.claimId}`)
      yield* check(step, Option.contains(claimInFile(cluster, name), before.claimId), `${name}'s claim is not in the claims file`)
      yield* ok(`${podLine(after)} (unchanged)`)
    }
    // The new process adopted every Pod in place (its own adoption counter) ...
    const restarted = daemon
    yield* waitFor(
      step,
      `${running.size} adoptions in the restarted daemon's metrics`,
      httpGet(`${restarted.metricsUrl}/metrics`).pipe(
        Effect.map(Option.filter((r) => counterValue(r.body, "vk_sandbox_adoptions_total") >= running.size))
      )
    )
    // ... after loading the claims file and verifying it against sandboxd's listing.
    const loaded = fs.readFileSync(logFile, "utf8").split("\n").filter((line) => line.includes('"claims table loaded"')).at(-1)
    yield* check(step, loaded !== undefined && loaded.includes('"verified":true'), "the restarted daemon did not report a verified load")
    // Give the other loops a moment: a stray claim would show up now.
    yield* Effect.sleep("1 second")
    yield* echo
    const requestsAfter = yield* claimRequests(cluster)
    yield* check(step, requestsAfter === requestsBefore, `sandboxd saw ${requestsAfter - requestsBefore} new claim requests`)
    yield* ok("no claim request reached sandboxd after the restart")

    // 9 ------------------------------------------------------------------------------------------
    step = "node inventory"
    yield* heading(9, `the NodeInventory object ${cluster.nodeName} (published every second)`)
    const inventory = yield* waitFor(step, "a NodeInventory for the node", Effect.sync(() => nodeInventory(cluster)))
    yield* say(summarizeInventory(inventory))

    // --------------------------------------------------------------------------------------------
    const metrics = yield* httpGet(`${daemon.metricsUrl}/metrics`)
    const families = Option.match(metrics, {
      onNone: () => 0,
      onSome: (r) => new Set(r.body.split("\n").filter((l) => l.startsWith("# TYPE vk_sandbox_")).map((l) => l.split(" ")[2])).size
    })
    yield* say(`\nAll steps behaved (${((Date.now() - started) / 1000).toFixed(1)} s).`)
    yield* say(`  The daemon served /metrics (${families} vk_sandbox_* families), /healthz and /readyz on ${daemon.metricsUrl}.`)
    yield* say(`  Its JSON logs (one flat object per line) are in ${logFile}; e.g. grep '"error.tag":"ClaimFailed"' there.`)
    yield* say("  Traces are off here; run the daemon with --otlp-endpoint <OTLP/HTTP url> (or OTEL_EXPORTER_OTLP_ENDPOINT) to export them.")
    yield* say(`  The claims file (tokens redacted): node_modules/.bin/vk-sandbox claims --state-path ${cluster.statePath}`)
    yield* say(`  The temp directory ${cluster.dir} is kept for you to look at; remove it when done.`)
    yield* say("  Run the simulators yourself: vk-sandbox sim apiserver --help, vk-sandbox sim sandboxd --help.")
    yield* daemon.signal("SIGTERM")
    yield* Deferred.await(daemon.exited).pipe(Effect.timeout("15 seconds"), Effect.ignore)
  })
)
