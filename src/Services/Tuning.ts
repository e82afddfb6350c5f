/**
 * The daemon's performance devices, each kept because it moves a bench headline figure by 5 % or
 * more (docs/operations.md, "Performance devices"), and each with an off switch: the names in
 * `VK_SANDBOX_TUNING_OFF` (`Cli/Tuning.ts`) are switched off at startup.
 */
import { Context } from "effect"

export const tuningDevices = [
  /**
   * The fiber scheduler that shares the event loop in turns (`Programs/EventLoopScheduler.ts`; Q-06
   * — the event loop is shared in turns).
   */
  "event-loop-scheduler",
  /** V8's old generation grown by 1.5x once started (`Cli/HeapFlags.ts`). */
  "heap-growing-percent",
  /** Free V8 heap given back to the OS once quiet after growth (`Programs/HeapTrim.ts`). */
  "heap-trim"
] as const

export type TuningDevice = (typeof tuningDevices)[number]

/** The devices switched off; none by default. */
export const TuningOff = Context.Reference<ReadonlySet<TuningDevice>>("vk-sandbox/TuningOff", {
  defaultValue: () => new Set()
})
