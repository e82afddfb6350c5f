/**
 * What the demo and the end-to-end test share: both simulators in this process on loopback, the
 * real daemon as a child process against them over HTTP, and small helpers that read and mutate
 * the simulators' models directly (the daemon only ever sees them over the wire).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Deferred, Duration, Effect, Exit, Option, Result, Schema, type Scope } from "effect"
import { PodAnnotation } from "../../src/Schemas/PodAnnotations.ts"
import { poll } from "../Poll.ts"
import * as Ports from "../Ports.ts"
import { ClusterModel } from "../Simulators/Apiserver/Model.ts"
import { Namespaces, NodeInventories, Pods, Sandboxes } from "../Simulators/Apiserver/Resources.ts"
import { type RunningApiserver, serve as serveApiserver } from "../Simulators/Apiserver/Server.ts"
import * as SandboxdModel from "../Simulators/Sandboxd/Model.ts"
import { serve as serveSandboxd } from "../Simulators/Sandboxd/Server.ts"

/** A step of the scenario did not behave (or the environment refused to set it up). */
export class StepFailed extends Schema.TaggedError<StepFailed>()("StepFailed", {
  step: Schema.String,
  message: Schema.String
}) {}

export type JsonObject = { [key: string]: unknown }

/**
 * This checkout's executable: the script `node_modules/.bin/vk-sandbox` links to after `npm ci`
 * here; a node_modules shared with another checkout would link that checkout's instead.
 */
export const binary = fileURLToPath(new URL("../../bin/vk-sandbox", import.meta.url))

const isRecord = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)
const field = (u: unknown, key: string): unknown => (isRecord(u) ? u[key] : undefined)
const text = (u: unknown): string => (typeof u === "string" ? u : "")

// ---- the environment ---------------------------------------------------------------------------

export interface Cluster {
  readonly dir: string
  readonly nodeName: string
  readonly namespace: string
  readonly apiserver: RunningApiserver
  readonly model: ClusterModel
  readonly sandboxd: SandboxdModel.SandboxdSimShape
  readonly sandboxdUrl: string
  readonly kubeconfigPath: string
  /** The bearer token the apiserver asks for ("" = none). */
  readonly apiToken: string
  readonly tokenFile: string
  readonly statePath: string
}

export interface ClusterOptions {
  readonly nodeName?: string
  readonly namespace?: string
  readonly warmPerPool?: number
  readonly maxClaims?: number
  /** Leave the temp directory (logs, claims file) in place when the scope closes. */
  readonly keepDir?: boolean
  /** The apiserver's bearer token; "" = it asks for none (something in front of it authenticates). Random when absent. */
  readonly apiToken?: string
}

/** `count` free loopback TCP ports, all different, released for the daemon to bind (testkit/Ports.ts). */
export const freePorts = (count: number): Effect.Effect<ReadonlyArray<number>, StepFailed> =>
  Ports.freePorts(count).pipe(Effect.mapError((e) => new StepFailed({ step: "setup", message: e.message })))

/** One free loopback TCP port (see `freePorts`). */
export const freePort: Effect.Effect<number, StepFailed> = Effect.map(freePorts(1), (ports) => ports[0] ?? 0)

/** Both simulators on loopback, a temp directory with the kubeconfig and token file; all gone with the scope. */
export const startCluster = (options: ClusterOptions = {}): Effect.Effect<Cluster, StepFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "vk-sandbox-demo-"))),
      (dir) => (options.keepDir === true ? Effect.void : Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    )
    const nodeName = options.nodeName ?? "vk-demo"
    const namespace = options.namespace ?? "team-a"
    const kubeconfigPath = path.join(dir, "kubeconfig")
    const apiToken = options.apiToken ?? `apiserver-${Math.random().toString(36).slice(2)}`
    const model = new ClusterModel()
    const apiserver = yield* serveApiserver(model, { ...(apiToken === "" ? {} : { token: apiToken }), kubeconfigPath, bookmarkIntervalMs: 5_000 }).pipe(
      Effect.mapError((e) => new StepFailed({ step: "setup", message: e.message }))
    )
    const rootToken = `root-${Math.random().toString(36).slice(2)}`
    const sandboxd = yield* SandboxdModel.make({
      rootToken,
      pools: [{ template: "python", net: "none", size: "small", target: options.warmPerPool ?? 4 }],
      maxClaims: options.maxClaims ?? 0,
      refillDelay: "200 millis",
      reapInterval: "250 millis"
    })
    const sandboxdAddress = yield* serveSandboxd(sandboxd, { host: "127.0.0.1", port: 0 }).pipe(
      Effect.mapError((e) => new StepFailed({ step: "setup", message: e.message }))
    )
    const tokenFile = path.join(dir, "sandboxd-token")
    fs.writeFileSync(tokenFile, `${rootToken}\n`, { mode: 0o600 })
    const created = model.create(Namespaces, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } })
    if (Result.isFailure(created)) return yield* new StepFailed({ step: "setup", message: created.failure.message })
    return {
      dir,
      nodeName,
      namespace,
      apiserver,
      model,
      sandboxd,
      sandboxdUrl: sandboxdAddress.url,
      kubeconfigPath,
      apiToken,
      tokenFile,
      statePath: path.join(dir, "state", "claims.json")
    }
  })

