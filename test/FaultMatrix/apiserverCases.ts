/**
 * The fault matrix, apiserver side: each fault between the daemon and the apiserver, over the
 * wire (a proxy in front of the in-memory apiserver), then convergence and the invariants of
 * ./world.ts. The Pods a case creates and deletes change in the apiserver while the daemon
 * cannot see them; it must catch up once the fault clears.
 */
import { Effect } from "effect"
import type { FaultAction, ProxiedRequest } from "../support/FaultProxy.ts"
import { Pass } from "../support/FaultProxy.ts"
import type { FaultCase } from "./world.ts"

const isWatch = (request: ProxiedRequest) => /[?&]watch=(true|1)/.test(request.url)
const isStatusWrite = (request: ProxiedRequest) => request.method === "PUT" && /\/pods\/[^/]+\/status$/.test(request.url.split("?")[0] ?? "")

const status = (code: number, reason: string, message: string) =>
  JSON.stringify({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code })

/** A rule for some requests; existing connections (the open watch) are cut when it is armed and cleared. */
const onRequests = (matches: (request: ProxiedRequest) => boolean, action: FaultAction): FaultCase => ({
  arm: (world) =>
    Effect.sync(() => {
      world.apiserver.setRule((request) => (matches(request) ? action : Pass))
      world.apiserver.resetAll()
    }),
  disarm: (world) =>
    Effect.sync(() => {
      world.apiserver.clear()
      world.apiserver.resetAll()
    })
})

const every = () => true

export const apiserverCases: ReadonlyArray<readonly [string, FaultCase]> = [
  ["connection refused", {
    arm: (world) => world.apiserver.refuse(),
    disarm: (world) => world.apiserver.accept()
  }],
  ["black-holed (requests read, never answered)", onRequests(every, { _tag: "Hang" })],
  ["a 409 storm on status writes", onRequests(isStatusWrite, { _tag: "Reply", status: 409, body: status(409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again") })],
  ["410 Gone on every watch", onRequests(isWatch, { _tag: "Reply", status: 410, body: status(410, "Expired", "too old resource version: 1 (2)") })],
  ["429 with Retry-After on every request", onRequests(every, {
    _tag: "Reply",
    status: 429,
    body: status(429, "TooManyRequests", "too many requests"),
    headers: { "retry-after": "1" }
  })],
  ["500 on every request", onRequests(every, { _tag: "Reply", status: 500, body: status(500, "InternalError", "etcdserver: request timed out") })],
  ["503 with a non-Status body on every request", onRequests(every, { _tag: "Reply", status: 503, body: "upstream connect error", headers: { "content-type": "text/plain" } })],
  ["every watch closed at once, with no events", onRequests(isWatch, { _tag: "Reply", status: 200, body: "" })]
]
