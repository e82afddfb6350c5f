/**
 * The chaos run's world, on loopback: the cluster suite's control plane (etcd, kube-apiserver,
 * kube-scheduler, kube-controller-manager; each process can be restarted, etcd backed up and
 * restored), the sandboxd simulator served behind a TCP fault proxy (its server can be restarted
 * while its VMs live on), a second TCP fault proxy in front of the apiserver for the daemon, and
 * the daemon itself as the image runs it (`Daemon.ts`). Every VM's start and end and every
 * claim, release and listing sandboxd answers go into the history.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { randomBytes } from "node:crypto"
import { Effect, Exit, Scope } from "effect"
import * as YAML from "yaml"
import { type ControlPlane, startControlPlane } from "../k8s/fixture/ControlPlane.ts"
import { make as makeSandboxdSim, type SandboxdSimShape, type SimFault, type SimRoute } from "../../testkit/Simulators/Sandboxd/Model.ts"
import { serve as serveSandboxd } from "../../testkit/Simulators/Sandboxd/Server.ts"
import { type Admin, makeAdmin } from "./Admin.ts"
import type { History } from "./History.ts"
import * as TcpFaultProxy from "./TcpFaultProxy.ts"

export const Template = "python"

export interface Sandboxd {
  readonly sim: SandboxdSimShape
  readonly proxy: TcpFaultProxy.TcpFaultProxy
  readonly url: string
  readonly rootToken: string
  /** The server stopped (every connection dropped), down for `downMillis`, then serving the same VMs again. */
  readonly restart: (downMillis: number) => Effect.Effect<void>
  /** Faults on sandboxd's replies, by name, so each can be lifted on its own. */
  readonly setFault: (name: string, faults: ReadonlyArray<readonly [SimRoute | "*", SimFault]> | undefined) => Effect.Effect<void>
}

export interface World {
  readonly dir: string
  readonly plane: ControlPlane
  readonly admin: Admin
  readonly apiProxy: TcpFaultProxy.TcpFaultProxy
  readonly sandboxd: Sandboxd
  /** The daemon's kubeconfig: the daemon identity, through the apiserver's fault proxy. */
  readonly daemonKubeconfig: string
  readonly tokenFile: string
}

/** Everything sandboxd answers on the routes that matter to the history (not the health probes). */
const recorded = new Set<string>(["claim", "release", "list", "get"])

const routeOf = (method: string, rawPath: string): string => {
  const p = rawPath.split("?")[0] ?? ""
  if (p === "/v1/claim") return "claim"
  if (p === "/v1/sandboxes") return "list"
  if (p.endsWith("/release")) return "release"
  if (method === "GET" && p.startsWith("/v1/sandboxes/")) return "get"
  return "other"
}

const startSandboxd = (history: History, onToken: (token: string) => void) =>
  Effect.gen(function*() {
    const rootToken = randomBytes(16).toString("hex")
    const sim = yield* makeSandboxdSim({
      rootToken,
      pools: [{ template: Template, net: "none", size: "small", target: 32 }],
      refillDelay: "50 millis",
      reapInterval: "1 second",
      ownerAddr: "127.0.0.1:7777",
      onLifecycle: (event) => {
        if (event._tag === "Claimed") onToken(event.token)
        history.record(
          event._tag === "Claimed"
            ? {
              src: "sandboxd",
              kind: "claimed",
              at: Number(event.atNanos / 1_000_000n),
              id: event.id,
              token: event.token,
              claimRef: event.claimRef,
              leaseSeconds: event.leaseSeconds,
              deadline: Number(event.deadlineNanos / 1_000_000n)
            }
            : { src: "sandboxd", kind: "ended", at: Number(event.atNanos / 1_000_000n), id: event.id, claimRef: event.claimRef, how: event.how }
        )
      }
    })
    // Each answer on the routes that matter goes into the history (0: no answer, the client left or the reply was dropped).
    const recording: SandboxdSimShape = {
      ...sim,
      handle: (request) => {
        const route = routeOf(request.method, request.path)
        if (!recorded.has(route)) return sim.handle(request)
        let status = 0
        let rows: number | undefined
        return sim.handle(request).pipe(
          Effect.tap((response) =>
            Effect.sync(() => {
              status = response._tag === "Reply" ? response.status : 0
              if (route === "list" && response._tag === "Reply") rows = response.body.split(`"id":`).length - 1
            })
          ),
          Effect.ensuring(Effect.sync(() => history.record({ src: "sandboxd", kind: "request", at: Date.now(), route, status, ...(rows === undefined ? {} : { rows }) })))
        )
      }
    }
    const parent = yield* Effect.scope
    const serveOnce = Effect.gen(function*() {
      const scope = yield* Scope.fork(parent)
      const address = yield* serveSandboxd(recording, { host: "127.0.0.1", port: 0 }).pipe(Scope.provide(scope), Effect.orDie)
      return { scope, port: address.port }
    })
    let serving = yield* serveOnce
    const proxy = yield* TcpFaultProxy.make(serving.port)
    const faults = new Map<string, ReadonlyArray<readonly [SimRoute | "*", SimFault]>>()
    const sandboxd: Sandboxd = {
      sim,
      proxy,
      url: `http://127.0.0.1:${proxy.port}`,
      rootToken,
      restart: (downMillis) =>
        Effect.gen(function*() {
          yield* Scope.close(serving.scope, Exit.void)
          yield* Effect.sleep(downMillis)
          serving = yield* serveOnce
          proxy.setUpstream(serving.port)
        }),
      setFault: (name, given) =>
        Effect.gen(function*() {
          if (given === undefined) faults.delete(name)
          else faults.set(name, given)
          yield* sim.clearFaults
          for (const list of faults.values()) for (const [route, fault] of list) yield* sim.injectFault(route, fault)
        })
    }
    return sandboxd
  })

/**
 * The whole world for the surrounding scope, its files under `dir`; `binDir` holds the
 * control-plane binaries; `onToken` learns every token sandboxd issues (the root token is the
 * world's `sandboxd.rootToken`).
 */
export const startWorld = (dir: string, binDir: string, repoRoot: string, history: History, onToken: (token: string) => void) =>
  Effect.gen(function*() {
    const plane = yield* startControlPlane({
      binDir,
      stateDir: path.join(dir, "plane"),
      repoRoot,
      // As the cluster suite: a node silent for 20 s is NotReady; its Pods tolerate that 5 s.
      controllers: { nodeMonitorGraceSeconds: 20, evictionTolerationSeconds: 5 },
      restartable: true
    })
    const admin = makeAdmin(plane.adminKubeconfig)
    const apiPort = Number(new URL(plane.server).port)
    const apiProxy = yield* TcpFaultProxy.make(apiPort)
    const kubeconfig = YAML.parse(fs.readFileSync(plane.daemonKubeconfig, "utf8")) as { clusters: Array<{ cluster: { server: string } }> }
    for (const entry of kubeconfig.clusters) entry.cluster.server = `https://127.0.0.1:${apiProxy.port}`
    const daemonKubeconfig = path.join(dir, "daemon.kubeconfig")
    fs.writeFileSync(daemonKubeconfig, YAML.stringify(kubeconfig), { mode: 0o600 })
    const sandboxd = yield* startSandboxd(history, onToken)
    const tokenFile = path.join(dir, "sandboxd-token")
    fs.writeFileSync(tokenFile, `${sandboxd.rootToken}\n`, { mode: 0o600 })
    return { dir, plane, admin, apiProxy, sandboxd, daemonKubeconfig, tokenFile } satisfies World
  })
