/**
 * The kubelet port's gate without HTTP: which subresource and verb a request is reviewed for
 * (KAPI-3 — verb and subresource as a kubelet maps them), who a certificate or token names (KAPI-1
 * — who a kubelet API request comes from), the reviews' order and fallback (KAPI-2 — every request
 * but /healthz is authorized for this node), their caches on the TestClock and their bound, a
 * refusal whenever a review fails (KAPI-4 — review answers are cached briefly, a failed review
 * refuses), and a denial logged once per decision while every one is counted (KAPI-6 — a denial is
 * logged once per decision, and every one counted).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Metric } from "effect"
import { TestClock } from "effect/testing"
import { METHODS } from "node:http"
import * as Access from "../../../src/Programs/Kubelet/Access.ts"
import { nodeSubresources, nodeVerb } from "../../../src/Programs/Kubelet/Attributes.ts"
import { bearerToken, type Credentials, type PeerCertificate } from "../../../src/Programs/Kubelet/Authenticate.ts"
import * as ReviewCache from "../../../src/Programs/Kubelet/ReviewCache.ts"
import { matchRoute } from "../../../src/Programs/Kubelet/Routes.ts"
import * as Metrics from "../../../src/Services/Metrics.ts"
import { scriptedReviews, user } from "../../support/KubeletReviews.ts"
import { makeLogCapture } from "../../support/Logs.ts"

const node = "vk-a"

const token = (value: string): Credentials => ({ certificate: undefined, authorization: `Bearer ${value}` })
const certificate = (cert: Partial<PeerCertificate>, authorization?: string): Credentials => ({
  certificate: { verified: true, verifyError: "", commonName: "", organizations: [], ...cert },
  authorization
})
const anonymous: Credentials = { certificate: undefined, authorization: undefined }

/** metrics-server as its role allows it: nodes/metrics and nodes/stats; the apiserver's client: everything. */
const gate = () => {
  const reviews = scriptedReviews({
    tokens: { "ms-token": user("system:serviceaccount:kube-system:metrics-server"), "proxy-token": user("proxy-only") },
    allows: (access) =>
      access.node === node && (
        (access.user.name.endsWith(":metrics-server") && ["metrics", "stats"].includes(access.subresource) && access.verb === "get") ||
        (access.user.name === "proxy-only" && access.subresource === "proxy") ||
        access.user.groups.includes("system:masters")
      )
  })
  return { ...reviews, access: Access.make(reviews.kube, node) }
}

const check = (access: Access.KubeletAccess, method: string, pathname: string, credentials: Credentials) =>
  access.check({ method, pathname, credentials })

const statusOf = (gate: Access.Gate) => gate._tag === "Pass" ? 200 : gate.status

describe("KAPI-3: what a request is reviewed for", () => {
  it("maps paths to node subresources as a kubelet does", () => {
    const table: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
      ["/stats/summary", ["stats"]],
      ["/stats", ["stats"]],
      ["/stats/", ["stats"]],
      ["/statsx", ["proxy"]],
      ["/metrics", ["metrics"]],
      ["/metrics/resource", ["metrics"]],
      ["/metrics/cadvisor", ["metrics"]],
      ["/metricsfoo", ["proxy"]],
      ["/logs", ["log"]],
      ["/logs/syslog", ["log"]],
      ["/checkpoint/ns/pod/c", ["checkpoint"]],
      ["/pods", ["pods", "proxy"]],
      ["/pods/", ["pods", "proxy"]],
      ["/runningpods/", ["pods", "proxy"]],
      ["/configz", ["configz", "proxy"]],
      ["/statusz", ["statusz", "proxy"]],
      ["/spec", ["proxy"]],
      ["/exec/ns/pod/c", ["proxy"]],
      ["/containerLogs/ns/pod/c", ["proxy"]],
      ["/portForward/ns/pod", ["proxy"]],
      ["/", ["proxy"]],
      ["/%73tats/summary", ["proxy"]]
    ]
    for (const [path, subresources] of table) assert.deepStrictEqual(nodeSubresources(path), subresources, path)
  })

  it("maps methods to verbs; others to none", () => {
    const methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "get", "HEAD", "OPTIONS", "CONNECT", "TRACE"]
    assert.deepStrictEqual(methods.map(nodeVerb), ["get", "create", "update", "patch", "delete", "get", undefined, undefined, undefined, undefined])
  })

  it("reads a bearer token as a kubelet does", () => {
    assert.strictEqual(bearerToken("Bearer abc"), "abc")
    assert.strictEqual(bearerToken("bearer abc"), "abc")
    assert.strictEqual(bearerToken("  BEARER abc  "), "abc")
    assert.strictEqual(bearerToken("Bearer abc def"), "abc")
    assert.strictEqual(bearerToken("Bearer"), undefined)
    assert.strictEqual(bearerToken("Bearer  abc"), undefined)
    assert.strictEqual(bearerToken("Basic YWJjOmRlZg=="), undefined)
    assert.strictEqual(bearerToken(undefined), undefined)
  })
})

