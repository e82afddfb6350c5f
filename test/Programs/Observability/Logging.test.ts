/**
 * One flat log shape: time, level, msg, then flat fields; every error, whichever way it was
 * logged (a tagged error, an Error, a bare string, the line's Effect cause), as error.tag,
 * error.message and error.cause.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Data, Effect, Logger, References } from "effect"
import { toRecord, toText } from "../../../src/Programs/Observability/Logging.ts"

class Inner extends Data.TaggedError("Inner")<{ readonly message: string }> {}
class Outer extends Data.TaggedError("Outer")<{ readonly message: string; readonly cause: unknown }> {}

const at = new Date("2026-12-01T04:00:00.123Z")
const record = (annotations: Record<string, unknown>, cause: Cause.Cause<unknown> = Cause.empty) =>
  toRecord({ date: at, level: "WARN", message: "status write failed", annotations, cause })

describe("log records", () => {
  it("time, level and msg come first, then the annotations as flat fields", () => {
    const r = record({ node: "vk-1", pod: "ns/a", claim: "sb-1", count: 3, big: 10n })
    assert.deepStrictEqual(Object.keys(r), ["time", "level", "msg", "node", "pod", "claim", "count", "big"])
    assert.deepStrictEqual(r, {
      time: "2026-12-01T04:00:00.123Z",
      level: "warn",
      msg: "status write failed",
      node: "vk-1",
      pod: "ns/a",
      claim: "sb-1",
      count: 3,
      big: "10"
    })
  })

  it("a tagged error with a cause chain becomes error.tag, error.message, error.cause", () => {
    const error = new Outer({ message: "claim failed", cause: new Inner({ message: "socket hang up" }) })
    const r = record({ pod: "ns/a", error })
    assert.strictEqual(r["error.tag"], "Outer")
    assert.strictEqual(r["error.message"], "claim failed")
    assert.strictEqual(r["error.cause"], "Inner: socket hang up")
    assert.isUndefined(r["error"])
  })

  it("a plain Error, an error string and the legacy `err` key take the same fields", () => {
    assert.include(record({ error: new TypeError("bad") }), { "error.tag": "TypeError", "error.message": "bad" })
    assert.include(record({ error: "disk full" }), { "error.message": "disk full" })
    assert.include(record({ err: "disk full" }), { "error.message": "disk full" })
    assert.isUndefined(record({ err: "disk full" })["err"])
  })

  it("the line's Effect cause is reported under error when no annotation is one", () => {
    const r = record({}, Cause.fail(new Inner({ message: "gone" })))
    assert.strictEqual(r["error.tag"], "Inner")
    assert.strictEqual(r["error.message"], "gone")
    assert.isString(r["error.cause"])
    const defect = record({}, Cause.die(new RangeError("boom")))
    assert.strictEqual(defect["error.tag"], "RangeError")
  })

  it("the text form shows the same fields for a person", () => {
    const text = toText(record({ pod: "ns/a", error: new Inner({ message: "two words" }) }))
    assert.strictEqual(text, "2026-12-01T04:00:00.123Z WARN  status write failed pod=ns/a error.tag=Inner error.message=\"two words\"")
  })

  it.effect("logging through the layer's logger yields that record", () =>
    Effect.gen(function*() {
      const seen: Array<Record<string, unknown>> = []
      const capture = Logger.make((options) => {
        seen.push(toRecord({
          date: options.date,
          level: options.logLevel,
          message: options.message,
          annotations: options.fiber.getRef(References.CurrentLogAnnotations),
          cause: options.cause
        }))
      })
      yield* Effect.logWarning("probe failed").pipe(
        Effect.annotateLogs({ node: "vk-1", error: new Inner({ message: "refused" }) }),
        Effect.provide(Logger.layer([capture]))
      )
      assert.strictEqual(seen.length, 1)
      assert.include(seen[0]!, { level: "warn", msg: "probe failed", node: "vk-1", "error.tag": "Inner", "error.message": "refused" })
    }))
})
