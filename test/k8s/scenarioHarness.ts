/**
 * The daemon's scenarios against the real kube-apiserver of the global setup: the same layers as
 * `src/Daemon.ts` (and the in-memory harnesses under test/Programs), with the live KubeApi
 * reading the daemon's kubeconfig (RBAC-limited, so a missing verb fails a scenario) and the
 * sandboxd simulator served over loopback HTTP. The admin only does what a user or the cluster
 * would: namespaces, Sandboxes, Pods bound by `spec.nodeName` (no scheduler runs here), deletes.
 * Reads for assertions are raw JSON GETs as the admin, so wire spellings (`Port`, the six-digit
 * renewTime) are seen as stored, not as client-node's models re-render them.
 */
import * as k8s from "@kubernetes/client-node"
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { type IncomingHttpHeaders, request as httpRequest } from "node:http"
import { request as httpsRequest, type RequestOptions } from "node:https"
import * as NodePath from "node:path"
import * as KubeApiClientNode from "../../src/Layers/KubeApiClientNode.ts"
import * as PodController from "../../src/Programs/PodController/PodController.ts"
import type { AppConfigShape } from "../../src/Schemas/Config.ts"
import { testConfig } from "../../testkit/Config.ts"
import * as Ports from "../../testkit/Ports.ts"
import { AppConfig } from "../../src/Services/Config.ts"
import { ClaimTable } from "../../src/Services/ClaimTable.ts"
import { KubeApi } from "../../src/Services/KubeApi.ts"
import { make as makeSandboxdSim, type SandboxdSimOptions } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { serve as serveSandboxd } from "../../testkit/Simulators/Sandboxd/Server.ts"
import * as Wait from "../support/Wait.ts"
import { podHalfLayer } from "../support/PodHalf.ts"
import { adminKubeconfig, createSandboxAs, FixtureMissing, kube, uniqueName } from "./fixture/Kube.ts"

export const Template = "python"
export const ClaimIdAnnotation = "sandbox.cocoonstack.io/claim-id"
export const SandboxApiVersion = "agents.x-k8s.io/v1beta1"
const sandboxGroup = { group: "agents.x-k8s.io", version: "v1beta1", plural: "sandboxes" } as const

export class ScenarioFailed extends Schema.TaggedError<ScenarioFailed>()("ScenarioFailed", {
  message: Schema.String
}) {}

/** A kubeconfig path handed over by the global setup. */
export const kubeconfigPath = (variable: "VK_K8S_ADMIN_KUBECONFIG" | "VK_K8S_DAEMON_KUBECONFIG") =>
  Effect.gen(function*() {
    const path = process.env[variable] ?? ""
    if (path === "") return yield* new FixtureMissing({ message: `${variable} is not set: run with npm run test:k8s` })
    return path
  })

// Logs off unless VK_TEST_LOGS is set (the daemon logs every step); a scope's temporary directory.
export { quiet } from "../support/Wait.ts"
export { tempDir } from "../support/TempDir.ts"
import { tempDir } from "../support/TempDir.ts"

// ---- sandboxd ---------------------------------------------------------------------------------

/** The sandboxd simulator on a free loopback port, for the surrounding scope. */
export const startSandboxd = (options: Partial<SandboxdSimOptions> = {}) =>
  Effect.gen(function*() {
    const sim = yield* makeSandboxdSim({
      rootToken: "",
      pools: [{ template: Template, net: "none", size: "small", target: 8 }],
      nanosecondDeadlines: false,
      refillDelay: "10 millis",
      ...options
    })
    const address = yield* serveSandboxd(sim, { host: "127.0.0.1", port: 0 })
    return { sim, url: address.url }
  })

export type Sandboxd = Effect.Success<ReturnType<typeof startSandboxd>>

export const releasePaths = (sandboxd: Sandboxd) =>
  Effect.map(sandboxd.sim.audit, (entries) => entries.filter((e) => e.route === "release").map((e) => e.path))

export const claimCount = (sandboxd: Sandboxd) =>
  Effect.map(sandboxd.sim.audit, (entries) => entries.filter((e) => e.route === "claim").length)

export const sandboxdHolds = (sandboxd: Sandboxd, claimId: string) =>
  Effect.map(sandboxd.sim.claims, (claims) => claims.some((c) => c.id === claimId))

// ---- configuration and the daemon's pieces ----------------------------------------------------

/** The flags of a daemon on a node of its own (names are unique per run), reading `kubeconfig`. */
export const scenarioConfig = (
  kubeconfig: string,
  sandboxdUrl: string,
  dir: string,
  overrides: Partial<AppConfigShape> = {}
): AppConfigShape =>
  testConfig({
    nodeName: uniqueName("vk-node"),
    kubeconfig,
    sandboxdUrl,
    sandboxdAdvertiseAddr: "10.0.0.5:7777",
    statePath: NodePath.join(dir, "state", "claims.json"),
    shutdownTimeout: Duration.seconds(5),
    ...overrides
  })

