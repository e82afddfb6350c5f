/**
 * The chaos run (`npm run test:chaos`, test/chaos/run.sh): the daemon as the image runs it against
 * a real control plane and the sandboxd simulator, the plan's workload and faults for
 * `VK_CHAOS_DURATION_S` seconds (seed `VK_CHAOS_SEED`), then the faults stop, the run settles (at
 * most the printed bound) and the checker judges the recorded history. The first test does all
 * of that; each property is then a test of its own, so a failure names it. A failing run prints
 * its seed and the faults active before each violation, and keeps its directory (the history,
 * the daemon's log, the control plane's logs); the same seed replays the same choices.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Fiber } from "effect"
import { killAllGroupsNow } from "../k8s/fixture/Processes.ts"
import { envNumber } from "../support/Random.ts"
import { type Bounds, check, type CheckResult, settledOn } from "./Checker.ts"
import { boundsFor, daemonTimings, NodeName, superviseDaemon } from "./Daemon.ts"
import { type FinalState, makeHistory } from "./History.ts"
import { makeNemesis } from "./Nemesis.ts"
import { faultKinds, makePlan, planDigest, resourceOf } from "./Plan.ts"
import { daemonLine, makeTokenScanner, ownerState, podState, readClaimsFile, sampleClaimsFile, watched, watchResource } from "./Recorders.ts"
import { makeWorkload } from "./Workload.ts"
import { startWorld, type World } from "./World.ts"

const repoRoot = path.resolve(import.meta.dirname, "..", "..")
const seed = envNumber("VK_CHAOS_SEED", 134)
const durationMs = envNumber("VK_CHAOS_DURATION_S", 160) * 1000
const bounds: Bounds = boundsFor(envNumber("VK_CHAOS_SETTLE_S", 15))
const properties = ["S1", "S2", "S3", "S4", "S5", "L1", "L2", "L3", "L4"]
let result: CheckResult | undefined

/** Everything that shows at the end: the apiserver's Pods and owners, sandboxd's VMs, the claims file. */
const snapshot = (world: World, statePath: string) =>
  Effect.gen(function*() {
    const at = Date.now()
    const list = (p: string) =>
      Effect.map(world.admin.request("GET", p), (reply) => (reply.status === 200 ? ((reply.body as { items?: Array<unknown> }).items ?? []) : undefined))
    const pods = yield* list("/api/v1/pods")
    const boxes = yield* list("/apis/agents.x-k8s.io/v1beta1/sandboxes")
    const sets = yield* list("/apis/apps/v1/replicasets")
    if (pods === undefined || boxes === undefined || sets === undefined) return undefined
    const file = readClaimsFile(statePath)
    const state: FinalState = {
      at,
      pods: pods.map(podState),
      owners: [...boxes.map((o) => ({ ...ownerState(o), kind: "Sandbox" })), ...sets.map((o) => ({ ...ownerState(o), kind: "ReplicaSet" }))],
      vms: (yield* world.sandboxd.sim.claims).map((c) => ({ id: c.id, token: c.token, claimRef: c.claimRef })),
      rows: file.rows,
      intents: file.intents
    }
    return state
  })