describe("KAPI-1, KAPI-2: the gate", () => {
  it.effect("the review table: anonymous 401 but /healthz, metrics-server 200 on metrics and stats, 403 on /pods", () =>
    Effect.gen(function*() {
      const { access, log } = gate()
      assert.strictEqual(statusOf(yield* check(access, "GET", "/healthz", anonymous)), 200)
      assert.deepStrictEqual(log.tokens, [], "/healthz asks nothing")
      for (const path of ["/pods", "/stats/summary", "/metrics/resource", "/healthz/", "/healthzx"]) {
        assert.strictEqual(statusOf(yield* check(access, "GET", path, anonymous)), 401, path)
      }
      const ms = token("ms-token")
      assert.strictEqual(statusOf(yield* check(access, "GET", "/metrics/resource", ms)), 200)
      assert.strictEqual(statusOf(yield* check(access, "GET", "/stats/summary", ms)), 200)
      const pods = yield* check(access, "GET", "/pods", ms)
      assert.deepStrictEqual(pods, {
        _tag: "Refuse",
        status: 403,
        body: `403 Forbidden: user "system:serviceaccount:kube-system:metrics-server" may not get nodes/pods or nodes/proxy of node vk-a\n`
      })
      // The verb follows the method: a POST is a create, which the role does not grant.
      assert.strictEqual(statusOf(yield* check(access, "POST", "/stats/summary", ms)), 403)
      assert.deepStrictEqual(log.accesses, [
        "system:serviceaccount:kube-system:metrics-server get nodes/metrics vk-a",
        "system:serviceaccount:kube-system:metrics-server get nodes/stats vk-a",
        "system:serviceaccount:kube-system:metrics-server get nodes/pods vk-a",
        "system:serviceaccount:kube-system:metrics-server get nodes/proxy vk-a",
        "system:serviceaccount:kube-system:metrics-server create nodes/stats vk-a"
      ])
    }))

  it.effect("nodes/proxy still opens /pods; the fallback is asked only after the specific one denied", () =>
    Effect.gen(function*() {
      const { access, log } = gate()
      assert.strictEqual(statusOf(yield* check(access, "GET", "/pods", token("proxy-token"))), 200)
      assert.deepStrictEqual(log.accesses, ["proxy-only get nodes/pods vk-a", "proxy-only get nodes/proxy vk-a"])
      // /stats has no fallback: nodes/proxy does not open it.
      assert.strictEqual(statusOf(yield* check(access, "GET", "/stats/summary", token("proxy-token"))), 403)
    }))

  it("the router serves no method that has no verb, so passing such a request unreviewed opens nothing", () => {
    const paths = [
      "/healthz", "/pods", "/pods/", "/runningpods/", "/stats/summary", "/metrics/resource",
      "/containerLogs/ns/pod/c", "/exec/ns/pod/c", "/attach/ns/pod/c", "/portForward/ns/pod", "/"
    ]
    for (const method of METHODS.filter((m) => nodeVerb(m) === undefined)) {
      for (const path of paths) {
        assert.include(["NotFound", "MethodNotAllowed"], matchRoute(method, path)._tag, `${method} ${path}`)
      }
    }
  })

  it.effect("a method with no verb is left to the router after authentication, unreviewed", () =>
    Effect.gen(function*() {
      const { access, log } = gate()
      assert.strictEqual(statusOf(yield* check(access, "HEAD", "/pods", anonymous)), 401)
      assert.strictEqual(statusOf(yield* check(access, "HEAD", "/pods", token("ms-token"))), 200)
      assert.deepStrictEqual(log.accesses, [])
    }))

  it.effect("a certificate names the user by CN and the groups by O; one not verified is 401 whatever the token", () =>
    Effect.gen(function*() {
      const { access, log } = gate()
      const otherNode = certificate({ commonName: "system:node:vk-b", organizations: ["system:nodes"] })
      assert.strictEqual(statusOf(yield* check(access, "GET", "/pods", otherNode)), 403)
      const admin = certificate({ commonName: "kube-apiserver-kubelet-client", organizations: ["system:masters", "ops"] })
      assert.strictEqual(statusOf(yield* check(access, "GET", "/pods", admin)), 200)
      assert.deepStrictEqual(log.tokens, [], "a certificate needs no TokenReview")

      const seen: Array<ReadonlyArray<string>> = []
      const recording = Access.make({
        reviewToken: () => Effect.die("unused"),
        reviewAccess: (access) => Effect.sync(() => (seen.push(access.user.groups), { allowed: true, reason: "" }))
      }, node)
      yield* check(recording, "GET", "/pods", admin)
      assert.deepStrictEqual(seen, [["system:masters", "ops", "system:authenticated"]])

      const unverified = yield* check(
        access,
        "GET",
        "/pods",
        certificate({ verified: false, verifyError: "UNABLE_TO_VERIFY_LEAF_SIGNATURE", commonName: "admin" }, "Bearer ms-token")
      )
      assert.deepStrictEqual(unverified, {
        _tag: "Refuse",
        status: 401,
        body: "401 Unauthorized: the client certificate is not signed by --client-ca-file (UNABLE_TO_VERIFY_LEAF_SIGNATURE)\n"
      })
      const nameless = yield* check(access, "GET", "/pods", certificate({ organizations: ["system:masters"] }))
      assert.strictEqual(statusOf(nameless), 401)
      assert.deepStrictEqual(log.tokens, [])
    }))
})

