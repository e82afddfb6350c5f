/**
 * The whole daemon as `vk-sandbox run` builds it, in this process (this worktree's code, not the
 * installed binary), against the in-memory apiserver and the sandboxd simulator over loopback
 * HTTP, with its health and metrics server on a free port.
 */
import { Effect } from "effect"
import type { AppConfigShape } from "../../src/Schemas/Config.ts"
import { freePorts } from "../../testkit/Demo/Harness.ts"
import { makeWorld } from "../Programs/PodController/harness.ts"
import * as InProcessDaemon from "../support/InProcessDaemon.ts"

/** Starts the daemon; `healthz` and `metrics` read its metrics server. */
export const startDaemon = (config: AppConfigShape) =>
  Effect.gen(function*() {
    const { stop } = yield* Effect.orDie(InProcessDaemon.startDaemon(config))
    const get = (path: string) =>
      Effect.promise(async () => {
        const response = await fetch(`http://127.0.0.1:${config.metricsAddr.port}${path}`)
        return { status: response.status, body: await response.text() }
      })
    return { healthz: get("/healthz"), metrics: get("/metrics"), stop }
  })

/** The simulators, with the kubelet and metrics ports free ones. */
export const world = (config: Partial<AppConfigShape> = {}) =>
  Effect.gen(function*() {
    const [kubeletPort = 0, metricsPort = 0] = yield* freePorts(2)
    const listenAddr = { host: "127.0.0.1", port: kubeletPort }
    const metricsAddr = { host: "127.0.0.1", port: metricsPort }
    return yield* makeWorld({ config: { listenAddr, metricsAddr, ...config } })
  })
