/**
 * Receipts: events a test can wait for instead of a span of real time. `recording` notes each
 * call a service receives, with the Clock's time (TestClock's in a test) when it began, so "nothing
 * was sent before the interval" is read from the times of the calls that were sent. `sleepReceipts`
 * notes each sleep a fiber starts, so a test knows a loop is asleep again before it moves the
 * TestClock. `responseHeaders` is undici's word that a request was answered (a watch is open).
 */
import { Clock, Duration, Effect } from "effect"
import * as DiagnosticsChannel from "node:diagnostics_channel"
import { within } from "./Wait.ts"

export interface Call {
  readonly name: string
  /** The Clock's milliseconds when the call began. */
  readonly at: number
}

export interface Recorded<S> {
  readonly service: S
  /** Every call so far, oldest first. */
  readonly calls: ReadonlyArray<Call>
  /** The calls of one operation. */
  readonly named: (name: string) => ReadonlyArray<Call>
  /** Waits until no call is in flight (of every service sharing this one's `Flight`). */
  readonly idle: Effect.Effect<void>
}

/**
 * Calls in flight, shared by the services a component calls one after the other (a reply from
 * one leads to a call to the other): idle only once none is in flight.
 */
export interface Flight {
  readonly begin: Effect.Effect<void>
  readonly end: Effect.Effect<void>
  /**
   * Waits until no call is in flight, looked at again once this fiber runs: the fiber whose call
   * ended has by then gone on to its next call or wait.
   */
  readonly idle: Effect.Effect<void>
}

export const makeFlight = (): Flight => {
  let inFlight = 0
  const waiting = new Set<() => void>()
  const wait: Effect.Effect<void> = Effect.callback<void>((resume) => {
    if (inFlight === 0) return resume(Effect.void)
    const wake = () => resume(Effect.void)
    waiting.add(wake)
    return Effect.sync(() => void waiting.delete(wake))
  })
  const idle: Effect.Effect<void> = wait.pipe(
    Effect.andThen(Effect.yieldNow),
    Effect.andThen(Effect.suspend(() => (inFlight === 0 ? Effect.void : idle)))
  )
  return {
    begin: Effect.sync(() => void inFlight++),
    end: Effect.sync(() => {
      inFlight--
      if (inFlight > 0) return
      for (const wake of waiting) wake()
      waiting.clear()
    }),
    idle
  }
}

/** `service` with each of its operations (functions returning an Effect, and Effects) noted when run. */
export const recording = <S extends object>(service: S, flight: Flight = makeFlight()): Recorded<S> => {
  const calls: Array<Call> = []
  const noted = (name: string, effect: Effect.Effect<unknown, unknown, unknown>) =>
    Effect.flatMap(Clock.currentTimeMillis, (at) => {
      calls.push({ name, at })
      return flight.begin.pipe(Effect.andThen(Effect.ensuring(effect, flight.end)))
    })
  const wrapped = new Proxy(service, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      const name = String(property)
      if (Effect.isEffect(value)) return noted(name, value)
      if (typeof value !== "function") return value
      return (...args: ReadonlyArray<unknown>) => {
        const result: unknown = Reflect.apply(value, target, args)
        return Effect.isEffect(result) ? noted(name, result) : result
      }
    }
  })
  return { service: wrapped, calls, named: (name) => calls.filter((call) => call.name === name), idle: flight.idle }
}

export interface SleepReceipts {
  /** The Clock to provide to the fibers watched: the current one, with each sleep noted. */
  readonly clock: Clock.Clock
  /** Waits until `count` sleeps of `duration` have begun (no real time: completed by the sleep itself). */
  readonly asleep: (duration: Duration.Input, count: number) => Effect.Effect<void>
  /** How many sleeps of `duration` have begun. */
  readonly sleeps: (duration: Duration.Input) => number
}

