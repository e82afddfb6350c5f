/**
 * Wire shapes of the live KubeApi layer, checked on a tiny recording HTTP server of our own:
 * what the layer really sends (content types, query parameters, bodies), how raw and odd
 * responses map to typed errors, timeouts, and that a watch's request is aborted when its
 * stream ends. The behaviour against a faithful server is in KubeApiClientNode.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { KubeConfig } from "@kubernetes/client-node"
import { Deferred, Effect, Exit, Fiber, Option, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as NodeHttp from "node:http"
import * as Zlib from "node:zlib"
import type { AddressInfo } from "node:net"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"
import type { Lease } from "../../src/Schemas/Lease.ts"
import { formatMicroTime } from "../../src/Schemas/MicroTime.ts"
import { encodeTaints } from "../../src/Schemas/Node.ts"
import type { KubeApi } from "../../src/Services/KubeApi.ts"

interface Recorded {
  readonly method: string
  readonly url: URL
  readonly headers: NodeHttp.IncomingHttpHeaders
  readonly body: string
}

interface Reply {
  readonly status: number
  readonly body?: string
  readonly contentType?: string
  /** Keep the response open after writing `body` (a watch); lines may be pushed later. */
  readonly hold?: boolean
  /** Write `body`, then cut the connection without ending the chunked response. */
  readonly reset?: boolean
  /** Send `body` gzipped, with `Content-Encoding: gzip` (as the apiserver answers a client that asks). */
  readonly gzip?: boolean
  /**
   * Send these instead of `body`, one write each a millisecond apart (each flushed through the
   * gzip stream when gzipped), as a server that encodes the reply while it sends it; then end the
   * response, unless `hold`.
   */
  readonly pieces?: ReadonlyArray<Buffer>
}

type Handler = (request: Recorded) => Reply | "never"

interface Recorder {
  readonly requests: Array<Recorded>
  readonly closed: Array<string>
  setHandler(handler: Handler): void
  readonly port: number
}

const json = (status: number, value: unknown): Reply => ({ status, body: JSON.stringify(value) })

/** A loopback server that records every request and answers with the current handler. */
const recorder = Effect.acquireRelease(
  Effect.callback<{ recorder: Recorder; server: NodeHttp.Server }>((resume) => {
    const requests: Array<Recorded> = []
    const closed: Array<string> = []
    let handler: Handler = () => json(200, {})
    const server = NodeHttp.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const recorded: Recorded = {
          method: req.method ?? "",
          url: new URL(req.url ?? "/", "http://127.0.0.1"),
          headers: req.headers,
          body: Buffer.concat(chunks).toString("utf8")
        }
        requests.push(recorded)
        res.on("close", () => closed.push(recorded.url.pathname))
        const reply = handler(recorded)
        if (reply === "never") return
        if (reply.pieces !== undefined) {
          res.writeHead(reply.status, {
            "content-type": reply.contentType ?? "application/json",
            ...(reply.gzip === true ? { "content-encoding": "gzip" } : {})
          })
          const gzip = reply.gzip === true ? Zlib.createGzip() : undefined
          gzip?.pipe(res)
          const pieces = [...reply.pieces]
          const next = () => {
            const piece = pieces.shift()
            if (piece === undefined) {
              if (reply.hold !== true) (gzip ?? res).end()
              return
            }
            ;(gzip ?? res).write(piece)
            gzip?.flush()
            setTimeout(next, 1)
          }
          next()
          return
        }
        if (reply.gzip === true) {
          res.writeHead(reply.status, { "content-type": reply.contentType ?? "application/json", "content-encoding": "gzip" })
          res.end(Zlib.gzipSync(reply.body ?? ""))
          return
        }
        res.writeHead(reply.status, { "content-type": reply.contentType ?? "application/json" })
        if (reply.reset === true) {
          res.write(reply.body ?? "", () => setTimeout(() => res.socket?.destroy(), 10))
          return
        }
        if (reply.hold === true) {
          res.write(reply.body ?? "")
          return
        }
        res.end(reply.body ?? "")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      resume(Effect.succeed({
        server,
        recorder: { requests, closed, port, setHandler: (next) => (handler = next) }
      }))
    })
  }),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ recorder }) => recorder))

const kubeConfigFor = (port: number): KubeConfig => {
  const kubeConfig = new KubeConfig()
  kubeConfig.loadFromOptions({
    clusters: [{ name: "recorder", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "u", token: "recorder-token" }],
    contexts: [{ name: "c", cluster: "recorder", user: "u" }],
    currentContext: "c"
  })
  return kubeConfig
}

const setup = Effect.gen(function*() {
  const rec = yield* recorder
  const kube: KubeApi["Service"] = yield* KubeApiClientNode.make(kubeConfigFor(rec.port), {
    ...KubeApiClientNode.defaultOptions,
    qps: 1000,
    burst: 1000
  })
  return { rec, kube }
})

/** Lets real sockets make progress while the TestClock stands still. */
const flushIO = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))

const sixDigits = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