// ---- the daemon child process ------------------------------------------------------------------

export interface Daemon {
  readonly pid: number
  readonly metricsUrl: string
  /** The loopback ports it was told to bind (`--listen-addr`, `--metrics-addr`). */
  readonly ports: { readonly kubelet: number; readonly metrics: number }
  /** Everything the child wrote on stdout and stderr so far. */
  readonly output: () => string
  /** Resolves with the exit code (or the signal name) once the process has ended. */
  readonly exited: Deferred.Deferred<number | string>
  readonly signal: (signal: NodeJS.Signals) => Effect.Effect<void>
  /** SIGKILL, then wait for the process to be gone. */
  readonly kill: Effect.Effect<void>
}

export interface DaemonOptions {
  /** Where the child's stdout and stderr go (appended), besides memory. */
  readonly logFile?: string
  /** A line written to `logFile` before the child's first byte (which start of several this is). */
  readonly logHeader?: string
  /** With the demo's flags: how long a SIGTERM may take (5s). */
  readonly shutdownTimeout?: string
  /** The timing and tuning flags after the cluster's addresses: the demo's (`demoFlags`) unless given. */
  readonly flags?: ReadonlyArray<string>
  readonly extraArgs?: ReadonlyArray<string>
  /** Variables for the child besides PATH: nothing else of our environment (no VK_* of the caller) leaks in. */
  readonly env?: Readonly<Record<string, string>>
  /** The program and the arguments before the flags: the development install's `vk-sandbox` unless given. */
  readonly command?: readonly [string, ...Array<string>]
  /** The kubelet and metrics ports to give it; two `freePorts` unless given. */
  readonly ports?: Effect.Effect<ReadonlyArray<number>, StepFailed>
}

/** The demo's timing: short intervals, so a step sees the daemon react within seconds. */
export const demoFlags = (shutdownTimeout = "5s"): ReadonlyArray<string> => [
  "--lease-watch-interval", "1s",
  "--claim-verify-interval", "1s",
  "--orphan-scan-interval", "2s",
  "--publish-inventory",
  "--publish-interval", "1s",
  "--shutdown-timeout", shutdownTimeout,
  "--log-format", "json"
]

/** What `spawnDaemon` needs of its surroundings: the simulators here, a real control plane in test/k8s/cluster. */
export type DaemonTarget = Pick<Cluster, "kubeconfigPath" | "sandboxdUrl" | "tokenFile" | "statePath" | "nodeName">

/**
 * Where a spawned daemon looks for vk-cocoon's kubelet pair: beside its state directory (every
 * harness keeps the claims file at `<dir>/state/claims.json`), never where the machine running it
 * may keep a real one (TLS-4 — vk-cocoon's certificate is reused when it is usable). Nothing is
 * there unless a test writes it.
 */
export const vkCocoonPairPaths = (cluster: Pick<DaemonTarget, "statePath">) => {
  const dir = path.join(path.dirname(path.dirname(cluster.statePath)), "vk-cocoon")
  return { dir, cert: path.join(dir, "vk-kubelet.crt"), key: path.join(dir, "vk-kubelet.key") }
}

/**
 * Runs the daemon against the cluster on two free loopback ports; SIGKILLed when the scope closes
 * if it is still running. The one way the demo, the tests, the crash suite and the bench start it.
 */
