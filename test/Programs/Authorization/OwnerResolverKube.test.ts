/**
 * The delete-authorization decision table (AUTH-1 — delete authorization order) through the live
 * KubeApi against the in-memory API server over HTTP: every owner answer is a real response with a
 * real Status body (or the mux's plain-text 404), so the NotFound semantics (AUTH-4 — what counts
 * as gone) are exercised end to end.
 */
import { assert, describe, it } from "@effect/vitest"
import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as OwnerResolverKube from "../../../src/Programs/Authorization/OwnerResolverKube.ts"
import type { DeleteVerdict } from "../../../src/Schemas/DeleteVerdict.ts"
import { OwnerResolver } from "../../../src/Services/OwnerResolver.ts"
import { Sandboxes } from "../../../testkit/Simulators/Apiserver/Resources.ts"
import { ApiserverSim } from "../../../testkit/Simulators/Apiserver/Server.ts"
import * as FaultProxy from "../../support/FaultProxy.ts"
import { eventually } from "../../support/Wait.ts"
import { OwnerProxy, ownerResolverWorld, ownerResolverWorldViaProxy } from "./world.ts"

const SandboxApiVersion = "agents.x-k8s.io/v1beta1"

const podOwnedBy = (ownerReferences: ReadonlyArray<V1OwnerReference>, namespace = "team-a"): V1Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { namespace, name: "web", uid: "pod-uid", ownerReferences: [...ownerReferences] },
  spec: { containers: [{ name: "main", image: "python:3.12" }] }
})

const sandboxRef = (name: string, uid: string): V1OwnerReference => ({
  apiVersion: SandboxApiVersion,
  kind: "Sandbox",
  name,
  uid,
  controller: true
})

const verdictOf = (pod: V1Pod) => OwnerResolver.use((resolver) => resolver.verdictFor(pod))

const expectVerdict = (verdict: DeleteVerdict, tag: DeleteVerdict["_tag"], reason: string) => {
  assert.strictEqual(`${verdict._tag}(${verdict.reason})`, `${tag}(${reason})`, verdict.detail)
}

/** Puts a Sandbox in the model; returns its server-assigned UID. */
const putSandbox = (name: string, extra: Record<string, unknown> = {}, namespace = "team-a") =>
  Effect.map(ApiserverSim, ({ model }) => {
    const stored = model.put(Sandboxes, {
      apiVersion: SandboxApiVersion,
      kind: "Sandbox",
      metadata: { name, namespace, ...extra },
      spec: {}
    })
    return String((stored["metadata"] as { uid: string }).uid)
  })

const deleteSandbox = (name: string, namespace = "team-a") =>
  Effect.map(ApiserverSim, ({ model }) => {
    const outcome = model.delete(Sandboxes, namespace, name)
    assert.strictEqual(outcome._tag, "Success", "the model deleted it")
    return outcome._tag === "Success" ? outcome.success._tag : "refused"
  })

const inWorld = <A, E>(effect: Effect.Effect<A, E, OwnerResolver | ApiserverSim>) =>
  effect.pipe(Effect.provide(ownerResolverWorld(), { local: true }))

