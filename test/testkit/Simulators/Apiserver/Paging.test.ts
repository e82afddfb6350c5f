import { assert, describe, it } from "@effect/vitest"
import { continueTooOld, decodeContinue, encodeContinue, listPage } from "../../../../testkit/Simulators/Apiserver/Paging.ts"
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
})
