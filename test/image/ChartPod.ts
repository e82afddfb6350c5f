/**
 * The chart's DaemonSet as the container tests run it: rendered by helm with the test's values,
 * each container translated to `docker run` flags the way the kubelet would run it (security
 * context, volumes as bind mounts, the service account's files, env with fieldRefs and `$(VAR)`,
 * the memory limit). The security context is read from the render, never written here a second
 * time: a field the translation does not know fails the test, so a chart change cannot pass unseen.
 */
import { Effect, Schema } from "effect"
import { join, resolve } from "node:path"
import { serviceAccountDir } from "../../src/Kube/KubeConfigLoader.ts"
import { runProcess } from "../support/Process.ts"
import { at, expandEnv, find, list, manifests, strings, text } from "../support/Rendered.ts"

export class ChartError extends Schema.TaggedError<ChartError>()("ChartError", { message: Schema.String }) {}

const repoRoot = resolve(import.meta.dirname, "..", "..")
const chart = join(repoRoot, "deploy", "helm", "vk-sandbox")

/** The helm binary test/image/run.sh found (test/k8s/build.sh builds it). */
export const helmBin = process.env["VK_HELM_BIN"] ?? ""

export interface RenderedPod {
  /** The DaemonSet's Pod template spec. */
  readonly spec: unknown
  readonly container: (name: string) => unknown
  readonly graceSeconds: number
}

/** `helm template` with ci/default-values.yaml (the defaults plus a sandboxd token) and `set`. */
export const renderPod = (set: Readonly<Record<string, string | number>>): Effect.Effect<RenderedPod, ChartError> =>
  Effect.gen(function*() {
    if (helmBin === "") return yield* new ChartError({ message: "VK_HELM_BIN is not set: run `npm run test:image` (test/image/run.sh)" })
    const rendered = yield* runProcess(helmBin, [
      "template", "vk-sandbox", chart, "--namespace", "vk-sandbox", "--kube-version", "1.30.0", "-f", join(chart, "ci", "default-values.yaml"),
      ...Object.entries(set).flatMap(([key, value]) => [typeof value === "number" ? "--set" : "--set-string", `${key}=${value}`])
    ])
    if (rendered.code !== 0) return yield* new ChartError({ message: `helm template failed: ${rendered.stderr}` })
    const spec = at(find(manifests(rendered.stdout), "DaemonSet")[0], "spec", "template", "spec")
    if (spec === undefined) return yield* new ChartError({ message: "the render has no DaemonSet" })
    const all = [...list(at(spec, "initContainers")), ...list(at(spec, "containers"))]
    return {
      spec,
      container: (name) => all.find((c) => at(c, "name") === name),
      graceSeconds: Number(at(spec, "terminationGracePeriodSeconds"))
    }
  })

export interface Binding {
  /** A host directory for each volume the container mounts, by volume name. */
  readonly volumes: Readonly<Record<string, string>>
  /** The service account's directory (token, ca.crt, namespace) and the apiserver it names. */
  readonly serviceAccount?: { readonly dir: string; readonly host: string; readonly port: number }
  /** Downward-API values: spec.nodeName, status.hostIP. */
  readonly fieldValues: Readonly<Record<string, string>>
  /** The test's own changes to what the chart says, named where they are used (never silent). */
  readonly overrides?: { readonly readOnlyRoot?: boolean; readonly user?: string }
}

export interface DockerRun {
  readonly runArgs: ReadonlyArray<string>
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
}

const known = (what: string, value: unknown, keys: ReadonlyArray<string>): Effect.Effect<void, ChartError> => {
  const unknownKeys = Object.keys(typeof value === "object" && value !== null ? value : {}).filter((k) => !keys.includes(k))
  return unknownKeys.length === 0
    ? Effect.void
    : Effect.fail(new ChartError({ message: `the chart sets ${what}.${unknownKeys.join(", ")}, which the container tests cannot run: teach test/image/ChartPod.ts` }))
}

/**
 * The `docker run` flags (before the image) and arguments (after it) of one rendered container:
 * - pod: runAsUser/runAsGroup (--user), fsGroup and supplementalGroups (--group-add),
 *   seccompProfile RuntimeDefault (Docker's default profile), hostNetwork (must be true: the tests
 *   always use the host network);
 * - container: its own user over the pod's, runAsNonRoot (checked), readOnlyRootFilesystem
 *   (--read-only), allowPrivilegeEscalation false (no-new-privileges), capabilities drop/add;
 * - volumes: each volumeMount a bind mount of the host directory the test gives for that volume
 *   (read-only where the mount is); the service account's token, CA and namespace at the
 *   kubelet's path with KUBERNETES_SERVICE_HOST/PORT, when automountServiceAccountToken is on;
 * - env: values and downward-API fieldRefs, `$(VAR)` expanded as the kubelet does; command, args;
 *   the memory limit (--memory).
 */