describe("AUTH-1 through the live KubeApi against the in-memory apiserver", () => {
  it.effect("owner alive → Preserve(OwnerAlive), also with an empty ref uid", () =>
    inWorld(Effect.gen(function*() {
      const uid = yield* putSandbox("sb")
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)])), "Preserve", "OwnerAlive")
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", "")])), "Preserve", "OwnerAlive")
    })))

  it.effect("owner deleted: an object-level 404 naming it → Release(OwnerGone)", () =>
    inWorld(Effect.gen(function*() {
      const uid = yield* putSandbox("sb")
      assert.strictEqual(yield* deleteSandbox("sb"), "Deleted")
      const verdict = yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)]))
      expectVerdict(verdict, "Release", "OwnerGone")
    })))

  it.effect("the owner lives in another namespace than the Pod: the GET is in the Pod's namespace → gone there", () =>
    inWorld(Effect.gen(function*() {
      const uid = yield* putSandbox("sb", {}, "team-b")
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)], "team-a")), "Release", "OwnerGone")
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)], "team-b")), "Preserve", "OwnerAlive")
    })))

  it.effect("owner deleting (finalizer + deletionTimestamp) → Release(OwnerTerminating)", () =>
    inWorld(Effect.gen(function*() {
      const uid = yield* putSandbox("sb", { finalizers: ["agents.x-k8s.io/teardown"] })
      assert.strictEqual(yield* deleteSandbox("sb"), "Pending", "the finalizer holds it")
      const { model } = yield* ApiserverSim
      const stored = model.peek(Sandboxes, "team-a", "sb")
      assert.isString((stored?.["metadata"] as { deletionTimestamp?: string }).deletionTimestamp)
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)])), "Release", "OwnerTerminating")
    })))

  it.effect("owner recreated with a new UID → Release(OwnerUidRotated)", () =>
    inWorld(Effect.gen(function*() {
      const oldUid = yield* putSandbox("sb")
      yield* deleteSandbox("sb")
      const newUid = yield* putSandbox("sb")
      assert.notStrictEqual(newUid, oldUid)
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", oldUid)])), "Release", "OwnerUidRotated")
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", newUid)])), "Preserve", "OwnerAlive")
    })))

  it.effect("endpoint-level 404s → Preserve(AmbiguousNotFound): an unregistered group, a wrong plural, a bare Status 404", () =>
    inWorld(Effect.gen(function*() {
      const { model } = yield* ApiserverSim
      // an unregistered group: the mux answers the plain-text "404 page not found"
      const widget = { apiVersion: "widgets.example.com/v1", kind: "Widget", name: "w", uid: "w-uid", controller: true }
      expectVerdict(yield* verdictOf(podOwnedBy([widget])), "Preserve", "AmbiguousNotFound")
      // a served group/version, but the guessed plural is wrong (Endpoints → "endpointses"; AUTH-5
      // — pluralising the kind): the server's generic Status 404 names no object
      const endpoints = { apiVersion: "v1", kind: "Endpoints", name: "web", uid: "e-uid", controller: true }
      expectVerdict(yield* verdictOf(podOwnedBy([endpoints])), "Preserve", "AmbiguousNotFound")
      // an unknown kind in the Sandbox group: same shape
      const claim = { apiVersion: SandboxApiVersion, kind: "SandboxClaim", name: "sb", uid: "c-uid", controller: true }
      expectVerdict(yield* verdictOf(podOwnedBy([claim])), "Preserve", "AmbiguousNotFound")
      // a Status 404 without details, on the very path of a real owner (a proxy, an aggregator)
      const uid = yield* putSandbox("sb")
      model.faults.failures.push({ method: "GET", path: "/apis/agents.x-k8s.io/v1beta1/namespaces/team-a/sandboxes/sb", code: 404, times: 1 })
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)])), "Preserve", "AmbiguousNotFound")
      // and the real answer afterwards, so the fault was the cause
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)])), "Preserve", "OwnerAlive")
    })))

  it.effect("403 (RBAC deny) → Preserve(OwnerQueryFailed)", () =>
    inWorld(Effect.gen(function*() {
      const { model } = yield* ApiserverSim
      const uid = yield* putSandbox("sb")
      model.deny({ verb: "get", resource: "sandboxes", group: "agents.x-k8s.io" })
      const verdict = yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)]))
      expectVerdict(verdict, "Preserve", "OwnerQueryFailed")
      assert.include(verdict.detail, "KubeForbidden")
      // a deny on a gone owner still preserves: the 403 comes before any NotFound
      yield* deleteSandbox("sb")
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)])), "Preserve", "OwnerQueryFailed")
    })))

  it.effect("500 → Preserve(OwnerQueryFailed)", () =>
    inWorld(Effect.gen(function*() {
      const { model } = yield* ApiserverSim
      const uid = yield* putSandbox("sb")
      yield* deleteSandbox("sb")
      model.faults.failures.push({ path: "/apis/agents.x-k8s.io/", code: 500 })
      const verdict = yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)]))
      expectVerdict(verdict, "Preserve", "OwnerQueryFailed")
      assert.include(verdict.detail, "KubeUnavailable")
    })))

  it.effect("no answer within the KubeApi call timeout → Preserve(OwnerQueryFailed)", () =>
    inWorld(Effect.gen(function*() {
      const sim = yield* ApiserverSim
      const uid = yield* putSandbox("sb")
      yield* deleteSandbox("sb")
      // the server holds the answer (a real 404 naming the owner) for 0.5 s of real time; the
      // client's 30 s call timeout runs on the TestClock and fires first
      sim.model.faults.latencyMs = 500
      const fiber = yield* Effect.forkChild(verdictOf(podOwnedBy([sandboxRef("sb", uid)])))
      // the server holds the request: the call, and its timeout, have begun
      yield* eventually("the request held by the server", () => sim.held() === 1)
      yield* TestClock.adjust("29 seconds")
      assert.isUndefined(fiber.pollUnsafe(), "not before the timeout")
      yield* TestClock.adjust("2 seconds")
      const verdict = yield* Fiber.join(fiber)
      expectVerdict(verdict, "Preserve", "OwnerQueryFailed")
      assert.include(verdict.detail, "no response within")
    })))

  it.effect("bare Pods, and Pods with only non-controller ownerReferences → Release(BarePod) without any GET", () =>
    inWorld(Effect.gen(function*() {
      const { model } = yield* ApiserverSim
      // counts every request the server gets: a verdict that sent a GET would use one up
      const anyRequest = { path: "/", code: 500, times: 1_000 }
      model.faults.failures.push(anyRequest)
      expectVerdict(yield* verdictOf(podOwnedBy([])), "Release", "BarePod")
      const bare: V1Pod = { metadata: { namespace: "team-a", name: "web", uid: "u" } }
      expectVerdict(yield* verdictOf(bare), "Release", "BarePod")
      const nonController = [
        { ...sandboxRef("sb", "u1"), controller: false },
        { apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "u2" }
      ]
      expectVerdict(yield* verdictOf(podOwnedBy(nonController)), "Release", "BarePod")
      assert.strictEqual(anyRequest.times, 1_000, "no GET")
    })))

  it.effect("a single controller ref decides; non-controller refs beside it are ignored", () =>
    inWorld(Effect.gen(function*() {
      const uid = yield* putSandbox("sb")
      const refs = [
        { apiVersion: "apps/v1", kind: "ReplicaSet", name: "gone-rs", uid: "u2" },
        sandboxRef("sb", uid)
      ]
      expectVerdict(yield* verdictOf(podOwnedBy(refs)), "Preserve", "OwnerAlive")
    })))

  it.effect("two controller refs → Preserve(ConflictingControllers) without any GET, whichever of them is gone", () =>
    inWorld(Effect.gen(function*() {
      const { model } = yield* ApiserverSim
      const alive = yield* putSandbox("alive")
      const gone = yield* putSandbox("gone")
      yield* deleteSandbox("gone")
      const anyRequest = { path: "/", code: 500, times: 1_000 }
      model.faults.failures.push(anyRequest)
      // first gone, second alive: taking the first would release a VM whose other owner lives
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("gone", gone), sandboxRef("alive", alive)])), "Preserve", "ConflictingControllers")
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("alive", alive), sandboxRef("gone", gone)])), "Preserve", "ConflictingControllers")
      // both gone: still no single authority
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("gone", gone), sandboxRef("gone", gone)])), "Preserve", "ConflictingControllers")
      assert.strictEqual(anyRequest.times, 1_000, "no GET")
    })))

  it.effect("malformed ownerReferences (not a list, null entries) never throw: bare, or the one valid controller", () =>
    inWorld(Effect.gen(function*() {
      const uid = yield* putSandbox("sb")
      const notAList = { metadata: { namespace: "team-a", name: "web", uid: "u", ownerReferences: "x" } } as unknown as V1Pod
      expectVerdict(yield* verdictOf(notAList), "Release", "BarePod")
      const withNull = podOwnedBy([null as unknown as V1OwnerReference, sandboxRef("sb", uid)])
      expectVerdict(yield* verdictOf(withNull), "Preserve", "OwnerAlive")
    })))

  it.effect("malformed apiVersion or empty kind → Preserve(UnresolvableOwnerGvr), without any GET", () =>
    inWorld(Effect.gen(function*() {
      const { model } = yield* ApiserverSim
      const anyRequest = { path: "/", code: 500, times: 1_000 }
      model.faults.failures.push(anyRequest)
      for (const ref of [
        { apiVersion: "agents.x-k8s.io/v1beta1/extra", kind: "Sandbox", name: "sb", uid: "u", controller: true },
        { apiVersion: "/v1", kind: "Sandbox", name: "sb", uid: "u", controller: true },
        { apiVersion: SandboxApiVersion, kind: "", name: "sb", uid: "u", controller: true }
      ]) {
        expectVerdict(yield* verdictOf(podOwnedBy([ref])), "Preserve", "UnresolvableOwnerGvr")
      }
      assert.strictEqual(anyRequest.times, 1_000, "no GET")
    })))
})

