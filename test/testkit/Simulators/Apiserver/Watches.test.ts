import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { Pods } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import { parseSelection } from "../../../../testkit/Simulators/Apiserver/Selectors.ts"
import type { JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"
import { ObjectStore } from "../../../../testkit/Simulators/Apiserver/Store.ts"
import { type ExpiredWatchStart, WatchHub, type WatchOptions } from "../../../../testkit/Simulators/Apiserver/Watches.ts"
import { ok, recorder, refused } from "./fixtures.ts"

const world = (historySize = 100, expiredWatchStart: ExpiredWatchStart = "event") => {
  let hub: WatchHub | undefined
  const store = new ObjectStore(historySize, (entry) => hub?.publish(entry))
  hub = new WatchHub(store, expiredWatchStart)
  const write = (name: string, labels: Record<string, string> = {}, ns = "default") => {
    const prev = store.lookup(Pods, ns, name)
    return store.commit(Pods, ns, name, prev === undefined ? "ADDED" : "MODIFIED", { kind: "Pod", metadata: { name, namespace: ns, labels } }, prev)
  }
  const open = (options: WatchOptions & { readonly ns?: string; readonly stalled?: boolean } = {}) => {
    const events = recorder()
    const handle = hub.open(Pods, options.ns, options, ok(parseSelection(Pods, options)), events.sink, options.stalled ?? false)
    return { events, handle }
  }
  return { store, hub, write, open }
}

const rvOf = (o: JsonObject) => (o["metadata"] as Record<string, unknown>)["resourceVersion"]

describe("WatchHub", () => {
  it("from \"\": the current state as ADDED in key order, then each write as it happens", () => {
    const w = world()
    w.write("b")
    w.write("a")
    const { events } = w.open()
    w.write("c")
    w.write("a", { x: "1" })
    assert.deepStrictEqual(events.summary(), ["ADDED a", "ADDED b", "ADDED c", "MODIFIED a"])
  })

  it("from a resourceVersion: the history after it is replayed; a future one is silent until the counter passes it", () => {
    const w = world()
    w.write("a")
    w.write("b")
    const replay = w.open({ resourceVersion: "1" })
    assert.deepStrictEqual(replay.events.summary(), ["ADDED b"])
    const future = w.open({ resourceVersion: "3" })
    w.write("c")
    assert.deepStrictEqual(future.events.summary(), [])
    w.write("d")
    assert.deepStrictEqual(future.events.summary(), ["ADDED d"])
  })

  it("a compacted resourceVersion: one ERROR 410 event and a close (\"event\"), or the request refused with 410 (\"status\")", () => {
    for (const mode of ["event", "status"] as const) {
      const w = world(1, mode)
      w.write("a")
      w.write("b")
      w.write("c")
      const events = recorder()
      const result = w.hub.open(Pods, undefined, { resourceVersion: "1" }, ok(parseSelection(Pods, {})), events.sink, false)
      if (mode === "status") {
        assert.strictEqual(refused(result).code, 410)
      } else {
        assert.isTrue(Result.isSuccess(result))
        assert.deepStrictEqual(events.events.map((e) => [e.type, e.object["code"]]), [["ERROR", 410]])
        assert.isTrue(events.closed())
      }
      assert.strictEqual(w.hub.openCount(), 0)
    }
  })

  it("an object leaving the selector is DELETED for that watch, with the previous state at the new resourceVersion", () => {
    const w = world()
    w.write("a", { app: "web" })
    const { events } = w.open({ labelSelector: "app=web" })
    const written = w.write("a", { app: "db" })
    assert.deepStrictEqual(events.summary(), ["ADDED a", "DELETED a"])
    const gone = events.events[1].object
    assert.deepStrictEqual((gone["metadata"] as Record<string, unknown>)["labels"], { app: "web" })
    assert.strictEqual(rvOf(gone), rvOf(written))
  })

  it("a namespaced watch sees only its namespace", () => {
    const w = world()
    const { events } = w.open({ ns: "default" })
    w.write("a", {}, "other")
    w.write("b", {}, "default")
    assert.deepStrictEqual(events.summary(), ["ADDED b"])
  })

  it("bookmarks go only to watches that asked, and never below the resourceVersion a watch started from", () => {
    const w = world()
    w.write("a")
    const asked = w.open({ allowWatchBookmarks: true })
    const silent = w.open()
    const ahead = w.open({ allowWatchBookmarks: true, resourceVersion: "5" })
    w.hub.bookmark()
    // nothing past the start yet: no bookmark
    assert.deepStrictEqual(asked.events.events.map((e) => e.type), ["ADDED"])
    w.write("b")
    w.hub.bookmark()
    assert.deepStrictEqual(asked.events.events.map((e) => e.type), ["ADDED", "ADDED", "BOOKMARK"])
    assert.strictEqual(rvOf(asked.events.events[2].object), "2")
    assert.deepStrictEqual(silent.events.summary(), ["ADDED a", "ADDED b"])
    assert.deepStrictEqual(ahead.events.events, [])
  })

  it("watch-list: the initial events end with a BOOKMARK annotated k8s.io/initial-events-end", () => {
    const w = world()
    w.write("a")
    const { events } = w.open({ sendInitialEvents: true, allowWatchBookmarks: true, resourceVersion: "1" })
    assert.deepStrictEqual(events.events.map((e) => e.type), ["ADDED", "BOOKMARK"])
    assert.deepStrictEqual((events.events[1].object["metadata"] as Record<string, unknown>)["annotations"], { "k8s.io/initial-events-end": "true" })
  })

  it("expire sends ERROR 410 and closes; drop closes silently; the caller's own close does not call onClose", () => {
    const w = world()
    const expiring = w.open()
    w.hub.expire()
    assert.deepStrictEqual(expiring.events.events.map((e) => e.type), ["ERROR"])
    assert.isTrue(expiring.events.closed())
    const dropped = w.open()
    const closedByCaller = w.open()
    ok(closedByCaller.handle).close()
    assert.strictEqual(w.hub.openCount(), 1)
    w.hub.drop()
    assert.isTrue(dropped.events.closed())
    assert.isFalse(closedByCaller.events.closed())
    assert.strictEqual(w.hub.openCount(), 0)
  })

  it("a stalled watch stays open and gets nothing", () => {
    const w = world()
    w.write("a")
    const stalled = w.open({ stalled: true, allowWatchBookmarks: true })
    w.write("b")
    w.hub.bookmark()
    assert.deepStrictEqual(stalled.events.events, [])
    assert.isTrue(ok(stalled.handle).isOpen())
  })

  it("a resourceVersion that is not a number is 400", () => {
    const w = world()
    assert.strictEqual(refused(w.hub.open(Pods, undefined, { resourceVersion: "x" }, ok(parseSelection(Pods, {})), recorder().sink, false)).code, 400)
  })
})