/**
 * A daemon's own ground under the daemon's RBAC identity: a temporary directory, the sandboxd
 * simulator and a scenario config reading the daemon's kubeconfig.
 */
export const daemonGround = (
  prefix: string,
  simOptions: Partial<SandboxdSimOptions> = {},
  overrides: Partial<AppConfigShape> = {}
) =>
  Effect.gen(function*() {
    const dir = yield* tempDir(prefix)
    const sandboxd = yield* startSandboxd(simOptions)
    const config = scenarioConfig(yield* kubeconfigPath("VK_K8S_DAEMON_KUBECONFIG"), sandboxd.url, dir, overrides)
    return { dir, sandboxd, config }
  })

/** The live KubeApi of `config` (its kubeconfig, QPS and burst), as the daemon builds it. */
export const kubeApiOf = (config: AppConfigShape) =>
  Layer.build(KubeApiClientNode.layer.pipe(Layer.provide(AppConfig.layer(config)))).pipe(
    Effect.map((context) => Context.get(context, KubeApi))
  )

/** Short pod-controller intervals: real time and real I/O here. */
export const fastPodOptions: PodController.PodControllerOptions = {
  resyncInterval: Duration.seconds(60),
  backoff: { initial: Duration.millis(100), max: Duration.millis(800) },
  rewatchDelay: Duration.millis(50),
  fruitlessWatchesBeforeRelist: 3,
  silentWatchCheck: Duration.seconds(15)
}

/**
 * The daemon's pod half, composed as `src/Daemon.ts` composes it (wire, claims store,
 * provider with the live owner resolver and event recorder, claims startup, pod controller),
 * for the surrounding scope; closing the scope drains the controller first.
 */
export const startPodHalf = (config: AppConfigShape, options: PodController.PodControllerOptions = fastPodOptions) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(podHalfLayer(config))
    const handle = yield* PodController.make(options).pipe(Effect.provideContext(context))
    // Added after the controller's fibers, so it runs before they are interrupted.
    yield* Effect.addFinalizer(() => handle.drain(config.shutdownTimeout))
    return { handle, table: Context.get(context, ClaimTable), kube: Context.get(context, KubeApi) }
  })

// ---- admin side -------------------------------------------------------------------------------

export const admin = Effect.gen(function*() {
  const config = yield* adminKubeconfig
  return {
    config,
    core: config.makeApiClient(k8s.CoreV1Api),
    custom: config.makeApiClient(k8s.CustomObjectsApi),
    authz: config.makeApiClient(k8s.AuthorizationV1Api),
    rbac: config.makeApiClient(k8s.RbacAuthorizationV1Api),
    objects: k8s.KubernetesObjectApi.makeApiClient(config)
  }
})

export const createNamespace = (prefix: string) =>
  Effect.gen(function*() {
    const { core } = yield* admin
    const name = uniqueName(prefix)
    yield* kube("create namespace", () => core.createNamespace({ body: { metadata: { name } } }))
    return name
  })

/** Admin: a Sandbox (the Pods' owner); returns its server-assigned UID. */
export const createSandbox = (namespace: string, name: string, finalizers: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const { config } = yield* admin
    return yield* createSandboxAs(config, namespace, name, finalizers)
  })

export const deleteSandbox = (namespace: string, name: string) =>
  Effect.gen(function*() {
    const { custom } = yield* admin
    yield* kube("delete sandbox", () => custom.deleteNamespacedCustomObject({ ...sandboxGroup, namespace, name }))
  })

export const sandboxOwnerRef = (name: string, uid: string): k8s.V1OwnerReference => ({
  apiVersion: SandboxApiVersion,
  kind: "Sandbox",
  name,
  uid,
  controller: true
})

/** Admin: a sandbox Pod bound to `nodeName` at create (the scheduler's binding, done by hand). */
export const createPod = (
  namespace: string,
  name: string,
  nodeName: string,
  owner?: { readonly name: string; readonly uid: string },
  /** More of the spec (readiness gates, say). */
  spec: Partial<k8s.V1PodSpec> = {}
) =>
  Effect.gen(function*() {
    const { core } = yield* admin
    const pod = yield* kube("create pod", () =>
      core.createNamespacedPod({
        namespace,
        body: {
          metadata: {
            name,
            namespace,
            annotations: { "sandbox.cocoonstack.io/template": Template },
            ...(owner === undefined ? {} : { ownerReferences: [sandboxOwnerRef(owner.name, owner.uid)] })
          },
          spec: { ...spec, nodeName, containers: [{ name: "main", image: "python:3.12" }] }
        }
      }))
    return pod.metadata?.uid ?? ""
  })

/** Admin: a graceful delete, as `kubectl delete pod` (or a NotReady eviction) sends it. */
export const deletePodGracefully = (namespace: string, name: string, gracePeriodSeconds = 30) =>
  Effect.gen(function*() {
    const { core } = yield* admin
    yield* kube("delete pod", () => core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds }))
  })

