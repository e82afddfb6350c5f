/**
 * `PodLifecycle` over the claim-path programs. Requires the claims table, the store, sandboxd,
 * the config and the provider's event channels; the daemon runs `Programs/Provider/Startup.ts`
 * before the pod controller starts calling it.
 */
import { Context, Effect, Layer, Stream } from "effect"
import { podKeyOfPod } from "../../Schemas/Ids.ts"
import { AppConfig } from "../../Services/Config.ts"
import { ClaimsStore } from "../../Services/ClaimsStore.ts"
import { ClaimDoubts } from "../../Services/ClaimDoubts.ts"
import { ClaimTable } from "../../Services/ClaimTable.ts"
import { EventRecorder } from "../../Services/EventRecorder.ts"
import { OwnerResolver } from "../../Services/OwnerResolver.ts"
import { PodLifecycle } from "../../Services/PodLifecycle.ts"
import { ProviderEvents } from "../../Services/ProviderEvents.ts"
import { SandboxdClient } from "../../Services/SandboxdClient.ts"
import { createPod } from "./CreatePod.ts"
import { deletePod } from "./DeletePod.ts"
import { isTerminalPhase, noteTerminal, settleTerminal } from "./LostRows.ts"
import { settleGone } from "./SettleGone.ts"
import { getPod, getPodStatus, getPods, updatePod } from "./UpdatePod.ts"

export const layer: Layer.Layer<
  PodLifecycle,
  never,
  AppConfig | ClaimsStore | ClaimTable | ClaimDoubts | ProviderEvents | SandboxdClient | OwnerResolver | EventRecorder
> = Layer.effect(
  PodLifecycle,
  Effect.gen(function*() {
    // Each call is provided what the programs need: these eight services, not the whole context
    // the layer was built in (providing a context copies the caller's context and then every
    // entry of the provided one, per call; per Pod that was a reconcile's largest allocation).
    const context = Context.pick(AppConfig, ClaimsStore, ClaimTable, ClaimDoubts, ProviderEvents, SandboxdClient, OwnerResolver, EventRecorder)(
      yield* Effect.context<AppConfig | ClaimsStore | ClaimTable | ClaimDoubts | ProviderEvents | SandboxdClient | OwnerResolver | EventRecorder>()
    )
    const table = yield* ClaimTable
    const events = yield* ProviderEvents
    const doubts = yield* ClaimDoubts
    return PodLifecycle.of({
      createPod: (pod) => Effect.provide(createPod(pod), context),
      updatePod: (pod) => Effect.provide(updatePod(pod), context),
      deletePod: (pod) => Effect.provide(deletePod(pod), context),
      settleGone: (key) => Effect.provide(settleGone(key), context),
      // Every terminal Pod at every resync: a memory-only look first, the program (its span and
      // its services) only for the rare key whose row is Lost, or Durable under a copy of this
      // Pod not yet seen terminal (LEASE-11 — the row of an ended lease goes once its Pod is seen
      // terminal: once, until the lease watch drops the row).
      settleTerminal: (pod) =>
        Effect.flatMap(table.state, (state) => {
          const key = podKeyOfPod(pod)
          const row = state.rows.get(key)
          if (row === undefined) return Effect.void
          if (row.state._tag === "Lost") return Effect.provide(settleTerminal(pod), context)
          const tracked = state.pods.get(key)
          const uid = pod.metadata?.uid ?? ""
          return row.state._tag === "Durable" && row.record.podUID === uid && tracked !== undefined &&
              (tracked.metadata?.uid ?? "") === uid && !isTerminalPhase(tracked)
            ? Effect.provide(noteTerminal(pod), context)
            : Effect.void
        }),
      doubtKeys: Effect.map(doubts.all, (all) => Array.from(all.keys())),
      lostKeys: table.lostKeys,
      // a memory-only read of the table, once per reconcile: the one service it uses, added alone
      getPod: (key) => Effect.provideService(getPod(key), ClaimTable, table),
      // the statuses it reports resolve each claim's IP (AppConfig, ProviderEvents)
      getPods: Effect.provide(getPods, context),
      getPodStatus: (key) => Effect.provide(getPodStatus(key), context),
      statusPushes: Stream.unwrap(Effect.map(events.statusPushes, Stream.fromSubscription)),
      retryNow: Stream.unwrap(Effect.map(events.unquarantined, Stream.fromSubscription)).pipe(Stream.flattenIterable)
    })
  })
)
