import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Result } from "effect"
import { continueTooOld, decodeContinue, encodeContinue, listPage, listPageText } from "../../../../testkit/Simulators/Apiserver/Paging.ts"
import { Pods, Sandboxes } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"
import { ok, refused } from "./fixtures.ts"

const entries = (names: ReadonlyArray<string>): Array<readonly [string, JsonObject]> =>
  names.map((n) => [`default/${n}`, { kind: "Pod", apiVersion: "v1", metadata: { name: n } }] as const)

const names = (list: JsonObject) => (list["items"] as Array<{ metadata: { name: string } }>).map((i) => i.metadata.name)
const listMeta = (list: JsonObject) => list["metadata"] as { resourceVersion: string; continue?: string; remainingItemCount?: number }

describe("list pages", () => {
  it("limit and continue walk the list; remainingItemCount counts what is left when nothing filters", () => {
    const all = entries(["a", "b", "c"])
    const first = ok(listPage(Pods, all, { limit: 2 }, 9, 0, true))
    assert.deepStrictEqual(names(first), ["a", "b"])
    assert.strictEqual(listMeta(first).remainingItemCount, 1)
    assert.deepStrictEqual(decodeContinue(listMeta(first).continue ?? ""), { rv: 9, start: "default/b\u0000" })
    const second = ok(listPage(Pods, all, { limit: 2, continue: listMeta(first).continue }, 12, 0, true))
    assert.deepStrictEqual(names(second), ["c"])
    // later pages keep the first page's resourceVersion
    assert.deepStrictEqual(listMeta(second), { resourceVersion: "9" })
    const filtered = ok(listPage(Pods, all, { limit: 1 }, 9, 0, false))
    assert.strictEqual(listMeta(filtered).remainingItemCount, undefined)
    assert.isDefined(listMeta(filtered).continue)
  })

  it("typed items lose kind and apiVersion; a custom resource list is written with sorted keys", () => {
    const typed = ok(listPage(Pods, entries(["a"]), {}, 1, 0, true))
    assert.deepStrictEqual(typed, { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion: "1" }, items: [{ metadata: { name: "a" } }] })
    const custom = ok(listPage(Sandboxes, [["default/s", { kind: "Sandbox", metadata: { name: "s" } }]], {}, 1, 0, true))
    assert.deepStrictEqual(Object.keys(custom), ["apiVersion", "items", "kind", "metadata"])
  })

  it("a resourceVersion newer than the server's is 504; a bad token 400; a token older than the history 410", () => {
    const tooLarge = refused(listPage(Pods, [], { resourceVersion: "10" }, 9, 0, true))
    assert.strictEqual(tooLarge.code, 504)
    assert.strictEqual(tooLarge.message, "Timeout: Too large resource version: 10, current: 9")
    assert.strictEqual(refused(listPage(Pods, [], { continue: "!!" }, 9, 0, true)).code, 400)
    const old = refused(listPage(Pods, [], { continue: encodeContinue(3, "default/a") }, 9, 4, true))
    assert.strictEqual(old.code, 410)
    assert.strictEqual(old.message, continueTooOld)
  })

  it("the text the server sends is the list body's JSON, byte for byte, and leaves the stored objects as they were", () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: "small" }, fc.string(), fc.integer(), fc.double({ noNaN: true }), fc.boolean(), fc.constant(null), fc.array(tie("value"), { maxLength: 3 }), fc.dictionary(fc.string(), tie("value"), { maxKeys: 4 }))
    })).value
    const stored = fc.uniqueArray(
      fc.record({ name: fc.stringMatching(/^[a-z]{1,6}$/), extra: fc.dictionary(fc.string(), json, { maxKeys: 4 }), kindFirst: fc.boolean() }),
      { selector: (o) => o.name, maxLength: 8 }
    ).map((objects) =>
      objects
        .map(({ extra, kindFirst, name }): readonly [string, JsonObject] => [
          `default/${name}`,
          kindFirst ? { kind: "Pod", apiVersion: "v1", metadata: { name }, ...extra } : { metadata: { name }, ...extra, apiVersion: "v1", kind: "Pod" }
        ])
        .sort(([a], [b]) => (a < b ? -1 : 1))
    )
    fc.assert(fc.property(stored, fc.nat({ max: 4 }), fc.boolean(), (all, limit, unselective) => {
      const before = JSON.stringify(all)
      for (const resource of [Pods, Sandboxes]) {
        const first = listPage(resource, all, { limit }, 9, 0, unselective)
        const firstText = listPageText(resource, all, { limit }, 9, 0, unselective)
        assert.strictEqual(Result.getOrThrow(firstText), JSON.stringify(Result.getOrThrow(first)))
        const token = listMeta(Result.getOrThrow(first)).continue
        if (token !== undefined) {
          assert.strictEqual(
            Result.getOrThrow(listPageText(resource, all, { limit, continue: token }, 12, 0, unselective)),
            JSON.stringify(Result.getOrThrow(listPage(resource, all, { limit, continue: token }, 12, 0, unselective)))
          )
        }
      }
      assert.strictEqual(JSON.stringify(all), before)
    }))
    // refusals are the same refusals
    assert.deepStrictEqual(refused(listPageText(Pods, [], { resourceVersion: "10" }, 9, 0, true)), refused(listPage(Pods, [], { resourceVersion: "10" }, 9, 0, true)))
  })
})
