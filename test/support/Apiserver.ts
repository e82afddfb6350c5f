/** The in-memory apiserver served for a test. */
import { Effect } from "effect"
import * as NodePath from "node:path"
import type { ClusterModel } from "../../testkit/Simulators/Apiserver/Model.ts"
import { serve } from "../../testkit/Simulators/Apiserver/Server.ts"
import { tempDir } from "./TempDir.ts"

/**
 * `model` over loopback HTTP for the scope, without bookmarks, its kubeconfig (with `token`
 * when given) written into a temporary directory.
 */
export const serveModel = (model: ClusterModel, options: { readonly token?: string } = {}) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("vk-apiserver-")
    const kubeconfigPath = NodePath.join(dir, "kubeconfig")
    const apiserver = yield* serve(model, { ...options, kubeconfigPath, bookmarkIntervalMs: 0 })
    return { dir, kubeconfigPath, apiserver }
  })
