/**
 * The chaos suite's own way into the apiserver, as the administrator and straight to it (never
 * through the daemon's fault proxy): one JSON request with a time limit (a request to an apiserver
 * whose etcd is down would otherwise wait a minute), and a watch read line by line.
 */
import * as k8s from "@kubernetes/client-node"
import { Effect } from "effect"
import * as https from "node:https"
import { rawRequest, type RawReply, ScenarioFailed } from "../k8s/scenarioHarness.ts"

export interface Admin {
  readonly config: k8s.KubeConfig
  /** A JSON request; a reply that never comes is status 0 after `timeoutMs`. */
  readonly request: (method: string, path: string, body?: object, timeoutMs?: number) => Effect.Effect<RawReply>
  /**
   * Reads a watch (or any streamed reply) line by line until it ends, fails or is interrupted;
   * resolves with the HTTP status (0: no reply).
   */
  readonly stream: (path: string, onLine: (line: string) => void) => Effect.Effect<number>
}

export const makeAdmin = (kubeconfigPath: string): Admin => {
  const config = new k8s.KubeConfig()
  config.loadFromFile(kubeconfigPath)
  const server = config.getCurrentCluster()?.server ?? ""
  const request = (method: string, path: string, body?: object, timeoutMs = 15_000) =>
    rawRequest(config, method, path, body).pipe(
      Effect.timeout(timeoutMs),
      Effect.catch((e) => Effect.succeed<RawReply>({ status: 0, body: e instanceof ScenarioFailed ? e.message : "timed out", text: "", headers: {} }))
    )
  const stream = (path: string, onLine: (line: string) => void) =>
    Effect.gen(function*() {
      const options: https.RequestOptions = { method: "GET", headers: { accept: "application/json" } }
      yield* Effect.promise(() => config.applyToHTTPSOptions(options))
      return yield* Effect.callback<number>((resume) => {
        const req = https.request(new URL(path, server), options, (res) => {
          let pending = ""
          res.setEncoding("utf8")
          res.on("data", (chunk: string) => {
            pending += chunk
            let newline = pending.indexOf("\n")
            while (newline >= 0) {
              const line = pending.slice(0, newline)
              pending = pending.slice(newline + 1)
              if (line.trim() !== "") onLine(line)
              newline = pending.indexOf("\n")
            }
          })
          res.on("end", () => resume(Effect.succeed(res.statusCode ?? 0)))
          res.on("error", () => resume(Effect.succeed(res.statusCode ?? 0)))
        })
        req.on("error", () => resume(Effect.succeed(0)))
        req.end()
        return Effect.sync(() => req.destroy())
      })
    })
  return { config, request, stream }
}