describe("KubeApiClientNode on the wire", () => {
  it.effect("patchNodeStatus sends a strategic merge patch", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { apiVersion: "v1", kind: "Node", metadata: { name: "vk" } }))
      const patch = { status: { conditions: [{ type: "Ready", status: "True" }] } }
      yield* kube.patchNodeStatus("vk", patch)
      const sent = rec.requests[0]!
      assert.strictEqual(sent.method, "PATCH")
      assert.strictEqual(sent.url.pathname, "/api/v1/nodes/vk/status")
      assert.strictEqual(sent.headers["content-type"], "application/strategic-merge-patch+json")
      assert.deepStrictEqual(JSON.parse(sent.body), patch)
      assert.strictEqual(sent.headers["authorization"], "Bearer recorder-token")
    }))

  it.effect("patchEvent sends a strategic merge patch to core/v1 events", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { apiVersion: "v1", kind: "Event", metadata: { name: "e" } }))
      yield* kube.patchEvent("ns", "e", { count: 2 })
      const sent = rec.requests[0]!
      assert.strictEqual(sent.url.pathname, "/api/v1/namespaces/ns/events/e")
      assert.strictEqual(sent.headers["content-type"], "application/strategic-merge-patch+json")
    }))

  it.effect("applyNodeInventory is a server-side apply with fieldManager and force", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { kind: "NodeInventory", metadata: { name: "n1" } }))
      const inventory = {
        apiVersion: "extensions.agents.x-k8s.io/v1beta1",
        kind: "NodeInventory",
        metadata: { name: "n1" },
        spec: { entries: [] }
      }
      const applied = yield* kube.applyNodeInventory(inventory)
      const sent = rec.requests[0]!
      assert.strictEqual(sent.method, "PATCH")
      assert.strictEqual(sent.url.pathname, "/apis/extensions.agents.x-k8s.io/v1beta1/nodeinventories/n1")
      assert.strictEqual(sent.url.searchParams.get("fieldManager"), "vk-sandbox")
      assert.strictEqual(sent.url.searchParams.get("force"), "true")
      assert.strictEqual(sent.headers["content-type"], "application/apply-patch+yaml")
      assert.deepStrictEqual(JSON.parse(sent.body), inventory)
      assert.deepStrictEqual(applied, { kind: "NodeInventory", metadata: { name: "n1" } })
    }))

  it.effect("leases go out with six fractional digits, whatever RFC 3339 text the caller holds", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler((request) =>
        request.method === "GET"
          ? json(200, {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name: "vk", namespace: "kube-node-lease", resourceVersion: "7" },
            spec: { holderIdentity: "vk", renewTime: "2026-11-29T09:00:00.123456Z", acquireTime: null }
          })
          : { status: request.method === "POST" ? 201 : 200, body: request.body }
      )
      const lease: Lease = {
        metadata: { name: "vk", namespace: "kube-node-lease", resourceVersion: "7" },
        spec: {
          holderIdentity: "vk",
          leaseDurationSeconds: 40,
          acquireTime: "2026-11-29T09:00:00.5Z",
          renewTime: new Date("2026-11-29T09:00:01.25Z").toISOString()
        }
      }
      const created = yield* kube.createLease(lease)
      yield* kube.replaceLease({ ...lease, spec: { ...lease.spec, renewTime: "2026-11-29T09:00:02Z" } })
      const post = JSON.parse(rec.requests[0]!.body)
      const put = JSON.parse(rec.requests[1]!.body)
      assert.strictEqual(rec.requests[0]!.url.pathname, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
      assert.strictEqual(rec.requests[0]!.headers["content-type"], "application/json")
      assert.deepStrictEqual([post.apiVersion, post.kind], ["coordination.k8s.io/v1", "Lease"])
      assert.strictEqual(rec.requests[1]!.method, "PUT")
      assert.strictEqual(rec.requests[1]!.url.pathname, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vk")
      assert.strictEqual(post.spec.renewTime, "2026-11-29T09:00:01.250000Z")
      assert.strictEqual(post.spec.acquireTime, "2026-11-29T09:00:00.500000Z")
      assert.strictEqual(put.spec.renewTime, "2026-11-29T09:00:02.000000Z")
      assert.strictEqual(put.metadata.resourceVersion, "7")
      assert.match(put.spec.acquireTime, sixDigits)
      // what comes back is in the six-digit form too
      assert.strictEqual(created.spec?.renewTime, "2026-11-29T09:00:01.250000Z")

      // a lease read from the server keeps its microseconds when written back; a null is no field
      const read = yield* kube.getLease("vk")
      assert.strictEqual(read.spec?.renewTime, "2026-11-29T09:00:00.123456Z")
      assert.isFalse(read.spec !== undefined && "acquireTime" in read.spec)
      yield* kube.replaceLease(read)
      assert.strictEqual(JSON.parse(rec.requests[3]!.body).spec.renewTime, "2026-11-29T09:00:00.123456Z")
    }))

  it.effect("a lease PUT carries back every spec field and the metadata a PUT would clear", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const stored = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          name: "vk",
          namespace: "kube-node-lease",
          uid: "u-1",
          resourceVersion: "9",
          labels: { team: "a" },
          annotations: { note: "kept" },
          finalizers: ["example.com/hold"],
          ownerReferences: [{ apiVersion: "v1", kind: "Node", name: "vk", uid: "n-1" }],
          managedFields: [{ manager: "someone" }]
        },
        spec: {
          holderIdentity: "vk",
          leaseDurationSeconds: 40,
          acquireTime: "2026-11-29T09:00:00.000001Z",
          renewTime: "2026-11-29T09:00:05.000000Z",
          leaseTransitions: 3,
          strategy: "OldestEmulationVersion",
          preferredHolder: "other"
        }
      }
      rec.setHandler((request) => (request.method === "GET" ? json(200, stored) : { status: 200, body: request.body }))
      yield* kube.replaceLease(yield* kube.getLease("vk"))
      const { managedFields: _server, ...metadata } = stored.metadata
      assert.deepStrictEqual(JSON.parse(rec.requests[1]!.body), { ...stored, metadata })
    }))

  it.effect("formatMicroTime pads, truncates and keeps offsets", () =>
    Effect.sync(() => {
      assert.strictEqual(formatMicroTime("2026-01-02T03:04:05Z"), "2026-01-02T03:04:05.000000Z")
      assert.strictEqual(formatMicroTime("2026-01-02T03:04:05.1234567Z"), "2026-01-02T03:04:05.123456Z")
      assert.strictEqual(formatMicroTime("2026-01-02T03:04:05.1+02:00"), "2026-01-02T03:04:05.100000+02:00")
      assert.strictEqual(formatMicroTime(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 7))), "2026-01-02T03:04:05.007000Z")
    }))

  it.effect("createEvent writes eventTime with six digits, timestamps at whole seconds, into the event's namespace", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler((request) => ({ status: 201, body: request.body }))
      const created = yield* kube.createEvent({
        metadata: { name: "p.1", namespace: "team" },
        involvedObject: { kind: "Pod", name: "p", namespace: "team" },
        reason: "Claimed",
        firstTimestamp: new Date("2026-11-29T09:00:00.5Z"),
        eventTime: "2026-11-29T09:00:00.5Z",
        series: { count: 2, lastObservedTime: "2026-11-29T09:00:01Z" }
      })
      const sent = rec.requests[0]!
      assert.strictEqual(sent.method, "POST")
      assert.strictEqual(sent.url.pathname, "/api/v1/namespaces/team/events")
      const body = JSON.parse(sent.body)
      assert.deepStrictEqual([body.apiVersion, body.kind], ["v1", "Event"])
      assert.strictEqual(body.eventTime, "2026-11-29T09:00:00.500000Z")
      assert.strictEqual(body.series.lastObservedTime, "2026-11-29T09:00:01.000000Z")
      assert.strictEqual(body.firstTimestamp, "2026-11-29T09:00:00Z")
      assert.strictEqual(created.firstTimestamp?.getTime(), Date.parse("2026-11-29T09:00:00Z"))
    }))

  it.effect("node create and taint patch: the taint patch is strategic merge with the resourceVersion, and timeAdded survives", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const served = {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: "vk", uid: "n-1", resourceVersion: "12", creationTimestamp: "2026-11-29T08:00:00Z" },
        spec: {
          taints: [
            { key: "node.kubernetes.io/unreachable", effect: "NoExecute", timeAdded: "2026-11-29T09:00:00Z" },
            { key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" }
          ],
          podCIDR: "10.0.0.0/24"
        },
        status: { conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-11-29T08:00:00Z", lastHeartbeatTime: null }] }
      }
      rec.setHandler((request) => (request.method === "POST" ? { status: 201, body: request.body } : json(200, served)))
      const created = yield* kube.createNode({ metadata: { name: "vk" }, spec: { taints: [] } })
      assert.deepStrictEqual(created.metadata, { name: "vk" })
      assert.deepStrictEqual(JSON.parse(rec.requests[0]!.body), { apiVersion: "v1", kind: "Node", metadata: { name: "vk" }, spec: { taints: [] } })
      const node = yield* kube.getNode("vk")
      assert.deepStrictEqual(node.spec?.taints?.[0]?.timeAdded, new Date("2026-11-29T09:00:00Z"))
      assert.deepStrictEqual(node.status?.conditions?.[0]?.lastTransitionTime, new Date("2026-11-29T08:00:00Z"))
      assert.isFalse(node.spec !== undefined && "podCIDR" in node.spec)
      const taints = encodeTaints(node.spec?.taints ?? [])
      yield* kube.patchNode("vk", { metadata: { resourceVersion: node.metadata?.resourceVersion }, spec: { taints: Option.getOrThrow(taints) } })
      const sent = rec.requests[2]!
      assert.strictEqual(sent.method, "PATCH")
      assert.strictEqual(sent.url.pathname, "/api/v1/nodes/vk")
      assert.strictEqual(sent.headers["content-type"], "application/strategic-merge-patch+json")
      assert.deepStrictEqual(JSON.parse(sent.body), { metadata: { resourceVersion: "12" }, spec: { taints: served.spec.taints } })
    }))

  it.effect("deletePod sends grace 0 and the UID precondition in DeleteOptions", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { apiVersion: "v1", kind: "Pod", metadata: { name: "p" } }))
      yield* kube.deletePod("ns", "p", "uid-1")
      const sent = rec.requests[0]!
      assert.strictEqual(sent.method, "DELETE")
      assert.strictEqual(sent.url.pathname, "/api/v1/namespaces/ns/pods/p")
      assert.deepStrictEqual(JSON.parse(sent.body), {
        apiVersion: "v1",
        kind: "DeleteOptions",
        gracePeriodSeconds: 0,
        preconditions: { uid: "uid-1" }
      })
    }))

  it.effect("listPods selects the node across all namespaces and returns the list resourceVersion", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() =>
        json(200, {
          kind: "PodList",
          apiVersion: "v1",
          metadata: { resourceVersion: "42" },
          items: [{ metadata: { name: "a", namespace: "x", deletionTimestamp: "2026-11-29T09:00:00Z" } }]
        })
      )
      const list = yield* kube.listPods("vk node")
      const sent = rec.requests[0]!
      assert.strictEqual(sent.url.pathname, "/api/v1/pods")
      assert.strictEqual(sent.url.searchParams.get("fieldSelector"), "spec.nodeName=vk node")
      assert.strictEqual(list.resourceVersion, "42")
      assert.strictEqual(list.items[0]!.metadata?.name, "a")
      assert.instanceOf(list.items[0]!.metadata?.deletionTimestamp, Date)
    }))

  it.effect("listPods reads items that carry the apiserver's nulls; an item that is not a Pod is left out and named (INF-1)", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const item = (name: string) => ({
        metadata: { name, namespace: "x", deletionTimestamp: null, labels: null, managedFields: [{ manager: "m" }] },
        spec: { containers: [{ name: "main", image: "python", resources: {} }], tolerations: null },
        status: { phase: "Running", startTime: null, conditions: [{ type: "Ready", status: "True", lastProbeTime: null }] }
      })
      rec.setHandler(() => json(200, { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion: "42", continue: null }, items: [item("a"), item("b")] }))
      const list = yield* kube.listPods("vk")
      assert.deepStrictEqual(list.items.map((pod) => pod.metadata?.name), ["a", "b"])
      assert.deepStrictEqual(list.items[0], {
        metadata: { name: "a", namespace: "x" },
        spec: { containers: [{ name: "main", image: "python" }] },
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] }
      })
      const refused = { metadata: { name: "c", namespace: "x", uid: "u-c", resourceVersion: "40", labels: { team: 7 } }, spec: item("c").spec }
      rec.setHandler(() =>
        json(200, { kind: "PodList", metadata: { resourceVersion: "43" }, items: [item("a"), { metadata: { name: 7 } }, refused, item("b")] })
      )
      const partial = yield* kube.listPods("vk")
      assert.deepStrictEqual(partial.items.map((pod) => pod.metadata?.name), ["a", "b"])
      assert.strictEqual(partial.resourceVersion, "43")
      assert.deepStrictEqual(
        partial.undecodable.map(({ error: _, ...identity }) => identity),
        [{ namespace: "", name: "", uid: "", resourceVersion: "" }, { namespace: "x", name: "c", uid: "u-c", resourceVersion: "40" }]
      )
      assert.match(partial.undecodable[1]!.error, /labels/)
    }))

  it.effect("listPods reads a body laid out with whitespace; one cut short is not JSON, one without items says so", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const body = JSON.stringify({
        kind: "PodList",
        metadata: { resourceVersion: "42" },
        items: [
          { metadata: { name: "a", namespace: "x", managedFields: [{ manager: "m", fieldsV1: { "f:metadata": {} } }] } },
          { metadata: { managedFields: null, name: "b", namespace: "x" } }
        ]
      }, null, 2)
      rec.setHandler(() => ({ status: 200, body }))
      const list = yield* kube.listPods("vk")
      assert.deepStrictEqual(list.items, [{ metadata: { name: "a", namespace: "x" } }, { metadata: { name: "b", namespace: "x" } }])
      assert.strictEqual(list.resourceVersion, "42")
      rec.setHandler(() => ({ status: 200, body: body.slice(0, body.length - 2) }))
      const cut = yield* Effect.flip(kube.listPods("vk"))
      assert.strictEqual(cut._tag, "KubeUnavailable")
      assert.include(cut.message, "response is not JSON")
      rec.setHandler(() => ({ status: 200, body: `{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":` }))
      assert.include((yield* Effect.flip(kube.listPods("vk"))).message, "response is not JSON")
      rec.setHandler(() => json(200, { kind: "PodList", metadata: { resourceVersion: "42" } }))
      assert.include((yield* Effect.flip(kube.listPods("vk"))).message, "the pod list has no items")
    }))

  it.effect("listPods reads a list that arrives in pieces cut anywhere (inside strings, escapes, multi-byte characters), gzipped or not", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const names = ["a\\\"b", "雪-\u{1F600}-é", "c]}{[d"]
      const body = Buffer.from(JSON.stringify({
        kind: "PodList",
        metadata: { resourceVersion: "42" },
        items: names.map((name) => ({ metadata: { name, namespace: "x", managedFields: [{ manager: `m"${name}` }] } }))
      }))
      // every piece 3 bytes: every escape and every multi-byte character of the body is cut somewhere
      const pieces = Array.from({ length: Math.ceil(body.length / 3) }, (_, i) => body.subarray(i * 3, i * 3 + 3))
      for (const gzip of [false, true]) {
        rec.setHandler(() => ({ status: 200, pieces, gzip }))
        const list = yield* kube.listPods("vk")
        assert.deepStrictEqual(list.items, names.map((name) => ({ metadata: { name, namespace: "x" } })))
        assert.strictEqual(list.resourceVersion, "42")
      }
    }))

  it.effect("listPods stops at the first byte that is not a list, without waiting for the rest, and frees the connection", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const start = `{"kind":"PodList","metadata":{"resourceVersion":"42"},"items":[{"metadata":{"name":"a","namespace":"x"}},`
      // the rest of each body never comes: the outcome is known from what did
      for (const gzip of [false, true]) {
        rec.setHandler(() => ({ status: 200, hold: true, gzip, pieces: [Buffer.from(start), Buffer.from(`{"metadata":{}} x`)] }))
        const malformed = yield* Effect.flip(kube.listPods("vk"))
        assert.strictEqual(malformed._tag, "KubeUnavailable")
        assert.include(malformed.message, `response is not JSON: {"kind":"PodList"`)
      }
      while (rec.closed.length < 2) yield* flushIO
      assert.deepStrictEqual(rec.closed, ["/api/v1/pods", "/api/v1/pods"])
    }))

  it.effect("listPods: a body that stops coming times out on the Effect clock, and an interrupted read is aborted; both free the connection", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({ status: 200, hold: true, pieces: [Buffer.from(`{"kind":"PodList","items":[{"metadata":{"name":"a"}},{"meta`)] }))
      const timed = yield* Effect.forkChild(kube.listPods("vk"))
      while (rec.requests.length === 0) yield* flushIO
      yield* flushIO
      yield* TestClock.adjust("30 seconds")
      const error = yield* Effect.flip(Fiber.join(timed))
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.strictEqual(error._tag === "KubeUnavailable" ? error.status : -1, 0)
      while (rec.closed.length === 0) yield* flushIO
      const interrupted = yield* Effect.forkChild(kube.listPods("vk"))
      while (rec.requests.length === 1) yield* flushIO
      yield* flushIO
      yield* Fiber.interrupt(interrupted)
      while (rec.closed.length === 1) yield* flushIO
      assert.deepStrictEqual(rec.closed, ["/api/v1/pods", "/api/v1/pods"])
    }))

  it.effect("a watch event, a read and a status write's reply carrying the apiserver's nulls read them as absent", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const served = {
        kind: "Pod",
        metadata: { name: "a", namespace: "x", resourceVersion: "9", deletionTimestamp: null, labels: null },
        spec: { containers: [{ name: "main", image: "python" }], tolerations: null },
        status: { phase: "Running", startTime: null, conditions: [{ type: "Ready", status: "True", lastProbeTime: null }] }
      }
      const slim = {
        kind: "Pod",
        metadata: { name: "a", namespace: "x", resourceVersion: "9" },
        spec: { containers: [{ name: "main", image: "python" }] },
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] }
      }
      rec.setHandler(() => ({ status: 200, hold: true, body: `${JSON.stringify({ type: "MODIFIED", object: served })}\n` }))
      const [event] = yield* kube.watchPods("vk", "8").pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual(event, { type: "MODIFIED", object: slim })
      rec.setHandler(() => json(200, served))
      assert.deepStrictEqual(yield* kube.getPod("x", "a"), slim)
      assert.deepStrictEqual(yield* kube.replacePodStatus(slim), slim)
      // ST-06: the PUT carries metadata and status, no spec (the server keeps the stored one)
      const put = rec.requests.at(-1)!
      assert.strictEqual(put.method, "PUT")
      assert.deepStrictEqual(Object.keys(JSON.parse(put.body)).sort(), ["apiVersion", "kind", "metadata", "status"])
      // ... and no deletion grace (int64, past 2^53 not a double's): the server keeps the stored one
      const deleting = {
        ...slim,
        metadata: { ...slim.metadata, deletionTimestamp: new Date("2026-01-02T03:04:05Z"), deletionGracePeriodSeconds: 2 ** 53 }
      }
      yield* kube.replacePodStatus(deleting)
      const graced = JSON.parse(rec.requests.at(-1)!.body) as { readonly metadata: Record<string, unknown> }
      assert.deepStrictEqual(graced.metadata, { name: "a", namespace: "x", resourceVersion: "9", deletionTimestamp: "2026-01-02T03:04:05Z" })
      // INF-1: an event whose Pod is not one says what it can of it, and the watch goes on
      const refused = { ...served, metadata: { ...served.metadata, uid: "u-a", resourceVersion: "10", labels: { team: 7 } } }
      rec.setHandler(() => ({
        status: 200,
        hold: true,
        body: [{ type: "MODIFIED", object: refused }, { type: "DELETED", object: refused }, { type: "MODIFIED", object: served }]
          .map((line) => `${JSON.stringify(line)}\n`).join("")
      }))
      const events = yield* kube.watchPods("vk", "8").pipe(Stream.take(3), Stream.runCollect)
      assert.deepStrictEqual(
        events.map((e) => (e.type === "UNDECODABLE" ? [e.type, e.change, e.pod.namespace, e.pod.name, e.pod.uid, e.pod.resourceVersion] : [e.type])),
        [["UNDECODABLE", "MODIFIED", "x", "a", "u-a", "10"], ["UNDECODABLE", "DELETED", "x", "a", "u-a", "10"], ["MODIFIED"]]
      )
      // an ERROR event's Status with nulls in it is still read: 410 ends the watch as KubeGone
      const status = { kind: "Status", code: 410, reason: "Expired", message: "too old", details: null, metadata: {} }
      rec.setHandler(() => ({ status: 200, body: `${JSON.stringify({ type: "ERROR", object: status })}\n` }))
      const gone = yield* Effect.flip(Stream.runCollect(kube.watchPods("vk", "1")))
      assert.strictEqual(gone._tag, "KubeGone")
      assert.strictEqual(gone.message, "too old")
    }))

  it.effect("podsResourceVersion asks for at most one of the node's Pods and returns the list resourceVersion", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(200, { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion: "77", continue: "x" }, items: [{ metadata: { name: "a" } }] }))
      assert.strictEqual(yield* kube.podsResourceVersion("vk node"), "77")
      const sent = rec.requests[0]!
      assert.strictEqual(sent.url.pathname, "/api/v1/pods")
      assert.strictEqual(sent.url.searchParams.get("fieldSelector"), "spec.nodeName=vk node")
      assert.strictEqual(sent.url.searchParams.get("limit"), "1")
      assert.isNull(sent.url.searchParams.get("resourceVersion"), "a consistent read: the server's current version")
    }))

  it.effect("getOwner: details only from a Status body; plain text and other shapes have none", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const ref = { group: "apps", version: "v1", plural: "replicasets", namespace: "ns", name: "rs" }
      rec.setHandler(() => ({ status: 404, body: "404 page not found\n", contentType: "text/plain" }))
      const plain = yield* Effect.flip(kube.getOwner(ref))
      assert.strictEqual(plain._tag, "KubeNotFound")
      assert.isFalse("details" in plain)
      assert.strictEqual(plain.message, "404 page not found")
      assert.strictEqual(rec.requests[0]!.url.pathname, "/apis/apps/v1/namespaces/ns/replicasets/rs")

      rec.setHandler(() => json(404, { kind: "Status", status: "Failure", reason: "NotFound", code: 404, details: {} }))
      const emptyDetails = yield* Effect.flip(kube.getOwner(ref))
      assert.isFalse("details" in emptyDetails)

      // a body with details that is not a Status is not trusted
      rec.setHandler(() => json(404, { kind: "Other", details: { name: "rs" } }))
      const otherShape = yield* Effect.flip(kube.getOwner(ref))
      assert.isFalse("details" in otherShape)

      rec.setHandler(() =>
        json(404, {
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          reason: "NotFound",
          code: 404,
          message: "replicasets.apps \"rs\" not found",
          details: { name: "rs", group: "apps", kind: "replicasets", causes: [] }
        })
      )
      const structured = yield* Effect.flip(kube.getOwner(ref))
      assert.strictEqual(structured._tag, "KubeNotFound")
      assert.deepStrictEqual(structured._tag === "KubeNotFound" ? structured.details : undefined, {
        name: "rs",
        group: "apps",
        kind: "replicasets"
      })

      // a Status about another resource, even one naming the requested name, is not the owner's NotFound
      const foreign = [
        { name: "rs", group: "apps", kind: "deployments" },
        { name: "rs", group: "other.example.com", kind: "replicasets" },
        { name: "rs", kind: "replicasets" },
        { name: "rs", group: "apps" }
      ]
      for (const details of foreign) {
        rec.setHandler(() => json(404, { kind: "Status", status: "Failure", reason: "NotFound", code: 404, message: "not found", details }))
        const other = yield* Effect.flip(kube.getOwner(ref))
        assert.strictEqual(other._tag, "KubeNotFound")
        assert.isFalse("details" in other, JSON.stringify(details))
      }
      // the core group is omitted from details by the real server
      rec.setHandler(() => json(404, { kind: "Status", reason: "NotFound", code: 404, message: "not found", details: { name: "rc", kind: "replicationcontrollers" } }))
      const core = yield* Effect.flip(kube.getOwner({ group: "", version: "v1", plural: "replicationcontrollers", namespace: "ns", name: "rc" }))
      assert.deepStrictEqual(core._tag === "KubeNotFound" ? core.details : undefined, { name: "rc", kind: "replicationcontrollers" })

      rec.setHandler(() => json(200, { metadata: { uid: "u-1", deletionTimestamp: "2026-11-29T09:00:00Z" }, spec: {} }))
      const owner = yield* kube.getOwner({ group: "", version: "v1", plural: "replicationcontrollers", namespace: "ns", name: "rc" })
      assert.strictEqual(rec.requests.at(-1)!.url.pathname, "/api/v1/namespaces/ns/replicationcontrollers/rc")
      assert.strictEqual(owner.uid, "u-1")
      assert.strictEqual(owner.deletionTimestamp, "2026-11-29T09:00:00Z")
      assert.deepStrictEqual(owner.raw, { metadata: { uid: "u-1", deletionTimestamp: "2026-11-29T09:00:00Z" }, spec: {} })
      // AUTH-3: every owner read is a quorum read: no resourceVersion (with one, even "0", the
      // server may answer from its watch cache, an owner deleted a moment ago still alive).
      assert.isAbove(rec.requests.length, 5)
      for (const request of rec.requests) assert.strictEqual(request.url.search, "", request.url.pathname)
    }))

  it.effect("a 404 carries the server's details, never the requested name", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({ status: 404, body: "nope", contentType: "text/plain" }))
      const plain = yield* Effect.flip(kube.getPod("ns", "p"))
      assert.strictEqual(plain._tag, "KubeNotFound")
      assert.isFalse("details" in plain)
      rec.setHandler(() =>
        json(404, { kind: "Status", reason: "NotFound", code: 404, message: "pods \"q\" not found", details: { name: "q", kind: "pods" } })
      )
      const other = yield* Effect.flip(kube.getPod("ns", "p"))
      assert.deepStrictEqual(other._tag === "KubeNotFound" ? other.details : undefined, { name: "q", kind: "pods" })
    }))

  it.effect("status codes map to typed errors; 401 and 5xx are KubeUnavailable with the status", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const cases: ReadonlyArray<readonly [number, string]> = [
        [409, "KubeConflict"],
        [410, "KubeGone"],
        [403, "KubeForbidden"],
        [422, "KubeInvalid"],
        [400, "KubeInvalid"],
        [401, "KubeUnavailable"],
        [429, "KubeUnavailable"],
        [503, "KubeUnavailable"]
      ]
      for (const [code, tag] of cases) {
        rec.setHandler(() => json(code, { kind: "Status", code, reason: "AlreadyExists", message: `m${code}` }))
        const error = yield* Effect.flip(kube.getNode("vk"))
        assert.strictEqual(error._tag, tag, `HTTP ${code}`)
        if (error._tag === "KubeUnavailable") assert.strictEqual(error.status, code)
        if (error._tag === "KubeConflict") assert.strictEqual(error.reason, "AlreadyExists")
      }
    }))

  it.effect("a refused connection is KubeUnavailable with status 0", () =>
    Effect.gen(function*() {
      const kube = yield* KubeApiClientNode.make(kubeConfigFor(1), { ...KubeApiClientNode.defaultOptions, qps: 10, burst: 10 })
      const error = yield* Effect.flip(kube.getNode("vk"))
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.strictEqual(error._tag === "KubeUnavailable" ? error.status : -1, 0)
    }))

  it.effect("a request built here goes under the server's path prefix, with the kubeconfig's token and Accept: application/json", () =>
    Effect.gen(function*() {
      const rec = yield* recorder
      const kubeConfig = kubeConfigFor(rec.port)
      kubeConfig.clusters[0] = { ...kubeConfig.clusters[0]!, server: `http://127.0.0.1:${rec.port}/k8s/clusters/c-1/` }
      const kube = yield* KubeApiClientNode.make(kubeConfig, { ...KubeApiClientNode.defaultOptions, qps: 1000, burst: 1000 })
      const pod = { kind: "Pod", metadata: { name: "p", namespace: "ns", resourceVersion: "7" } }
      rec.setHandler(() => json(200, pod))
      assert.strictEqual((yield* kube.getPod("ns", "p")).metadata?.resourceVersion, "7")
      rec.setHandler(() => ({ status: 200, hold: true, body: `${JSON.stringify({ type: "ADDED", object: pod })}\n` }))
      yield* Stream.runCollect(kube.watchPods("vk", "7").pipe(Stream.take(1)))
      const [get, watch] = rec.requests
      assert.strictEqual(get?.url.pathname, "/k8s/clusters/c-1/api/v1/namespaces/ns/pods/p")
      assert.strictEqual(get?.headers["authorization"], "Bearer recorder-token")
      assert.strictEqual(get?.headers["accept"], "application/json")
      assert.strictEqual(watch?.url.pathname, "/k8s/clusters/c-1/api/v1/pods")
      assert.strictEqual(watch?.url.searchParams.get("fieldSelector"), "spec.nodeName=vk")
    }))

  it.effect("replies are asked for gzip and read unzipped (a watch is not asked); every request names the daemon as User-Agent", () =>
    Effect.gen(function*() {
      const rec = yield* recorder
      const kube = yield* KubeApiClientNode.make(kubeConfigFor(rec.port), {
        ...KubeApiClientNode.defaultOptions,
        qps: 1000,
        burst: 1000,
        userAgent: "vk-sandbox/9.9.9"
      })
      const pod = (name: string) => ({ kind: "Pod", metadata: { name, namespace: "ns", uid: `u-${name}`, resourceVersion: "7" } })
      rec.setHandler(() => ({ status: 200, gzip: true, body: JSON.stringify({ kind: "PodList", metadata: { resourceVersion: "42" }, items: [pod("a"), pod("b")] }) }))
      const list = yield* kube.listPods("vk")
      assert.deepStrictEqual(list.items.map((item) => item.metadata?.name), ["a", "b"])
      assert.strictEqual(list.resourceVersion, "42")
      // an error reply gzipped still maps to its typed error, with the Status body's details
      rec.setHandler(() => ({
        status: 404,
        gzip: true,
        body: JSON.stringify({ kind: "Status", reason: "NotFound", message: "pods \"p\" not found", details: { name: "p", kind: "pods" } })
      }))
      const missing = yield* Effect.flip(kube.getPod("ns", "p"))
      assert.strictEqual(missing._tag, "KubeNotFound")
      assert.strictEqual(missing.message, "pods \"p\" not found")
      rec.setHandler(() => ({ status: 200, hold: true, body: `${JSON.stringify({ type: "ADDED", object: pod("a") })}\n` }))
      yield* Stream.runCollect(kube.watchPods("vk", "7").pipe(Stream.take(1)))
      const [listed, read, watch] = rec.requests
      assert.strictEqual(listed?.headers["accept-encoding"], "gzip")
      assert.strictEqual(read?.headers["accept-encoding"], "gzip")
      assert.strictEqual(watch?.headers["accept-encoding"], undefined)
      for (const request of rec.requests) assert.strictEqual(request.headers["user-agent"], "vk-sandbox/9.9.9")
    }))

  it.effect("a server URL with a password: nothing is sent, and the error shows the URL without it", () =>
    Effect.gen(function*() {
      const rec = yield* recorder
      const kubeConfig = kubeConfigFor(rec.port)
      kubeConfig.clusters[0] = { ...kubeConfig.clusters[0]!, server: `http://admin:pa55word@127.0.0.1:${rec.port}` }
      const kube = yield* KubeApiClientNode.make(kubeConfig, { ...KubeApiClientNode.defaultOptions, qps: 1000, burst: 1000 })
      const error = yield* Effect.flip(kube.getPod("ns", "p"))
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.include(error.message, `http://redacted@127.0.0.1:${rec.port}/api/v1/namespaces/ns/pods/p`)
      assert.notInclude(error.message, "pa55word")
      const watch = yield* Effect.flip(Stream.runCollect(kube.watchPods("vk", "1")))
      assert.include(watch.message, `http://redacted@127.0.0.1:${rec.port}/api/v1/pods`)
      assert.notInclude(watch.message, "pa55word")
      assert.strictEqual(rec.requests.length, 0)
    }))

  it.effect("a request built here with no answer times out on the Effect clock as KubeUnavailable(0) and is aborted", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => "never")
      const fiber = yield* Effect.forkChild(kube.getPod("ns", "p"))
      while (rec.requests.length === 0) yield* flushIO
      yield* TestClock.adjust("30 seconds")
      const error = yield* Effect.flip(Fiber.join(fiber))
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.strictEqual(error._tag === "KubeUnavailable" ? error.status : -1, 0)
      while (rec.closed.length === 0) yield* flushIO
      assert.deepStrictEqual(rec.closed, ["/api/v1/namespaces/ns/pods/p"])
    }))

  it.effect("NODE-6: a Node or Lease call with no answer times out after 10 s and is aborted; a Pod call waits its 30 s", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => "never")
      const lease: Lease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "vk", namespace: "kube-node-lease", resourceVersion: "5" },
        spec: { holderIdentity: "vk", leaseDurationSeconds: 40, renewTime: "2026-11-29T09:00:10.250Z" }
      }
      const node = yield* Effect.forkChild(Effect.asVoid(kube.getNode("vk")))
      const renewal = yield* Effect.forkChild(Effect.asVoid(kube.replaceLease(lease)))
      const pod = yield* Effect.forkChild(kube.getPod("ns", "p"))
      while (rec.requests.length < 3) yield* flushIO
      yield* TestClock.adjust("9999 millis")
      assert.isUndefined(node.pollUnsafe())
      assert.isUndefined(renewal.pollUnsafe())
      yield* TestClock.adjust("1 millis")
      yield* flushIO
      assert.isDefined(node.pollUnsafe(), "the Node call was not given up at 10 s")
      for (const fiber of [node, renewal]) {
        const error = yield* Effect.flip(Fiber.join(fiber))
        assert.strictEqual(error._tag, "KubeUnavailable")
        assert.strictEqual(error._tag === "KubeUnavailable" ? error.status : -1, 0)
        assert.strictEqual(error.message, "no response within 10s")
      }
      while (rec.closed.length < 2) yield* flushIO
      assert.sameMembers([...rec.closed], ["/api/v1/nodes/vk", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vk"])
      assert.isUndefined(pod.pollUnsafe(), "a Pod call keeps the 30 s timeout")
      yield* TestClock.adjust("20 seconds")
      const exit = yield* Fiber.await(pod)
      assert.isTrue(Exit.isFailure(exit))
    }))

  it.effect("the limiter holds calls beyond the burst until the clock moves", () =>
    Effect.gen(function*() {
      const rec = yield* recorder
      const kube = yield* KubeApiClientNode.make(kubeConfigFor(rec.port), { ...KubeApiClientNode.defaultOptions, qps: 1, burst: 2 })
      rec.setHandler(() => json(200, { kind: "Pod", metadata: { name: "p", namespace: "ns", resourceVersion: "7" } }))
      // Pod calls: the Node's and Lease's take no token (NODE-5, shown in KubeApiClientNode.test.ts)
      const fibers = yield* Effect.forEach([1, 2, 3], () => Effect.forkChild(kube.getPod("ns", "p")))
      for (let i = 0; i < 20 && rec.requests.length < 2; i++) yield* flushIO
      for (let i = 0; i < 5; i++) yield* flushIO
      assert.strictEqual(rec.requests.length, 2, "the burst went out")
      yield* TestClock.adjust("1 second")
      yield* Effect.forEach(fibers, Fiber.join)
      assert.strictEqual(rec.requests.length, 3, "the third after one token period")
    }))

  it.effect("watch query parameters, event decoding, and the request is aborted when the consumer stops", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      const lines = [
        { type: "ADDED", object: { kind: "Pod", metadata: { name: "a", namespace: "x", resourceVersion: "11", creationTimestamp: "2026-11-29T09:00:00Z" } } },
        { type: "BOOKMARK", object: { kind: "Pod", metadata: { resourceVersion: "12" } } },
        { type: "SOMETHING-NEW", object: {} },
        { type: "DELETED", object: { kind: "Pod", metadata: { name: "a", namespace: "x", resourceVersion: "13" } } }
      ]
      rec.setHandler(() => ({ status: 200, hold: true, body: lines.map((l) => JSON.stringify(l) + "\n").join("") }))
      const events = yield* kube.watchPods("vk", "10").pipe(Stream.take(3), Stream.runCollect)
      const sent = rec.requests[0]!
      assert.strictEqual(sent.url.pathname, "/api/v1/pods")
      assert.strictEqual(sent.url.searchParams.get("watch"), "true")
      assert.strictEqual(sent.url.searchParams.get("allowWatchBookmarks"), "true")
      assert.strictEqual(sent.url.searchParams.get("resourceVersion"), "10")
      assert.strictEqual(sent.url.searchParams.get("fieldSelector"), "spec.nodeName=vk")
      assert.deepStrictEqual(events.map((e) => e.type), ["ADDED", "BOOKMARK", "DELETED"])
      const added = events[0]!
      assert.instanceOf(added.type === "ADDED" ? added.object.metadata?.creationTimestamp : undefined, Date)
      assert.deepStrictEqual(events[1], { type: "BOOKMARK", resourceVersion: "12" })
      while (rec.closed.length === 0) yield* flushIO
      assert.deepStrictEqual(rec.closed, ["/api/v1/pods"])
    }))

  it.effect("watch: 410 at start and an ERROR 410 event are KubeGone; other ERROR events KubeUnavailable", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => json(410, { kind: "Status", code: 410, reason: "Expired", message: "too old resource version" }))
      const atStart = yield* Effect.flip(Stream.runCollect(kube.watchPods("vk", "1")))
      assert.strictEqual(atStart._tag, "KubeGone")

      const errorLine = (code: number) =>
        JSON.stringify({ type: "ERROR", object: { kind: "Status", code, reason: "Expired", message: `code ${code}` } }) + "\n"
      rec.setHandler(() => ({ status: 200, body: errorLine(410) }))
      const midWatch = yield* Effect.flip(Stream.runCollect(kube.watchPods("vk", "1")))
      assert.strictEqual(midWatch._tag, "KubeGone")

      rec.setHandler(() => ({ status: 200, body: errorLine(500) }))
      const other = yield* Effect.flip(Stream.runCollect(kube.watchPods("vk", "1")))
      assert.strictEqual(other._tag, "KubeUnavailable")
      assert.strictEqual(other._tag === "KubeUnavailable" ? other.status : -1, 500)
    }))

  it.effect("watch: a clean server close ends the stream", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({
        status: 200,
        body: JSON.stringify({ type: "MODIFIED", object: { metadata: { name: "a", namespace: "x" } } }) + "\n"
      }))
      const events = yield* Stream.runCollect(kube.watchPods("vk", "5"))
      assert.deepStrictEqual(events.map((e) => e.type), ["MODIFIED"])
    }))

  it.effect("watch: a connection cut mid-stream is KubeUnavailable(0), not a clean end", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({
        status: 200,
        reset: true,
        body: JSON.stringify({ type: "ADDED", object: { metadata: { name: "a", namespace: "x" } } }) + "\n"
      }))
      const received: Array<string> = []
      const error = yield* kube.watchPods("vk", "5").pipe(
        Stream.runForEach((event) => Effect.sync(() => received.push(event.type))),
        Effect.flip
      )
      assert.deepStrictEqual(received, ["ADDED"])
      assert.strictEqual(error._tag, "KubeUnavailable")
      assert.strictEqual(error._tag === "KubeUnavailable" ? error.status : -1, 0)
    }))

  it.effect("watch: interrupting it before the response headers aborts the request", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => "never")
      const fiber = yield* Effect.forkChild(Stream.runCollect(kube.watchPods("vk", "5")))
      while (rec.requests.length === 0) yield* flushIO
      yield* Fiber.interrupt(fiber)
      for (let i = 0; i < 100 && rec.closed.length === 0; i++) yield* flushIO
      assert.deepStrictEqual(rec.closed, ["/api/v1/pods"])
    }))

  it.effect("watch: a silent connection fails after the idle timeout", () =>
    Effect.gen(function*() {
      const { kube, rec } = yield* setup
      rec.setHandler(() => ({ status: 200, hold: true, body: "" }))
      const done = yield* Deferred.make<void>()
      const fiber = yield* Effect.forkChild(
        Stream.runCollect(kube.watchPods("vk", "5")).pipe(Effect.ensuring(Deferred.succeed(done, undefined)))
      )
      while (rec.requests.length === 0) yield* flushIO
      for (let i = 0; i < 5; i++) yield* flushIO
      yield* TestClock.adjust("331 seconds")
      yield* Deferred.await(done)
      const error = yield* Effect.flip(Fiber.join(fiber))
      assert.strictEqual(error._tag, "KubeUnavailable")
      while (rec.closed.length === 0) yield* flushIO
    }))
})