export const dockerRun = (pod: RenderedPod, name: string, binding: Binding): Effect.Effect<DockerRun, ChartError> =>
  Effect.gen(function*() {
    const container = pod.container(name)
    if (container === undefined) return yield* new ChartError({ message: `the render has no container ${name}` })
    if (at(pod.spec, "hostNetwork") !== true) return yield* new ChartError({ message: "the chart's Pod is not on the host network" })
    const podSecurity = at(pod.spec, "securityContext")
    const security = at(container, "securityContext")
    yield* known("podSecurityContext", podSecurity, ["runAsUser", "runAsGroup", "fsGroup", "supplementalGroups", "seccompProfile", "runAsNonRoot"])
    yield* known(`${name}.securityContext`, security, [
      "runAsUser", "runAsGroup", "runAsNonRoot", "allowPrivilegeEscalation", "readOnlyRootFilesystem", "capabilities", "seccompProfile"
    ])
    const run: Array<string> = []
    const uid = at(security, "runAsUser") ?? at(podSecurity, "runAsUser")
    const gid = at(security, "runAsGroup") ?? at(podSecurity, "runAsGroup")
    const nonRoot = at(security, "runAsNonRoot") ?? at(podSecurity, "runAsNonRoot")
    if (nonRoot === true && (uid === undefined || uid === 0)) return yield* new ChartError({ message: `${name}: runAsNonRoot without a non-zero runAsUser` })
    const user = binding.overrides?.user ?? (uid === undefined ? undefined : `${text(uid)}:${text(gid ?? uid)}`)
    if (user !== undefined) run.push("--user", user)
    const fsGroup = at(podSecurity, "fsGroup")
    for (const group of [...(fsGroup === undefined ? [] : [fsGroup]), ...list(at(podSecurity, "supplementalGroups"))]) run.push("--group-add", text(group))
    const seccomp = text(at(security, "seccompProfile", "type") ?? at(podSecurity, "seccompProfile", "type"))
    if (seccomp !== "" && seccomp !== "RuntimeDefault") return yield* new ChartError({ message: `${name}: seccomp profile ${seccomp}` })
    if (binding.overrides?.readOnlyRoot ?? at(security, "readOnlyRootFilesystem") === true) run.push("--read-only")
    if (at(security, "allowPrivilegeEscalation") === false) run.push("--security-opt", "no-new-privileges")
    yield* known(`${name}.securityContext.capabilities`, at(security, "capabilities"), ["drop", "add"])
    for (const cap of strings(at(security, "capabilities", "drop"))) run.push("--cap-drop", cap)
    for (const cap of strings(at(security, "capabilities", "add"))) run.push("--cap-add", cap)
    const memory = text(at(container, "resources", "limits", "memory"))
    if (memory !== "") {
      const docker = /^(\d+)(Mi|Gi)$/.exec(memory)
      if (docker === null) return yield* new ChartError({ message: `${name}: memory limit ${memory}` })
      run.push("--memory", `${docker[1]}${docker[2] === "Mi" ? "m" : "g"}`)
    }

    for (const mount of list(at(container, "volumeMounts"))) {
      const volume = text(at(mount, "name"))
      const hostDir = binding.volumes[volume]
      if (hostDir === undefined) return yield* new ChartError({ message: `${name} mounts volume ${volume}, which the test gives no directory for` })
      const subPath = text(at(mount, "subPath"))
      run.push("-v", `${subPath === "" ? hostDir : join(hostDir, subPath)}:${text(at(mount, "mountPath"))}${at(mount, "readOnly") === true ? ":ro" : ""}`)
    }
    const env: Record<string, string> = expandEnv(list(at(container, "env")), binding.fieldValues)
    if (at(pod.spec, "automountServiceAccountToken") !== false && binding.serviceAccount !== undefined) {
      run.push("-v", `${binding.serviceAccount.dir}:${serviceAccountDir}:ro`)
      env["KUBERNETES_SERVICE_HOST"] = binding.serviceAccount.host
      env["KUBERNETES_SERVICE_PORT"] = String(binding.serviceAccount.port)
    }
    for (const [key, value] of Object.entries(env)) run.push("-e", `${key}=${value}`)
    const command = strings(at(container, "command"))
    if (command.length > 0) run.push("--entrypoint", command[0]!)
    return { runArgs: run, args: [...command.slice(1), ...strings(at(container, "args"))], env }
  })
