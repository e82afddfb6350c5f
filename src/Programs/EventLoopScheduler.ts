/**
 * The daemon's fiber scheduler (Q-06 — the event loop is shared in turns): every fiber's tasks in
 * one queue, run in turns of at most `sliceMillis` of the event loop, with Node's I/O let in
 * between two turns. Once a turn has used its slice (the clock is read every `checkEvery` steps),
 * every fiber running in it yields at its next step. Ordering is the default scheduler's: lower
 * priority numbers first, first come first served within one; what a turn had no time for runs
 * first in the next turn.
 */
import type { Fiber, Scheduler } from "effect"

export interface EventLoopSchedulerOptions {
  /** The longest a turn runs tasks before the event loop gets a pass of its own. */
  readonly sliceMillis: number
  /** Steps (of all fibers together) between two looks at the clock during a turn. */
  readonly checkEvery?: number
  /** The clock (milliseconds, monotonic); `performance.now` unless a test gives its own. */
  readonly now?: () => number
  /** Runs the next turn after the event loop's I/O; `setImmediate` unless a test gives its own. */
  readonly setImmediate?: (turn: () => void) => void
}

type Bucket = [priority: number, tasks: Array<() => void>]

/**
 * Adds `tasks[from…]` of `priority` after those already there, keeping the buckets sorted. One
 * push per task, not `push(...tasks)`: a turn cut short can leave hundreds of thousands queued,
 * and a spread of that many arguments overflows the stack.
 */
const addTo = (buckets: Array<Bucket>, priority: number, tasks: ReadonlyArray<() => void>, from = 0) => {
  // No empty bucket: a queue that holds one asks for a turn with nothing to run.
  if (from >= tasks.length) return
  let index = 0
  while (index < buckets.length && buckets[index]![0] < priority) index++
  let bucket = buckets[index]
  if (bucket === undefined || bucket[0] !== priority) {
    bucket = [priority, []]
    buckets.splice(index, 0, bucket)
  }
  const into = bucket[1]
  for (let i = from; i < tasks.length; i++) into.push(tasks[i]!)
}

/** Adds one task of `priority` after those already there (no array made for it). */
const addOne = (buckets: Array<Bucket>, priority: number, task: () => void) => {
  const last = buckets[buckets.length - 1]
  // The common case: one priority in use, the new task goes at the end of the last bucket.
  if (last !== undefined && last[0] === priority) last[1].push(task)
  else addTo(buckets, priority, [task])
}

class Dispatcher implements Scheduler.SchedulerDispatcher {
  private buckets: Array<Bucket> = []
  private scheduled = false
  /** When the running turn must end; +Infinity between turns. */
  deadline = Number.POSITIVE_INFINITY

  private readonly sliceMillis: number
  readonly now: () => number
  private readonly setImmediate: (turn: () => void) => void

  private readonly checkEvery: number

  constructor(sliceMillis: number, checkEvery: number, now: () => number, setImmediate: (turn: () => void) => void) {
    this.sliceMillis = sliceMillis
    this.checkEvery = checkEvery
    this.now = now
    this.setImmediate = setImmediate
  }

  scheduleTask(task: () => void, priority: number): void {
    addOne(this.buckets, priority, task)
    // A task scheduled during a turn runs in it if there is time left, or in the next one.
    if (!this.scheduled && this.deadline === Number.POSITIVE_INFINITY) this.next()
  }

  /** Set once the running turn is seen past its deadline: every fiber yields until the turn ends. */
  private exhausted = false
  /** Steps of any fiber during this turn: the clock is read every `checkEvery` of them. */
  private steps = 0

  /**
   * True once the running turn has used its slice (never between turns). Counted over every
   * fiber's steps, not each fiber's own: a fiber started inside another (a reconcile started when
   * the one before it ended) may finish in fewer steps than `checkEvery`.
   */
  overdue(): boolean {
    if (this.deadline === Number.POSITIVE_INFINITY) return false
    if (this.exhausted) return true
    if (++this.steps % this.checkEvery !== 0) return false
    this.exhausted = this.now() >= this.deadline
    return this.exhausted
  }

  private next() {
    this.scheduled = true
    this.setImmediate(this.turn)
  }

  private readonly turn = () => {
    this.scheduled = false
    this.deadline = this.now() + this.sliceMillis
    this.exhausted = false
    this.steps = 0
    try {
      this.run(true)
    } finally {
      this.deadline = Number.POSITIVE_INFINITY
      this.exhausted = false
      if (this.buckets.length > 0 && !this.scheduled) this.next()
    }
  }

  /** Runs batches of what is queued (each batch by priority) until none is left or, `timed`, the slice is used. */
  private run(timed: boolean) {
    while (this.buckets.length > 0) {
      const batch = this.buckets
      this.buckets = []
      for (let b = 0; b < batch.length; b++) {
        const [priority, tasks] = batch[b]!
        for (let i = 0; i < tasks.length; i++) {
          tasks[i]!()
          if (timed && (this.exhausted || this.now() >= this.deadline)) {
            // Left over: ahead of whatever this turn scheduled meanwhile.
            const later = this.buckets
            this.buckets = []
            addTo(this.buckets, priority, tasks, i + 1)
            for (let r = b + 1; r < batch.length; r++) addTo(this.buckets, batch[r]![0], batch[r]![1])
            for (const [p, rest] of later) addTo(this.buckets, p, rest)
            return
          }
        }
      }
    }
  }

  flush(): void {
    this.run(false)
  }
}

class EventLoopScheduler implements Scheduler.Scheduler {
  readonly executionMode = "async" as const
  private readonly dispatcher: Dispatcher

  constructor(options: EventLoopSchedulerOptions) {
    this.dispatcher = new Dispatcher(
      options.sliceMillis,
      options.checkEvery ?? 128,
      options.now ?? (() => performance.now()),
      options.setImmediate ?? ((turn) => void setImmediate(turn))
    )
  }

  shouldYield(fiber: Fiber.Fiber<unknown, unknown>): boolean {
    return fiber.currentOpCount >= fiber.cache.maxOpsBeforeYield || this.dispatcher.overdue()
  }

  /** One dispatcher for every fiber: one queue, one turn at a time. */
  makeDispatcher(): Scheduler.SchedulerDispatcher {
    return this.dispatcher
  }
}

export const make = (options: EventLoopSchedulerOptions): Scheduler.Scheduler => new EventLoopScheduler(options)

/** The daemon's: turns of 10 ms. */
export const daemonScheduler = (): Scheduler.Scheduler => make({ sliceMillis: 10 })
