import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Result } from "effect"
import * as http from "node:http"
import { ClusterModel, type ModelOptions } from "../../../../testkit/Simulators/Apiserver/Model.ts"
import { Pods } from "../../../../testkit/Simulators/Apiserver/Resources.ts"
import type { JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"
import { type Later, serve } from "../../../../testkit/Simulators/Apiserver/Server.ts"
import { manualTimers } from "../../../support/Receipts.ts"
import { eventually } from "../../../support/Wait.ts"
import { meta, node, pod } from "./fixtures.ts"
import { openWatch, request } from "./http.ts"

const start = (options: ModelOptions = {}, later?: Later) =>
  Effect.gen(function*() {
    const model = new ClusterModel(options)
    const server = yield* serve(model, { token: "t0ken", bookmarkIntervalMs: 0, ...(later === undefined ? {} : { later }) })
    return { model, url: server.url, server }
  })

const notFoundBody = (message: string, details: Record<string, unknown>) => ({
  kind: "Status",
  apiVersion: "v1",
  metadata: {},
  status: "Failure",
  message,
  reason: "NotFound",
  details,
  code: 404
})

describe("apiserver over HTTP: routing, discovery and Status bodies", () => {
  it.effect("discovery documents for /api, /apis and each group/version", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      const api = yield* request(`${url}/api`)
      assert.deepStrictEqual((api.json as { versions: Array<string> }).versions, ["v1"])
      const v1 = (yield* request(`${url}/api/v1`)).json as { groupVersion: string; resources: Array<{ name: string; namespaced: boolean }> }
      assert.strictEqual(v1.groupVersion, "v1")
      const names = v1.resources.map((r) => r.name)
      for (const n of ["pods", "pods/status", "nodes", "nodes/status", "namespaces", "events"]) assert.include(names, n)
      const groups = (yield* request(`${url}/apis`)).json as { groups: Array<{ name: string }> }
      assert.deepStrictEqual(groups.groups.map((g) => g.name).sort(), [
        "agents.x-k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "extensions.agents.x-k8s.io"
      ])
      const inv = (yield* request(`${url}/apis/extensions.agents.x-k8s.io/v1beta1`)).json as { resources: Array<unknown> }
      assert.deepStrictEqual(inv.resources, [{ name: "nodeinventories", singularName: "nodeinventory", namespaced: false, kind: "NodeInventory", verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"] }])
    }))

  it.effect("object-level 404 carries details.name/group/kind; endpoint-level 404 has empty details; unknown group is plain text", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      const p = yield* request(`${url}/api/v1/namespaces/default/pods/x`)
      assert.strictEqual(p.status, 404)
      assert.strictEqual(p.contentType, "application/json")
      assert.strictEqual(p.text, JSON.stringify(notFoundBody("pods \"x\" not found", { name: "x", kind: "pods" })))
      const sb = yield* request(`${url}/apis/agents.x-k8s.io/v1beta1/namespaces/team-a/sandboxes/review-bot-7f3k2`)
      assert.strictEqual(
        sb.text,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"sandboxes.agents.x-k8s.io \\\"review-bot-7f3k2\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"review-bot-7f3k2\",\"group\":\"agents.x-k8s.io\",\"kind\":\"sandboxes\"},\"code\":404}"
      )
      // a custom-resource group passes an unknown resource to the not-found handler (plain text) ...
      const unknownCr = yield* request(`${url}/apis/agents.x-k8s.io/v1beta1/namespaces/team-a/widgets/w`)
      assert.strictEqual(unknownCr.status, 404)
      assert.strictEqual(unknownCr.text, "404 page not found\n")
      // ... and answers an unknown subresource of its own resource with the object-level NotFound
      const scale = yield* request(`${url}/apis/agents.x-k8s.io/v1beta1/namespaces/team-a/sandboxes/sb/scale`)
      assert.deepStrictEqual(scale.json, notFoundBody("sandboxes.agents.x-k8s.io \"sb\" not found", { name: "sb", group: "agents.x-k8s.io", kind: "sandboxes" }))
      // a built-in group answers with a Status whose details are empty
      const unknownResource = yield* request(`${url}/apis/coordination.k8s.io/v1/namespaces/team-a/widgets/w`)
      assert.strictEqual(unknownResource.status, 404)
      assert.deepStrictEqual(unknownResource.json, notFoundBody("the server could not find the requested resource", {}))
      const coreUnknown = yield* request(`${url}/api/v1/foos`)
      assert.deepStrictEqual(coreUnknown.json, notFoundBody("the server could not find the requested resource", {}))
      const unknownGroup = yield* request(`${url}/apis/widgets.example.com/v1/namespaces/x/widgets/w`)
      assert.strictEqual(unknownGroup.status, 404)
      assert.strictEqual(unknownGroup.text, "404 page not found\n")
      assert.match(unknownGroup.contentType, /^text\/plain/)
    }))

  it.effect("405 for a method the path does not take; 400 for a body that is not JSON", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      const post = yield* request(`${url}/api/v1/pods`, { method: "POST", body: pod("a") })
      assert.strictEqual(post.status, 405)
      assert.deepStrictEqual(post.json, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "the server does not allow this method on the requested resource",
        reason: "MethodNotAllowed",
        details: {},
        code: 405
      })
      const yamlPod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: from-yaml\nspec:\n  containers:\n  - {name: c, image: i}\n"
      const created = yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", contentType: "application/yaml", rawBody: yamlPod })
      assert.strictEqual(created.status, 201)
      const bad = yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", rawBody: "{not json" })
      assert.strictEqual(bad.status, 400)
      assert.strictEqual((bad.json as { reason: string }).reason, "BadRequest")
    }))

  it.effect("a request without the token is 401 Unauthorized", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      const r = yield* request(`${url}/api/v1/pods`, { token: null })
      assert.strictEqual(r.status, 401)
      assert.deepStrictEqual(r.json, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: "Unauthorized", reason: "Unauthorized", code: 401 })
    }))

  it.effect("create is 201; a stale PUT is 409; namespace admission answers 404", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      const created = yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("a", "n1") })
      assert.strictEqual(created.status, 201)
      const body = created.json as { metadata: Record<string, unknown> }
      body.metadata["labels"] = { a: "1" }
      const put = yield* request(`${url}/api/v1/namespaces/default/pods/a`, { method: "PUT", body })
      assert.strictEqual(put.status, 200)
      const stale = yield* request(`${url}/api/v1/namespaces/default/pods/a`, { method: "PUT", body })
      assert.strictEqual(stale.status, 409)
      assert.strictEqual((stale.json as { reason: string }).reason, "Conflict")
      const missingNs = yield* request(`${url}/api/v1/namespaces/ghost/pods`, { method: "POST", body: pod("a") })
      assert.strictEqual(missingNs.status, 404)
      assert.deepStrictEqual(missingNs.json, notFoundBody("namespaces \"ghost\" not found", { name: "ghost", kind: "namespaces" }))
      const list = yield* request(`${url}/api/v1/pods?fieldSelector=${encodeURIComponent("spec.nodeName=n1")}`)
      assert.strictEqual((list.json as { items: Array<unknown> }).items.length, 1)
      yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("b", "n1") })
      const page = (yield* request(`${url}/api/v1/pods?limit=1`)).json as { metadata: { continue: string }; items: Array<{ metadata: { name: string } }> }
      assert.deepStrictEqual(page.items.map((i) => i.metadata.name), ["a"])
      const next = (yield* request(`${url}/api/v1/pods?limit=1&continue=${page.metadata.continue}`)).json as typeof page
      assert.deepStrictEqual(next.items.map((i) => i.metadata.name), ["b"])
    }))

  it.effect("pods/status PUT: the annotation lands, spec does not; a bad hostIP is 422", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      const created = (yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("a", "n1") })).json as Record<string, Record<string, unknown>>
      created.metadata["annotations"] = { "sandbox.cocoonstack.io/claim-id": "sb_1" }
      created.spec["nodeName"] = "n2"
      created.status = { phase: "Running", podIP: "10.0.0.5" }
      const ok = yield* request(`${url}/api/v1/namespaces/default/pods/a/status`, { method: "PUT", body: created })
      assert.strictEqual(ok.status, 200)
      const got = ok.json as Record<string, Record<string, unknown>>
      assert.deepStrictEqual(got.metadata["annotations"], { "sandbox.cocoonstack.io/claim-id": "sb_1" })
      assert.strictEqual(got.spec["nodeName"], "n1")
      got.status = { phase: "Running", hostIPs: [{ ip: "not-an-ip" }] }
      const bad = yield* request(`${url}/api/v1/namespaces/default/pods/a/status`, { method: "PUT", body: got })
      assert.strictEqual(bad.status, 422)
      assert.strictEqual((bad.json as { reason: string }).reason, "Invalid")
      // hostIPs must start with hostIP, and each must be an IP (both reported, as kube-apiserver v1.37.2 does)
      assert.deepStrictEqual((bad.json as { details: { causes: Array<{ field: string }> } }).details.causes.map((c) => c.field), ["status.hostIPs[0].ip", "status.hostIPs[0]"])
    }))

  it.effect("DELETE with a grace period marks a bound pod; grace 0 with the wrong uid is 409, with the right uid 200", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      const created = (yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("a", "n1") })).json
      const uid = String(meta(created)["uid"])
      const graceful = yield* request(`${url}/api/v1/namespaces/default/pods/a`, { method: "DELETE", body: { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 30 } })
      assert.strictEqual(graceful.status, 200)
      assert.strictEqual(meta(graceful.json)["deletionGracePeriodSeconds"], 30)
      assert.isString(meta(graceful.json)["deletionTimestamp"])
      const wrong = yield* request(`${url}/api/v1/namespaces/default/pods/a`, {
        method: "DELETE",
        body: { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 0, preconditions: { uid: "not-it" } }
      })
      assert.strictEqual(wrong.status, 409)
      assert.strictEqual(
        (wrong.json as { message: string }).message,
        `Operation cannot be fulfilled on Pod "a": the UID in the precondition (not-it) does not match the UID in record (${uid}). The object might have been deleted and then recreated`
      )
      const right = yield* request(`${url}/api/v1/namespaces/default/pods/a`, {
        method: "DELETE",
        body: { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 0, preconditions: { uid } }
      })
      assert.strictEqual(right.status, 200)
      assert.strictEqual(meta(right.json)["uid"], uid)
      assert.strictEqual((yield* request(`${url}/api/v1/namespaces/default/pods/a`)).status, 404)
      const again = yield* request(`${url}/api/v1/namespaces/default/pods/a`, { method: "DELETE" })
      assert.strictEqual(again.status, 404)
    }))

  it.effect("nodes/status: strategic merge keeps other writers' conditions; JSON-patch with an object body is 400; unknown patch type is 415", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      assert.strictEqual((yield* request(`${url}/api/v1/nodes`, { method: "POST", body: node("n1") })).status, 201)
      const other = yield* request(`${url}/api/v1/nodes/n1/status`, {
        method: "PATCH",
        contentType: "application/strategic-merge-patch+json",
        body: { status: { conditions: [{ type: "KernelDeadlock", status: "False", reason: "KernelHasNoDeadlock" }] } }
      })
      assert.strictEqual(other.status, 200)
      const mine = yield* request(`${url}/api/v1/nodes/n1/status`, {
        method: "PATCH",
        contentType: "application/strategic-merge-patch+json",
        body: { status: { conditions: [{ type: "Ready", status: "True", lastHeartbeatTime: "2026-07-27T02:01:00Z" }] } }
      })
      const types = (mine.json as { status: { conditions: Array<{ type: string }> } }).status.conditions.map((c) => c.type)
      assert.deepStrictEqual(types, ["Ready", "MemoryPressure", "KernelDeadlock"])
      const wrong = yield* request(`${url}/api/v1/nodes/n1/status`, {
        method: "PATCH",
        contentType: "application/json-patch+json",
        body: { status: { conditions: [] } }
      })
      assert.strictEqual(wrong.status, 400)
      assert.strictEqual((wrong.json as { reason: string }).reason, "BadRequest")
      const unsupported = yield* request(`${url}/api/v1/nodes/n1/status`, { method: "PATCH", contentType: "text/plain", rawBody: "x" })
      assert.strictEqual(unsupported.status, 415)
      assert.strictEqual((unsupported.json as { reason: string }).reason, "UnsupportedMediaType")
    }))

  it.effect("a lease renewTime with three fractional digits is 400; six are accepted", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      const leases = `${url}/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases`
      const lease = (renewTime: string) => ({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: "n1" }, spec: { holderIdentity: "n1", leaseDurationSeconds: 40, renewTime } })
      const bad = yield* request(leases, { method: "POST", body: lease(new Date(0).toISOString()) })
      assert.strictEqual(bad.status, 400)
      const good = yield* request(leases, { method: "POST", body: lease("1970-01-01T00:00:00.000000Z") })
      assert.strictEqual(good.status, 201)
      const putCreates = yield* request(`${leases}/n2`, { method: "PUT", body: { ...lease("1970-01-01T00:00:00.000000Z"), metadata: { name: "n2" } } })
      assert.strictEqual(putCreates.status, 201)
      const putUpdates = yield* request(`${leases}/n2`, { method: "PUT", body: putCreates.json })
      assert.strictEqual(putUpdates.status, 200)
      const got = yield* request(`${leases}/n1`)
      assert.strictEqual((got.json as { spec: { renewTime: string } }).spec.renewTime, "1970-01-01T00:00:00.000000Z")
    }))

  it.effect("NodeInventory server-side apply over PATCH application/apply-patch+yaml (YAML then JSON body)", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      const path = `${url}/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories/node1-sandboxd`
      const yamlBody = [
        "apiVersion: extensions.agents.x-k8s.io/v1beta1",
        "kind: NodeInventory",
        "metadata:",
        "  name: node1-sandboxd",
        "  creationTimestamp: null",
        "node: node1-sandboxd",
        "address: 10.0.0.5:7777",
        "entries:",
        "- {name: a, id: sb_a, phase: Running, claimRef: a}",
        "- {name: b, id: sb_b, phase: Running, claimRef: b}",
        ""
      ].join("\n")
      const noManager = yield* request(path, { method: "PATCH", contentType: "application/apply-patch+yaml", rawBody: yamlBody })
      assert.strictEqual(noManager.status, 422)
      const first = yield* request(`${path}?fieldManager=vk-sandbox&force=true`, { method: "PATCH", contentType: "application/apply-patch+yaml", rawBody: yamlBody })
      assert.strictEqual(first.status, 201)
      assert.strictEqual((first.json as { entries: Array<unknown> }).entries.length, 2)
      const second = yield* request(`${path}?fieldManager=vk-sandbox&force=true`, {
        method: "PATCH",
        contentType: "application/apply-patch+yaml",
        body: { apiVersion: "extensions.agents.x-k8s.io/v1beta1", kind: "NodeInventory", metadata: { name: "node1-sandboxd", creationTimestamp: null }, node: "node1-sandboxd", address: "10.0.0.5:7777", entries: [{ name: "b", id: "sb_b", phase: "Hibernated", claimRef: "b" }] }
      })
      assert.strictEqual(second.status, 200)
      assert.deepStrictEqual((second.json as { entries: Array<unknown> }).entries, [{ name: "b", id: "sb_b", phase: "Hibernated", claimRef: "b" }])
      const mf = meta(second.json)["managedFields"] as Array<{ manager: string; operation: string }>
      assert.deepStrictEqual(mf.map((e) => [e.manager, e.operation]), [["vk-sandbox", "Apply"]])
    }))

  it.effect("pods/binding sets spec.nodeName once (409 after); DELETE on a collection deletes what the selector picks", () =>
    Effect.gen(function*() {
      const { url } = yield* start()
      yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("a", undefined, { metadata: { labels: { app: "x" } } }) })
      yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("b", undefined, { metadata: { labels: { app: "y" } } }) })
      const binding = { apiVersion: "v1", kind: "Binding", metadata: { name: "a" }, target: { apiVersion: "v1", kind: "Node", name: "n1" } }
      const bound = yield* request(`${url}/api/v1/namespaces/default/pods/a/binding`, { method: "POST", body: binding })
      assert.strictEqual(bound.status, 201)
      assert.deepStrictEqual(bound.json, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 })
      const got = (yield* request(`${url}/api/v1/namespaces/default/pods/a`)).json as { spec: { nodeName: string } }
      assert.strictEqual(got.spec.nodeName, "n1")
      const again = yield* request(`${url}/api/v1/namespaces/default/pods/a/binding`, { method: "POST", body: binding })
      assert.strictEqual(again.status, 409)
      assert.strictEqual((again.json as { message: string }).message, "Operation cannot be fulfilled on pods/binding \"a\": pod a is already assigned to node \"n1\"")
      const dc = yield* request(`${url}/api/v1/namespaces/default/pods?labelSelector=app%3Dy`, { method: "DELETE" })
      assert.strictEqual(dc.status, 200)
      assert.deepStrictEqual((dc.json as { items: Array<{ metadata: { name: string } }> }).items.map((i) => i.metadata.name), ["b"])
      assert.strictEqual((yield* request(`${url}/api/v1/namespaces/default/pods/b`)).status, 404)
      assert.strictEqual((yield* request(`${url}/api/v1/namespaces/default/pods/a`)).status, 200)
    }))

  it.effect("a deny rule answers 403 Forbidden over HTTP", () =>
    Effect.gen(function*() {
      const { model, url } = yield* start()
      model.deny({ verb: "update", resource: "pods/status" })
      yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("a", "n1") })
      const got = (yield* request(`${url}/api/v1/namespaces/default/pods/a`)).json
      const r = yield* request(`${url}/api/v1/namespaces/default/pods/a/status`, { method: "PUT", body: got })
      assert.strictEqual(r.status, 403)
      assert.strictEqual(
        (r.json as { message: string }).message,
        "pods \"a\" is forbidden: User \"system:serviceaccount:vk-sandbox:vk-sandbox\" cannot update resource \"pods/status\" in API group \"\" in the namespace \"default\""
      )
    }))
})