export const spawnDaemon = (cluster: DaemonTarget, options: DaemonOptions = {}): Effect.Effect<Daemon, StepFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const [kubeletPort = 0, metricsPort = 0] = yield* (options.ports ?? freePorts(2))
    const [program, ...leading] = options.command ?? [binary]
    const vkCocoon = vkCocoonPairPaths(cluster)
    const args = [
      ...leading,
      "--kubeconfig", cluster.kubeconfigPath,
      "--sandboxd-url", cluster.sandboxdUrl,
      "--sandboxd-token-file", cluster.tokenFile,
      "--state-path", cluster.statePath,
      "--node-name", cluster.nodeName,
      "--node-ip", "127.0.0.1",
      "--listen-addr", `127.0.0.1:${kubeletPort}`,
      "--metrics-addr", `127.0.0.1:${metricsPort}`,
      "--vk-cocoon-tls-cert", vkCocoon.cert,
      "--vk-cocoon-tls-key", vkCocoon.key,
      ...(options.flags ?? demoFlags(options.shutdownTimeout)),
      ...(options.extraArgs ?? [])
    ]
    const exited = yield* Deferred.make<number | string>()
    let output = ""
    const log = options.logFile === undefined ? undefined : fs.openSync(options.logFile, "a")
    if (log !== undefined && options.logHeader !== undefined) fs.writeSync(log, `${options.logHeader}\n`)
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(program, args, {
          env: { PATH: process.env["PATH"] ?? "", ...options.env },
          stdio: ["ignore", "pipe", "pipe"]
        })
      ),
      (child) =>
        Effect.gen(function*() {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
          yield* Deferred.await(exited).pipe(Effect.timeout("5 seconds"), Effect.ignore)
          if (log !== undefined) fs.closeSync(log)
        })
    )
    const collect = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      if (log !== undefined) fs.writeSync(log, chunk)
    }
    child.stdout.on("data", collect)
    child.stderr.on("data", collect)
    child.on("error", (e) => Deferred.doneUnsafe(exited, Exit.succeed(`spawn error: ${e.message}`)))
    child.on("close", (code, signal) => Deferred.doneUnsafe(exited, Exit.succeed(code ?? signal ?? "unknown")))
    return {
      pid: child.pid ?? 0,
      metricsUrl: `http://127.0.0.1:${metricsPort}`,
      ports: { kubelet: kubeletPort, metrics: metricsPort },
      output: () => output,
      exited,
      signal: (signal) => Effect.sync(() => void child.kill(signal)),
      kill: Effect.andThen(
        Effect.sync(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
        }),
        Deferred.await(exited)
      )
    }
  })

/** GET on the daemon's health/metrics port: status and body, or None when nothing answers. */
export const httpGet = (url: string): Effect.Effect<Option.Option<{ readonly status: number; readonly body: string }>> =>
  Effect.promise(() =>
    fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      async (response) => Option.some({ status: response.status, body: await response.text() }),
      () => Option.none()
    )
  )

// ---- polling -----------------------------------------------------------------------------------

/**
 * Polls `probe` every 100 ms until it yields Some, or fails the step after `timeout` with the
 * last thing `describe` said about the state.
 */
export const waitFor = <A>(
  step: string,
  expectation: string,
  probe: Effect.Effect<Option.Option<A>>,
  options: { readonly timeout?: Duration.Input; readonly describe?: () => string } = {}
): Effect.Effect<A, StepFailed> =>
  poll(
    Effect.map(probe, (found) => (Option.isSome(found) ? { found: found.value } : undefined)),
    Duration.toMillis(Duration.fromInputUnsafe(options.timeout ?? "15 seconds")),
    100,
    () => {
      const state = options.describe?.() ?? ""
      return Effect.fail(new StepFailed({ step, message: `expected ${expectation}${state === "" ? "" : `; last seen: ${state}`}` }))
    }
  ).pipe(Effect.map(({ found }) => found))

// ---- the cluster's objects ---------------------------------------------------------------------

export interface PodView {
  readonly name: string
  readonly uid: string
  readonly phase: string
  readonly reason: string
  readonly message: string
  readonly podIP: string
  readonly claimId: string
  readonly deleting: boolean
}

