/**
 * The status writer's one write while the apiserver's version of a Pod cannot be decoded (INF-1 — a
 * Pod the daemon cannot decode is left out): an ending status as a strategic merge patch carrying
 * the UID; any other waits.
 */
import { Clock, Effect } from "effect"
import { type PodKey, splitPodKey } from "../../Schemas/Ids.ts"
import type { Pod } from "../../Schemas/Pod/Schema.ts"
import { KubeApi, type KubeError } from "../../Services/KubeApi.ts"
import type { Informer } from "./Informer.ts"
import { agentConditionsOf } from "./Conditions.ts"
import { isTerminal } from "./PodFacts.ts"

/** `Held`: the server's version of the Pod cannot be decoded (INF-1); nothing was sent. */
export type WriteResult = "Written" | "Skipped" | "Gone" | "Conflicted" | "Held"

/**
 * INF-1: the key's newest version cannot be read; `lastGood` is what the informer keeps. Only
 * an ending status (Failed, Succeeded) is written: a Pod whose VM is gone must not stay
 * Running and Ready until a readable version comes. It goes as a strategic merge patch
 * carrying the UID, which needs no read of the Pod and sets only the node agent's conditions
 * (another writer's, maybe newer than the last good Pod, stay as stored). A Pod recreated under
 * the name refuses it (422 on metadata.uid): the Pod written for is gone, as after a 404, and
 * nothing is written. Any other status waits, on the retry schedule, for a readable version.
 */
export const writeUnreadable = (
  informer: Informer,
  changed: (key: PodKey) => Effect.Effect<void>
) =>
(
  key: PodKey,
  uid: string,
  lastGood: Pod,
  body: (current: Pod, now: number) => Pod | undefined
): Effect.Effect<WriteResult, KubeError, KubeApi> =>
  Effect.gen(function*() {
    const kube = yield* KubeApi
    const wanted = body(lastGood, yield* Clock.currentTimeMillis)
    if (wanted === undefined || !isTerminal(wanted)) return "Held" as const
    const status = wanted.status ?? {}
    const [namespace, name] = splitPodKey(key)
    const own = agentConditionsOf(status)
    return yield* kube.patchPodStatus(namespace, name, uid, own.status, own.removed).pipe(
      Effect.tap(() =>
        Effect.logInfo("ending status written as a patch: the pod's newest version cannot be decoded").pipe(
          Effect.annotateLogs({ phase: status.phase, reason: status.reason })
        )
      ),
      // The cache holds the Pod as the patch left it (its newest version still unreadable), so a
      // repeat of the ending (the lease watch pushes every tick, LEASE-7 — expired pushes repeat)
      // finds it terminal and is not sent (ST-11 — status writes keep our annotations); and the key
      // gets a run: seen terminal, the provider lets go of the row of the VM that is gone (VER-7 —
      // a lost sandbox's row outlives restarts until its Pod is settled; LEASE-11 — the row of an
      // ended lease goes once its Pod is seen terminal), as after a PUT.
      Effect.andThen(informer.written(lastGood, { ...lastGood, status })),
      Effect.andThen(changed(key)),
      Effect.as<WriteResult>("Written"),
      Effect.catchTag("KubeNotFound", () => Effect.succeed<WriteResult>("Gone")),
      // the uid the patch carries is not the stored Pod's: another Pod holds the name now
      Effect.catchTag("KubeInvalid", (error) =>
        error.fields?.includes("metadata.uid") === true
          ? Effect.logInfo("ending status not written: the pod was replaced by another of the same name").pipe(
            Effect.annotateLogs({ uid }),
            Effect.as<WriteResult>("Gone")
          )
          : Effect.fail(error))
    )
  })