describe("KAPI-4: review failures and caches", () => {
  it.effect("an apiserver that does not answer is 503, never a pass, and the failure is not cached", () =>
    Effect.gen(function*() {
      const { access, log } = gate()
      log.failTokens = true
      const noTokenReview = yield* check(access, "GET", "/metrics/resource", token("ms-token"))
      assert.deepStrictEqual(noTokenReview, {
        _tag: "Refuse",
        status: 503,
        body: "503 Service Unavailable: the apiserver did not answer the TokenReview this request needs, " +
          "and nothing is let through without it; retry later\n"
      })
      log.failTokens = false
      log.failAccess = true
      const noAccessReview = yield* check(access, "GET", "/metrics/resource", token("ms-token"))
      assert.strictEqual(statusOf(noAccessReview), 503)
      assert.include(noAccessReview._tag === "Refuse" ? noAccessReview.body : "", "SubjectAccessReview")
      // The fallback's failure refuses too: a denial of nodes/pods then no answer for nodes/proxy.
      assert.strictEqual(statusOf(yield* check(access, "GET", "/pods", token("ms-token"))), 503)
      log.failAccess = false
      assert.strictEqual(statusOf(yield* check(access, "GET", "/metrics/resource", token("ms-token"))), 200)
      // Asked again once the apiserver answered: the failures were not kept.
      assert.deepStrictEqual(log.tokens, ["ms-token", "ms-token"])
      assert.strictEqual(log.accesses.filter((a) => a.endsWith("nodes/metrics vk-a")).length, 2)
    }))

  it.effect("a token's answer is kept 2 minutes when accepted, 30 seconds when rejected", () =>
    Effect.gen(function*() {
      const { access, log } = gate()
      yield* check(access, "GET", "/metrics/resource", token("ms-token"))
      yield* check(access, "GET", "/metrics/resource", token("forged"))
      yield* TestClock.adjust(Duration.seconds(29))
      yield* check(access, "GET", "/metrics/resource", token("ms-token"))
      yield* check(access, "GET", "/metrics/resource", token("forged"))
      assert.deepStrictEqual(log.tokens, ["ms-token", "forged"])
      yield* TestClock.adjust(Duration.seconds(1))
      yield* check(access, "GET", "/metrics/resource", token("forged"))
      assert.deepStrictEqual(log.tokens, ["ms-token", "forged", "forged"])
      yield* TestClock.adjust(Duration.seconds(89))
      yield* check(access, "GET", "/metrics/resource", token("ms-token"))
      assert.strictEqual(log.tokens.length, 3)
      yield* TestClock.adjust(Duration.seconds(1))
      yield* check(access, "GET", "/metrics/resource", token("ms-token"))
      assert.deepStrictEqual(log.tokens, ["ms-token", "forged", "forged", "ms-token"])
    }))

  it.effect("an access answer is kept 5 minutes when allowed, 30 seconds when denied", () =>
    Effect.gen(function*() {
      const { access, log } = gate()
      const ms = token("ms-token")
      const asked = (subresource: string) => log.accesses.filter((a) => a.includes(`nodes/${subresource} `)).length
      yield* check(access, "GET", "/metrics/resource", ms)
      yield* check(access, "GET", "/spec", ms)
      yield* TestClock.adjust(Duration.seconds(29))
      yield* check(access, "GET", "/metrics/cadvisor", ms)
      yield* check(access, "GET", "/spec", ms)
      assert.deepStrictEqual([asked("metrics"), asked("proxy")], [1, 1])
      yield* TestClock.adjust(Duration.seconds(1))
      yield* check(access, "GET", "/spec", ms)
      assert.strictEqual(asked("proxy"), 2)
      yield* TestClock.adjust(Duration.seconds(269))
      yield* check(access, "GET", "/metrics/resource", ms)
      assert.strictEqual(asked("metrics"), 1)
      yield* TestClock.adjust(Duration.seconds(1))
      yield* check(access, "GET", "/metrics/resource", ms)
      assert.strictEqual(asked("metrics"), 2)
    }))

  it.effect("the answers are keyed by everything asked: another user, verb or subresource is another review", () =>
    Effect.gen(function*() {
      const { access, log } = gate()
      yield* check(access, "GET", "/stats/summary", token("ms-token"))
      yield* check(access, "GET", "/stats/summary", token("proxy-token"))
      yield* check(access, "PUT", "/stats/summary", token("ms-token"))
      yield* check(access, "GET", "/metrics", token("ms-token"))
      yield* check(access, "GET", "/stats/summary", token("ms-token"))
      assert.strictEqual(log.accesses.length, 4)
    }))

  it.effect("one user name with other groups, uid or extra is another review: a kept allow opens nothing else", () =>
    Effect.gen(function*() {
      const allowedUser = user("alice", ["ops"], { "example.com/team": ["a"] })
      const reviews = scriptedReviews({
        tokens: {
          allowed: allowedUser,
          otherGroups: user("alice", ["dev"], { "example.com/team": ["a"] }),
          otherUid: { ...allowedUser, uid: "uid-another-alice" },
          otherExtra: user("alice", ["ops"], { "example.com/team": ["b"] })
        },
        allows: (access) => JSON.stringify(access.user) === JSON.stringify(allowedUser)
      })
      const access = Access.make(reviews.kube, node)
      assert.strictEqual(statusOf(yield* check(access, "GET", "/stats/summary", token("allowed"))), 200)
      for (const other of ["otherGroups", "otherUid", "otherExtra"]) {
        assert.strictEqual(statusOf(yield* check(access, "GET", "/stats/summary", token(other))), 403, other)
      }
      // The same name in another group, by certificate: not the allowed answer either.
      const byCertificate = certificate({ commonName: "alice", organizations: ["ops"] })
      assert.strictEqual(statusOf(yield* check(access, "GET", "/stats/summary", byCertificate)), 403)
      assert.strictEqual(reviews.log.accesses.length, 5)
    }))

  it.effect("a cache holds at most its capacity, dropping the least recently used answer", () =>
    Effect.gen(function*() {
      const asked: Array<string> = []
      const cache = ReviewCache.make<string>(2, () => Duration.minutes(5))
      const review = (key: string) => cache.through(key, Effect.sync(() => (asked.push(key), key)))
      yield* review("a")
      yield* review("b")
      yield* review("a") // a is now the most recent
      yield* review("c") // pushes b out
      assert.strictEqual(yield* cache.size, 2)
      yield* review("a")
      yield* review("c")
      assert.deepStrictEqual(asked, ["a", "b", "c"])
      yield* review("b")
      assert.deepStrictEqual(asked, ["a", "b", "c", "b"])
    }))
})

