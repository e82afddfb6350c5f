/**
 * The state of one `KeyedQueue`: each key's state, the slots in use, the keys waiting for one.
 * The rule: only this class's methods read or write it, and none of them yields, so every
 * read-then-write is atomic; the queue's fibers call them between their own yields and act on
 * what they return (start a fiber, complete a wake).
 */
import { Deferred, type Effect, Latch } from "effect"

/** The next backoff wait of a key, on the shared retry schedule; none until its first retry. */
export type Step = Effect.Effect<void> | undefined

/** How a run ended: the run's own outcome, or a defect (it died). */
export type Ended = "Done" | "Retry" | "RetrySlow" | "Park" | "Defect"

/**
 * What ended a wait: a change (the backoff and the defect count start afresh), a "now" (the
 * backoff starts afresh), or nothing new (its backoff step, a recovered dependency, a drain).
 */
export type Wake = "change" | "now" | "none"

interface Counted {
  step: Step
  /**
   * Runs in a row that died (Q-09 — a run that keeps dying stops until its Pod changes); a change
   * starts the count afresh.
   */
  defects: number
}

export type KeyState =
  /** Waiting for one of the slots, in `ready` (no fiber). */
  | { readonly _tag: "Ready" } & Counted
  /** `dirty`: enqueued during the run, which goes again; `wake`: the strongest of those enqueues. */
  | { readonly _tag: "Running"; dirty: boolean; wake: Wake } & Counted
  | {
    readonly _tag: "Waiting"
    /** Only a change (or a resync, unless `stopped`) wakes it: no timer runs. */
    readonly parked: boolean
    /** Held after `defectLimit` defects in a row: only a change or a "now" wakes it. */
    readonly stopped: boolean
    readonly wake: Deferred.Deferred<Wake>
  } & Counted

/** What a worker does after a run. */
export type AfterRun =
  | { readonly _tag: "Again" }
  | { readonly _tag: "End" }
  | { readonly _tag: "Wait"; readonly state: Extract<KeyState, { _tag: "Waiting" }> }

/** What an enqueue asks of the caller. */
export type Admission =
  | { readonly _tag: "Nothing" }
  | { readonly _tag: "Start" }
  | { readonly _tag: "Wake"; readonly wake: Deferred.Deferred<Wake>; readonly by: Wake }

const nothing: Admission = { _tag: "Nothing" }
const start: Admission = { _tag: "Start" }
const again: AfterRun = { _tag: "Again" }
const end: AfterRun = { _tag: "End" }

export class KeyBook<K> {
  readonly states = new Map<K, KeyState>()
  /** Keys in the Running state: each holds one slot. */
  running = 0
  draining = false
  /** How many times `wakeRetrying` ran: a run that saw it change while it failed goes again. */
  wakes = 0
  /** Open while no run is in flight and no key is ready to run: what `drain` and tests wait for. */
  readonly idle = Latch.makeUnsafe(true)
  /** Keys in the Ready state, oldest first, from `head` on. */
  private ready: Array<K> = []
  private head = 0

  readonly maxInFlight: number
  readonly defectLimit: number

  constructor(maxInFlight: number, defectLimit: number) {
    this.maxInFlight = maxInFlight
    this.defectLimit = defectLimit
  }

  get readyCount(): number {
    return this.ready.length - this.head
  }

  /** The defects in a row of `key` (0 when it is not known). */
  defectsOf(key: K): number {
    return this.states.get(key)?.defects ?? 0
  }

  private run(key: K, counted: Counted): void {
    if (this.running++ === 0) this.idle.closeUnsafe()
    this.states.set(key, { _tag: "Running", dirty: false, wake: "none", step: counted.step, defects: counted.defects })
  }

  /** A key not seen yet (or done) is enqueued (`by`: a resync is "none"); a key already known is changed in place. */
  admit(key: K, by: Wake): Admission {
    if (this.draining) return nothing
    const state = this.states.get(key)
    if (state === undefined) {
      const fresh = { step: undefined, defects: 0 }
      if (this.running < this.maxInFlight) {
        this.run(key, fresh)
        return start
      }
      this.states.set(key, { _tag: "Ready", ...fresh })
      this.ready.push(key)
      return nothing
    }
    switch (state._tag) {
      case "Ready":
        // It has not run yet, so it will read the newest state; a change starts its backoff afresh.
        if (by !== "none") state.step = undefined
        if (by === "change") state.defects = 0
        return nothing
      case "Running":
        state.dirty = true
        if (state.wake !== "change") state.wake = by === "none" ? state.wake : by
        return nothing
      case "Waiting":
        // A change or a "now" always wakes; a resync only a parked key (a backoff runs its course,
        // and a key stopped on defects waits for more than time).
        if (by !== "none" || (state.parked && !state.stopped)) return { _tag: "Wake", wake: state.wake, by }
        return nothing
    }
  }

