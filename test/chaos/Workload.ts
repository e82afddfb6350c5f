/**
 * The chaos run's workload: the plan's steps, each at its time, as a user or a controller would
 * ask the apiserver (straight, as the administrator). Every request goes into the history with
 * when it was sent and answered, its status, and what it created (the UID, and the owner a Pod was
 * given): the checker's evidence of when each object was certainly alive.
 */
import { Effect } from "effect"
import type { Admin } from "./Admin.ts"
import type { History, OwnerRef } from "./History.ts"
import type { WorkloadStep } from "./Plan.ts"
import { RuntimeLabel } from "./Daemon.ts"
import { Template } from "./World.ts"

const TtlAnnotation = "sandbox.cocoonstack.io/ttl-seconds"
const sandboxes = "/apis/agents.x-k8s.io/v1beta1"

/** A sandbox Pod left to the scheduler: the node's runtime label, its taint tolerated. */
export const podBody = (name: string, ttl: number, owner?: OwnerRef & { readonly apiVersion: string }, labels: Record<string, string> = {}) => ({
  metadata: {
    name,
    labels,
    annotations: { "sandbox.cocoonstack.io/template": Template, ...(ttl > 0 ? { [TtlAnnotation]: String(ttl) } : {}) },
    ...(owner === undefined
      ? {}
      : { ownerReferences: [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true }] })
  },
  spec: {
    nodeSelector: { [RuntimeLabel]: "sandboxd" },
    tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Equal", value: "sandboxd", effect: "NoSchedule" }],
    containers: [{ name: "main", image: "python:3.12" }],
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 5
  }
})

const uidOf = (body: unknown): string => {
  const metadata = (body as { metadata?: { uid?: unknown } } | undefined)?.metadata
  return typeof metadata?.uid === "string" ? metadata.uid : ""
}

export const makeWorkload = (admin: Admin, history: History) => {
  /** One request, recorded; the reply's body. */
  const send = (op: string, target: string, method: string, path: string, body?: object, owner?: OwnerRef) =>
    Effect.gen(function*() {
      const at = Date.now()
      const reply = yield* admin.request(method, path, body)
      const uid = op.startsWith("create") ? uidOf(reply.body) : ""
      history.record({ src: "workload", kind: "request", at, answered: Date.now(), op, target, status: reply.status, uid, owner })
      return reply
    })

  const createPod = (namespace: string, name: string, ttl: number, owner?: OwnerRef & { readonly apiVersion: string }) =>
    send("create-pod", `${namespace}/${name}`, "POST", `/api/v1/namespaces/${namespace}/pods`, podBody(name, ttl, owner), owner)

  const sandboxOwner = (namespace: string, name: string) =>
    Effect.map(admin.request("GET", `${sandboxes}/namespaces/${namespace}/sandboxes/${name}`), (reply) =>
      reply.status === 200 ? { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", name, uid: uidOf(reply.body) } : undefined)

  const run = (step: WorkloadStep): Effect.Effect<void> => {
    switch (step._tag) {
      case "CreateNamespace":
        return send("create-namespace", step.namespace, "POST", "/api/v1/namespaces", { metadata: { name: step.namespace } }).pipe(Effect.asVoid)
      case "DeleteNamespace":
        return send("delete-namespace", step.namespace, "DELETE", `/api/v1/namespaces/${step.namespace}`).pipe(Effect.asVoid)
      case "CreateBare":
        return createPod(step.namespace, step.name, step.ttl).pipe(Effect.asVoid)
      case "DeletePod":
        return send("delete-pod", `${step.namespace}/${step.name}`, "DELETE", `/api/v1/namespaces/${step.namespace}/pods/${step.name}`).pipe(Effect.asVoid)
      case "CreateSandbox":
        return Effect.gen(function*() {
          const body = { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", metadata: { name: step.name }, spec: { podTemplate: { spec: {} } } }
          const created = yield* send("create-sandbox", `${step.namespace}/${step.name}`, "POST", `${sandboxes}/namespaces/${step.namespace}/sandboxes`, body)
          const uid = uidOf(created.body)
          if (uid === "") return
          yield* createPod(step.namespace, step.name, step.ttl, { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", name: step.name, uid })
        })
      case "RecreateSandboxPod":
        return Effect.gen(function*() {
          const owner = yield* sandboxOwner(step.namespace, step.name)
          if (owner !== undefined && owner.uid !== "") yield* createPod(step.namespace, step.name, step.ttl, owner)
        })
      case "DeleteSandbox":
        return send("delete-sandbox", `${step.namespace}/${step.name}`, "DELETE", `${sandboxes}/namespaces/${step.namespace}/sandboxes/${step.name}`, {
          kind: "DeleteOptions",
          apiVersion: "v1",
          propagationPolicy: step.policy
        }).pipe(Effect.asVoid)
      case "CreateReplicaSet": {
        const labels = { app: step.name }
        const template = podBody("", step.ttl, undefined, labels)
        const { name: _name, ...metadata } = template.metadata
        const body = {
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          metadata: { name: step.name },
          spec: { replicas: step.replicas, selector: { matchLabels: labels }, template: { metadata, spec: template.spec } }
        }
        return send("create-replicaset", `${step.namespace}/${step.name}`, "POST", `/apis/apps/v1/namespaces/${step.namespace}/replicasets`, body).pipe(Effect.asVoid)
      }
      case "DeleteReplicaSet":
        return send("delete-replicaset", `${step.namespace}/${step.name}`, "DELETE", `/apis/apps/v1/namespaces/${step.namespace}/replicasets/${step.name}`, {
          kind: "DeleteOptions",
          apiVersion: "v1",
          propagationPolicy: step.policy
        }).pipe(Effect.asVoid)
      case "Burst":
        return Effect.forEach(
          Array.from({ length: step.count }, (_, i) => `${step.prefix}-${String(i).padStart(3, "0")}`),
          (name) => createPod(step.namespace, name, step.ttl),
          { concurrency: 16, discard: true }
        )
    }
  }

  /**
   * Every step at its time after `startedAt`, until `stopAt`. A step that is late (the apiserver
   * slow or away) does not hold the next back: each runs in its own fiber; bursts too.
   */
  const play = (steps: ReadonlyArray<{ readonly atMs: number; readonly step: WorkloadStep }>, startedAt: number, stopAt: number) =>
    Effect.gen(function*() {
      for (const { atMs, step } of steps) {
        const due = startedAt + atMs
        if (due >= stopAt) break
        const wait = due - Date.now()
        if (wait > 0) yield* Effect.sleep(wait)
        yield* Effect.forkChild(run(step))
      }
    })

  return { play, run }
}
