/**
 * The pod controller's own state: when each key's change reached the pod queue (the queue stage
 * of a Pod's start), and the parts that run for as long as the controller does (HZ-1 — a stopped
 * part fails liveness). The rule: only these methods read or write it, and none of them yields.
 */
import type { Fiber } from "effect"
import type { PodKey } from "../../Schemas/Ids.ts"

export class ControllerBook {
  /** When a key's change reached the queue, until its next run starts. */
  private readonly changedAt = new Map<PodKey, number>()
  private readonly parts: Array<{ readonly name: string; readonly fiber: Fiber.Fiber<unknown, unknown> }> = []

  /** A change of `key` reached the queue at `now`; an earlier one not yet run keeps its time. */
  changed(key: PodKey, now: number): void {
    if (!this.changedAt.has(key)) this.changedAt.set(key, now)
  }

  /** The key's run starts: when its oldest change not yet run arrived, if any. */
  takeChanged(key: PodKey): number | undefined {
    const since = this.changedAt.get(key)
    if (since !== undefined) this.changedAt.delete(key)
    return since
  }

  addPart(name: string, fiber: Fiber.Fiber<unknown, unknown>): void {
    this.parts.push({ name, fiber })
  }

  /** The parts that have ended, by name. */
  stopped(): Array<string> {
    return this.parts.filter((part) => part.fiber.pollUnsafe() !== undefined).map((part) => part.name)
  }
}
