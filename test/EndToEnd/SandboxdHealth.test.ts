/**
 * The daemon as a product when sandboxd cannot serve: the real executable against both
 * simulators. Readiness waits for sandboxd's first answer since start; a later outage shows as
 * the Node's NoSchedule taint, not as readiness. The startup line names where the daemon talks,
 * with the sandboxd URL's user info redacted; a sandboxd that cannot serve at startup is a WARN.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Nodes } from "../../testkit/Simulators/Apiserver/Resources.ts"
import { SimFault } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { type Cluster, httpGet, spawnDaemon, startCluster, waitFor } from "../../testkit/Demo/Harness.ts"

const TAINT = "sandbox.cocoonstack.io/sandboxd-unavailable"

const taintOf = (cluster: Cluster) => {
  const node = cluster.model.peek(Nodes, "", cluster.nodeName) as { spec?: { taints?: Array<Record<string, string>> } } | undefined
  return node?.spec?.taints?.find((t) => t["key"] === TAINT)
}

const logLines = (output: string) =>
  output.split("\n").flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>]
    } catch {
      return []
    }
  })

describe("daemon end to end: sandboxd health", () => {
  it.live("not ready until sandboxd first answers; later outages taint the node and leave readiness alone", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* startCluster({})
      yield* cluster.sandboxd.injectFault("info", SimFault.drop)
      const withUserInfo = cluster.sandboxdUrl.replace("http://", "http://probe:pa55word@")
      const daemon = yield* spawnDaemon(cluster, {
        extraArgs: ["--sandboxd-url", withUserInfo, "--sandboxd-probe-interval", "200ms", "--sandboxd-probe-grace", "2"]
      })
      const readyz = httpGet(`${daemon.metricsUrl}/readyz`)

      // Registered and synced, but sandboxd never answered: not ready, and tainted after the grace.
      const notReady = yield* waitFor("startup", "/readyz to answer", readyz, { timeout: "20 seconds", describe: daemon.output })
      assert.strictEqual(notReady.status, 503, notReady.body)
      assert.include(notReady.body, "sandboxd has not answered yet")
      const tainted = yield* waitFor("startup", "the taint", Effect.sync(() => Option.fromNullishOr(taintOf(cluster))), {
        describe: daemon.output
      })
      assert.strictEqual(tainted["value"], "Unreachable")

      const lines = logLines(daemon.output())
      const warn = lines.find((l) => l["msg"] === "sandboxd cannot serve at startup")
      assert.strictEqual(warn?.["level"], "warn")
      assert.strictEqual(warn?.["reason"], "Unreachable")
      const started = lines.filter((l) => l["msg"] === "starting virtual node")
      assert.strictEqual(started.length, 1)
      const fields = started[0]!
      assert.strictEqual(fields["node"], cluster.nodeName)
      assert.strictEqual(fields["sandboxd"], cluster.sandboxdUrl.replace("http://", "http://redacted@"))
      assert.strictEqual(fields["state"], cluster.statePath)
      assert.match(String(fields["version"]), /^\d+\.\d+\.\d+/)
      assert.match(String(fields["kubelet"]), /^127\.0\.0\.1:\d+$/)
      // No --tls-cert and no vk-cocoon pair where the daemon looks: self-signed, said at INFO
      // (TLS-4 — vk-cocoon's certificate is reused when it is usable).
      assert.strictEqual(fields["tls"], "self-signed")
      const fallback = lines.find((l) => l["msg"] === "vk-cocoon kubelet certificate not reused; self-signing")
      assert.deepStrictEqual([fallback?.["level"], fallback?.["reason"]], ["info", "absent"])
      assert.strictEqual(`http://${String(fields["metrics"])}`, daemon.metricsUrl)
      assert.notInclude(daemon.output(), "pa55word")

      // sandboxd answers: ready, and the taint is gone.
      yield* cluster.sandboxd.clearFaults
      yield* waitFor("recovery", "/readyz 200", readyz.pipe(Effect.map(Option.filter((r) => r.status === 200))), {
        describe: daemon.output
      })
      yield* waitFor("recovery", "no taint", Effect.sync(() => (taintOf(cluster) === undefined ? Option.some(true) : Option.none())), {
        describe: daemon.output
      })

      // A later outage: tainted again, but readiness stays (a rollout must not stall on it).
      yield* cluster.sandboxd.injectFault("info", SimFault.status(503, "restarting"))
      const again = yield* waitFor("outage", "the taint again", Effect.sync(() => Option.fromNullishOr(taintOf(cluster))), {
        describe: daemon.output
      })
      assert.strictEqual(again["value"], "Failing")
      const stillReady = yield* readyz
      assert.isTrue(Option.isSome(stillReady) && stillReady.value.status === 200)
    })), { timeout: 60_000 })
})
