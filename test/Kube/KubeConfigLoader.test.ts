import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"
import * as KubeConfigLoader from "../../src/Kube/KubeConfigLoader.ts"
import { testConfig } from "../../testkit/Config.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import { KubeApi } from "../../src/Services/KubeApi.ts"
import { kubeconfigYaml } from "../../testkit/Simulators/Apiserver/Server.ts"
import { tempDir as scopedTempDir } from "../support/TempDir.ts"

const tempDir = scopedTempDir("kubeconfig-")

const writeKubeconfig = (dir: string, file: string, server: string): string => {
  const path = NodePath.join(dir, file)
  NodeFs.writeFileSync(path, kubeconfigYaml(server, "t"))
  return path
}

const writeServiceAccount = (root: string) => {
  const dir = `${root}${KubeConfigLoader.serviceAccountDir}`
  NodeFs.mkdirSync(dir, { recursive: true })
  NodeFs.writeFileSync(`${dir}/token`, "sa-token")
  NodeFs.writeFileSync(`${dir}/ca.crt`, "")
}

const serverOf = (loaded: KubeConfigLoader.LoadedKubeConfig) => loaded.kubeConfig.getCurrentCluster()?.server

describe("KubeConfigLoader", () => {
  it.effect("an explicit path wins over in-cluster and $KUBECONFIG", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      writeServiceAccount(dir)
      const explicitPath = writeKubeconfig(dir, "explicit", "http://127.0.0.1:1001")
      const fromEnv = writeKubeconfig(dir, "env", "http://127.0.0.1:1002")
      const loaded = yield* KubeConfigLoader.resolve({
        explicitPath,
        env: { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443", KUBECONFIG: fromEnv },
        rootPrefix: dir
      })
      assert.strictEqual(loaded.source, "explicit")
      assert.strictEqual(serverOf(loaded), "http://127.0.0.1:1001")
    }))

  it.effect("in-cluster comes before $KUBECONFIG and needs both the token and the service host", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fromEnv = writeKubeconfig(dir, "env", "http://127.0.0.1:1002")
      const noToken = yield* KubeConfigLoader.resolve({
        explicitPath: "",
        env: { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBECONFIG: fromEnv },
        rootPrefix: dir
      })
      assert.strictEqual(noToken.source, "KUBECONFIG", "no token file: not in-cluster")
      writeServiceAccount(dir)
      const noHost = yield* KubeConfigLoader.resolve({ explicitPath: "", env: { KUBECONFIG: fromEnv }, rootPrefix: dir })
      assert.strictEqual(noHost.source, "KUBECONFIG", "no service host: not in-cluster")
      const inCluster = yield* KubeConfigLoader.resolve({
        explicitPath: "",
        env: { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "6443", KUBECONFIG: fromEnv },
        rootPrefix: dir
      })
      assert.strictEqual(inCluster.source, "in-cluster")
      assert.strictEqual(serverOf(inCluster), "https://[fd00::1]:6443")
      assert.strictEqual(inCluster.kubeConfig.getCurrentUser()?.authProvider?.config?.tokenFile, `${dir}${KubeConfigLoader.serviceAccountDir}/token`)
    }))

  it.effect("nothing configured, a missing explicit file, or a broken file is KubeConfigMissing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const none = yield* Effect.flip(KubeConfigLoader.resolve({ explicitPath: "", env: {}, rootPrefix: dir }))
      assert.strictEqual(none._tag, "KubeConfigMissing")
      const missing = yield* Effect.flip(
        KubeConfigLoader.resolve({ explicitPath: NodePath.join(dir, "absent"), env: {}, rootPrefix: dir })
      )
      assert.strictEqual(missing._tag, "KubeConfigMissing")
      assert.include(missing.message, "absent")
      const broken = NodePath.join(dir, "broken")
      NodeFs.writeFileSync(broken, "apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n")
      const noCluster = yield* Effect.flip(KubeConfigLoader.resolve({ explicitPath: "", env: { KUBECONFIG: broken }, rootPrefix: dir }))
      assert.strictEqual(noCluster._tag, "KubeConfigMissing")
    }))

  it.effect("the live layer fails with KubeConfigMissing when the explicit kubeconfig is absent", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const built = Effect.gen(function*() {
        return yield* KubeApi
      }).pipe(
        Effect.provide(
          KubeApiClientNode.layer.pipe(
            Layer.provide(AppConfig.layer(testConfig({ kubeconfig: NodePath.join(dir, "absent") })))
          )
        )
      )
      const error = yield* Effect.flip(built)
      assert.strictEqual(error._tag, "KubeConfigMissing")
    }))
  it.effect("a malformed kubeconfig names the file and the position, never its content", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const secret = "s3cr3t-kube-token-value"
      const valid = writeKubeconfig(dir, "valid", "http://127.0.0.1:1001")
      const cases: ReadonlyArray<readonly [string, string, string]> = [
        // a tab in the indentation under the token line: the parser's code frame shows that line
        ["tab", `users:\n- name: u\n  user:\n    token: ${secret}\n\t bad: x\n`, "at line 5, column 1 (tab characters must not be used in indentation)"],
        ["unterminated quote", `users:\n- name: u\n  user:\n    token: "${secret}\n`, "at line 5, column 1 (deficient indentation)"],
        ["bad indentation", `users:\n- name: u\n  user:\n    token: ${secret}\n   x: y\n`, "at line 5, column 4 (bad indentation of a mapping entry)"],
        ["duplicate key", `users: 1\nusers: ${secret}\n`, "at line 2, column 1 (duplicated mapping key)"],
        // the parser quotes a tag or alias name from the file in its reason
        ["unknown tag", `users: !${secret} x\n`, "at line 1, column 8 (unknown scalar tag)"],
        ["unknown alias", `users: *${secret}\n`, "at line 1, column "],
        ["truncated JSON", `{"users": [{"name": "u", "user": {"token": "${secret}"}}`, "(unexpected end of the stream within a flow collection)"],
        ["a field missing", `users:\n- user:\n    token: ${secret}\n`, "not a valid kubeconfig: users[0].name is missing"]
      ]
      for (const [what, content, expected] of cases) {
        const path = NodePath.join(dir, what.replace(/ /g, "-"))
        NodeFs.writeFileSync(path, content)
        for (const sources of [
          { explicitPath: path, env: {} },
          { explicitPath: "", env: { KUBECONFIG: [valid, path].join(NodePath.delimiter) } }
        ]) {
          const error = yield* Effect.flip(KubeConfigLoader.resolve({ ...sources, rootPrefix: dir }))
          assert.strictEqual(error._tag, "KubeConfigMissing")
          assert.notInclude(error.message, secret, what)
          assert.include(error.message, `${path}: `, `${what}: names the broken file`)
          assert.include(error.message, expected, what)
          assert.notInclude(error.message, "\n", `${what}: one line`)
        }
      }
    }))

  it.effect("an unreadable kubeconfig keeps only the read error's code", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const error = yield* Effect.flip(KubeConfigLoader.resolve({ explicitPath: dir, env: {}, rootPrefix: dir }))
      assert.strictEqual(error.message, `kubeconfig: ${dir}: cannot read it (EISDIR)`)
    }))

  it.effect("a password in the server URL does not reach a connection error", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = writeKubeconfig(dir, "with-password", "http://admin:pa55word@127.0.0.1:1")
      const error = yield* Effect.flip(
        Effect.gen(function*() {
          const api = yield* KubeApi
          return yield* api.getNode("n")
        }).pipe(
          Effect.provide(KubeApiClientNode.layer.pipe(Layer.provide(AppConfig.layer(testConfig({ kubeconfig: path })))))
        )
      )
      // The fetch layer quotes the whole request URL in its refusal; the host stays, the password goes.
      assert.include(error.message, "http://redacted@127.0.0.1:1/")
      assert.notInclude(error.message, "pa55word")
    }))
})
