/**
 * The chart as test/helm's tests read it: the renders test/helm/run.sh made of every
 * ci/*-values.yaml (VK_HELM_RENDER_DIR) and renders with values of a test's own (VK_HELM_BIN),
 * read through test/support/Rendered.ts.
 */
import { spawnSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { parseNodeLabels } from "../../src/Cli/NodeLabels.ts"
import { at, manifests } from "../support/Rendered.ts"

export const renderDir = process.env["VK_HELM_RENDER_DIR"] ?? ""
/** The helm binary test/helm/run.sh built, for renders with values of a test's own. */
export const helmBin = process.env["VK_HELM_BIN"] ?? ""

export const renders: ReadonlyArray<readonly [string, ReadonlyArray<unknown>]> = renderDir === ""
  ? []
  : readdirSync(renderDir)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => [
      file.replace(/\.yaml$/, ""),
      manifests(readFileSync(join(renderDir, file), "utf8"))
    ] as const)

const isHook = (doc: unknown) => at(doc, "metadata", "annotations", "helm.sh/hook") !== undefined
/** The release's objects of a kind (`helm test`'s hooks left out: see `hooks`). */
export const find = (docs: ReadonlyArray<unknown>, kind: string) => docs.filter((doc) => at(doc, "kind") === kind && !isHook(doc))
/** The hook objects of a kind. */
export const hooks = (docs: ReadonlyArray<unknown>, kind: string) => docs.filter((doc) => at(doc, "kind") === kind && isHook(doc))

export const repoRoot = join(import.meta.dirname, "..", "..")
/** The labels of the daemon's `--node-labels=` argument. */
export const parsedLabels = (args: ReadonlyArray<string>) =>
  parseNodeLabels((args.find((arg) => arg.startsWith("--node-labels=")) ?? "").slice("--node-labels=".length))

/** `helm template` of the chart with `--set` values, for Kubernetes `kubeVersion`. */
export const render = (sets: ReadonlyArray<string>, kubeVersion = "1.30.0") => {
  const run = spawnSync(
    helmBin,
    [
      "template",
      "vk-sandbox",
      join(repoRoot, "deploy", "helm", "vk-sandbox"),
      "--namespace",
      "vk-sandbox",
      "--kube-version",
      kubeVersion,
      ...sets.flatMap((v) => ["--set", v])
    ],
    { encoding: "utf8" }
  )
  const docs = run.status === 0 ? manifests(run.stdout) : []
  return { ok: run.status === 0, stderr: run.stderr, docs }
}
export const podOf = (docs: ReadonlyArray<unknown>) => at(find(docs, "DaemonSet")[0], "spec", "template", "spec")
export const withToken = "sandboxd.token.value=t0ken"