export const viewPod = (pod: JsonObject): PodView => {
  const metadata = field(pod, "metadata")
  const status = field(pod, "status")
  return {
    name: text(field(metadata, "name")),
    uid: text(field(metadata, "uid")),
    phase: text(field(status, "phase")),
    reason: text(field(status, "reason")),
    message: text(field(status, "message")),
    podIP: text(field(status, "podIP")),
    claimId: text(field(field(metadata, "annotations"), PodAnnotation.claimId)),
    deleting: field(metadata, "deletionTimestamp") !== undefined
  }
}

export const getPod = (cluster: Cluster, name: string): Option.Option<PodView> =>
  Option.map(Option.fromNullishOr(cluster.model.peek(Pods, cluster.namespace, name)), viewPod)

const outcome = <A>(step: string, result: Result.Result<A, { readonly message: string }>): Effect.Effect<A, StepFailed> =>
  Result.isSuccess(result)
    ? Effect.succeed(result.success)
    : Effect.fail(new StepFailed({ step, message: result.failure.message }))

/** A Sandbox owner as a user creates it (the apiserver fills in the namespace from the request). */
export const sandboxBody = (name: string): JsonObject => ({
  apiVersion: "agents.x-k8s.io/v1beta1",
  kind: "Sandbox",
  metadata: { name },
  spec: {}
})

/** Creates a Sandbox owner; its uid. */
export const createSandbox = (cluster: Cluster, step: string, name: string): Effect.Effect<string, StepFailed> =>
  outcome(step, cluster.model.create(Sandboxes, cluster.namespace, sandboxBody(name))).pipe(
    Effect.map((sandbox) => text(field(field(sandbox, "metadata"), "uid")))
  )

/** The controller reference a Sandbox's Pod carries, as the Sandbox controller writes it. */
export const sandboxOwnerRef = (owner: { readonly name: string; readonly uid: string }): JsonObject => ({
  apiVersion: "agents.x-k8s.io/v1beta1",
  kind: "Sandbox",
  name: owner.name,
  uid: owner.uid,
  controller: true,
  blockOwnerDeletion: true
})

export interface PodSpecOptions {
  /** The Sandbox that owns the Pod (name and uid); a bare Pod when absent. */
  readonly owner?: { readonly name: string; readonly uid: string }
  readonly annotations?: Record<string, string>
}

/** Creates a sandbox Pod bound to the virtual node. */
export const createPod = (
  cluster: Cluster,
  step: string,
  name: string,
  options: PodSpecOptions = {}
): Effect.Effect<PodView, StepFailed> =>
  outcome(
    step,
    cluster.model.create(Pods, cluster.namespace, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        annotations: { [PodAnnotation.template]: "python", ...options.annotations },
        ...(options.owner === undefined ? {} : { ownerReferences: [sandboxOwnerRef(options.owner)] })
      },
      spec: { nodeName: cluster.nodeName, containers: [{ name: "main", image: "python" }] }
    })
  ).pipe(Effect.map(viewPod))

/** A graceful delete, as kubectl does it: the Pod stays (deletionTimestamp set) until the node lets it go. */
export const deletePod = (cluster: Cluster, step: string, name: string): Effect.Effect<void, StepFailed> =>
  outcome(step, cluster.model.delete(Pods, cluster.namespace, name)).pipe(Effect.asVoid)

export const deleteSandbox = (cluster: Cluster, step: string, name: string): Effect.Effect<void, StepFailed> =>
  outcome(step, cluster.model.delete(Sandboxes, cluster.namespace, name)).pipe(Effect.asVoid)

export const nodeInventory = (cluster: Cluster): Option.Option<JsonObject> =>
  Option.fromNullishOr(cluster.model.peek(NodeInventories, "", cluster.nodeName))

// ---- the claims file ---------------------------------------------------------------------------

/** The claims file as parsed JSON (`{}` when it does not exist or is mid-write). */
export const readClaimsFile = (cluster: Cluster): Record<string, JsonObject> => {
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(cluster.statePath, "utf8"))
    const claims = field(parsed, "claims")
    return isRecord(claims) ? (claims as Record<string, JsonObject>) : {}
  } catch {
    return {}
  }
}

/** The claim id of `name` in the claims file, if it has a row. */
export const claimInFile = (cluster: Cluster, name: string): Option.Option<string> =>
  Option.map(Option.fromNullishOr(readClaimsFile(cluster)[`${cluster.namespace}/${name}`]), (row) => text(row["id"]))