/** Notes the sleeps of the fibers given `clock`, over the Clock in context (the TestClock). */
export const sleepReceipts: Effect.Effect<SleepReceipts> = Effect.map(Clock.Clock.use(Effect.succeed), (inner) => {
  const begun = new Map<number, number>()
  const waiting = new Set<{ readonly millis: number; readonly count: number; readonly wake: () => void }>()
  const count = (millis: number) => begun.get(millis) ?? 0
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: () => inner.currentTimeMillisUnsafe(),
    currentTimeMillis: inner.currentTimeMillis,
    currentTimeNanosUnsafe: () => inner.currentTimeNanosUnsafe(),
    currentTimeNanos: inner.currentTimeNanos,
    monotonicTimeNanosUnsafe: () => inner.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: inner.monotonicTimeNanos,
    sleep: (duration) =>
      Effect.suspend(() => {
        const millis = Duration.toMillis(duration)
        begun.set(millis, count(millis) + 1)
        for (const waiter of waiting) {
          if (waiter.millis === millis && count(millis) >= waiter.count) {
            waiting.delete(waiter)
            waiter.wake()
          }
        }
        return inner.sleep(duration)
      })
  }
  const millisOf = (duration: Duration.Input) => Duration.toMillis(Duration.fromInputUnsafe(duration))
  return {
    clock,
    sleeps: (duration) => count(millisOf(duration)),
    asleep: (duration, wanted) =>
      within(`sleep ${wanted} of ${Duration.format(Duration.fromInputUnsafe(duration))} to begin`, Effect.callback<void>((resume) => {
        const millis = millisOf(duration)
        if (count(millis) >= wanted) return resume(Effect.void)
        const waiter = { millis, count: wanted, wake: () => resume(Effect.void) }
        waiting.add(waiter)
        return Effect.sync(() => void waiting.delete(waiter))
      }))
  }
})

export interface ManualTimers {
  /** For a simulator's `later` option: each wait is noted here and runs only when fired. */
  readonly later: (run: () => void, ms: number) => () => void
  /** The waits begun and not yet fired or cancelled, oldest first, by their length in ms. */
  readonly pending: () => ReadonlyArray<number>
  /** Runs the oldest pending wait of `ms`; false if none. */
  readonly fire: (ms: number) => boolean
}

/** Timers a test ends itself: what waited, for how long, is read off them, not off a clock. */
export const manualTimers = (): ManualTimers => {
  const waits: Array<{ readonly ms: number; readonly run: () => void }> = []
  return {
    later: (run, ms) => {
      const wait = { ms, run }
      waits.push(wait)
      return () => {
        const at = waits.indexOf(wait)
        if (at !== -1) waits.splice(at, 1)
      }
    },
    pending: () => waits.map((wait) => wait.ms),
    fire: (ms) => {
      const at = waits.findIndex((wait) => wait.ms === ms)
      if (at === -1) return false
      const [wait] = waits.splice(at, 1)
      wait!.run()
      return true
    }
  }
}

/** The origin and path of the request an undici diagnostics message is about, if it is one. */
export const requestOf = (message: unknown): { readonly origin: string; readonly path: string } | undefined => {
  if (typeof message !== "object" || message === null || !("request" in message)) return undefined
  const request = message.request
  if (typeof request !== "object" || request === null || !("origin" in request) || !("path" in request)) return undefined
  return { origin: String(request.origin), path: String(request.path) }
}

const headersReceived = "undici:request:headers"

/**
 * Listens, from now, for the response headers of a request (in this process) whose path passes
 * `matches`; the effect it gives waits for the first (failing after 20 s, naming `what`).
 */
export const responseHeaders = (what: string, matches: (path: string) => boolean): Effect.Effect<Effect.Effect<void>> =>
  Effect.sync(() => {
    let arrived = false
    let wake: (() => void) | undefined
    const listener = (message: unknown) => {
      const request = requestOf(message)
      if (request === undefined || !matches(request.path)) return
      arrived = true
      wake?.()
    }
    DiagnosticsChannel.subscribe(headersReceived, listener)
    const arrival = Effect.callback<void>((resume) => {
      if (arrived) return resume(Effect.void)
      wake = () => resume(Effect.void)
      return Effect.sync(() => void (wake = undefined))
    })
    return within(what, arrival).pipe(Effect.ensuring(Effect.sync(() => void DiagnosticsChannel.unsubscribe(headersReceived, listener))))
  })
