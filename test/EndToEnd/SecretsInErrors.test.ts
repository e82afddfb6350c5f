/**
 * No secret in any error: the real executable is fed secrets through every startup error path (a
 * password in --sandboxd-url, a token in a malformed kubeconfig, a password in a kubeconfig's
 * server URL, a sandboxd token the HTTP layer refuses, secrets inside a corrupt claims file and
 * unusable TLS and CA files) and what it prints on stdout and stderr, and what it writes to the
 * cluster (Events, the Node's conditions, Pod statuses of the in-memory apiserver), must never
 * contain them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Cluster, createPod, freePort, getPod, spawnDaemon, startCluster, waitFor } from "../../testkit/Demo/Harness.ts"
import { CoreEvents, Nodes, Pods } from "../../testkit/Simulators/Apiserver/Resources.ts"
import { runBinary } from "../support/Process.ts"

const secret = "Zq9-s3cr3t-never-printed"

/** Everything the daemon wrote into the in-memory cluster, as one text. */
const clusterText = (cluster: Cluster): string =>
  [CoreEvents, Nodes, Pods].map((resource) => JSON.stringify(cluster.model.list(resource, undefined))).join("\n")

const write = (cluster: Cluster, name: string, content: string, mode = 0o600) => {
  const file = path.join(cluster.dir, name)
  fs.writeFileSync(file, content, { mode })
  return file
}

/** The cluster's kubeconfig with its server URL given a password. */
const kubeconfigWithPassword = (cluster: Cluster, port: number) =>
  write(
    cluster,
    "kubeconfig-password",
    fs.readFileSync(cluster.kubeconfigPath, "utf8").replace(/server: *"?https?:\/\/[^\s"]+"?/, `server: http://admin:${secret}@127.0.0.1:${port}`)
  )

describe("no secret in any error", () => {
  it.live("startup failures print the file, flag and position, never the secret", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* startCluster()
      const base = ["--kubeconfig", cluster.kubeconfigPath, "--sandboxd-url", cluster.sandboxdUrl, "--state-path", cluster.statePath]
      const closed = yield* freePort
      const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, Record<string, string>, number, string]> = [
        ["a password in --sandboxd-url (usage error)", [...base, "--sandboxd-url", `http://admin:${secret}@127.0.0.1:7777/?x=1`], {}, 2, "redacted@"],
        ["a password in $SANDBOXD_URL (usage error)", ["--kubeconfig", cluster.kubeconfigPath], { SANDBOXD_URL: `ftp://${secret}@sandboxd` }, 2, "SANDBOXD_URL"],
        [
          "a token in a malformed kubeconfig",
          [...base, "--kubeconfig", write(cluster, "kubeconfig-tab", `users:\n- name: u\n  user:\n    token: ${secret}\n\t x: y\n`)],
          {},
          1,
          "kubeconfig-tab: not valid YAML at line 5"
        ],
        [
          "a token as a YAML alias name",
          [...base, "--kubeconfig", write(cluster, "kubeconfig-alias", `users: *${secret}\n`)],
          {},
          1,
          "kubeconfig-alias: not valid YAML"
        ],
        [
          "a secret in a corrupt claims file",
          [...base, "--state-path", write(cluster, "claims.json", `{"version":1,"claims":{"a/b":{"token":"${secret}"`)],
          {},
          1,
          "claims.json"
        ],
        [
          "secrets in files that are not a certificate and key",
          [...base, "--tls-cert", write(cluster, "tls.crt", `-----BEGIN CERTIFICATE-----\n${secret}\n`), "--tls-key", write(cluster, "tls.key", `${secret}\n`)],
          {},
          1,
          "tls"
        ],
        [
          "a secret in a file that is not a CA bundle",
          [...base, "--client-ca-file", write(cluster, "ca.crt", `-----BEGIN CERTIFICATE-----\n${secret}\n-----END CERTIFICATE-----\n`)],
          {},
          1,
          "ca.crt"
        ],
        [
          "a password in the kubeconfig's server URL, nothing listening",
          [...base, "--kubeconfig", kubeconfigWithPassword(cluster, closed), "--shutdown-timeout", "1s"],
          {},
          1,
          "redacted@"
        ]
      ]
      for (const [what, args, env, code, mentions] of cases) {
        const run = yield* runBinary(args, env).pipe(Effect.timeout("20 seconds"))
        assert.notInclude(run.output, secret, what)
        assert.strictEqual(run.code, code, `${what}: ${run.output}`)
        assert.include(run.output, mentions, what)
      }
    })), { timeout: 120_000 })

  it.live("a running daemon with a password in --sandboxd-url and a token HTTP cannot carry writes neither", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* startCluster()
      const closed = yield* freePort
      // sandboxd "behind a proxy" with a password, not answering: unreachable errors, the
      // SandboxdReachable condition, the start-up log line
      const unreachable = yield* spawnDaemon(cluster, { extraArgs: ["--sandboxd-url", `http://admin:${secret}@127.0.0.1:${closed}`] })
      yield* createPod(cluster, "secrets", "unreachable")
      yield* waitFor(
        "secrets",
        "the Pod to report a failure",
        Effect.sync(() => Option.filter(getPod(cluster, "unreachable"), (pod) => pod.message !== "" || pod.reason !== "")),
        { timeout: "30 seconds", describe: unreachable.output }
      )
      yield* unreachable.signal("SIGTERM")
      yield* Deferred.await(unreachable.exited)
      assert.include(unreachable.output(), "redacted@", "the URL is shown, without its user info")
      assert.notInclude(unreachable.output(), secret)
      assert.notInclude(clusterText(cluster), secret)
    })), { timeout: 90_000 })
})