const figures = (events: ReadonlyArray<{ readonly src: string; readonly kind: string }>) => {
  const faults = new Map<string, number>(faultKinds.map((kind) => [kind, 0]))
  for (const event of events as ReadonlyArray<{ src: string; kind: string; fault?: string }>) {
    if (event.src === "nemesis" && event.kind === "start" && event.fault !== undefined) faults.set(event.fault, (faults.get(event.fault) ?? 0) + 1)
  }
  const count = (src: string, kind: string) => events.filter((e) => e.src === src && e.kind === kind).length
  // One row per resource the plan keeps faults apart on, each kind with its count (none left out);
  // the nemesis' own steps that are no fault kind (the backup a restore goes back to) last.
  const rows = new Map<string, Array<string>>()
  for (const kind of faultKinds) rows.set(resourceOf(kind), [...(rows.get(resourceOf(kind)) ?? []), `${kind} ${faults.get(kind) ?? 0}`])
  const known = new Set<string>(faultKinds)
  const steps = [...faults].filter(([kind]) => !known.has(kind)).map(([kind, n]) => `${kind} ${n}`)
  if (steps.length > 0) rows.set("nemesis steps", steps)
  return [
    `faults injected: ${faultKinds.reduce((sum, kind) => sum + (faults.get(kind) ?? 0), 0)}`,
    ...[...rows].map(([resource, kinds]) => `  ${resource.padEnd(17)}${kinds.join(", ")}`),
    `workload requests: ${count("workload", "request")}; VMs claimed: ${count("sandboxd", "claimed")}; ended: ${count("sandboxd", "ended")}; ` +
    `daemon starts: ${events.filter((e) => e.src === "daemon" && e.kind === "process" && (e as { what?: string }).what === "started").length}; ` +
    `claims-file reads: ${count("file", "sample")}; history events: ${events.length}`
  ].join("\n")
}

/** Each property's result as a table: what the note's figures quote. */
const invariantTable = (checked: CheckResult) =>
  [
    "property  result  checked  violations",
    ...checked.properties.map((p) =>
      `${p.id.padEnd(10)}${(p.violations.length === 0 ? "ok" : "FAIL").padEnd(8)}${String(p.checked).padStart(7)}  ${String(p.violations.length).padStart(10)}`
    )
  ].join("\n")

