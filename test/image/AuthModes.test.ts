/**
 * Every kubeconfig authentication the daemon takes, in the image under the chart's security
 * context (IMG-3 — the image runs as the chart runs it; IMG-1 — the image holds only what runs):
 * token, token file, client certificate, exec plugin (`node` on a mounted script: the image has
 * no shell) and OIDC auth-provider, each against the apiserver simulator behind TLS; the daemon
 * must register its node and turn ready. In-cluster is ./ChartRun.test.ts's way in.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import * as YAML from "yaml"
import { Nodes } from "../../testkit/Simulators/Apiserver/Resources.ts"
import { newStateDir, prepareState, ready, startDaemon, startWorld, virtualNode, type World } from "./World.ts"

const mountPath = "/etc/vk-sandbox/kube"
const b64 = (text: string) => Buffer.from(text).toString("base64")
const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

/** An id-token shaped as a JWT (the daemon reads only its expiry; the simulator compares the whole text). */
const idToken = `${b64url({ alg: "RS256", typ: "JWT" })}.${b64url({ iss: "https://idp.invalid", sub: "vk-sandbox", exp: Math.floor(Date.now() / 1000) + 86_400 })}.c2lnbmF0dXJl`

interface Mode {
  readonly name: string
  /** The apiserver's bearer token ("" = none, a client certificate instead). */
  readonly apiToken: string
  /** The kubeconfig's user, and files it names (written next to it, in the mounted directory). */
  readonly user: (world: World) => Record<string, unknown>
  readonly files?: (world: World) => Record<string, string>
}

const modes: ReadonlyArray<Mode> = [
  { name: "token", apiToken: "token-mode-0123456789", user: (world) => ({ token: world.cluster.apiToken }) },
  {
    // client-node reads `token-file` (once, at load), not kubectl's `tokenFile` (docs/installation.md)
    name: "token file",
    apiToken: "token-file-mode-0123456789",
    user: () => ({ "token-file": `${mountPath}/token` }),
    files: (world) => ({ token: world.cluster.apiToken })
  },
  {
    name: "client certificate",
    apiToken: "",
    user: (world) => ({ "client-certificate-data": b64(world.pki.clientCertPem), "client-key-data": b64(world.pki.clientKeyPem) })
  },
  {
    name: "exec plugin (node on a mounted script)",
    apiToken: "exec-mode-0123456789",
    user: () => ({
      exec: { apiVersion: "client.authentication.k8s.io/v1", command: "node", args: [`${mountPath}/credential.js`], interactiveMode: "Never" }
    }),
    files: (world) => ({
      "credential.js": `process.stdout.write(${JSON.stringify(JSON.stringify({
        apiVersion: "client.authentication.k8s.io/v1",
        kind: "ExecCredential",
        status: { token: world.cluster.apiToken }
      }))})\n`
    })
  },
  {
    name: "OIDC auth-provider",
    apiToken: idToken,
    user: () => ({
      "auth-provider": { name: "oidc", config: { "id-token": idToken, "client-id": "vk-sandbox", "idp-issuer-url": "https://idp.invalid" } }
    })
  }
]

describe("kubeconfig authentication in the image", () => {
  for (const mode of modes) {
    it.live(mode.name, () =>
      Effect.gen(function*() {
        const world = yield* startWorld({ warmPerPool: 1, apiToken: mode.apiToken })
        const dir = path.join(world.cluster.dir, "kube")
        fs.mkdirSync(dir)
        for (const [name, content] of Object.entries({ ...mode.files?.(world) })) fs.writeFileSync(path.join(dir, name), content, { mode: 0o644 })
        fs.writeFileSync(path.join(dir, "config"), YAML.stringify({
          apiVersion: "v1",
          kind: "Config",
          clusters: [{ name: "c", cluster: { server: `https://127.0.0.1:${world.apiserverPort}`, "certificate-authority-data": b64(world.pki.caCertPem) } }],
          users: [{ name: "u", user: mode.user(world) }],
          contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
          "current-context": "x"
        }), { mode: 0o644 })
        const stateDir = newStateDir(world, "state")
        assert.strictEqual((yield* prepareState(world, stateDir)).code, 0)
        const daemon = yield* startDaemon(world, stateDir, undefined, { runArgs: ["-v", `${dir}:${mountPath}:ro`], args: [`--kubeconfig=${mountPath}/config`] })
        yield* ready(daemon, "30 seconds").pipe(Effect.tapError(() => Effect.flatMap(daemon.container.logs, (logs) => Effect.logError(logs))))
        assert.isDefined(world.cluster.model.peek(Nodes, "", virtualNode), "the node is registered")
      }).pipe(Effect.scoped), 90_000)
  }
})
