/**
 * The daemon's scheduler (`src/Programs/EventLoopScheduler.ts`) on a clock the test moves, whose
 * turns wait in `pending` until the test runs them: what a turn holds and how long it lasts are
 * then decided by the test, not by the machine's speed.
 */
import * as EventLoopScheduler from "../../src/Programs/EventLoopScheduler.ts"

export const manualScheduler = (options: { readonly sliceMillis: number; readonly checkEvery?: number }) => {
  const clock = { now: 0 }
  const pending: Array<() => void> = []
  const scheduler = EventLoopScheduler.make({
    sliceMillis: options.sliceMillis,
    ...(options.checkEvery === undefined ? {} : { checkEvery: options.checkEvery }),
    now: () => clock.now,
    setImmediate: (turn) => void pending.push(turn)
  })
  return { clock, pending, scheduler }
}
