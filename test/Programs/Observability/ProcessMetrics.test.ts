/**
 * The process and runtime families: a real sample of this process, rendered as Prometheus text
 * that names every family once with its type, and whose values are the sample's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ProcessMetrics from "../../../src/Programs/Observability/ProcessMetrics.ts"

describe("process metrics", () => {
  it.effect("a sample of this process renders every family with its HELP, TYPE and value", () =>
    Effect.scoped(Effect.gen(function*() {
      const sample = yield* (yield* ProcessMetrics.make)
      assert.isAbove(sample.residentBytes, 0)
      assert.isAbove(sample.heapUsedBytes, 0)
      assert.isAbove(sample.openFds ?? 0, 0, "/proc/self/fd is readable on Linux")
      const text = ProcessMetrics.render(sample, { version: "1.2.3", revision: "abc\"d" })
      const types = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => m[1]!)
      assert.strictEqual(new Set(types).size, types.length, "each family once")
      for (const family of types) assert.match(text, new RegExp(`^# HELP ${family} \\S`, "m"))
      assert.include(text, "vk_sandbox_build_info{version=\"1.2.3\",revision=\"abc\\\"d\"} 1")
      assert.include(text, `process_resident_memory_bytes ${sample.residentBytes}\n`)
      assert.include(text, `nodejs_version_info{version="v${process.versions.node}"} 1`)
      // Every sample line is `name{labels} number`.
      for (const line of text.split("\n").filter((l) => l !== "" && !l.startsWith("#"))) {
        assert.match(line, /^[a-z_0-9]+(\{[^}]*\})? -?\d+(\.\d+)?(e[-+]?\d+)?$/, line)
      }
    })))

  it.effect("garbage collections are counted by kind", () =>
    Effect.scoped(Effect.gen(function*() {
      const sampler = yield* ProcessMetrics.make
      // Allocate enough short-lived garbage for at least one minor collection.
      let keep = 0
      for (let i = 0; i < 200_000; i++) keep += new Array(16).fill(i).length
      assert.isAbove(keep, 0)
      // The observer's entries arrive on a later turn of the event loop: give it a few.
      let runs = 0
      for (let turn = 0; turn < 200 && runs === 0; turn++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
        runs = [...(yield* sampler).gc.values()].reduce((a, b) => a + b.count, 0)
      }
      assert.isAbove(runs, 0)
    })))
})