describe("apiserver over HTTP: watch", () => {
  it.effect("watch replays from a resourceVersion, streams changes and bookmarks as JSON lines", () =>
    Effect.gen(function*() {
      const { model, url } = yield* start()
      const a = (yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("a", "n1") })).json
      yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("b", "n1") })
      const w = yield* openWatch(
        `${url}/api/v1/pods?watch=1&fieldSelector=${encodeURIComponent("spec.nodeName=n1")}&resourceVersion=${meta(a)["resourceVersion"]}&allowWatchBookmarks=true`
      )
      assert.strictEqual(w.status, 200)
      const first = yield* w.next()
      assert.isTrue(first !== "end" && first.type === "ADDED" && meta(first.object)["name"] === "b")
      yield* request(`${url}/api/v1/namespaces/default/pods/a`, { method: "DELETE", body: { gracePeriodSeconds: 30 } })
      const modified = yield* w.next()
      assert.isTrue(modified !== "end" && modified.type === "MODIFIED" && meta(modified.object)["deletionTimestamp"] !== undefined)
      model.bookmark()
      const bookmark = yield* w.next()
      assert.isTrue(bookmark !== "end" && bookmark.type === "BOOKMARK")
      if (bookmark !== "end") assert.deepStrictEqual(bookmark.object, { kind: "Pod", apiVersion: "v1", metadata: { resourceVersion: model.resourceVersion, creationTimestamp: null } })
      yield* w.close()
    }))

  it.effect("the server ends a quiet watch after timeoutSeconds, without an event even when bookmarks are allowed", () =>
    Effect.gen(function*() {
      const timers = manualTimers()
      const { model, url } = yield* start({}, timers.later)
      const w = yield* openWatch(`${url}/api/v1/pods?watch=true&timeoutSeconds=1&allowWatchBookmarks=true&resourceVersion=${model.resourceVersion}`)
      // the watch's end waits on one timer of timeoutSeconds, set before its headers went out
      assert.deepStrictEqual(timers.pending(), [1000])
      assert.strictEqual(model.openWatches(), 1)
      assert.isTrue(timers.fire(1000))
      assert.strictEqual(yield* w.next(), "end")
    }))

  it.effect("an expired resourceVersion: 200 and an ERROR 410 event (default), or HTTP 410 (status mode)", () =>
    Effect.gen(function*() {
      const { model, url } = yield* start({ historySize: 1 })
      const a = (yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("a") })).json
      yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("b") })
      yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("c") })
      const w = yield* openWatch(`${url}/api/v1/pods?watch=1&resourceVersion=${meta(a)["resourceVersion"]}`)
      assert.strictEqual(w.status, 200)
      const err = yield* w.next()
      assert.isTrue(err !== "end" && err.type === "ERROR")
      if (err !== "end") {
        assert.strictEqual(err.object["code"], 410)
        assert.strictEqual(err.object["reason"], "Expired")
      }
      assert.strictEqual(yield* w.next(), "end")
      void model

      const strict = yield* start({ historySize: 1, expiredWatchStart: "status" })
      const x = (yield* request(`${strict.url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("x") })).json
      yield* request(`${strict.url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("y") })
      yield* request(`${strict.url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("z") })
      const refused = yield* request(`${strict.url}/api/v1/pods?watch=1&resourceVersion=${meta(x)["resourceVersion"]}`)
      assert.strictEqual(refused.status, 410)
      assert.strictEqual((refused.json as { reason: string }).reason, "Expired")
    }))

  it.effect("an open watch gets ERROR 410 when it falls behind, then the stream ends", () =>
    Effect.gen(function*() {
      const { model, url } = yield* start()
      const w = yield* openWatch(`${url}/api/v1/namespaces/default/pods?watch=1&resourceVersion=${model.resourceVersion}`)
      yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("a") })
      const added = yield* w.next()
      assert.isTrue(added !== "end" && added.type === "ADDED")
      model.expireWatches()
      const err = yield* w.next()
      assert.isTrue(err !== "end" && err.type === "ERROR" && err.object["code"] === 410)
      assert.strictEqual(yield* w.next(), "end")
    }))

  it.effect("faults: a stalled watch delivers nothing until dropped; failure rules answer 5xx; latency delays", () =>
    Effect.gen(function*() {
      const timers = manualTimers()
      const { model, url, server } = yield* start({}, timers.later)
      model.faults.stallWatches = true
      const stalled = yield* openWatch(`${url}/api/v1/pods?watch=1&timeoutSeconds=1`)
      model.faults.stallWatches = false
      yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("a") })
      assert.strictEqual(model.openWatches(), 1)
      assert.deepStrictEqual(timers.pending(), [], "a stalled watch has no timeout to end it")
      model.dropWatches()
      assert.strictEqual(yield* stalled.next(), "end") // no event came before the drop, even past timeoutSeconds' reach

      model.faults.failures.push({ method: "GET", path: "/api/v1/namespaces/default/pods/a", code: 503, times: 1 })
      const failed = yield* request(`${url}/api/v1/namespaces/default/pods/a`)
      assert.strictEqual(failed.status, 503)
      assert.strictEqual((failed.json as { reason: string }).reason, "ServiceUnavailable")
      assert.strictEqual((yield* request(`${url}/api/v1/namespaces/default/pods/a`)).status, 200)

      model.faults.latencyMs = 150
      const delayed = yield* Effect.forkChild(request(`${url}/api/v1/namespaces/default/pods/a`))
      yield* eventually("the request held by the latency", () => server.held() === 1)
      assert.deepStrictEqual(timers.pending(), [150])
      assert.isUndefined(delayed.pollUnsafe(), "no answer before the latency's timer")
      assert.isTrue(timers.fire(150))
      assert.strictEqual((yield* Fiber.join(delayed)).status, 200)
      assert.strictEqual(server.held(), 0)
    }))

  it.effect("resetWatchConnections breaks open watches abruptly and frees their model watchers", () =>
    Effect.gen(function*() {
      const { model, server, url } = yield* start()
      const w = yield* openWatch(`${url}/api/v1/pods?watch=1`)
      assert.strictEqual(model.openWatches(), 1)
      server.resetWatchConnections()
      assert.strictEqual(yield* w.next(), "end")
      assert.strictEqual(model.openWatches(), 0)
    }))

  it.effect("a watch on one namespace sees only that namespace", () =>
    Effect.gen(function*() {
      const { model, url } = yield* start()
      yield* request(`${url}/api/v1/namespaces`, { method: "POST", body: { metadata: { name: "team-a" } } })
      const w = yield* openWatch(`${url}/api/v1/namespaces/team-a/pods?watch=1&resourceVersion=${model.resourceVersion}`)
      yield* request(`${url}/api/v1/namespaces/default/pods`, { method: "POST", body: pod("a") })
      yield* request(`${url}/api/v1/namespaces/team-a/pods`, { method: "POST", body: pod("b") })
      const e = yield* w.next()
      assert.isTrue(e !== "end" && meta(e.object)["name"] === "b" && meta(e.object)["namespace"] === "team-a")
      assert.strictEqual(model.peek(Pods, "default", "a") !== undefined, true)
      yield* w.close()
    }))
})

/** A GET over node:http, for what fetch hides: the headers as sent, and the reply as it arrives. */
const rawGet = (url: string, onResponse: (res: http.IncomingMessage) => void = () => undefined) =>
  Effect.callback<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resume) => {
    const req = http.get(url, { headers: { Authorization: "Bearer t0ken" } }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") })))
      onResponse(res)
    })
    return Effect.sync(() => req.destroy())
  })

/** `n` pods in "default" of about `padding` bytes each, straight into the model. */
const manyPods = (model: ClusterModel, n: number, padding: number) => {
  for (let i = 0; i < n; i++) {
    model.put(Pods, { ...pod(`p-${String(i).padStart(5, "0")}`, "n1"), metadata: { name: `p-${String(i).padStart(5, "0")}`, namespace: "default", annotations: { pad: "x".repeat(padding) } } })
  }
}

/** The model's `listBody` with its items counted as they are rendered (and a failure at the `failAt`th). */
const countItems = (model: ClusterModel, failAt?: number) => {
  const counter = { written: 0 }
  const listBody = model.listBody.bind(model)
  model.listBody = (...args) =>
    Result.map(listBody(...args), (body) => ({
      ...body,
      itemBytes: (o: JsonObject) => {
        if (counter.written === failAt) throw new Error("rendering failed")
        counter.written += 1
        return body.itemBytes(o)
      }
    }))
  return counter
}

describe("apiserver over HTTP: list replies", () => {
  it.effect("a body of at most 2048 bytes has a Content-Length; a longer one is chunked, with the same text as the list", () =>
    Effect.gen(function*() {
      const { model, url } = yield* start()
      const empty = yield* rawGet(`${url}/api/v1/namespaces/default/pods`)
      assert.strictEqual(empty.headers["content-length"], String(Buffer.byteLength(empty.text)))
      assert.isUndefined(empty.headers["transfer-encoding"])
      assert.strictEqual(empty.text, JSON.stringify(Result.getOrThrow(model.list(Pods, "default"))))
      manyPods(model, 3, 2500)
      const three = yield* rawGet(`${url}/api/v1/namespaces/default/pods`)
      assert.isAbove(Buffer.byteLength(three.text), 2048)
      assert.strictEqual(three.headers["transfer-encoding"], "chunked")
      assert.isUndefined(three.headers["content-length"])
      assert.strictEqual(three.text, JSON.stringify(Result.getOrThrow(model.list(Pods, "default"))))
      // the same rule for any reply: one object over 2048 bytes is chunked too
      const one = yield* rawGet(`${url}/api/v1/namespaces/default/pods/p-00000`)
      assert.strictEqual(one.headers["transfer-encoding"], "chunked")
      assert.strictEqual(one.text, JSON.stringify(model.peek(Pods, "default", "p-00000")))
    }))

  it.effect("a long list is written in pieces while other requests are answered, and is the state when it was asked for", () =>
    Effect.gen(function*() {
      const { model, url } = yield* start()
      manyPods(model, 2000, 1000)
      const before = JSON.stringify(Result.getOrThrow(model.list(Pods, "default")))
      const counter = countItems(model)
      let writtenWhenAnswered = -1
      const other = Effect.map(rawGet(`${url}/api/v1/namespaces/default/pods/p-00001`), (reply) => {
        writtenWhenAnswered = counter.written
        return reply
      })
      const list = yield* Effect.callback<string>((resume) => {
        const running = Effect.runFork(
          rawGet(`${url}/api/v1/namespaces/default/pods`, () => {
            // once the list's head is here: change and remove listed pods, and ask for another one
            model.put(Pods, { ...pod("p-01999", "n1"), metadata: { name: "p-01999", namespace: "default", labels: { changed: "yes" } } })
            model.remove(Pods, "default", "p-01998")
            Effect.runFork(other)
          }).pipe(Effect.map((reply) => resume(Effect.succeed(reply.text))))
        )
        return Effect.sync(() => Effect.runFork(Fiber.interrupt(running)))
      })
      assert.strictEqual(list, before)
      assert.isAtLeast(counter.written, 2000)
      assert.isAbove(writtenWhenAnswered, 0)
      assert.isBelow(writtenWhenAnswered, 2000)
    }))

  it.effect("a failure before the head is a 500 Status; after it, the reply ends with the 500 Status after what was sent", () =>
    Effect.gen(function*() {
      const { model, url } = yield* start()
      manyPods(model, 500, 1000)
      countItems(model, 0)
      const early = yield* rawGet(`${url}/api/v1/namespaces/default/pods`)
      assert.strictEqual(early.status, 500)
      assert.deepInclude(JSON.parse(early.text), { kind: "Status", code: 500, reason: "InternalError" })
      const { model: model2, url: url2 } = yield* start()
      manyPods(model2, 500, 1000)
      countItems(model2, 300)
      const late = yield* rawGet(`${url2}/api/v1/namespaces/default/pods`)
      assert.strictEqual(late.status, 200)
      const status = late.text.slice(late.text.lastIndexOf(`{"kind":"Status"`))
      assert.deepInclude(JSON.parse(status), { kind: "Status", code: 500, reason: "InternalError" })
      assert.isTrue(late.text.startsWith(`{"kind":"PodList"`))
    }))
})