// ---- raw reads --------------------------------------------------------------------------------

export interface RawReply {
  readonly status: number
  /** Parsed JSON, or the text where it is not JSON. */
  readonly body: unknown
  /** The body as the server wrote it (wire spellings such as six-digit renewTimes). */
  readonly text: string
  /** The reply's headers as sent (framing: Content-Length or Transfer-Encoding). */
  readonly headers: IncomingHttpHeaders
}

/** One JSON request with the kubeconfig's credentials; the body as the server wrote it. */
export const rawRequest = (
  config: k8s.KubeConfig,
  method: string,
  path: string,
  body?: object,
  contentType = "application/json"
): Effect.Effect<RawReply, ScenarioFailed> =>
  Effect.gen(function*() {
    const url = new URL(path, config.getCurrentCluster()?.server ?? "")
    const options: RequestOptions = { method, headers: { "content-type": contentType, accept: "application/json" } }
    yield* Effect.tryPromise({
      try: () => config.applyToHTTPSOptions(options),
      catch: (cause) => new ScenarioFailed({ message: `credentials: ${String(cause)}` })
    })
    const text = yield* Effect.callback<{ status: number; text: string; headers: IncomingHttpHeaders }, ScenarioFailed>((resume) => {
      const send = url.protocol === "https:" ? httpsRequest : httpRequest
      const req = send(url, options, (res) => {
        let received = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => {
          received += chunk
        })
        res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, text: received, headers: res.headers })))
      })
      req.on("error", (cause) => resume(Effect.fail(new ScenarioFailed({ message: `${method} ${path}: ${String(cause)}` }))))
      req.end(body === undefined ? undefined : JSON.stringify(body))
      return Effect.sync(() => req.destroy())
    })
    let parsed: unknown = text.text
    try {
      parsed = JSON.parse(text.text)
    } catch {
      // a plain-text body stays a string
    }
    return { status: text.status, body: parsed, text: text.text, headers: text.headers }
  })

/** Admin GET of a JSON object; undefined on 404. */
export const adminGet = <A>(path: string) =>
  Effect.gen(function*() {
    const { config } = yield* admin
    const reply = yield* rawRequest(config, "GET", path)
    if (reply.status === 404) return undefined
    if (reply.status !== 200) {
      return yield* new ScenarioFailed({ message: `GET ${path}: HTTP ${reply.status} ${JSON.stringify(reply.body)}` })
    }
    return reply.body as A
  })

export interface PodView {
  readonly metadata: {
    readonly uid: string
    readonly annotations?: Record<string, string>
    readonly deletionTimestamp?: string
  }
  readonly status?: { readonly phase?: string; readonly reason?: string; readonly message?: string; readonly podIP?: string }
}

export const getPod = (namespace: string, name: string) => adminGet<PodView>(`/api/v1/namespaces/${namespace}/pods/${name}`)

export const claimIdOf = (pod: PodView) => pod.metadata.annotations?.[ClaimIdAnnotation] ?? ""

/** The Pod once it is Running with a podIP and a claim-id annotation. */
export const runningPod = (namespace: string, name: string) =>
  Effect.map(getPod(namespace, name), (pod) =>
    pod?.status?.phase === "Running" && (pod.status.podIP ?? "") !== "" && claimIdOf(pod) !== "" ? pod : undefined)

// ---- waiting ----------------------------------------------------------------------------------

/**
 * The shared `eventually`, polling every 50 ms: each poll here is a request to the real
 * kube-apiserver, which a poll every real turn would flood on a loaded machine.
 */
export const eventually = <A, E, R>(what: string, check: Effect.Effect<A | undefined | false, E, R>, limitMs = 15_000) =>
  Wait.eventually<A, E, R>(what, check, limitMs, 50)

/**
 * The owner Sandbox deleted (no garbage collector here: the Pod stays), then the Pod deleted
 * gracefully: the Pod object goes, and sandboxd is asked to release its claim.
 */
export const deleteOwnerThenPod = (sandboxd: Sandboxd, namespace: string, sandbox: string, pod: string, claimId: string) =>
  Effect.gen(function*() {
    yield* deleteSandbox(namespace, sandbox)
    yield* deletePodGracefully(namespace, pod, 30)
    yield* eventually(`the Pod ${pod} removed`, Effect.map(getPod(namespace, pod), (found) => found === undefined), 5_000)
    yield* eventually(
      "the release at sandboxd",
      Effect.map(releasePaths(sandboxd), (paths) => paths.includes(`/v1/sandboxes/${claimId}/release`))
    )
  })

/** `count` distinct free loopback ports for the daemon's kubelet and metrics servers (testkit/Ports.ts). */
export const freeLoopbackPorts = (count: number) =>
  Ports.freePorts(count).pipe(Effect.mapError((e) => new ScenarioFailed({ message: e.message })))
