/**
 * VK_SANDBOX_TUNING_OFF: each performance device can be switched off by name; an unknown name is
 * refused; the heap trim's layer then runs no loop.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Result } from "effect"
import { TestClock } from "effect/testing"
import { TUNING_OFF_ENV, tuningOffFromEnvironment } from "../../src/Cli/Tuning.ts"
import { HeapTrimLayer } from "../../src/Programs/Loops.ts"
import { TuningOff, tuningDevices } from "../../src/Services/Tuning.ts"
import { makeLogCapture } from "../support/Logs.ts"

describe("VK_SANDBOX_TUNING_OFF", () => {
  it("unset or empty leaves every device on; names switch them off", () => {
    for (const env of [{}, { [TUNING_OFF_ENV]: "" }, { [TUNING_OFF_ENV]: " , " }]) {
      assert.deepStrictEqual(Result.map(tuningOffFromEnvironment(env), (off) => [...off]), Result.succeed([]))
    }
    const all = tuningOffFromEnvironment({ [TUNING_OFF_ENV]: tuningDevices.join(" , ") })
    assert.deepStrictEqual(Result.map(all, (off) => [...off].sort()), Result.succeed([...tuningDevices].sort()))
  })

  it("an unknown name is refused, naming the known ones", () => {
    const off = tuningOffFromEnvironment({ [TUNING_OFF_ENV]: "heap-trim,heap-trimm" })
    assert.isTrue(Result.isFailure(off))
    if (Result.isFailure(off)) assert.include(off.failure, `unknown device "heap-trimm" (known: ${tuningDevices.join(", ")})`)
  })

  // The heap trim looks one interval after it starts; this process's heap is far over the first
  // step, so a running trim trims (and says so) at that look.
  const trimmedAfterOneLook = (off: ReadonlySet<"heap-trim">) =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.scoped(Effect.gen(function*() {
        yield* Layer.build(HeapTrimLayer).pipe(Effect.provideService(TuningOff, off), Effect.provide(logs.layer))
        yield* TestClock.adjust("1 second")
      }))
      return logs.lines.some((line) => line.message.startsWith("heap trim"))
    })

  it.effect("heap-trim off: the heap trim's layer runs no loop", () =>
    Effect.gen(function*() {
      assert.isTrue(yield* trimmedAfterOneLook(new Set()), "on: it trims at its first look")
      assert.isFalse(yield* trimmedAfterOneLook(new Set(["heap-trim"])), "off: nothing looks")
    }))
})
