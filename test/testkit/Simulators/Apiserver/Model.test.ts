import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ClusterModel } from "../../../../testkit/Simulators/Apiserver/Model.ts"
import {
  CoreEvents,
  EventsV1,
  Leases,
  Namespaces,
  NodeInventories,
  Nodes,
  Pods,
  Sandboxes
} from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import { clock, meta, node, ok, pod, recorder, refused } from "./fixtures.ts"

const model = (options: ConstructorParameters<typeof ClusterModel>[0] = {}) => new ClusterModel(options)

describe("ClusterModel: objects and resourceVersions", () => {
  it.effect("create sets uid, creationTimestamp, generation and one global resourceVersion", () =>
    Effect.gen(function*() {
      const c = clock()
      const m = model({ now: c.now })
      const before = Number(m.resourceVersion)
      const p = ok(m.create(Pods, "default", pod("a", "n1")))
      const n = ok(m.create(Nodes, "", node("n1")))
      assert.match(String(meta(p)["uid"]), /^[0-9a-f-]{36}$/)
      assert.strictEqual(meta(p)["creationTimestamp"], "2026-07-27T02:00:00Z")
      assert.strictEqual(meta(p)["generation"], 1)
      assert.strictEqual(meta(p)["resourceVersion"], String(before + 1))
      assert.strictEqual(meta(n)["resourceVersion"], String(before + 2))
      assert.strictEqual(meta(n)["generation"], undefined)
      assert.deepStrictEqual((p as { status: unknown }).status, { phase: "Pending", qosClass: "BestEffort" })
      // the node keeps the status it was created with
      assert.strictEqual((n as { status: { conditions: Array<unknown> } }).status.conditions.length, 2)
    }))

  it.effect("a create carrying a resourceVersion is refused by storage (500), after validation", () =>
    Effect.gen(function*() {
      const m = model()
      const e = refused(m.create(Pods, "default", pod("a", "n1", { metadata: { resourceVersion: "12" } })))
      assert.strictEqual(e.code, 500)
      // a plain storage error: no reason, no details (kube-apiserver v1.37.2)
      assert.deepStrictEqual(e.body, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: "resourceVersion should not be set on objects to be created", code: 500 })
      ok(m.create(Pods, "default", pod("a", "n1", { metadata: { resourceVersion: "" } })))
    }))

  it.effect("a second create of the same name is 409 AlreadyExists", () =>
    Effect.gen(function*() {
      const m = model()
      ok(m.create(Pods, "default", pod("a")))
      const e = refused(m.create(Pods, "default", pod("a")))
      assert.strictEqual(e.code, 409)
      assert.deepStrictEqual(e.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "pods \"a\" already exists",
        reason: "AlreadyExists",
        details: { name: "a", kind: "pods" },
        code: 409
      })
    }))

  it.effect("update with a stale resourceVersion is 409 Conflict; without one, unconditional (or 422 when so configured)", () =>
    Effect.gen(function*() {
      const m = model()
      const p = ok(m.create(Pods, "default", pod("a", "n1")))
      const fresh = structuredClone(p) as { metadata: Record<string, unknown> }
      fresh.metadata["labels"] = { x: "1" }
      const updated = ok(m.update(Pods, "default", "a", fresh))
      assert.notStrictEqual(meta(updated)["resourceVersion"], meta(p)["resourceVersion"])
      const stale = structuredClone(p) as { metadata: Record<string, unknown> }
      stale.metadata["labels"] = { x: "2" }
      const e = refused(m.update(Pods, "default", "a", stale))
      assert.strictEqual(e.code, 409)
      assert.deepStrictEqual(e.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message:
          "Operation cannot be fulfilled on pods \"a\": the object has been modified; please apply your changes to the latest version and try again",
        reason: "Conflict",
        details: { name: "a", kind: "pods" },
        code: 409
      })
      delete stale.metadata["resourceVersion"]
      const blind = ok(m.update(Pods, "default", "a", stale))
      assert.deepStrictEqual(meta(blind)["labels"], { x: "2" })
      const current = model({ unconditionalPodUpdates: false })
      ok(current.create(Pods, "default", pod("a", "n1")))
      const e135 = refused(current.updateStatus(Pods, "default", "a", { ...pod("a", "n1"), status: { phase: "Failed", reason: "ProviderFailed" } }))
      assert.strictEqual(e135.code, 422)
      assert.strictEqual(e135.message, "pods \"a\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update")
      assert.deepStrictEqual((e135.body as { details: unknown }).details, {
        name: "a",
        kind: "pods",
        causes: [{ reason: "FieldValueInvalid", message: "Invalid value: 0: must be specified for an update", field: "metadata.resourceVersion" }]
      })
    }))

  it.effect("custom resources refuse an update without resourceVersion (422)", () =>
    Effect.gen(function*() {
      const m = model()
      ok(m.create(Sandboxes, "default", { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", metadata: { name: "sb" }, spec: { operatingMode: "Running" } }))
      const e = refused(m.update(Sandboxes, "default", "sb", { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", metadata: { name: "sb" }, spec: {} }))
      assert.strictEqual(e.code, 422)
      assert.strictEqual(e.reason, "Invalid")
      assert.strictEqual(
        e.message,
        "sandboxes.agents.x-k8s.io \"sb\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
      )
    }))

  it.effect("a no-op update keeps the resourceVersion and sends no event", () =>
    Effect.gen(function*() {
      const m = model()
      const p = ok(m.create(Pods, "default", pod("a", "n1")))
      const rec = recorder()
      ok(m.watch(Pods, undefined, { resourceVersion: String(meta(p)["resourceVersion"]) }, rec.sink))
      const same = ok(m.update(Pods, "default", "a", p))
      assert.strictEqual(meta(same)["resourceVersion"], meta(p)["resourceVersion"])
      assert.deepStrictEqual(rec.events, [])
    }))

  it.effect("updates keep uid, creationTimestamp and bump generation only on spec changes", () =>
    Effect.gen(function*() {
      const m = model()
      const sb = ok(m.create(Sandboxes, "default", { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", metadata: { name: "sb" }, spec: { operatingMode: "Running" }, status: { nodeName: "x" } }))
      assert.strictEqual((sb as { status?: unknown }).status, undefined) // status subresource: ignored on create
      const labelled = structuredClone(sb) as { metadata: Record<string, unknown>; spec: Record<string, unknown> }
      labelled.metadata["labels"] = { a: "b" }
      labelled.metadata["creationTimestamp"] = "1999-01-01T00:00:00Z"
      const l = ok(m.update(Sandboxes, "default", "sb", labelled))
      assert.strictEqual(meta(l)["generation"], 1)
      assert.strictEqual(meta(l)["creationTimestamp"], meta(sb)["creationTimestamp"])
      const spec = structuredClone(l) as { spec: Record<string, unknown> }
      spec.spec["operatingMode"] = "Suspended"
      const s = ok(m.update(Sandboxes, "default", "sb", spec))
      assert.strictEqual(meta(s)["generation"], 2)
      assert.strictEqual(meta(s)["uid"], meta(sb)["uid"])
    }))
})

describe("ClusterModel: ownerReferences (object metadata validation)", () => {
  const ref = (name: string, controller: boolean) => ({ apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", name, uid: `${name}-uid`, controller })

  it.effect("two controller references are 422 Invalid on create and on update; one is accepted", () =>
    Effect.gen(function*() {
      const m = model()
      const e = refused(m.create(Pods, "default", pod("two", "n1", { metadata: { ownerReferences: [ref("a", true), ref("b", true)] } })))
      assert.strictEqual(e.code, 422)
      assert.strictEqual(e.reason, "Invalid")
      assert.deepStrictEqual(e.status.details?.causes?.map((c) => c.field), ["metadata.ownerReferences"])
      assert.include(e.message, "Only one reference can have Controller set to true. Found \"true\" in references for Sandbox/a and Sandbox/b")
      assert.isUndefined(m.peek(Pods, "default", "two"), "nothing stored")
      const one = ok(m.create(Pods, "default", pod("one", "n1", { metadata: { ownerReferences: [ref("a", true), ref("b", false)] } })))
      const updated = m.update(Pods, "default", "one", { ...one, metadata: { ...meta(one), ownerReferences: [ref("a", true), ref("b", true)] } })
      assert.strictEqual(refused(updated).code, 422)
    }))

  it.effect("a reference without a uid or a kind is 422", () =>
    Effect.gen(function*() {
      const m = model()
      const e = refused(m.create(Pods, "default", pod("p", "n1", { metadata: { ownerReferences: [{ apiVersion: "v1", kind: "", name: "x", uid: "" }] } })))
      assert.deepStrictEqual(e.status.details?.causes?.map((c) => c.field), ["metadata.ownerReferences.kind", "metadata.ownerReferences.uid"])
    }))
})

describe("ClusterModel: namespaces (NamespaceLifecycle)", () => {
  it.effect("create in a missing namespace is 404 for the namespace", () =>
    Effect.gen(function*() {
      const m = model()
      const e = refused(m.create(Pods, "nope", pod("a")))
      assert.deepStrictEqual(e.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "namespaces \"nope\" not found",
        reason: "NotFound",
        details: { name: "nope", kind: "namespaces" },
        code: 404
      })
    }))

  it.effect("create in a terminating namespace is 403 Forbidden with the NamespaceTerminating cause", () =>
    Effect.gen(function*() {
      const m = model()
      ok(m.create(Namespaces, "", { metadata: { name: "team-a" } }))
      ok(m.create(Pods, "team-a", pod("keep")))
      const d = ok(m.delete(Namespaces, "", "team-a"))
      assert.strictEqual(d._tag, "Pending")
      assert.deepStrictEqual((d.object as { status: unknown }).status, { phase: "Terminating" })
      const e = refused(m.create(Pods, "team-a", pod("a")))
      assert.deepStrictEqual(e.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "pods \"a\" is forbidden: unable to create new content in namespace team-a because it is being terminated",
        reason: "Forbidden",
        details: {
          name: "a",
          kind: "pods",
          causes: [{ reason: "NamespaceTerminating", message: "namespace team-a is being terminated", field: "metadata.namespace" }]
        },
        code: 403
      })
      m.finalizeNamespace("team-a")
      assert.strictEqual(m.peek(Pods, "team-a", "keep"), undefined)
      assert.strictEqual(refused(m.get(Namespaces, "", "team-a")).code, 404)
    }))
})

describe("ClusterModel: list and selectors", () => {
  it.effect("fieldSelector spec.nodeName / metadata.name / metadata.namespace and label selectors", () =>
    Effect.gen(function*() {
      const m = model()
      ok(m.create(Namespaces, "", { metadata: { name: "team-a" } }))
      ok(m.create(Pods, "default", pod("a", "n1", { metadata: { labels: { app: "x", tier: "web" } } })))
      ok(m.create(Pods, "team-a", pod("b", "n1", { metadata: { labels: { app: "y" } } })))
      ok(m.create(Pods, "default", pod("c", "n2", { metadata: { labels: { app: "z" } } })))
      const names = (l: unknown) => (l as { items: Array<{ metadata: { name: string } }> }).items.map((i) => i.metadata.name)
      assert.deepStrictEqual(names(ok(m.list(Pods, undefined, { fieldSelector: "spec.nodeName=n1" }))), ["a", "b"])
      assert.deepStrictEqual(names(ok(m.list(Pods, undefined, { fieldSelector: "spec.nodeName!=n1" }))), ["c"])
      assert.deepStrictEqual(names(ok(m.list(Pods, undefined, { fieldSelector: "metadata.namespace=team-a" }))), ["b"])
      assert.deepStrictEqual(names(ok(m.list(Pods, "default", { fieldSelector: "metadata.name==c" }))), ["c"])
      assert.deepStrictEqual(names(ok(m.list(Pods, undefined, { labelSelector: "app in (x,z)" }))), ["a", "c"])
      assert.deepStrictEqual(names(ok(m.list(Pods, undefined, { labelSelector: "app notin (x,z)" }))), ["b"])
      assert.deepStrictEqual(names(ok(m.list(Pods, undefined, { labelSelector: "tier" }))), ["a"])
      assert.deepStrictEqual(names(ok(m.list(Pods, undefined, { labelSelector: "!tier,app!=y" }))), ["c"])
      assert.deepStrictEqual(names(ok(m.list(Pods, undefined, { labelSelector: "app==x,tier=web" }))), ["a"])
      const list = ok(m.list(Pods, "default"))
      assert.strictEqual((list as { kind: string }).kind, "PodList")
      assert.strictEqual((list as { metadata: { resourceVersion: string } }).metadata.resourceVersion, m.resourceVersion)
      const e = refused(m.list(Pods, undefined, { fieldSelector: "spec.bogus=1" }))
      assert.strictEqual(e.code, 400)
      assert.strictEqual(e.message, "field label not supported: spec.bogus")
    }))
})

describe("ClusterModel: pagination", () => {
  it.effect("limit and continue page through a list at the first page's resourceVersion", () =>
    Effect.gen(function*() {
      const m = model({ historySize: 10 })
      for (const n of ["a", "b", "c", "d", "e"]) ok(m.create(Pods, "default", pod(n, "n1")))
      const first = ok(m.list(Pods, undefined, { limit: 2 })) as { metadata: Record<string, unknown>; items: Array<{ metadata: { name: string } }> }
      assert.deepStrictEqual(first.items.map((i) => i.metadata.name), ["a", "b"])
      assert.strictEqual(first.metadata["remainingItemCount"], 3)
      const listRv = first.metadata["resourceVersion"]
      ok(m.create(Pods, "default", pod("f", "n1")))
      const second = ok(m.list(Pods, undefined, { limit: 2, continue: String(first.metadata["continue"]) })) as typeof first
      assert.deepStrictEqual(second.items.map((i) => i.metadata.name), ["c", "d"])
      assert.strictEqual(second.metadata["resourceVersion"], listRv)
      const third = ok(m.list(Pods, undefined, { limit: 5, continue: String(second.metadata["continue"]), fieldSelector: "spec.nodeName=n1" })) as typeof first
      assert.deepStrictEqual(third.items.map((i) => i.metadata.name), ["e", "f"])
      assert.strictEqual(third.metadata["continue"], undefined)
      const selective = ok(m.list(Pods, undefined, { limit: 1, labelSelector: "!x" })) as typeof first
      assert.isString(selective.metadata["continue"])
      assert.strictEqual(selective.metadata["remainingItemCount"], undefined) // not counted under a selector
      assert.strictEqual(refused(m.list(Pods, undefined, { continue: "%%%" })).code, 400)
      m.compact()
      assert.strictEqual(refused(m.list(Pods, undefined, { continue: String(first.metadata["continue"]) })).code, 410)
    }))
})

describe("ClusterModel: watch", () => {
  it.effect("replays from a resourceVersion, then streams; bookmarks only when asked", () =>
    Effect.gen(function*() {
      const m = model()
      const a = ok(m.create(Pods, "default", pod("a", "n1")))
      const from = String(meta(a)["resourceVersion"])
      ok(m.create(Pods, "default", pod("b", "n1")))
      ok(m.create(Pods, "default", pod("other", "n2")))
      const rec = recorder()
      const quiet = recorder()
      ok(m.watch(Pods, undefined, { resourceVersion: from, fieldSelector: "spec.nodeName=n1", allowWatchBookmarks: true }, rec.sink))
      ok(m.watch(Pods, undefined, { resourceVersion: from }, quiet.sink))
      assert.deepStrictEqual(rec.summary(), ["ADDED b"])
      ok(m.delete(Pods, "default", "a", { gracePeriodSeconds: 0 }))
      m.bookmark()
      // a pod's grace-0 delete writes the deletion marks first (MODIFIED), then removes it
      assert.deepStrictEqual(rec.summary(), ["ADDED b", "MODIFIED a", "DELETED a", "BOOKMARK"])
      assert.strictEqual(meta(rec.events[2].object)["deletionGracePeriodSeconds"], 0)
      assert.isString(meta(rec.events[2].object)["deletionTimestamp"])
      assert.deepStrictEqual(rec.events[3].object, {
        kind: "Pod",
        apiVersion: "v1",
        metadata: { resourceVersion: m.resourceVersion, creationTimestamp: null }
      })
      assert.deepStrictEqual(quiet.summary(), ["ADDED b", "ADDED other", "MODIFIED a", "DELETED a"])
    }))

  it.effect("restored from a backup: older resourceVersions; a watch from a newer one is silent (no bookmark), a list at it is 504", () =>
    Effect.gen(function*() {
      const m = model()
      const backup = m.snapshot()
      ok(m.create(Pods, "default", pod("a", "n1")))
      const ahead = m.resourceVersion
      m.restore(backup)
      assert.isBelow(Number(m.resourceVersion), Number(ahead))
      assert.strictEqual(m.peek(Pods, "default", "a"), undefined)
      const tooLarge = refused(m.list(Pods, undefined, { resourceVersion: ahead }))
      assert.strictEqual(tooLarge.code, 504)
      assert.include(tooLarge.message, "Too large resource version")
      const rec = recorder()
      ok(m.watch(Pods, undefined, { resourceVersion: ahead, allowWatchBookmarks: true }, rec.sink))
      // the write that reaches the watch's version again is not after it: nothing is delivered
      ok(m.create(Pods, "default", pod("b", "n1")))
      m.bookmark()
      assert.deepStrictEqual(rec.summary(), [])
    }))

  it.effect("pod status times are stored at whole seconds; the same status with a fraction is still a write", () =>
    Effect.gen(function*() {
      let now = Date.UTC(2026, 10, 29, 9, 0, 0)
      const m = new ClusterModel({ now: () => now })
      const created = ok(m.create(Pods, "default", pod("a", "n1")))
      const status = { phase: "Running", startTime: "2026-11-29T08:59:50Z" }
      const first = ok(m.updateStatus(Pods, "default", "a", { ...created, status }))
      const same = ok(m.updateStatus(Pods, "default", "a", { ...first, status }))
      assert.strictEqual(meta(same)["resourceVersion"], meta(first)["resourceVersion"], "identical PUT: no write")
      now += 2000
      const fraction = ok(m.updateStatus(Pods, "default", "a", { ...same, status: { ...status, startTime: "2026-11-29T08:59:50.734Z" } }))
      assert.notStrictEqual(meta(fraction)["resourceVersion"], meta(first)["resourceVersion"], "the manager's time moved")
      assert.strictEqual((fraction["status"] as { startTime: string }).startTime, "2026-11-29T08:59:50Z")
    }))

  it.effect("resourceVersion 0 starts with the current state as ADDED events", () =>
    Effect.gen(function*() {
      const m = model()
      ok(m.create(Pods, "default", pod("a", "n1")))
      const rec = recorder()
      ok(m.watch(Pods, "default", { resourceVersion: "0" }, rec.sink))
      assert.deepStrictEqual(rec.summary(), ["ADDED a"])
    }))

  it.effect("sendInitialEvents: current state, then a bookmark marking the end of the initial events", () =>
    Effect.gen(function*() {
      const m = model()
      ok(m.create(Pods, "default", pod("a", "n1")))
      const rec = recorder()
      ok(m.watch(Pods, undefined, { sendInitialEvents: true, allowWatchBookmarks: true, resourceVersion: "" }, rec.sink))
      assert.deepStrictEqual(rec.summary(), ["ADDED a", "BOOKMARK"])
      assert.deepStrictEqual(meta(rec.events[1].object)["annotations"], { "k8s.io/initial-events-end": "true" })
    }))

  it.effect("stored objects serialise in the server's field order", () =>
    Effect.gen(function*() {
      const m = model()
      const p = ok(m.create(Pods, "default", { metadata: { labels: { a: "b" }, name: "a" }, spec: { containers: [{ name: "c", image: "i" }] } }))
      assert.deepStrictEqual(Object.keys(p).slice(0, 3), ["kind", "apiVersion", "metadata"])
      // custom resources are unstructured: keys sorted at every level
      const sb = ok(m.create(Sandboxes, "default", { kind: "Sandbox", apiVersion: "agents.x-k8s.io/v1beta1", metadata: { name: "s" }, spec: { podTemplate: {} } }))
      assert.deepStrictEqual(Object.keys(sb), ["apiVersion", "kind", "metadata", "spec"])
      assert.deepStrictEqual(Object.keys((sb as { spec: object }).spec), ["operatingMode", "podTemplate", "shutdownPolicy"]) // CRD defaults
      assert.deepStrictEqual(Object.keys(meta(p)), ["name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "labels", "managedFields"])
    }))

  it.effect("an object leaving the selector is DELETED for that watch", () =>
    Effect.gen(function*() {
      const m = model()
      const a = ok(m.create(Pods, "default", pod("a", "n1", { metadata: { labels: { keep: "yes" } } })))
      const rec = recorder()
      ok(m.watch(Pods, undefined, { resourceVersion: m.resourceVersion, labelSelector: "keep=yes" }, rec.sink))
      const changed = structuredClone(a) as { metadata: Record<string, unknown> }
      changed.metadata["labels"] = { keep: "no" }
      const u = ok(m.update(Pods, "default", "a", changed))
      assert.deepStrictEqual(rec.summary(), ["DELETED a"])
      assert.strictEqual(meta(rec.events[0].object)["resourceVersion"], meta(u)["resourceVersion"])
      assert.deepStrictEqual(meta(rec.events[0].object)["labels"], { keep: "yes" })
    }))

  it.effect("an expired resourceVersion: ERROR 410 event (default) or a refused watch (status mode)", () =>
    Effect.gen(function*() {
      const m = model({ historySize: 2 })
      const a = ok(m.create(Pods, "default", pod("a")))
      for (const n of ["b", "c", "d"]) ok(m.create(Pods, "default", pod(n)))
      const rec = recorder()
      ok(m.watch(Pods, undefined, { resourceVersion: String(meta(a)["resourceVersion"]) }, rec.sink))
      assert.strictEqual(rec.events.length, 1)
      assert.strictEqual(rec.events[0].type, "ERROR")
      const status = rec.events[0].object as Record<string, unknown>
      assert.strictEqual(status["code"], 410)
      assert.strictEqual(status["reason"], "Expired")
      assert.match(String(status["message"]), /^too old resource version: \d+ \(\d+\)$/)
      assert.isTrue(rec.closed())
      assert.strictEqual(m.openWatches(), 0)

      const strict = model({ historySize: 1, expiredWatchStart: "status" })
      const x = ok(strict.create(Pods, "default", pod("x")))
      ok(strict.create(Pods, "default", pod("y")))
      ok(strict.create(Pods, "default", pod("z")))
      const e = refused(strict.watch(Pods, undefined, { resourceVersion: String(meta(x)["resourceVersion"]) }, recorder().sink))
      assert.strictEqual(e.code, 410)
      assert.strictEqual(e.reason, "Expired")
    }))

  it.effect("a watch from a future resourceVersion stays open and silent until the counter passes it", () =>
    Effect.gen(function*() {
      const m = model()
      const rec = recorder()
      ok(m.watch(Pods, undefined, { resourceVersion: String(Number(m.resourceVersion) + 2) }, rec.sink))
      ok(m.create(Pods, "default", pod("a")))
      ok(m.create(Pods, "default", pod("b")))
      ok(m.create(Pods, "default", pod("c")))
      assert.deepStrictEqual(rec.summary(), ["ADDED c"])
      assert.isFalse(rec.closed())
    }))

  it.effect("an open watch that falls behind gets an ERROR 410 event and is closed", () =>
    Effect.gen(function*() {
      const m = model()
      const rec = recorder()
      ok(m.watch(Pods, undefined, { resourceVersion: m.resourceVersion }, rec.sink))
      ok(m.create(Pods, "default", pod("a")))
      m.expireWatches()
      assert.deepStrictEqual(rec.summary(), ["ADDED a", "ERROR"])
      assert.strictEqual((rec.events[1].object as { code: number }).code, 410)
      assert.isTrue(rec.closed())
      ok(m.create(Pods, "default", pod("b")))
      assert.strictEqual(rec.events.length, 2)
    }))

  it.effect("a stalled watch receives nothing; a dropped watch is closed", () =>
    Effect.gen(function*() {
      const m = model()
      m.faults.stallWatches = true
      const stalled = recorder()
      ok(m.watch(Pods, undefined, { resourceVersion: "0", allowWatchBookmarks: true }, stalled.sink))
      m.faults.stallWatches = false
      const live = recorder()
      ok(m.watch(Pods, undefined, { resourceVersion: "0" }, live.sink))
      ok(m.create(Pods, "default", pod("a")))
      m.bookmark()
      assert.deepStrictEqual(stalled.events, [])
      assert.deepStrictEqual(live.summary(), ["ADDED a"])
      m.dropWatches()
      assert.isTrue(live.closed())
    }))
})

describe("ClusterModel: pod deletion", () => {
  it.effect("graceful delete of a bound pod sets deletionTimestamp; the grace-0 DELETE with the right uid removes it", () =>
    Effect.gen(function*() {
      const c = clock()
      const m = model({ now: c.now })
      const p = ok(m.create(Pods, "default", pod("a", "n1")))
      const uid = String(meta(p)["uid"])
      const rec = recorder()
      ok(m.watch(Pods, undefined, { resourceVersion: m.resourceVersion }, rec.sink))
      const d = ok(m.delete(Pods, "default", "a", { gracePeriodSeconds: 30 }))
      assert.strictEqual(d._tag, "Pending")
      assert.strictEqual(meta(d.object)["deletionTimestamp"], "2026-07-27T02:00:30Z")
      assert.strictEqual(meta(d.object)["deletionGracePeriodSeconds"], 30)
      assert.strictEqual(meta(d.object)["generation"], 2)
      // a longer grace period changes nothing
      const again = ok(m.delete(Pods, "default", "a", { gracePeriodSeconds: 60 }))
      assert.strictEqual(meta(again.object)["resourceVersion"], meta(d.object)["resourceVersion"])
      const wrong = refused(m.delete(Pods, "default", "a", { gracePeriodSeconds: 0, preconditions: { uid: "0000" } }))
      assert.deepStrictEqual(wrong.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `Operation cannot be fulfilled on Pod "a": the UID in the precondition (0000) does not match the UID in record (${uid}). The object might have been deleted and then recreated`,
        reason: "Conflict",
        details: { name: "a", kind: "Pod" },
        code: 409
      })
      const gone = ok(m.delete(Pods, "default", "a", { gracePeriodSeconds: 0, preconditions: { uid } }))
      assert.strictEqual(gone._tag, "Deleted")
      assert.strictEqual(gone._tag === "Deleted" ? meta(gone.body)["name"] : undefined, "a") // the pod registry answers with the pod
      // the shortening to 0 is written (MODIFIED) before the removal
      assert.deepStrictEqual(rec.summary(), ["MODIFIED a", "MODIFIED a", "DELETED a"])
      assert.strictEqual(meta(rec.events[2].object)["deletionGracePeriodSeconds"], 0)
      assert.strictEqual(refused(m.get(Pods, "default", "a")).code, 404)
    }))

  it.effect("a pod not bound to a node, or terminal, is removed at once whatever the grace period", () =>
    Effect.gen(function*() {
      const m = model()
      ok(m.create(Pods, "default", pod("unbound")))
      const d = ok(m.delete(Pods, "default", "unbound", { gracePeriodSeconds: 30 }))
      assert.strictEqual(d._tag, "Deleted")
      const done = ok(m.create(Pods, "default", pod("done", "n1")))
      const st = structuredClone(done) as { status: Record<string, unknown> }
      st.status = { phase: "Succeeded" }
      ok(m.updateStatus(Pods, "default", "done", st))
      assert.strictEqual((ok(m.delete(Pods, "default", "done"))).
        _tag, "Deleted")
    }))

  it.effect("a DELETE without options uses terminationGracePeriodSeconds (default 30)", () =>
    Effect.gen(function*() {
      const c = clock()
      const m = model({ now: c.now })
      ok(m.create(Pods, "default", pod("a", "n1")))
      const d = ok(m.delete(Pods, "default", "a"))
      assert.strictEqual(meta(d.object)["deletionGracePeriodSeconds"], 30)
      // shortening moves deletionTimestamp earlier
      const s = ok(m.delete(Pods, "default", "a", { gracePeriodSeconds: 5 }))
      assert.strictEqual(meta(s.object)["deletionTimestamp"], "2026-07-27T02:00:05Z")
    }))
})

describe("ClusterModel: the deletion fields on update (as kube-apiserver v1.37.2 answers, test/k8s/Differential.test.ts)", () => {
  type Body = { metadata: Record<string, unknown>; status?: unknown }
  /** A bound pod held by a finalizer, deleted with the default grace (30 s), and a copy of it to write. */
  const terminating = () => {
    const m = model({ now: clock().now })
    ok(m.create(Pods, "default", pod("a", "n1", { metadata: { finalizers: ["example.com/keep"] } })))
    const stored = ok(m.delete(Pods, "default", "a")).object
    return { m, stored, body: () => structuredClone(stored) as Body }
  }
  const immutable = (field: string, value: string) => ({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: `Pod "a" is invalid: metadata.${field}: Invalid value: ${value}: field is immutable`,
    reason: "Invalid",
    details: { name: "a", kind: "Pod", causes: [{ reason: "FieldValueInvalid", message: `Invalid value: ${value}: field is immutable`, field: `metadata.${field}` }] },
    code: 422
  })
  const write = (m: ClusterModel, sub: "main" | "status", body: Body) =>
    sub === "main" ? m.update(Pods, "default", "a", body) : m.updateStatus(Pods, "default", "a", { ...body, status: { phase: "Failed" } })

  for (const sub of ["main", "status"] as const) {
    it.effect(`${sub} PUT of a pod being deleted: a grace left out, null or equal keeps the stored one; a different one is 422; any deletionTimestamp keeps the stored one`, () =>
      Effect.gen(function*() {
        const { m, stored, body } = terminating()
        const kept = (change: (meta: Record<string, unknown>) => void) => {
          const b = body()
          change(b.metadata)
          b.metadata["resourceVersion"] = meta(ok(m.get(Pods, "default", "a")))["resourceVersion"]
          const written = ok(write(m, sub, b))
          assert.deepStrictEqual([meta(written)["deletionTimestamp"], meta(written)["deletionGracePeriodSeconds"]], ["2026-07-27T02:00:30Z", 30])
        }
        kept((meta) => delete meta["deletionGracePeriodSeconds"])
        kept((meta) => void (meta["deletionGracePeriodSeconds"] = null))
        kept(() => undefined)
        kept((meta) => delete meta["deletionTimestamp"])
        kept((meta) => void (meta["deletionTimestamp"] = null))
        kept((meta) => void (meta["deletionTimestamp"] = "2020-01-01T00:00:00Z"))
        for (const grace of [29, 31, 0, -1]) {
          const b = body()
          b.metadata["deletionGracePeriodSeconds"] = grace
          delete b.metadata["resourceVersion"]
          assert.deepStrictEqual(refused(write(m, sub, b)).body, immutable("deletionGracePeriodSeconds", String(grace)))
        }
        assert.strictEqual(meta(ok(m.get(Pods, "default", "a")))["deletionGracePeriodSeconds"], meta(stored)["deletionGracePeriodSeconds"])
      }))
  }

  it.effect("a pod not being deleted: a grace is 422 on both; a deletionTimestamp is 422 on the main resource (in whole seconds, UTC), dropped by pods/status", () =>
    Effect.gen(function*() {
      const m = model()
      const p = ok(m.create(Pods, "default", pod("a", "n1")))
      const body = (extra: Record<string, unknown>) => {
        const b = structuredClone(p) as Body
        Object.assign(b.metadata, extra)
        delete b.metadata["resourceVersion"]
        return b
      }
      const ts = { deletionTimestamp: "2020-01-01T01:00:00.5+01:00" }
      assert.deepStrictEqual(refused(write(m, "main", body(ts))).body, immutable("deletionTimestamp", "\"2020-01-01T00:00:00Z\""))
      for (const sub of ["main", "status"] as const) {
        assert.deepStrictEqual(refused(write(m, sub, body({ deletionGracePeriodSeconds: 0 }))).body, immutable("deletionGracePeriodSeconds", "0"))
      }
      const both = refused(write(m, "main", body({ ...ts, deletionGracePeriodSeconds: 5 })))
      assert.strictEqual(
        both.message,
        "Pod \"a\" is invalid: [metadata.deletionTimestamp: Invalid value: \"2020-01-01T00:00:00Z\": field is immutable, metadata.deletionGracePeriodSeconds: Invalid value: 5: field is immutable]"
      )
      assert.strictEqual(refused(write(m, "status", body({ ...ts, deletionGracePeriodSeconds: 5 }))).message, immutable("deletionGracePeriodSeconds", "5").message)
      const dropped = ok(write(m, "status", body(ts)))
      assert.isUndefined(meta(dropped)["deletionTimestamp"])
      // a lease (no status subresource, any kind) answers the same, with its own kind
      const lease = ok(m.create(Leases, "default", { metadata: { name: "l" }, spec: { holderIdentity: "x" } })) as Body
      const leaseBody = { ...lease, metadata: { ...lease.metadata, deletionGracePeriodSeconds: 5 } }
      assert.strictEqual(
        refused(m.update(Leases, "default", "l", leaseBody)).message,
        "Lease.coordination.k8s.io \"l\" is invalid: metadata.deletionGracePeriodSeconds: Invalid value: 5: field is immutable"
      )
    }))

  it.effect("a patch is refused alike; a patch that removes the grace keeps the stored one", () =>
    Effect.gen(function*() {
      const { m } = terminating()
      for (const subresource of [undefined, "status"] as const) {
        const e = refused(m.patch(Pods, "default", "a", "merge", { metadata: { deletionGracePeriodSeconds: 5 } }, { subresource }))
        assert.deepStrictEqual(e.body, immutable("deletionGracePeriodSeconds", "5"))
      }
      const nulled = ok(m.patch(Pods, "default", "a", "merge", { metadata: { deletionGracePeriodSeconds: null, deletionTimestamp: null } }))
      assert.deepStrictEqual([meta(nulled.object)["deletionTimestamp"], meta(nulled.object)["deletionGracePeriodSeconds"]], ["2026-07-27T02:00:30Z", 30])
      const removed = ok(m.patch(Pods, "default", "a", "json", [{ op: "remove", path: "/metadata/deletionGracePeriodSeconds" }]))
      assert.strictEqual(meta(removed.object)["deletionGracePeriodSeconds"], 30)
    }))

  it.effect("metadata errors come first, finalizers before the grace; a custom resource lists them twice in the causes, once in the message", () =>
    Effect.gen(function*() {
      const { m, body } = terminating()
      const b = body()
      b.metadata["deletionGracePeriodSeconds"] = 5
      b.metadata["finalizers"] = ["example.com/keep", "example.com/other"]
      const fields = (e: { body: unknown }) => (e.body as { details: { causes: Array<{ field: string }> } }).details.causes.map((c) => c.field)
      const status = refused(m.updateStatus(Pods, "default", "a", { ...b, status: { phase: "Running", podIP: "bad" } }))
      assert.deepStrictEqual(fields(status), ["metadata.finalizers", "metadata.deletionGracePeriodSeconds", "status.podIPs[0]"])

      ok(m.create(Namespaces, "", { metadata: { name: "team-a" } }))
      ok(m.create(Sandboxes, "team-a", { metadata: { name: "s", finalizers: ["example.com/keep"] }, spec: { operatingMode: "Running" } }))
      const sandbox = ok(m.delete(Sandboxes, "team-a", "s")).object as Body
      const e = refused(m.update(Sandboxes, "team-a", "s", { ...sandbox, metadata: { ...sandbox.metadata, deletionGracePeriodSeconds: 5 } }))
      assert.deepStrictEqual(fields(e), ["metadata.deletionGracePeriodSeconds", "metadata.deletionGracePeriodSeconds"])
      assert.strictEqual(e.message, "Sandbox.agents.x-k8s.io \"s\" is invalid: metadata.deletionGracePeriodSeconds: Invalid value: 5: field is immutable")
    }))

  it.effect("a grace that is no int64 is a 400 decode error, before anything else", () =>
    Effect.gen(function*() {
      const { m, body } = terminating()
      const sent = (grace: unknown) => {
        const b = body()
        b.metadata["deletionGracePeriodSeconds"] = grace
        return refused(m.update(Pods, "default", "a", b))
      }
      assert.strictEqual(sent("29").message, "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.deletionGracePeriodSeconds of type int64")
      assert.strictEqual(sent(29.5).message, "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal number 29.5 into Go struct field ObjectMeta.metadata.deletionGracePeriodSeconds of type int64")
      assert.strictEqual(sent(true).code, 400)
    }))
})

describe("ClusterModel: pods/status strategy", () => {
  it.effect("labels, annotations and status come from the request; spec and ownerReferences from storage", () =>
    Effect.gen(function*() {
      const m = model()
      const owner = { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", name: "sb", uid: "u-1", controller: true, blockOwnerDeletion: true }
      const p = ok(m.create(Pods, "default", pod("a", "n1", { metadata: { ownerReferences: [owner] } })))
      const body = structuredClone(p) as { metadata: Record<string, unknown>; spec: Record<string, unknown>; status: Record<string, unknown> }
      body.metadata["annotations"] = { "sandbox.cocoonstack.io/claim-id": "sb_1a2b3c4d5e6f7081" }
      body.metadata["ownerReferences"] = []
      body.spec["nodeName"] = "elsewhere"
      body.status = { phase: "Running", podIP: "10.0.0.5", podIPs: [{ ip: "10.0.0.5" }] }
      const u = ok(m.updateStatus(Pods, "default", "a", body))
      assert.deepStrictEqual(meta(u)["annotations"], { "sandbox.cocoonstack.io/claim-id": "sb_1a2b3c4d5e6f7081" })
      assert.deepStrictEqual(meta(u)["ownerReferences"], [owner])
      assert.strictEqual((u as { spec: { nodeName: string } }).spec.nodeName, "n1")
      assert.strictEqual((u as { status: { phase: string } }).status.phase, "Running")
      assert.strictEqual((u as { status: { qosClass: string } }).status.qosClass, "BestEffort") // kept from storage
    }))

  it.effect("an invalid podIP is 422 Invalid", () =>
    Effect.gen(function*() {
      const m = model()
      const p = ok(m.create(Pods, "default", pod("a", "n1")))
      const body = structuredClone(p) as { status: Record<string, unknown> }
      // podIP alone is synced into podIPs on decoding, and validated there
      const alone = refused(m.updateStatus(Pods, "default", "a", { ...body, status: { phase: "Running", podIP: "abc" } }))
      assert.strictEqual((alone.body as { details: { causes: Array<{ field: string }> } }).details.causes[0].field, "status.podIPs[0]")
      // when podIP and podIPs[0] disagree, podIP wins
      const wins = ok(m.updateStatus(Pods, "default", "a", { ...body, status: { phase: "Running", podIP: "10.0.0.1", podIPs: [{ ip: "bad" }] } }))
      assert.deepStrictEqual((wins as { status: { podIPs: unknown } }).status.podIPs, [{ ip: "10.0.0.1" }])
      delete (body as unknown as { metadata: Record<string, unknown> }).metadata["resourceVersion"] // unconditional: pods allow it
      body.status = { phase: "Running", podIPs: [{ ip: "10.0.0.5:7777" }] }
      const e = refused(m.updateStatus(Pods, "default", "a", body))
      assert.deepStrictEqual(e.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "Pod \"a\" is invalid: status.podIPs[0]: Invalid value: \"10.0.0.5:7777\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        reason: "Invalid",
        details: {
          name: "a",
          kind: "Pod",
          causes: [{
            reason: "FieldValueInvalid",
            message: "Invalid value: \"10.0.0.5:7777\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            field: "status.podIPs[0]"
          }]
        },
        code: 422
      })
    }))

  it.effect("a status write carrying another uid is a precondition conflict", () =>
    Effect.gen(function*() {
      const m = model()
      const p = ok(m.create(Pods, "default", pod("a", "n1")))
      const body = structuredClone(p) as { metadata: Record<string, unknown> }
      body.metadata["uid"] = "old-uid"
      body.metadata["resourceVersion"] = "1" // stale too: the uid precondition is checked first
      const e = refused(m.updateStatus(Pods, "default", "a", body))
      assert.strictEqual(e.code, 409)
      assert.match(e.message, /Precondition failed: UID in precondition: old-uid/)
    }))
})

describe("ClusterModel: nodes/status strategic merge patch", () => {
  it.effect("conditions merge by type: a condition written by another client survives", () =>
    Effect.gen(function*() {
      const m = model()
      ok(m.create(Nodes, "", node("n1")))
      ok(m.patch(Nodes, "", "n1", "strategic", { status: { conditions: [{ type: "NetworkUnavailable", status: "False", reason: "NPD" }] } }, { subresource: "status" }))
      const r = ok(m.patch(Nodes, "", "n1", "strategic", {
        metadata: { labels: { extra: "1" } },
        spec: { unschedulable: true },
        status: {
          "$setElementOrder/conditions": [{ type: "Ready" }, { type: "MemoryPressure" }],
          conditions: [{ type: "Ready", status: "True", lastHeartbeatTime: "2026-07-27T02:01:00Z" }, { type: "MemoryPressure", "$patch": "delete" }],
          addresses: [{ "$patch": "replace" }, { type: "InternalIP", address: "10.0.0.9" }]
        }
      }, { subresource: "status" }))
      const n = r.object as { spec: Record<string, unknown>; status: { conditions: Array<Record<string, unknown>>; addresses: unknown } }
      assert.deepStrictEqual(n.status.conditions.map((c) => c["type"]), ["Ready", "NetworkUnavailable"])
      assert.strictEqual(n.status.conditions[0]["reason"], "KubeletReady")
      assert.strictEqual(n.status.conditions[0]["lastHeartbeatTime"], "2026-07-27T02:01:00Z")
      assert.deepStrictEqual(n.status.addresses, [{ type: "InternalIP", address: "10.0.0.9" }])
      assert.deepStrictEqual(meta(n)["labels"], { type: "virtual-kubelet", extra: "1" })
      assert.strictEqual(n.spec["unschedulable"], undefined) // nodes/status keeps the stored spec
    }))

  it.effect("with nodeNotReadyTaint, a new node is tainted not-ready until its Ready condition is True", () =>
    Effect.gen(function*() {
      const m = model({ nodeNotReadyTaint: true })
      const n = node("n1")
      ;(n["status"] as { conditions: Array<Record<string, string>> }).conditions[0]["status"] = "False"
      const created = ok(m.create(Nodes, "", n)) as { spec: { taints: Array<{ key: string }> } }
      assert.deepStrictEqual(created.spec.taints.map((t) => t.key), ["virtual-kubelet.io/provider", "node.kubernetes.io/not-ready"])
      ok(m.patch(Nodes, "", "n1", "strategic", { status: { conditions: [{ type: "Ready", status: "True" }] } }, { subresource: "status" }))
      const after = m.peek(Nodes, "", "n1") as { spec: { taints: Array<{ key: string }> } }
      assert.deepStrictEqual(after.spec.taints.map((t) => t.key), ["virtual-kubelet.io/provider"])
    }))

  it.effect("a JSON patch body that is not an array is 400; a merge patch replaces the conditions list", () =>
    Effect.gen(function*() {
      const m = model()
      ok(m.create(Nodes, "", node("n1")))
      const e = refused(m.patch(Nodes, "", "n1", "json", { status: {} }, { subresource: "status" }))
      assert.strictEqual(e.code, 400)
      assert.strictEqual(e.message, "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp")
      const r = ok(m.patch(Nodes, "", "n1", "merge", { status: { conditions: [{ type: "Ready", status: "False" }] } }, { subresource: "status" }))
      assert.strictEqual((r.object as { status: { conditions: Array<unknown> } }).status.conditions.length, 1)
      const j = ok(m.patch(Nodes, "", "n1", "json", [{ op: "replace", path: "/status/conditions/0/status", value: "True" }], { subresource: "status" }))
      assert.strictEqual((j.object as { status: { conditions: Array<{ status: string }> } }).status.conditions[0].status, "True")
    }))
})

describe("ClusterModel: leases and events", () => {
  it.effect("renewTime must carry exactly six fractional digits (400 otherwise)", () =>
    Effect.gen(function*() {
      const m = model()
      const lease = (renewTime: string) => ({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "n1" },
        spec: { holderIdentity: "n1", leaseDurationSeconds: 40, renewTime }
      })
      const e = refused(m.create(Leases, "kube-node-lease", lease("2026-01-01T00:00:00.123Z")))
      assert.strictEqual(e.code, 400)
      assert.strictEqual(e.reason, "BadRequest")
      assert.strictEqual(
        e.message,
        "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"2026-01-01T00:00:00.123Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \".123Z\" as \".000000\""
      )
      assert.strictEqual(refused(m.create(Leases, "kube-node-lease", lease("2026-01-01T00:00:00Z"))).code, 400)
      assert.strictEqual(refused(m.create(Leases, "kube-node-lease", lease("2026-01-01T00:00:00.1234567Z"))).code, 400)
      const zero = { ...lease("2026-01-01T00:00:00.123000Z"), spec: { holderIdentity: "n1", leaseDurationSeconds: 0 } }
      assert.strictEqual(refused(m.create(Leases, "kube-node-lease", zero)).message, "Lease.coordination.k8s.io \"n1\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0")
      const l = ok(m.create(Leases, "kube-node-lease", lease("2026-01-01T00:00:00.123000Z")))
      const renewed = structuredClone(l) as { spec: Record<string, unknown> }
      renewed.spec["renewTime"] = "2026-01-01T00:00:10.000000+00:00"
      ok(m.update(Leases, "kube-node-lease", "n1", renewed))
      const blind = structuredClone(renewed) as unknown as { metadata: Record<string, unknown> }
      delete blind.metadata["resourceVersion"]
      const noRv = refused(m.update(Leases, "kube-node-lease", "n1", blind))
      assert.strictEqual(noRv.code, 422) // the lease strategy refuses an unconditional update
      assert.strictEqual(noRv.message, "leases.coordination.k8s.io \"n1\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update")
      // a PUT of a missing lease creates it (AllowCreateOnUpdate)
      const made = ok(m.update(Leases, "kube-node-lease", "n2", { ...lease("2026-01-01T00:00:00.000000Z"), metadata: { name: "n2", resourceVersion: "999" } }))
      assert.match(String(meta(made)["uid"]), /^[0-9a-f-]{36}$/)
      // ... unless the body carries a uid: that precondition fails against the missing object
      const gone = refused(m.update(Leases, "kube-node-lease", "n3", { ...lease("2026-01-01T00:00:00.000000Z"), metadata: { name: "n3", uid: "old-uid", resourceVersion: "7" } }))
      assert.strictEqual(gone.code, 409)
      assert.strictEqual(
        gone.message,
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"n3\": StorageError: invalid object, Code: 4, Key: /registry/leases/kube-node-lease/n3, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: old-uid, UID in object meta: "
      )
      const stale = refused(m.update(Leases, "kube-node-lease", "n1", renewed))
      assert.strictEqual(stale.code, 409)
      assert.strictEqual(stale.message.startsWith("Operation cannot be fulfilled on leases.coordination.k8s.io \"n1\""), true)
      assert.deepStrictEqual((stale.body as { details: unknown }).details, { name: "n1", group: "coordination.k8s.io", kind: "leases" })
    }))

  it.effect("events are created and listed in both groups", () =>
    Effect.gen(function*() {
      const m = model()
      ok(m.create(CoreEvents, "default", { metadata: { name: "a.1" }, involvedObject: { kind: "Pod", name: "a" }, reason: "ProviderCreateSuccess", type: "Normal" }))
      ok(m.create(EventsV1, "default", { metadata: { name: "a.2" }, eventTime: "2026-01-01T00:00:00.000000Z", reason: "X", action: "Y", reportingController: "vk", reportingInstance: "vk-1", type: "Normal" }))
      const core = ok(m.list(CoreEvents, "default", { fieldSelector: "involvedObject.name=a,reason=ProviderCreateSuccess" }))
      assert.strictEqual((core as { items: Array<unknown> }).items.length, 1)
      const v1 = ok(m.list(EventsV1, undefined))
      assert.strictEqual((v1 as { items: Array<unknown>; apiVersion: string }).apiVersion, "events.k8s.io/v1")
      assert.strictEqual((v1 as { items: Array<unknown> }).items.length, 1)
      assert.strictEqual(refused(m.create(EventsV1, "default", { metadata: { name: "bad" }, eventTime: "2026-01-01T00:00:00Z" })).code, 400)
      const strict = refused(m.create(EventsV1, "default", { metadata: { name: "thin" }, eventTime: "2026-01-01T00:00:00.000000Z", reason: "X", type: "Info" }))
      assert.strictEqual(strict.code, 422)
      assert.deepStrictEqual(
        (strict.body as { details: { causes: Array<{ field: string }> } }).details.causes.map((c) => c.field),
        ["reportingController", "reportingInstance", "action", "type"]
      )
    }))
})

describe("ClusterModel: custom resources", () => {
  const sandbox = (finalizers: Array<string>) => ({
    apiVersion: "agents.x-k8s.io/v1beta1",
    kind: "Sandbox",
    metadata: { name: "review-bot-7f3k2", finalizers },
    spec: { operatingMode: "Running", podTemplate: { spec: { containers: [{ name: "agent", image: "x" }] } } }
  })

  it.effect("a DELETE with finalizers sets deletionTimestamp; clearing the last finalizer removes the object", () =>
    Effect.gen(function*() {
      const c = clock()
      const m = model({ now: c.now })
      ok(m.create(Namespaces, "", { metadata: { name: "team-a" } }))
      ok(m.create(Sandboxes, "team-a", sandbox(["agents.x-k8s.io/cleanup", "other/x"])))
      const rec = recorder()
      ok(m.watch(Sandboxes, "team-a", { resourceVersion: m.resourceVersion }, rec.sink))
      const d = ok(m.delete(Sandboxes, "team-a", "review-bot-7f3k2"))
      assert.strictEqual(d._tag, "Pending")
      assert.strictEqual(meta(d.object)["deletionTimestamp"], "2026-07-27T02:00:00Z")
      assert.strictEqual(meta(d.object)["deletionGracePeriodSeconds"], 0)
      const got = ok(m.get(Sandboxes, "team-a", "review-bot-7f3k2"))
      // no new finalizers while deleting
      const add = structuredClone(got) as { metadata: Record<string, unknown> }
      add.metadata["finalizers"] = ["agents.x-k8s.io/cleanup", "other/x", "new/y"]
      assert.strictEqual(refused(m.update(Sandboxes, "team-a", "review-bot-7f3k2", add)).code, 422)
      const one = structuredClone(got) as { metadata: Record<string, unknown> }
      one.metadata["finalizers"] = ["other/x"]
      const kept = ok(m.update(Sandboxes, "team-a", "review-bot-7f3k2", one))
      assert.strictEqual(meta(kept)["deletionTimestamp"], "2026-07-27T02:00:00Z")
      const none = structuredClone(kept) as { metadata: Record<string, unknown> }
      none.metadata["finalizers"] = []
      ok(m.update(Sandboxes, "team-a", "review-bot-7f3k2", none))
      assert.deepStrictEqual(rec.summary(), ["MODIFIED review-bot-7f3k2", "MODIFIED review-bot-7f3k2", "DELETED review-bot-7f3k2"])
      const e = refused(m.get(Sandboxes, "team-a", "review-bot-7f3k2"))
      assert.deepStrictEqual(e.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "sandboxes.agents.x-k8s.io \"review-bot-7f3k2\" not found",
        reason: "NotFound",
        details: { name: "review-bot-7f3k2", group: "agents.x-k8s.io", kind: "sandboxes" },
        code: 404
      })
    }))

  it.effect("collectGarbage deletes a pod whose Sandbox owner is gone (gracefully, as it is bound)", () =>
    Effect.gen(function*() {
      const m = model()
      const sb = ok(m.create(Sandboxes, "default", sandbox([])))
      const ref = { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", name: "review-bot-7f3k2", uid: meta(sb)["uid"], controller: true, blockOwnerDeletion: true }
      ok(m.create(Pods, "default", pod("review-bot-7f3k2", "n1", { metadata: { ownerReferences: [ref] } })))
      ok(m.create(Pods, "default", pod("foreign", "n1", { metadata: { ownerReferences: [{ apiVersion: "x.io/v1", kind: "Thing", name: "t", uid: "u" }] } })))
      assert.deepStrictEqual(m.collectGarbage(), [])
      ok(m.delete(Sandboxes, "default", "review-bot-7f3k2"))
      assert.deepStrictEqual(m.collectGarbage(), ["pods/default/review-bot-7f3k2"])
      assert.strictEqual(meta(m.peek(Pods, "default", "review-bot-7f3k2"))["deletionGracePeriodSeconds"], 30)
      assert.isDefined(m.peek(Pods, "default", "foreign"))
    }))

  it.effect("a DELETE without finalizers answers a Success Status with the uid", () =>
    Effect.gen(function*() {
      const m = model()
      const s = ok(m.create(Sandboxes, "default", sandbox([])))
      const d = ok(m.delete(Sandboxes, "default", "review-bot-7f3k2"))
      assert.strictEqual(d._tag, "Deleted")
      if (d._tag === "Deleted") {
        assert.deepStrictEqual(d.body, {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Success",
          details: { name: "review-bot-7f3k2", group: "agents.x-k8s.io", kind: "sandboxes", uid: meta(s)["uid"] as string }
        })
      }
    }))

  const inventory = (entries: Array<Record<string, unknown>>, address = "10.0.0.5:7777") => ({
    apiVersion: "extensions.agents.x-k8s.io/v1beta1",
    kind: "NodeInventory",
    metadata: { name: "node1-sandboxd", creationTimestamp: null },
    node: "node1-sandboxd",
    entries,
    address,
    pools: [{ template: "base:24.04", net: "none", size: "small", warm: 4, target: 4 }]
  })

  it.effect("server-side apply creates, then replaces the manager's fields; lists are atomic", () =>
    Effect.gen(function*() {
      const m = model()
      const e1 = { name: "sb_1", id: "sb_1", phase: "Running", claimRef: "sb_1" }
      const e2 = { name: "team-a/x", id: "sb_2", phase: "Hibernated", claimRef: "team-a/x", addr: "10.0.0.5:7777" }
      const first = ok(m.patch(NodeInventories, "", "node1-sandboxd", "apply", inventory([e1, e2]), { fieldManager: "vk-sandbox", force: true }))
      assert.isTrue(first.created)
      const mf = meta(first.object)["managedFields"] as Array<Record<string, unknown>>
      assert.strictEqual(mf.length, 1)
      assert.strictEqual(mf[0]["manager"], "vk-sandbox")
      assert.strictEqual(mf[0]["operation"], "Apply")
      assert.deepStrictEqual(mf[0]["fieldsV1"], { "f:address": {}, "f:entries": {}, "f:node": {}, "f:pools": {} })
      assert.strictEqual(meta(first.object)["generation"], 1)
      assert.match(String(meta(first.object)["creationTimestamp"]), /Z$/)
      const second = ok(m.patch(NodeInventories, "", "node1-sandboxd", "apply", { ...inventory([e2]), pools: undefined }, { fieldManager: "vk-sandbox", force: true }))
      assert.isFalse(second.created)
      const o = second.object as Record<string, unknown>
      assert.deepStrictEqual(o["entries"], [e2])
      assert.strictEqual(o["pools"], undefined) // the manager stopped applying pools: removed
      assert.strictEqual(meta(o)["generation"], 2)
      assert.strictEqual(meta(o)["uid"], meta(first.object)["uid"])
      // the same apply again is a no-op
      const third = ok(m.patch(NodeInventories, "", "node1-sandboxd", "apply", { ...inventory([e2]), pools: undefined }, { fieldManager: "vk-sandbox", force: true }))
      assert.strictEqual(meta(third.object)["resourceVersion"], meta(o)["resourceVersion"])
    }))

  it.effect("server-side apply: fieldManager required; another manager's field conflicts unless forced", () =>
    Effect.gen(function*() {
      const m = model()
      const missing = refused(m.patch(NodeInventories, "", "node1-sandboxd", "apply", inventory([]), {}))
      assert.deepStrictEqual(missing.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        reason: "Invalid",
        details: {
          group: "meta.k8s.io",
          kind: "PatchOptions",
          causes: [{ reason: "FieldValueRequired", message: "Required value: is required for apply patch", field: "fieldManager" }]
        },
        code: 422
      })
      ok(m.patch(NodeInventories, "", "node1-sandboxd", "apply", inventory([]), { fieldManager: "vk-sandbox" }))
      const c = refused(m.patch(NodeInventories, "", "node1-sandboxd", "apply", inventory([], "10.9.9.9:1"), { fieldManager: "intruder" }))
      assert.strictEqual(c.code, 409)
      assert.strictEqual(c.message, "Apply failed with 1 conflict: conflict with \"vk-sandbox\": .address")
      const two = refused(m.patch(NodeInventories, "", "node1-sandboxd", "apply", { ...inventory([], "10.9.9.9:1"), node: "other" }, { fieldManager: "intruder" }))
      assert.strictEqual(two.message, "Apply failed with 2 conflicts: conflicts with \"vk-sandbox\":\n- .address\n- .node")
      const f = ok(m.patch(NodeInventories, "", "node1-sandboxd", "apply", { apiVersion: "extensions.agents.x-k8s.io/v1beta1", kind: "NodeInventory", metadata: { name: "node1-sandboxd" }, address: "10.9.9.9:1" }, { fieldManager: "intruder", force: true }))
      assert.strictEqual((f.object as { address: string }).address, "10.9.9.9:1")
      const managers = (meta(f.object)["managedFields"] as Array<{ manager: string; fieldsV1: Record<string, unknown> }>)
      assert.deepStrictEqual(managers.map((x) => [x.manager, Object.keys(x.fieldsV1)]), [["vk-sandbox", ["f:entries", "f:node", "f:pools"]], ["intruder", ["f:address"]]])
    }))
})

describe("ClusterModel: RBAC deny list", () => {
  it.effect("a denied verb is 403 Forbidden, worded like the authorizer", () =>
    Effect.gen(function*() {
      const m = model({ user: "system:serviceaccount:vk:vk" })
      ok(m.create(Pods, "default", pod("a", "n1")))
      m.deny({ verb: "delete", resource: "pods" })
      m.deny({ verb: "list", resource: "pods" })
      const e = refused(m.delete(Pods, "default", "a", { gracePeriodSeconds: 0 }))
      assert.deepStrictEqual(e.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "pods \"a\" is forbidden: User \"system:serviceaccount:vk:vk\" cannot delete resource \"pods\" in API group \"\" in the namespace \"default\"",
        reason: "Forbidden",
        details: { name: "a", kind: "pods" },
        code: 403
      })
      const l = refused(m.list(Pods, undefined))
      assert.strictEqual(l.message, "pods is forbidden: User \"system:serviceaccount:vk:vk\" cannot list resource \"pods\" in API group \"\" at the cluster scope")
      m.clearDenies()
      ok(m.list(Pods, undefined))
    }))
})