describe("owner replies that name another object", () => {
  const viaProxy = <A, E>(effect: Effect.Effect<A, E, OwnerResolver | ApiserverSim | OwnerProxy>) =>
    effect.pipe(Effect.provide(ownerResolverWorldViaProxy, { local: true }))
  const renamed = (to: string | undefined) => ({ status, body }: { status: number; body: string }) => {
    const parsed = JSON.parse(body) as { metadata: Record<string, unknown> }
    if (to === undefined) delete parsed.metadata["name"]
    else parsed.metadata["name"] = to
    return { status, body: JSON.stringify(parsed) }
  }

  it.effect("a reply naming another owner (with another uid) → Preserve(OwnerNameMismatch), not OwnerUidRotated", () =>
    viaProxy(Effect.gen(function*() {
      const proxy = yield* OwnerProxy
      const uid = yield* putSandbox("sb")
      const other = yield* putSandbox("other")
      // the proxy answers the GET for "sb" with the object "other"
      proxy.setRule((request) =>
        request.url.includes("/sandboxes/sb")
          ? { _tag: "Rewrite", rewrite: ({ status }) => ({ status, body: JSON.stringify({ apiVersion: SandboxApiVersion, kind: "Sandbox", metadata: { name: "other", namespace: "team-a", uid: other } }) }) }
          : FaultProxy.Pass)
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)])), "Preserve", "OwnerNameMismatch")
      // a reply with the owner's uid but another name, or no name at all: still not evidence
      proxy.setRule(() => ({ _tag: "Rewrite", rewrite: renamed("someone-else") }))
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)])), "Preserve", "OwnerNameMismatch")
      proxy.setRule(() => ({ _tag: "Rewrite", rewrite: renamed(undefined) }))
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)])), "Preserve", "OwnerNameMismatch")
      // and the same request through a clean path decides as usual
      proxy.clear()
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)])), "Preserve", "OwnerAlive")
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", "rotated")])), "Release", "OwnerUidRotated")
    })))

  it.effect("a terminating reply naming another owner → Preserve(OwnerNameMismatch), not OwnerTerminating", () =>
    viaProxy(Effect.gen(function*() {
      const proxy = yield* OwnerProxy
      const uid = yield* putSandbox("sb")
      proxy.setRule(() => ({
        _tag: "Rewrite",
        rewrite: ({ status }) => ({ status, body: JSON.stringify({ metadata: { name: "x", uid, deletionTimestamp: "2026-01-01T00:00:00Z" } }) })
      }))
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", uid)])), "Preserve", "OwnerNameMismatch")
    })))
})

describe("AUTH-1 rule 2: no owner client", () => {
  it.effect("an owned Pod → Preserve(NoOwnerClient); a bare Pod still releases", () =>
    Effect.gen(function*() {
      expectVerdict(yield* verdictOf(podOwnedBy([sandboxRef("sb", "u")])), "Preserve", "NoOwnerClient")
      expectVerdict(yield* verdictOf(podOwnedBy([{ apiVersion: "a/b/c", kind: "", name: "x", uid: "u", controller: true }])), "Preserve", "NoOwnerClient")
      expectVerdict(yield* verdictOf(podOwnedBy([])), "Release", "BarePod")
    }).pipe(Effect.provide(OwnerResolverKube.layerNoClient)))
})