describe("KAPI-6: a denial is logged once per decision, and every one counted", () => {
  const denials = (subresource: string) =>
    Effect.map(Metric.value(Metrics.labelled(Metrics.kubeletApiDenials, { subresource })), (state) => state.count)

  it.effect("a client hammering a denied path: one INFO line per 30 s decision, every 403 counted by subresource", () =>
    Effect.gen(function*() {
      const { access, log } = gate()
      const logs = makeLogCapture()
      const forbidden = () => logs.lines.filter((line) => line.message === "kubelet API request forbidden")
      const ms = token("ms-token")
      const before = { pods: yield* denials("pods"), log: yield* denials("log") }
      const hammer = (path: string, times: number) =>
        Effect.forEach(Array.from({ length: times }), () => check(access, "GET", path, ms), { discard: true }).pipe(
          Effect.provide(logs.layer)
        )
      yield* hammer("/pods", 50)
      assert.strictEqual(forbidden().length, 1)
      assert.deepStrictEqual(forbidden()[0]?.annotations["resource"], "nodes/pods or nodes/proxy")
      assert.strictEqual((yield* denials("pods")) - before.pods, 50)
      // Another subresource is another decision, and another series.
      yield* hammer("/logs/syslog", 3)
      assert.strictEqual(forbidden().length, 2)
      assert.strictEqual((yield* denials("log")) - before.log, 3)
      // Still the decision made 29 s ago: not logged again.
      yield* TestClock.adjust(Duration.seconds(29))
      yield* hammer("/pods", 10)
      assert.strictEqual(forbidden().length, 2)
      // The kept denial ran out: the apiserver decides again, and that is logged once more.
      yield* TestClock.adjust(Duration.seconds(1))
      yield* hammer("/pods", 10)
      assert.strictEqual(forbidden().length, 3)
      assert.strictEqual((yield* denials("pods")) - before.pods, 70)
      assert.strictEqual(log.accesses.filter((a) => a.endsWith("nodes/pods vk-a")).length, 2)
    }))
})
