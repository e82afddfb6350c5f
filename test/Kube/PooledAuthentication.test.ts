import { assert, describe, it } from "@effect/vitest"
import { KubeConfig, RequestContext, HttpMethod } from "@kubernetes/client-node"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import type { AddressInfo } from "node:net"
import * as NodePath from "node:path"
import * as PooledAuthentication from "../../src/Kube/PooledAuthentication.ts"
import { kubeApiFromFile } from "../support/Kube.ts"
import { kubeconfigYaml as kubeconfig } from "../../testkit/Simulators/Apiserver/Server.ts"
import { tempDir as scopedTempDir } from "../support/TempDir.ts"

const tempDir = scopedTempDir("pooled-auth-")

const contextFor = () => new RequestContext("https://apiserver.invalid:6443/api/v1/nodes", HttpMethod.GET)

describe("PooledAuthentication", () => {
  it.effect("one dispatcher while the TLS material stays the same; a rotated CA file gets a new one; headers are read every time", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const caFile = NodePath.join(dir, "ca.crt")
      NodeFs.writeFileSync(caFile, "first CA bundle")
      const kubeConfig = new KubeConfig()
      kubeConfig.loadFromString(kubeconfig("https://apiserver.invalid:6443", "t1", { cluster: { "certificate-authority": caFile } }))
      const auth = PooledAuthentication.make(kubeConfig)

      const apply = () =>
        Effect.promise(async () => {
          const context = contextFor()
          await auth.applySecurityAuthentication(context)
          return context
        })
      const first = yield* apply()
      const second = yield* apply()
      const third = yield* apply()
      assert.isDefined(first.getDispatcher())
      assert.strictEqual(second.getDispatcher(), first.getDispatcher())
      assert.strictEqual(third.getDispatcher(), first.getDispatcher())
      assert.strictEqual(first.getHeaders()["Authorization"], "Bearer t1")
      assert.strictEqual(auth.dispatchersBuilt(), 1)

      // client-node on its own builds a new dispatcher per request: the reason this module exists.
      const own = yield* Effect.promise(async () => {
        const a = contextFor()
        const b = contextFor()
        await kubeConfig.applySecurityAuthentication(a)
        await kubeConfig.applySecurityAuthentication(b)
        return [a.getDispatcher(), b.getDispatcher()] as const
      })
      assert.notStrictEqual(own[0], own[1])

      // A token change is a header, not a connection.
      kubeConfig.users[0] = { ...kubeConfig.users[0]!, token: "t2" }
      const afterToken = yield* apply()
      assert.strictEqual(afterToken.getHeaders()["Authorization"], "Bearer t2")
      assert.strictEqual(afterToken.getDispatcher(), first.getDispatcher())

      // The CA file is re-read per request, as client-node reads it: a rotation takes effect.
      NodeFs.writeFileSync(caFile, "second CA bundle")
      const afterRotation = yield* apply()
      assert.notStrictEqual(afterRotation.getDispatcher(), first.getDispatcher())
      assert.strictEqual(auth.dispatchersBuilt(), 2)
      assert.strictEqual((yield* apply()).getDispatcher(), afterRotation.getDispatcher())
    }).pipe(Effect.scoped))

  it.live("twenty apiserver calls in a row share the pool's kept-alive connections", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      let connections = 0
      const server = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<NodeHttp.Server>((resolve) => {
            const s = NodeHttp.createServer((request, response) => {
              const name = request.url?.split("/").at(-1) ?? ""
              response.setHeader("content-type", "application/json")
              response.end(JSON.stringify({ metadata: { name, namespace: "ns", uid: `u-${name}` } }))
            })
            s.on("connection", () => connections++)
            s.listen(0, "127.0.0.1", () => resolve(s))
          })
        ),
        (s) => Effect.promise(() => new Promise<void>((resolve) => {
          s.closeAllConnections()
          s.close(() => resolve())
        }))
      )
      const port = (server.address() as AddressInfo).port
      const path = NodePath.join(dir, "kubeconfig")
      // client-node takes plain http only with insecure-skip-tls-verify, which is TLS material
      // too: without the pool, every call would get a fresh agent and so a fresh connection.
      NodeFs.writeFileSync(path, kubeconfig(`http://127.0.0.1:${port}`, "t"))
      const kube = yield* kubeApiFromFile(path)
      for (let i = 0; i < 20; i++) {
        const pod = yield* kube.getPod("ns", `p${i}`)
        assert.strictEqual(pod.metadata?.name, `p${i}`)
      }
      // A request may still hold its connection when the next one starts, so the pool may open a
      // second; a connection per call would be twenty.
      assert.isAtMost(connections, 2)
    }).pipe(Effect.scoped))
})
