/**
 * Kubernetes Events for what the daemon decided (claimed, adopted, preserved, released, lease expired, quarantined). Best-effort: recording
 * never fails and never waits for the apiserver; a failed write is logged. The live layer
 * (`Layers/EventRecorderKube.ts`) aggregates repeats per object and reason into one Event with a
 * growing count and writes at most one update per key per flush interval.
 */
import type { V1Pod } from "@kubernetes/client-node"
import { Context, type Effect } from "effect"

export interface InvolvedObject {
  readonly kind: "Pod" | "Node"
  readonly namespace: string // "" for the Node
  readonly name: string
  readonly uid: string
  readonly apiVersion?: string
}

export type EventType = "Normal" | "Warning"

export const involvedPod = (pod: V1Pod): InvolvedObject => ({
  kind: "Pod",
  namespace: pod.metadata?.namespace ?? "",
  name: pod.metadata?.name ?? "",
  uid: pod.metadata?.uid ?? ""
})

export class EventRecorder extends Context.Service<EventRecorder, {
  readonly record: (involved: InvolvedObject, type: EventType, reason: string, message: string) => Effect.Effect<void>
  /**
   * The object is gone and the daemon holds nothing for it: nothing will repeat its events, so
   * their aggregates are dropped (one not yet written is written first).
   */
  readonly forget: (object: { readonly kind: InvolvedObject["kind"]; readonly namespace: string; readonly name: string }) => Effect.Effect<void>
}>()("vk-sandbox/EventRecorder") {}
