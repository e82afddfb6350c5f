/**
 * helm and kubectl as an operator runs them against the cluster plane (admin kubeconfig), with
 * helm's cache, config and data under a directory of the scenario's own.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { Effect } from "effect"
import * as YAML from "yaml"
import { NodeStepFailed, run } from "./Commands.ts"

export const chartDir = resolve(import.meta.dirname, "..", "..", "..", "..", "deploy", "helm", "vk-sandbox")

export interface Tools {
  readonly helm: (what: string, args: ReadonlyArray<string>) => Effect.Effect<string, NodeStepFailed>
  readonly kubectl: (what: string, args: ReadonlyArray<string>) => Effect.Effect<string, NodeStepFailed>
  /** Writes a values file for `--values`; returns its path. */
  readonly valuesFile: (name: string, values: object) => Effect.Effect<string, NodeStepFailed>
}

export const tools = (binDir: string, kubeconfig: string, dir: string): Tools => {
  const env = {
    KUBECONFIG: kubeconfig,
    HOME: dir,
    HELM_CACHE_HOME: join(dir, "helm", "cache"),
    HELM_CONFIG_HOME: join(dir, "helm", "config"),
    HELM_DATA_HOME: join(dir, "helm", "data")
  }
  return {
    helm: (what, args) => run(what, join(binDir, "helm"), args, env),
    kubectl: (what, args) => run(what, join(binDir, "kubectl"), args, env),
    valuesFile: (name, values) =>
      Effect.try({
        try: () => {
          mkdirSync(join(dir, "values"), { recursive: true })
          const path = join(dir, "values", `${name}.yaml`)
          writeFileSync(path, YAML.stringify(values))
          return path
        },
        catch: (cause) => new NodeStepFailed({ message: `writing values ${name}: ${String(cause)}` })
      })
  }
}
