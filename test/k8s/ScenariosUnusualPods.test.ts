/**
 * INF-1 — a Pod the daemon cannot decode is left out, on the real kube-apiserver: the real server
 * refuses a field of another type at write, so an undecodable Pod is the simulator's test
 * (`test/Programs/PodController/Undecodable.test.ts`). What it does accept and serve back
 * (unknown fields, `null` lists and maps, empty strings, int64 extremes, edge times, another
 * client's status) must be listed, watched and go Running; an int64 past 2^53 once broke the
 * status PUT (ST-06 — status write shape), so the PUT carries no spec.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import {
  admin,
  createNamespace,
  daemonGround,
  eventually,
  kubeApiOf,
  quiet,
  rawRequest,
  runningPod,
  startPodHalf,
  Template
} from "./scenarioHarness.ts"

const pods = (namespace: string) => `/api/v1/namespaces/${namespace}/pods`

const base = (name: string, nodeName: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, annotations: { "sandbox.cocoonstack.io/template": Template } },
  spec: { nodeName, containers: [{ name: "main", image: "python:3.12" }] }
})

describe("Pods the real kube-apiserver accepts decode (INF-1)", () => {
  it.live("a field of another type is refused by the server (400); every unusual value it accepts is read, listed, watched and run", () =>
    Effect.scoped(Effect.gen(function*() {
      const { config } = yield* daemonGround("vk-k8s-unusual-")
      const nodeName = config.nodeName
      const namespace = yield* createNamespace("unusual")
      const { config: adminConfig } = yield* admin
      const post = (body: object) => rawRequest(adminConfig, "POST", pods(namespace), body)

      // ---- what the server refuses: the shapes INF-1 guards against cannot be stored here
      const wrongType = base("wrong-type", nodeName)
      for (const body of [
        { ...wrongType, metadata: { ...wrongType.metadata, labels: { team: 7 } } },
        { ...wrongType, spec: { ...wrongType.spec, containers: [{ name: "main", image: 7 }] } },
        { ...wrongType, spec: { ...wrongType.spec, tolerations: "all" } }
      ]) {
        const reply = yield* post(body)
        assert.strictEqual(reply.status, 400, `refused: ${reply.text.slice(0, 200)}`)
      }

      // ---- what it accepts
      const int64Max = "9223372036854775807"
      const unusual: Record<string, object> = {
        "unknown-fields": {
          ...base("unknown-fields", nodeName),
          futureTop: { a: [1, 2] },
          metadata: { ...base("", "").metadata, name: "unknown-fields", futureMeta: "x" },
          spec: { nodeName, futureSpec: true, containers: [{ name: "main", image: "python:3.12", futureContainer: 1 }] }
        },
        nulls: {
          ...base("nulls", nodeName),
          metadata: { ...base("", "").metadata, name: "nulls", labels: null, finalizers: null, ownerReferences: null, generateName: null },
          spec: { nodeName, containers: [{ name: "main", image: "python:3.12" }], initContainers: null, tolerations: null, activeDeadlineSeconds: null }
        },
        "empty-values": {
          ...base("empty-values", nodeName),
          metadata: {
            ...base("", "").metadata,
            name: "empty-values",
            labels: { empty: "", "example.com/x": "" },
            annotations: { "sandbox.cocoonstack.io/template": Template, empty: "", long: "é".repeat(50_000), control: "a\u0001b\nc" }
          }
        },
        extremes: {
          ...base("extremes", nodeName),
          spec: {
            nodeName,
            containers: [{ name: "main", image: "python:3.12" }],
            activeDeadlineSeconds: 2147483647,
            terminationGracePeriodSeconds: 0,
            tolerations: [
              { key: "k", operator: "Exists", effect: "NoExecute", tolerationSeconds: Number.MAX_SAFE_INTEGER },
              { key: "n", operator: "Exists", effect: "NoExecute", tolerationSeconds: -1 }
            ]
          }
        }
      }
      for (const [name, body] of Object.entries(unusual)) {
        const reply = yield* post(body)
        assert.strictEqual(reply.status, 201, `${name} accepted: ${reply.text.slice(0, 300)}`)
      }
      // int64's largest, beyond what a double holds exactly: sent as written (`JSON.rawJSON`), kept
      // exactly by the server, read by the daemon as the nearest double
      const rawJson = (JSON as unknown as { readonly rawJSON: (text: string) => unknown }).rawJSON
      const int64 = base("int64-max", nodeName)
      const big = yield* post({
        ...int64,
        spec: { ...int64.spec, tolerations: [{ key: "k", operator: "Exists", effect: "NoExecute", tolerationSeconds: rawJson(int64Max) }] }
      })
      assert.strictEqual(big.status, 201, big.text.slice(0, 300))
      assert.include(big.text, `"tolerationSeconds":${int64Max}`)

      // a status written by another client: odd but valid values the daemon reads
      const other = base("other-status", nodeName)
      assert.strictEqual((yield* post(other)).status, 201)
      const current = (yield* rawRequest(adminConfig, "GET", `${pods(namespace)}/other-status`)).body as { metadata: { resourceVersion: string } }
      const status = yield* rawRequest(adminConfig, "PUT", `${pods(namespace)}/other-status/status`, {
        ...other,
        metadata: { ...other.metadata, resourceVersion: current.metadata.resourceVersion },
        status: {
          phase: "Pending",
          message: "x\u0000y",
          hostIPs: null,
          conditions: [
            { type: "example.com/Gate", status: "Unknown", lastProbeTime: null, lastTransitionTime: "0001-01-01T00:00:01Z" },
            { type: "PodScheduled", status: "True", lastTransitionTime: "9999-12-31T23:59:59Z" }
          ],
          containerStatuses: [{
            name: "main",
            ready: false,
            restartCount: 2147483647,
            image: "",
            imageID: "",
            state: { terminated: { exitCode: -2147483648, signal: 9, finishedAt: null } },
            lastState: {}
          }]
        }
      })
      assert.strictEqual(status.status, 200, status.text.slice(0, 300))

      const names = [...Object.keys(unusual), "int64-max", "other-status"].sort()

      // ---- the daemon's client reads every one of them: listed, and watched from the start
      const kube = yield* kubeApiOf(config)
      const list = yield* kube.listPods(nodeName)
      assert.deepStrictEqual(list.undecodable, [], "nothing the real server serves is left out")
      assert.deepStrictEqual(list.items.map((pod) => pod.metadata?.name ?? "").sort(), names)
      const watched = yield* kube.watchPods(nodeName, "0").pipe(
        Stream.filter((event) => event.type !== "BOOKMARK"),
        Stream.take(names.length),
        Stream.runCollect,
        Effect.timeout("20 seconds")
      )
      assert.deepStrictEqual(watched.filter((event) => event.type === "UNDECODABLE"), [])

      // ---- and the pod controller runs each; int64-max only since the status PUT leaves the spec out (ST-06)
      yield* startPodHalf(config)
      for (const name of names) {
        yield* eventually(`${name} Running`, runningPod(namespace, name), 30_000)
      }
    }).pipe(quiet)), { timeout: 120_000 })

  it.live("a terminating Pod's int64 deletionGracePeriodSeconds past 2^53 does not break the daemon's status PUT (ST-06)", () =>
    Effect.scoped(Effect.gen(function*() {
      const { config } = yield* daemonGround("vk-k8s-grace-")
      const namespace = yield* createNamespace("grace")
      const { config: adminConfig } = yield* admin
      const rawJson = (JSON as unknown as { readonly rawJSON: (text: string) => unknown }).rawJSON
      // a finalizer keeps the Pod once deleted; a delete without a grace of its own takes the spec's
      const grace = "9007199254740993" // 2^53 + 1: the nearest double is 2^53
      const body = base("long-grace", config.nodeName)
      const created = yield* rawRequest(adminConfig, "POST", pods(namespace), {
        ...body,
        metadata: { ...body.metadata, finalizers: ["example.com/keep"] },
        spec: { ...body.spec, terminationGracePeriodSeconds: rawJson(grace) }
      })
      assert.strictEqual(created.status, 201, created.text.slice(0, 300))
      const deleted = yield* rawRequest(adminConfig, "DELETE", `${pods(namespace)}/long-grace`)
      assert.strictEqual(deleted.status, 200, deleted.text.slice(0, 300))
      const stored = yield* rawRequest(adminConfig, "GET", `${pods(namespace)}/long-grace`)
      assert.include(stored.text, `"deletionGracePeriodSeconds":${grace}`)

      // the daemon's client reads it (as the nearest double) and writes a status on it
      const kube = yield* kubeApiOf(config)
      const pod = yield* kube.getPod(namespace, "long-grace")
      const written = yield* kube.replacePodStatus({
        ...pod,
        status: { ...pod.status, phase: "Failed", reason: "SandboxLost", message: "test" }
      }).pipe(Effect.result)
      assert.isTrue(written._tag === "Success", `status PUT accepted: ${JSON.stringify(written)}`)
      const after = yield* rawRequest(adminConfig, "GET", `${pods(namespace)}/long-grace`)
      assert.include(after.text, `"deletionGracePeriodSeconds":${grace}`, "the stored grace is unchanged")
      assert.include(after.text, `"reason":"SandboxLost"`)
      yield* rawRequest(adminConfig, "PATCH", `${pods(namespace)}/long-grace`, { metadata: { finalizers: null } }, "application/merge-patch+json")
    }).pipe(quiet)), { timeout: 60_000 })
})
