/**
 * Receipts that the daemon met a fault: a fault lasts until one is in, never for a span of time.
 * Each is started just before its fault is armed and then reports whether the daemon has met the
 * fault since: the daemon counted the failure on /metrics, or a proxy faulted its requests (what
 * a daemon that never asked cannot produce).
 */
import { Effect, Option, Result } from "effect"
import { httpGet, type StepFailed, waitFor } from "../../testkit/Demo/Harness.ts"
import type { ProxiedRequest } from "../support/FaultProxy.ts"
import type { Receipt, World } from "./world.ts"

const parseSamples = (body: string): ReadonlyMap<string, number> => {
  const values = new Map<string, number>()
  for (const line of body.split("\n")) {
    if (line === "" || line.startsWith("#")) continue
    const space = line.lastIndexOf(" ")
    values.set(line.slice(0, space), Number(line.slice(space + 1)))
  }
  return values
}

/** One read of the daemon's /metrics, `name{labels}` to value; None when it did not answer 200. */
export const scrape = (world: World): Effect.Effect<Option.Option<ReadonlyMap<string, number>>> =>
  Effect.map(
    httpGet(`${world.metricsUrl}/metrics`),
    Option.flatMap((reply) => (reply.status === 200 ? Option.some(parseSamples(reply.body)) : Option.none()))
  )

/** The samples once the daemon answers; the step fails if it never does (no answer is not zeros). */
export const samples = (world: World): Effect.Effect<ReadonlyMap<string, number>, StepFailed> =>
  waitFor("metrics", "the daemon's /metrics answers 200", scrape(world), { timeout: "25 seconds" })

/** The value of one sample (0 when absent): `name{labels}` exactly as rendered. */
export const metric = (world: World, sample: string) => Effect.map(samples(world), (values) => values.get(sample) ?? 0)

/** The sum of the samples of `name` whose labels pass `labels`. */
export const total = (values: ReadonlyMap<string, number>, name: string, labels: (rendered: string) => boolean = () => true) => {
  let sum = 0
  for (const [sample, value] of values) {
    if (sample.startsWith(`${name}{`) && labels(sample.slice(name.length))) sum += value
  }
  return sum
}

/** The daemon's counter `name` (its samples whose labels pass `labels`) went up by `times` or more. */
export const counted = (expectation: string, name: string, labels: (rendered: string) => boolean, times = 1): Receipt => ({
  expectation,
  start: (world) =>
    Effect.map(samples(world), (before) => {
      const from = total(before, name, labels)
      return Effect.map(scrape(world), Option.match({ onNone: () => false, onSome: (now) => total(now, name, labels) - from >= times }))
    })
})

/** The labels contain each fragment (`code="409"`, `operation="claim"`). */
export const having = (...fragments: ReadonlyArray<string>) => (rendered: string) => fragments.every((f) => rendered.includes(f))

/** The proxy in front of `side` faulted `times` or more requests that `matches` passes. */
export const faulted = (
  expectation: string,
  side: "sandboxd" | "apiserver",
  matches: (request: ProxiedRequest) => boolean,
  times = 1
): Receipt => ({
  expectation,
  start: (world) =>
    Effect.sync(() => {
      const from = world[side].faulted.length
      return Effect.sync(() => world[side].faulted.slice(from).filter(matches).length >= times)
    })
})

/**
 * `second`, started only once `first` is met: what it counts follows what `first` saw (a
 * restart after a faulted watch, not one from before it).
 */
export const afterThat = (first: Receipt, second: Receipt): Receipt => ({
  expectation: `${first.expectation}, then ${second.expectation}`,
  start: (world) =>
    Effect.map(first.start(world), (firstMet) => {
      let secondMet: Effect.Effect<boolean> | undefined
      return Effect.gen(function*() {
        if (secondMet === undefined) {
          if (!(yield* firstMet)) return false
          // a /metrics that does not answer yet is "not yet": the next probe starts it again
          const started = yield* Effect.result(second.start(world))
          if (Result.isFailure(started)) return false
          secondMet = started.success
        }
        return yield* secondMet
      })
    })
})

/** Every one of the receipts. */
export const allOf = (...receipts: ReadonlyArray<Receipt>): Receipt => ({
  expectation: receipts.map((r) => r.expectation).join(" and "),
  start: (world) =>
    Effect.map(Effect.forEach(receipts, (r) => r.start(world)), (probes) =>
      Effect.map(Effect.forEach(probes, (probe) => probe), (met) => met.every((m) => m)))
})

/** The path of a request, without its query. */
export const pathOf = (request: ProxiedRequest) => request.url.split("?")[0] ?? ""
