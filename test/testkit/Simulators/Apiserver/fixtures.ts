import { assert } from "@effect/vitest"
import { Result } from "effect"
import type { WatchEvent } from "../../../../testkit/Simulators/Apiserver/Model.ts"
import type { ApiStatusError, JsonObject } from "../../../../testkit/Simulators/Apiserver/Status.ts"

export const ok = <A>(r: Result.Result<A, ApiStatusError>): A => {
  if (Result.isFailure(r)) assert.fail(`expected success, got ${r.failure.code} ${r.failure.message}`)
  return (r as Result.Success<A, ApiStatusError>).success
}

export const refused = <A>(r: Result.Result<A, ApiStatusError>): ApiStatusError => {
  if (Result.isSuccess(r)) assert.fail(`expected a refusal, got ${JSON.stringify(r.success)}`)
  return (r as Result.Failure<A, ApiStatusError>).failure
}

export const pod = (name: string, nodeName?: string, extra: JsonObject = {}): JsonObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, ...(extra["metadata"] as object | undefined) },
  spec: { ...(nodeName !== undefined ? { nodeName } : {}), containers: [{ name: "agent", image: "ghcr.io/acme/agent:1" }] }
})

export const node = (name: string): JsonObject => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name, labels: { "type": "virtual-kubelet" } },
  spec: { taints: [{ key: "virtual-kubelet.io/provider", value: "sandboxd", effect: "NoSchedule" }] },
  status: {
    conditions: [
      { type: "Ready", status: "True", reason: "KubeletReady", message: "Kubelet is ready" },
      { type: "MemoryPressure", status: "False", reason: "KubeletHasSufficientMemory" }
    ],
    addresses: [{ type: "InternalIP", address: "10.0.0.5" }, { type: "Hostname", address: name }],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    capacity: { pods: "110", cpu: "8", memory: "32Gi" }
  }
})

export const meta = (o: unknown): Record<string, unknown> => (o as { metadata: Record<string, unknown> }).metadata

/** Collects watch events. */
export const recorder = () => {
  const events: Array<WatchEvent> = []
  let closed = false
  return {
    events,
    closed: () => closed,
    sink: { onEvent: (e: WatchEvent) => void events.push(e), onClose: () => void (closed = true) },
    summary: () => events.map((e) => `${e.type} ${String((e.object as { metadata?: { name?: string } }).metadata?.name ?? "")}`.trim())
  }
}

/** A settable clock. */
export const clock = (start = Date.parse("2026-07-27T02:00:00Z")) => {
  let t = start
  return { now: () => t, advance: (ms: number) => void (t += ms) }
}