  /** Ready keys take the free slots, oldest first; returns the keys to start a fiber for. */
  takeReady(): Array<K> {
    const starting: Array<K> = []
    while (this.running < this.maxInFlight && this.head < this.ready.length) {
      const key = this.ready[this.head++]!
      const state = this.states.get(key)
      if (state?._tag !== "Ready") continue
      this.run(key, state)
      starting.push(key)
    }
    if (this.head === this.ready.length) {
      this.ready = []
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.ready.length) {
      this.ready = this.ready.slice(this.head)
      this.head = 0
    }
    return starting
  }

  /** A run is over and its slot free: the oldest ready keys take it (returned, to start). */
  release(): Array<K> {
    this.running--
    const starting = this.takeReady()
    if (this.running === 0) this.idle.openUnsafe()
    return starting
  }

  /** Ends `key` for good (done, or dropped by a drain) and frees its slot. */
  finish(key: K): Array<K> {
    this.states.delete(key)
    return this.release()
  }

  /** After a run of `key` that ended `ended`; `wakesBefore` is `wakes` when the run started. */
  afterRun(key: K, ended: Ended, wakesBefore: number): AfterRun {
    const state = this.states.get(key)
    if (state === undefined || state._tag !== "Running" || this.draining) return end
    // A change during the run starts the count afresh: the run that died read the older state.
    const defects = state.wake === "change" ? 0 : ended === "Defect" ? state.defects + 1 : 0
    const step = state.wake !== "none" || ended === "Done" ? undefined : state.step
    if (state.dirty) {
      this.states.set(key, { _tag: "Running", dirty: false, wake: "none", step, defects })
      return again
    }
    if (ended === "Done") return end
    const stopped = ended === "Defect" && defects >= this.defectLimit
    const parked = ended === "Park"
    // The dependency answered again while this run was failing on it (a request sent before the
    // recovery): it goes again now, as the keys that were waiting did (Q-08 — a dependency that
    // comes back wakes the keys waiting on it).
    if (!parked && !stopped && this.wakes !== wakesBefore) {
      this.states.set(key, { _tag: "Running", dirty: false, wake: "none", step, defects })
      return again
    }
    const waiting = { _tag: "Waiting" as const, parked, stopped, wake: Deferred.makeUnsafe<Wake>(), step, defects }
    this.states.set(key, waiting)
    return { _tag: "Wait", state: waiting }
  }

  /**
   * A waiting key was woken. True when it runs now in the worker's fiber; false when it ends (a
   * drain) or waits in `ready` for a slot (no fiber).
   */
  woken(key: K, waiting: Extract<KeyState, { _tag: "Waiting" }>, by: Wake): boolean {
    if (this.draining) {
      this.states.delete(key)
      return false
    }
    const counted = { step: by === "none" ? waiting.step : undefined, defects: by === "change" ? 0 : waiting.defects }
    if (this.running < this.maxInFlight && this.head === this.ready.length) {
      this.run(key, counted)
      return true
    }
    this.states.set(key, { _tag: "Ready", ...counted })
    this.ready.push(key)
    return false
  }

  /** Stops admitting work; drops the ready keys; returns the wakes of the waiting ones. */
  drain(): Array<Deferred.Deferred<Wake>> {
    this.draining = true
    const wakes: Array<Deferred.Deferred<Wake>> = []
    for (const [key, state] of this.states) {
      if (state._tag === "Ready") this.states.delete(key)
      else if (state._tag === "Waiting") wakes.push(state.wake)
    }
    this.ready = []
    this.head = 0
    return wakes
  }

  /** The wakes of every key waiting out a retry (not parked, not stopped), for `wakeRetrying`. */
  retrying(): Array<Deferred.Deferred<Wake>> {
    this.wakes++
    const wakes: Array<Deferred.Deferred<Wake>> = []
    for (const state of this.states.values()) {
      if (state._tag === "Waiting" && !state.parked && !state.stopped) wakes.push(state.wake)
    }
    return wakes
  }
}
