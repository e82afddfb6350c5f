/**
 * The real executable's kubelet certificate (TLS-2 — which certificate; TLS-4 — vk-cocoon's
 * certificate is reused when it is usable): with no `--tls-cert`, vk-cocoon's pair is served when
 * it is there, and the startup line and `vk_sandbox_kubelet_tls_info` say so. (Without it the
 * daemon self-signs: every other end-to-end test, and SandboxdHealth.test.ts reads that from the
 * startup line.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { X509Certificate } from "node:crypto"
import * as fs from "node:fs"
import * as tls from "node:tls"
import { generateSelfSigned } from "../../src/Programs/Kubelet/SelfSigned.ts"
import { type Cluster, httpGet, spawnDaemon, startCluster, vkCocoonPairPaths, waitFor } from "../../testkit/Demo/Harness.ts"

const startupLine = (output: string) =>
  Option.fromNullishOr(
    output.split("\n").flatMap((line) => {
      try {
        const record = JSON.parse(line) as Record<string, unknown>
        return record["msg"] === "starting virtual node" ? [record] : []
      } catch {
        return []
      }
    })[0]
  )

/** The certificate the kubelet port presents. */
const presented = (address: string) =>
  Effect.callback<X509Certificate, Error>((resume) => {
    const [host = "", port = ""] = address.split(/:(?=\d+$)/)
    const socket = tls.connect({ host, port: Number(port), rejectUnauthorized: false }, () => {
      const raw = socket.getPeerCertificate().raw
      socket.end()
      resume(Effect.succeed(new X509Certificate(raw)))
    })
    socket.on("error", (e) => resume(Effect.fail(e)))
  })

/** The daemon started on `cluster`: its startup line's `tls` and `kubelet`, and the tls_info series served. */
const started = (cluster: Cluster) =>
  Effect.gen(function*() {
    const daemon = yield* spawnDaemon(cluster)
    const line = yield* waitFor("startup", "the startup line", Effect.sync(() => startupLine(daemon.output())), {
      timeout: "20 seconds",
      describe: daemon.output
    })
    const metrics = yield* waitFor("startup", "/metrics", httpGet(`${daemon.metricsUrl}/metrics`), { describe: daemon.output })
    const sources = [...metrics.body.matchAll(/^vk_sandbox_kubelet_tls_info\{source="([^"]+)"\} 1$/gm)].map((m) => m[1])
    return { tls: line["tls"], kubelet: String(line["kubelet"]), sources }
  })

describe("daemon end to end: the kubelet certificate", () => {
  it.live("serves vk-cocoon's pair when it is there, and says so", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* startCluster({})
      const pair = yield* generateSelfSigned("vk-cocoon-here", "")
      const paths = vkCocoonPairPaths(cluster)
      fs.mkdirSync(paths.dir)
      fs.writeFileSync(paths.cert, pair.certPem)
      fs.writeFileSync(paths.key, pair.keyPem, { mode: 0o600 })
      const reusing = yield* started(cluster)
      assert.strictEqual(reusing.tls, "vk-cocoon")
      assert.deepStrictEqual(reusing.sources, ["vk-cocoon"])
      assert.strictEqual((yield* presented(reusing.kubelet)).fingerprint256, new X509Certificate(pair.certPem).fingerprint256)
    })))
})
