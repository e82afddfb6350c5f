/**
 * The failpoints as decorators around services the daemon already has: sandboxd's claim and
 * release, the Pod status write, the claims store's commit and the claims file's steps. The paths
 * that call them know nothing of failpoints. The composition root builds these only when
 * `VK_SANDBOX_FAILPOINTS` arms a point; an armed `fail` becomes the place's own typed error.
 */
import { Effect, Option } from "effect"
import type { ClaimsStore } from "../Services/ClaimsStore.ts"
import { ClaimsWriteError } from "../Services/ClaimsStore.ts"
import type { FailpointName, FailpointsShape } from "../Services/Failpoints.ts"
import { type KubeApi, KubeUnavailable } from "../Services/KubeApi.ts"
import { type SandboxdClient, SandboxdTimeout, SandboxdUnreachable } from "../Services/SandboxdClient.ts"
import type { ClaimsFileOps } from "../Store/FileOps.ts"

export interface FailpointDecorators {
  /** claim-before-send, claim-after-send, release-before-send, release-after-send. */
  readonly sandboxd: (client: SandboxdClient["Service"]) => SandboxdClient["Service"]
  /** push-before-write, push-after-write. */
  readonly kube: (kube: KubeApi["Service"]) => KubeApi["Service"]
  /** delete-before-commit: the first log-only commit of a fiber after its release was confirmed. */
  readonly store: (store: ClaimsStore["Service"]) => ClaimsStore["Service"]
  /** commit-before-fsync (the temp file's sync), commit-after-rename (the directory's sync). */
  readonly fileOps: (ops: ClaimsFileOps) => ClaimsFileOps
}

export const make = (points: FailpointsShape): FailpointDecorators => {
  /**
   * Fibers whose release sandboxd confirmed and that have not committed since. A release is
   * followed in the same fiber by the row leaving the table and a log-only commit (DEL-2 — a failed
   * save after release), so that commit is the one delete-before-commit stands before.
   */
  const released = new Set<number>()
  const hitAsync = async (name: FailpointName) => {
    const hit = points.hitAsync(name)
    if (hit !== undefined) await hit
  }
  return {
    sandboxd: (client) => ({
      ...client,
      claim: (spec) =>
        points.hit("claim-before-send").pipe(
          // Stands for a claim that provably never left (a refused connection).
          Effect.catchTag("FailpointFired", (e) =>
            Effect.fail(new SandboxdUnreachable({ operation: "claim", message: e.message, requestSent: false }))),
          Effect.andThen(client.claim(spec)),
          // Stands for a reply lost after sandboxd made the VM (a timeout).
          Effect.tap(() =>
            points.hit("claim-after-send").pipe(
              Effect.catchTag("FailpointFired", (e) =>
                Effect.fail(new SandboxdTimeout({ operation: "claim", timeoutMillis: 0, message: e.message })))
            ))
        ),
      release: (id, token) =>
        points.hit("release-before-send").pipe(
          Effect.catchTag("FailpointFired", (e) => Effect.fail(new SandboxdUnreachable({ operation: "release", message: e.message }))),
          Effect.andThen(client.release(id, token)),
          Effect.tap(() => Effect.map(Effect.fiberId, (fiber) => void released.add(fiber))),
          Effect.tap(() =>
            points.hit("release-after-send").pipe(
              Effect.catchTag("FailpointFired", (e) =>
                Effect.fail(new SandboxdTimeout({ operation: "release", timeoutMillis: 0, message: e.message })))
            ))
        )
    }),
    kube: (kube) => ({
      ...kube,
      replacePodStatus: (pod) =>
        points.hit("push-before-write").pipe(
          Effect.andThen(kube.replacePodStatus(pod)),
          Effect.tap(() => points.hit("push-after-write")),
          // Before the write, an unreachable apiserver; after it, a lost reply.
          Effect.catchTag("FailpointFired", (e) =>
            Effect.fail(new KubeUnavailable({ operation: "replacePodStatus", status: 0, message: e.message })))
        )
    }),
    store: (store) => ({
      ...store,
      commit: (key) =>
        Effect.flatMap(Effect.fiberId, (fiber) => {
          if (!released.delete(fiber) || Option.isSome(key)) return store.commit(key)
          return points.hit("delete-before-commit").pipe(
            Effect.catchTag("FailpointFired", (e) =>
              Effect.fail(new ClaimsWriteError({ path: store.path, operation: "commit", message: e.message }))),
            Effect.andThen(store.commit(key))
          )
        })
    }),
    fileOps: (ops) => ({
      ...ops,
      fsync: (file) => hitAsync("commit-before-fsync").then(() => ops.fsync(file)),
      fsyncDir: (dir) => hitAsync("commit-after-rename").then(() => ops.fsyncDir(dir))
    })
  }
}