describe("chaos: every fault at once", () => {
  it.live(`seed ${seed}, ${durationMs / 1000} s of faults, then settle and check`, () =>
    Effect.scoped(Effect.gen(function*() {
      const binDir = process.env["VK_K8S_BIN"] ?? ""
      assert.notStrictEqual(binDir, "", "VK_K8S_BIN is not set: run with npm run test:chaos (test/chaos/run.sh)")
      process.once("exit", killAllGroupsNow)
      const dir = fs.mkdtempSync(path.join(process.env["TMPDIR"] ?? "/tmp", "vk-chaos-"))
      const history = makeHistory(path.join(dir, "history.jsonl"))
      const plan = makePlan({ seed, durationMs, sandboxdTimeoutMs: daemonTimings.sandboxdTimeoutMs, burstSize: durationMs > 600_000 ? 250 : 120 })
      console.log(`chaos: seed=${seed} duration=${durationMs / 1000}s plan=${planDigest(plan)} (${plan.faults.length} faults, ${plan.workload.length} workload steps); run directory ${dir}`)
      const tokens = makeTokenScanner(history)
      const world = yield* startWorld(dir, binDir, repoRoot, history, tokens.add)
      tokens.add(world.sandboxd.rootToken)
      const daemon = yield* superviseDaemon(world, repoRoot, history, daemonLine(history, tokens))
      const recorders = yield* Effect.forkChild(Effect.all([
        ...watched.map((target) => watchResource(world.admin, history, tokens, target)),
        sampleClaimsFile(daemon.statePath, history),
        Effect.gen(function*() {
          while (true) {
            const url = daemon.current()?.metricsUrl
            if (url !== undefined) {
              const text = yield* Effect.promise(() => fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) }).then((r) => r.text(), () => ""))
              if (text !== "") tokens.scan("metrics", url, text)
            }
            yield* Effect.sleep("10 seconds")
          }
        })
      ], { concurrency: "unbounded" }))
      // Ready (node registered, first list done, sandboxd answering) before anything happens.
      for (let i = 0; i < 240; i++) {
        const url = daemon.current()?.metricsUrl
        const ready = url === undefined ? false : yield* Effect.promise(() => fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status === 200, () => false))
        if (ready) break
        yield* Effect.sleep("500 millis")
      }
      const workload = makeWorkload(world.admin, history)
      const nemesis = yield* makeNemesis(world, daemon, history)

      const startedAt = Date.now()
      const stopAt = startedAt + durationMs
      const playing = yield* Effect.forkChild(workload.play(plan.workload, startedAt, stopAt))
      yield* nemesis.play(plan, startedAt, stopAt)
      const left = stopAt - Date.now()
      if (left > 0) yield* Effect.sleep(left)
      yield* Fiber.interrupt(playing)
      // Every fault was undone by the nemesis; a daemon it left stopped or dead is not possible, but make sure.
      world.apiProxy.setFault(undefined)
      world.sandboxd.proxy.setFault(undefined)
      yield* world.sandboxd.sim.clearFaults
      yield* daemon.signal("SIGCONT")
      // The bound runs from the moment the last fault was undone (the run's end comes a while after).
      const undone = history.events.filter((e) => e.src === "nemesis" && e.kind === "stop").map((e) => e.at)
      const stoppedAt = Math.min(Date.now(), Math.max(startedAt, ...undone))
      history.record({
        src: "run",
        kind: "phase",
        at: stoppedAt,
        phase: "faults stopped",
        detail: `${Math.round((stoppedAt - startedAt) / 1000)} s after the start (the last one undone; the workload ran to ${durationMs / 1000} s)`
      })

      // Settle: until the end-state properties hold, or the bound (plus a doubt's settle time) has passed.
      const limit = stoppedAt + bounds.settleMs + bounds.claimSettleMs
      let pending: ReadonlyArray<string> = ["not looked yet"]
      let final: FinalState | undefined
      while (true) {
        final = yield* snapshot(world, daemon.statePath)
        if (final !== undefined) pending = settledOn(history.events, final, NodeName, bounds)
        if (pending.length === 0 || Date.now() > limit) break
        yield* Effect.sleep("1 second")
      }
      const took = Math.round((Date.now() - stoppedAt) / 100) / 10
      const firstLook = Math.max(0, Math.round((stopAt - stoppedAt) / 100) / 10)
      history.record({
        src: "run",
        kind: "phase",
        at: Date.now(),
        phase: pending.length === 0 ? "settled" : "not settled",
        detail: `by ${took} s after the last fault was undone (looked from ${firstLook} s on, once the workload stopped)${
          pending.length === 0 ? "" : `; still: ${pending.slice(0, 5).join("; ")}`
        }`
      })
      const url = daemon.current()?.metricsUrl
      if (url !== undefined) tokens.scan("metrics", url, yield* Effect.promise(() => fetch(`${url}/metrics`).then((r) => r.text(), () => "")))
      daemon.stopSupervising()
      yield* Fiber.interrupt(recorders)
      // The daemon's last lines: a release the recorders saw just now was decided (and logged) just
      // before it, and the 500 ms reader may not have read that line yet. Ended and read to its end,
      // the daemon leaves no decision outside the history.
      yield* daemon.end("SIGTERM")
      history.record({ src: "run", kind: "phase", at: Date.now(), phase: "scanned", detail: String(tokens.scanned()) })
      if (final !== undefined) history.record({ src: "snapshot", ...final, kind: "final" })
      history.close()

      result = check(history.events, NodeName, bounds)
      console.log(`${result.report}\n${figures(history.events)}`)
      if (!result.ok) {
        console.log(`chaos: FAILED with seed=${seed} duration=${durationMs / 1000}s: replay with npm run test:chaos -- --seed ${seed} --duration ${durationMs / 1000}; history and logs kept in ${dir}`)
      } else if (process.env["VK_CHAOS_KEEP"] !== "1") {
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      }
      console.log(`chaos: seed=${seed} ${result.properties.map((p) => `${p.id}=${p.violations.length === 0 ? "ok" : p.violations.length}`).join(" ")}`)
      console.log(invariantTable(result))
    })), { timeout: durationMs + 900_000 })

  for (const id of properties) {
    it(`${id} holds`, () => {
      assert.isDefined(result, "the run did not finish")
      const property = result?.properties.find((p) => p.id === id || (p.id === "L*" && id.startsWith("L")))
      assert.isDefined(property, `${id} was not judged`)
      assert.deepStrictEqual(property?.violations.map((v) => v.text).slice(0, 10), [], `${id}: ${property?.title}`)
    })
  }
})
