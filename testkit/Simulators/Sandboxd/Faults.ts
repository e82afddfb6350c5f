/**
 * Injected faults, consumed in the order injected: latency adds up, the first terminal fault of
 * the route decides the answer. A fault given a number of times is dropped once used up.
 */
import { Effect, Option, Result } from "effect"
import type { SimState } from "./State.ts"
import type { SimRequest, SimResponse, SimRoute } from "./Wire.ts"

/**
 * What the route's faults make of a request: None, the model answers; `Some(Failure)`, this
 * answer instead of the model's; `Some(Success)`, the model does the work and then answers this
 * way instead (`"hang"`: never).
 */
export type FaultOutcome = Option.Option<Result.Result<SimResponse | "hang", SimResponse>>

export const applyFaults = (state: SimState, route: SimRoute, request: SimRequest) =>
  Effect.gen(function*(): Effect.fn.Return<FaultOutcome> {
    for (const entry of [...state.faults]) {
      if (entry.route !== route && entry.route !== "*") continue
      if (entry.remaining !== undefined) {
        entry.remaining -= 1
        if (entry.remaining <= 0) state.faults = state.faults.filter((f) => f !== entry)
      }
      const fault = entry.fault
      switch (fault._tag) {
        case "Latency":
          state.delayed.add(request)
          yield* Effect.sleep(fault.delay).pipe(Effect.ensuring(Effect.sync(() => state.delayed.delete(request))))
          continue
        case "Reply":
          return Option.some(Result.fail<SimResponse>({ _tag: "Reply", status: fault.status, contentType: fault.contentType, body: fault.body }))
        case "Drop":
          return Option.some(Result.fail<SimResponse>({ _tag: "Drop" }))
        case "Truncate":
        case "Stall":
          return Option.some(Result.fail<SimResponse>({ _tag: fault._tag, status: fault.status, contentType: "application/json", body: fault.body }))
        case "Hang":
          return yield* Effect.never
        case "LoseReply":
          return Option.some(Result.succeed(fault.how === "hang" ? "hang" : { _tag: "Drop" }))
        case "ReplaceReply":
          return Option.some(Result.succeed<SimResponse>({
            _tag: "Reply",
            status: fault.status,
            contentType: "text/plain; charset=utf-8",
            body: fault.body
          }))
      }
    }
    return Option.none()
  })
